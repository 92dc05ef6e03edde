"""Random well-typed programs for differential testing of s2sad.

``generate(seed)`` writes the Python source of a module holding either an
``nn.Cell`` subclass ``Net`` (with Parameters, sub-Cells, a method and
primitives as attributes) or a plain function ``f``.  Programs mix the
primitive set -- smooth elementwise math, matmul, reductions with axes,
broadcasting, indexing with constant slices, tuples -- with ``if``/``elif``/
``else`` on tensor conditions and on Python constants, ``while`` loops bounded
by a counter, ``for`` over ``range(k)``, over a tensor's first axis,
``enumerate``, ``zip`` and tuples, ``break``/``continue``/``return`` inside
loops and branches, nested functions and lambdas capturing tensors and
Parameters, sub-Cells, helper functions, and lists built with ``append`` and
``np.stack``.

Every program is well typed by construction: the generator tracks the shape of
each variable and only writes operations whose shapes agree.  Domains avoid
non-differentiable points and overflow: only smooth functions are used, ``exp``
of bounded values, ``log`` and ``sqrt`` of values bounded away from zero,
division by ``1 + t*t``, and loop updates are squashed so values stay bounded.
Inputs and Parameters are sampled with ``0.2 <= |v| <= 1``, and a tensor
condition is either the sign of such an element (or of a product of two), a
comparison whose outcome is fixed by the bounds of the functions involved, or
a test of a loop counter -- so central finite differences never cross a branch
boundary.

``check_program(program, directory)`` writes the program to a real ``.py``
file, imports it (s2sad reads source with ``inspect``) and compares, in
float64, reverse mode, forward mode and central finite differences with
``s2sad.check_grads``; for Cells it also checks the structure and values of
every ``GradOperation`` flag combination against element-wise finite
differences of the inputs and Parameters; and it checks second derivatives
(``order=2``), reverse over reverse and forward over reverse, loops included.
Programs that only a known defect (``KNOWN_BUGS``) would fail are not
generated.

Programs also draw the cases of docs/semantics.md: a 0-d input passed as
``np.float64``, integer and bool inputs, a complex first input, decorators
(on the function, its ``construct`` or a helper), item assignment naming one
element twice, and module-level values the check changes between two calls
of one gradient function (``check_input_types``, ``check_global_changes``).

The hypothesis strategies (``seeds``, ``programs``) and the seeded API
(``generate``) produce the same programs, so a failure found by ``tools/fuzz.py``
reproduces in a test from its seed.
"""
import hashlib
import importlib.util
import os
import random
import sys
import traceback

import numpy as np

# Defects of s2sad the generator has found (each has a minimal regression test
# in tests/test_random_programs.py).  By default the generator does not build
# the constructs that trigger them, so that random testing keeps finding *new*
# defects; ``avoid=()`` builds everything.
KNOWN_BUGS = {
    # a function decorated without ``functools.wraps``: an error about one of its
    # inputs (integer gradient not exact, complex input) names the wrapper's
    # parameters ('args', 'kwargs') or none instead of the user's
    "unwrapped_entry_names": "test_known_bug_error_names_the_wrappers_parameters",
}

# --------------------------------------------------------------- templates
# (template, number of uses of the operand).  All smooth everywhere, with
# bounded or positive arguments where the function needs one.
_UNARY = [
    ("np.sin({0})", 1), ("np.cos({0})", 1), ("np.tanh({0})", 1),
    ("ops.sin({0})", 1), ("ops.tanh({0})", 1), ("ops.cos({0})", 1),
    ("np.exp(np.sin({0}))", 1), ("np.exp(0.5 * np.tanh({0}))", 1), ("ops.exp(np.cos({0}))", 1),
    ("np.log(2.0 + np.sin({0}))", 1), ("np.sqrt(1.5 + np.cos({0}))", 1),
    ("np.log(1.0 + {0} * {0})", 2), ("np.sqrt(1.0 + {0} * {0})", 2),
    ("{0} / (1.0 + {0} * {0})", 2), ("np.exp(-{0} * {0})", 2), ("ops.log(1.0 + ops.square({0}))", 2),
    ("np.square({0})", 1), ("{0} ** 2", 1), ("-{0}", 1), ("0.5 * {0}", 1), ("np.negative({0})", 1),
    ("(1.0 + {0} * {0}) ** 0.5", 2), ("np.power({0}, 3)", 1), ("ops.square(np.tanh({0}))", 1),
]
_SQUASH = ["np.tanh({0})", "np.sin({0})", "ops.tanh({0})", "np.cos({0})"]
_BINOP = ["+", "-", "*", "+", "*"]
_BINFN = ["np.add({0}, {1})", "np.multiply({0}, {1})", "np.subtract({0}, {1})", "ops.mul({0}, {1})",
          "ops.add({0}, {1})", "{0} / (1.0 + {1} * {1})", "np.divide({0}, 1.5 + np.sin({1}))"]


# Decorators on the differentiated function, its construct or a helper: the
# gradient must be that of the function as called, wrapper included.
_DECORATORS = {
    "scaled": ["def scaled(fn):", "    @functools.wraps(fn)", "    def wrapper(*args):",
               "        return 1.5 * fn(*args)", "    return wrapper"],
    "halved": ["def halved(fn):", "    def wrapper(*args, **kwargs):",
               "        return fn(*args, **kwargs) * 0.5", "    return wrapper"],
    "scale_by": ["def scale_by(k):", "    def deco(fn):", "        @functools.wraps(fn)",
                 "        def wrapper(*args):", "            return k * fn(*args)",
                 "        return wrapper", "    return deco"],
}

_CELL_ATTRS = ["        self.flag = True", "        self.n = 2",
               "        self.matmul = ops.MatMul()"]


class _Info:
    __slots__ = ("shape", "robust", "active")

    def __init__(self, shape, robust=False, active=False):
        self.shape = tuple(shape)
        self.robust = robust      # every element has 0.2 <= |v| <= 1 (raw input or Parameter)
        self.active = active      # depends on a differentiated input


class _Callable:
    """Something the program can call: closure, lambda, helper, method, sub-Cell."""

    def __init__(self, name, args, rets, has_loop=False):
        self.name = name
        self.args = tuple(args)
        self.rets = tuple(rets)
        self.has_loop = has_loop


class _Scope:
    def __init__(self, parent=None, **kw):
        if parent is None:
            self.vars, self.calls = {}, {}
            self.loop, self.live, self.ret, self.cell = None, True, None, False
            self.depth, self.returns, self.counters = 0, True, []
            self.in_loop, self.in_for, self.in_branch = False, False, False
            self.top = False
        else:
            self.vars, self.calls = dict(parent.vars), dict(parent.calls)
            self.loop, self.live, self.ret, self.cell = parent.loop, parent.live, parent.ret, \
                parent.cell
            self.depth, self.returns = parent.depth, parent.returns
            self.in_loop, self.in_for = parent.in_loop, parent.in_for
            self.in_branch = parent.in_branch
            self.counters = list(parent.counters)
            self.top = parent.top
        self.must = []
        for k, v in kw.items():
            setattr(self, k, v)


class Program:
    """A generated module: its source, what to differentiate and how to call it."""

    def __init__(self, seed, source, kind, inputs, n_out, features, has_loop, tensor_inputs,
                 input_kinds=None, global_changes=(), complex_input=False):
        self.seed = seed
        self.source = source
        self.kind = kind                  # "cell" (class Net) or "function" (def f)
        self.inputs = inputs              # list of (name, shape)
        self.n_out = n_out                # 1: one tensor; 2: a tuple of two
        self.features = features          # set of construct names used
        self.has_loop = has_loop          # a runtime loop on a compiled path
        self.tensor_inputs = tensor_inputs
        # per input: "float", "npscalar" (np.float64), "int" (values -1 and 1) or "bool"
        self.input_kinds = list(input_kinds or ["float"] * len(inputs))
        # statements run in the module between two calls of one gradient function
        self.global_changes = list(global_changes)
        # also check that a complex first input is refused (a TypeError naming it)
        self.complex_input = complex_input

    @property
    def entry(self):
        return "Net" if self.kind == "cell" else "f"

    def make_args(self, typed=False):
        """The inputs: ``0.2 <= |v| <= 1``, Tensors or arrays as generated.

        Integer and bool inputs are given as float64 arrays of the same values
        (the program is a function of real inputs), or with ``typed=True`` in
        their own dtype; a NumPy scalar input is an ``np.float64`` either way.
        """
        from s2sad import Tensor
        rng = np.random.default_rng(self.seed)
        out = []
        for (name, shape), as_tensor, kind in zip(self.inputs, self.tensor_inputs,
                                                  self.input_kinds):
            a = _robust_values(rng, shape)
            if kind == "npscalar":
                out.append(np.float64(a))
                continue
            if kind in ("int", "bool"):
                a = np.sign(a) if kind == "int" else (a > 0).astype(np.float64)
                if typed:
                    a = a.astype(np.int32 if as_tensor else np.int64) if kind == "int" \
                        else a > 0.5
            out.append(Tensor(a) if as_tensor else a)
        return tuple(out)

    @property
    def typed(self):
        """Whether some input is not a float array (integer, bool, NumPy scalar)."""
        return any(k != "float" for k in self.input_kinds)

    def __repr__(self):
        return "Program(seed=%d, kind=%s, features=%s)" % (self.seed, self.kind,
                                                           sorted(self.features))


def _robust_values(rng, shape):
    mag = rng.uniform(0.2, 1.0, size=shape)
    sign = np.where(rng.random(size=shape) < 0.5, -1.0, 1.0)
    return np.asarray(mag * sign, dtype=np.float64)


def _literal(a):
    """``np.array(...)`` source for a float64 array (rounded, exactly reproducible)."""
    return "np.array(%s)" % repr(np.round(a, 3).tolist())


# ---------------------------------------------------------------- generator
class _Gen:
    def __init__(self, seed, kind=None, avoid=None):
        self.seed = seed
        self.avoid = frozenset(KNOWN_BUGS if avoid is None else avoid)
        self.rng = random.Random(seed)
        self.nprng = np.random.default_rng(seed + 1)
        r = self.rng
        self.kind = kind or r.choice(["cell", "function"])
        self.N, self.M, self.P = r.choice([2, 3, 4]), r.choice([2, 3]), r.choice([2, 3, 4])
        self.K = r.choice([2, 3])
        # a third of the programs have no runtime branch or loop at all
        self.straight = r.random() < 0.3
        self.has_branch = False
        self.in_select = 0        # generating an operand of a conditional expression
        self.fn_returned = False
        self.protected = set()    # loop results never overwritten (they must reach the output)
        self.counter = 0
        self.features = set()
        self.has_loop = False
        self.out = []
        self.ind = 0
        self.module = []          # module-level definitions (source blocks)
        # module-level values the program reads and the check changes between calls
        self.use_globals = r.random() < 0.3
        self.global_names = set()
        self.global_changes = []
        self.decorators = set()
        self.int_linear = None    # an integer input read only as ``c * np.sum(k)``
        self.typed_inputs = self.complex_input = False      # set by input_kinds

    # ---------------------------------------------------------------- utils
    def fresh(self, prefix="v"):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def emit(self, line):
        self.out.append("    " * self.ind + line)

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def dims(self):
        return sorted({self.N, self.M, self.P})

    # --------------------------------------------------------- leaf shapes
    def _leaf_forms(self, sc, name, info, S):
        """Ways to get a value of shape ``S`` from variable ``name`` alone."""
        T = info.shape
        forms = []
        if T == S:
            forms += [name] * 3
            if len(T) >= 1 and self.chance(0.2):
                forms.append("%s[::-1]" % name)
        if len(T) == 2 and S == (T[1], T[0]) and T[0] != T[1]:
            forms += ["%s.T" % name, "np.transpose(%s)" % name]
        if len(T) == len(S) + 1:
            for k in range(len(T)):
                if T[:k] + T[k + 1:] == S:
                    forms += ["np.sum(%s, axis=%d)" % (name, k), "%s.sum(axis=%d)" % (name, k),
                              "np.mean(%s, axis=%d)" % (name, k), "ops.reduce_sum(%s, %d)" % (name, k)]
            if T[1:] == S:
                forms.append("%s[%d]" % (name, self.rng.randrange(T[0])))
            if len(T) == 2 and T[:1] == S:
                forms.append("%s[:, %d]" % (name, self.rng.randrange(T[1])))
        if S == () and T != ():
            forms += ["%s.sum()" % name, "np.mean(%s)" % name, "ops.reduce_mean(%s, ())" % name]
            if len(T) == 1:
                forms.append("%s[%d]" % (name, self.rng.randrange(T[0])))
            if len(T) == 2:
                forms.append("%s[%d, %d]" % (name, self.rng.randrange(T[0]),
                                             self.rng.randrange(T[1])))
        if len(T) == len(S) and T != S and all(s <= t for s, t in zip(S, T)) and len(S) >= 1:
            parts = []
            for s, t in zip(S, T):
                a = self.rng.randrange(t - s + 1)
                parts.append(":" if s == t else "%d:%d" % (a, a + s))
            forms.append("%s[%s]" % (name, ", ".join(parts)))
        return forms

    def leaf_candidates(self, sc, S):
        out = []
        for name, info in sc.vars.items():
            for f in self._leaf_forms(sc, name, info, S):
                out.append((f, info))
        return out

    def can_make(self, sc, S, depth=1):
        if self.leaf_candidates(sc, S):
            return True
        if depth > 0 and len(S) in (1, 2):
            return bool(self._matmul_dims(sc, S, depth - 1))
        return False

    def _matmul_dims(self, sc, S, depth):
        out = []
        for k in self.dims():
            if len(S) == 2 and self.can_make(sc, (S[0], k), depth) and \
                    self.can_make(sc, (k, S[1]), depth):
                out.append(k)
            if len(S) == 1 and self.can_make(sc, (S[0], k), depth) and \
                    self.can_make(sc, (k,), depth):
                out.append(k)
        return out

    def makeable_shapes(self, sc):
        cands = set()
        for info in sc.vars.values():
            T = info.shape
            cands.add(T)
            for k in range(len(T)):
                cands.add(T[:k] + T[k + 1:])
            cands.add(())
        return sorted((s for s in cands if len(s) <= 2 and self.can_make(sc, s)),
                      key=lambda s: (len(s), s))

    def pick_shape(self, sc):
        shapes = self.makeable_shapes(sc)
        # prefer tensors to scalars
        weights = [1 if len(s) == 0 else 3 for s in shapes]
        return self.rng.choices(shapes, weights)[0]

    # ---------------------------------------------------------- expressions
    def leaf(self, sc, S):
        cands = self.leaf_candidates(sc, S)
        if not cands:
            ks = self._matmul_dims(sc, S, 0)
            if ks:
                return self.matmul(sc, S, 0, True, ks)
            raise AssertionError("generator: no way to make shape %s" % (S,))
        form, info = self.pick(cands)
        return form, info.active

    def bind(self, sc, code, S, active):
        """Emit ``t = code``; return the name."""
        name = self.fresh("t")
        self.emit("%s = %s" % (name, code))
        sc.vars[name] = _Info(S, active=active)
        return name

    def expr(self, sc, S, depth, pure=False):
        """Source of an expression of shape ``S``: ``(code, active)``."""
        r = self.rng
        kinds = [("leaf", 3.0)]
        if depth > 0:
            kinds += [("unary", 3.0), ("binary", 3.0), ("reduce", 0.8)]
            if len(S) in (1, 2) and self._matmul_dims(sc, S, 0):
                kinds.append(("matmul", 1.2))
            calls = [c for c in sc.calls.values() if len(c.rets) == 1 and c.rets[0] == S and
                     c.name != "self.layers" and all(self.can_make(sc, a) for a in c.args)]
            if calls:
                kinds.append(("call", 1.5))
            if not self.straight:
                kinds.append(("ternary", 0.3))
            if self.use_globals:
                kinds.append(("global", 0.7))
            if not pure:
                kinds.append(("lambda_inline", 0.15))
                if S:
                    kinds.append(("softmax", 0.25))
        kind = r.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        if kind == "leaf":
            return self.leaf(sc, S)
        if kind == "unary":
            tpl, uses = self.pick(_UNARY)
            code, act = self.expr(sc, S, depth - 1, pure)
            if uses > 1 and not code.isidentifier():
                if pure:
                    code = "(%s)" % code
                else:
                    code = self.bind(sc, code, S, act)
            elif not code.isidentifier():
                code = "(%s)" % code
            self.features.add("unary")
            return tpl.format(code), act
        if kind == "binary":
            a, act_a = self.expr(sc, S, depth - 1, pure)
            choices = [S, S, ()]
            if len(S) >= 1 and self.can_make(sc, S[1:]):
                choices.append(S[1:])
            S2 = self.pick(choices)
            if S2 == () and self.chance(0.4):
                b, act_b = repr(round(r.uniform(0.3, 1.5), 2)), False
            else:
                b, act_b = self.expr(sc, S2, depth - 1, pure)
                if S2 != S:
                    self.features.add("broadcast")
            if len(S) == 2 and self.chance(0.1) and self.can_make(sc, (S[0],)):
                # column broadcasting through a new axis
                c, act_c = self.expr(sc, (S[0],), 0, pure)
                self.features.add("newaxis")
                return "(%s) * (%s)[:, None]" % (a, c), act_a or act_c
            if len(S) == 2 and self.chance(0.1) and (a.isidentifier() or not pure):
                self.features.add("keepdims")
                if not a.isidentifier() and "loop_cse_stale" in self.avoid:
                    a = self.bind(sc, a, S, act_a)
                return "(%s) - (%s).mean(axis=%d, keepdims=True)" % (a, a, r.randrange(2)), act_a
            if self.chance(0.25):
                tpl = self.pick(_BINFN)
                if "{1} * {1}" in tpl and not b.isidentifier():
                    b = "(%s)" % b
                return tpl.format(a, b), act_a or act_b
            op = self.pick(_BINOP)
            if a == b and op == "-":
                op = "+"      # never 'e - e', which is identically zero
            return "(%s) %s (%s)" % (a, op, b), act_a or act_b
        if kind == "reduce":
            d = self.pick(self.dims())
            k = r.randrange(len(S) + 1)
            T = S[:k] + (d,) + S[k:]
            if len(T) > 2 or not self.can_make(sc, T, 0):
                if S != ():
                    return self.expr(sc, S, depth - 1, pure)
                T = self.pick(self.makeable_shapes(sc))
                code, act = self.expr(sc, T, depth - 1, pure)
                self.features.add("reduce_all")
                return self.pick(["np.sum(%s)", "(%s).sum()", "np.mean(%s)"]) % code, act
            code, act = self.expr(sc, T, depth - 1, pure)
            self.features.add("reduce_axis")
            tpl = self.pick(["np.sum({0}, axis={1})", "({0}).sum(axis={1})",
                             "np.mean({0}, axis={1})", "ops.reduce_sum({0}, {1})",
                             "ops.reduce_mean({0}, {1})"])
            return tpl.format(code, k), act
        if kind == "matmul":
            return self.matmul(sc, S, depth - 1, pure)
        if kind == "call":
            c = self.pick(calls)
            args = [self.expr(sc, a, depth - 1, pure) for a in c.args]
            active = any(act for _, act in args)
            self.note_call(sc, c)
            return "%s(%s)" % (c.name, ", ".join(a for a, _ in args)), active
        if kind == "ternary":
            self.in_select += 1
            try:
                a, act_a = self.expr(sc, S, depth - 1, True)
                b, act_b = self.expr(sc, S, depth - 1, True)
                cond = self.condition(sc)
            finally:
                self.in_select -= 1
            self.features.add("ternary")
            return "((%s) if %s else (%s))" % (a, cond, b), act_a or act_b
        if kind == "lambda_inline":
            captured, act_c = self.expr(sc, S, 0, True)
            arg, act_a = self.expr(sc, S, depth - 1, pure)
            self.features.add("lambda")
            return "(lambda u: np.sin(u) * %s)(%s)" % (captured, arg), act_a or act_c
        if kind == "softmax":
            return self.softmax(sc, S, depth, pure)
        if kind == "global":
            return self.global_read(sc, S, depth, pure)
        raise AssertionError(kind)

    def global_read(self, sc, S, depth, pure):
        """A module-level scalar, dict entry, array or helper function, which the
        check changes in the imported module between two calls of one gradient."""
        code, act = self.expr(sc, S, depth - 1, pure)
        form = self.pick(["scalar", "dict", "array", "helper"])
        self.features.add("global_" + form)
        if form == "scalar":
            self._global("SCALE", "SCALE = 0.75", "SCALE = -1.25")
            return "SCALE * (%s)" % code, act
        if form == "dict":
            self._global("CFG", "CFG = {'a': 0.5, 'b': 1.0}", "CFG['a'] = -0.8")
            return "CFG['a'] * (%s)" % code, act
        if form == "helper":
            self._global("act", "def act(u):\n    return np.tanh(u)\n\n\n"
                                "def act_alt(u):\n    return np.sin(u) * 0.5", "act = act_alt")
            return "act(%s)" % code, act
        name = "GW_" + "x".join(map(str, S)) if S else "GW"
        if name not in self.global_names:
            values = _robust_values(self.nprng, S)
            if self.chance(0.5):
                change = "%s = %s" % (name, _literal(_robust_values(self.nprng, S)))
            else:
                change = "%s *= -0.5" % name       # in place
            self._global(name, "%s = %s" % (name, _literal(values)), change)
        return "(%s) * %s" % (code, name), act

    def _global(self, name, definition, change):
        if name not in self.global_names:
            self.global_names.add(name)
            self.module.append(definition)
            self.global_changes.append(change)

    def decorator(self, entry=False):
        """A decorator line, its definition added to the module (``entry``: for the
        differentiated function or construct itself)."""
        names = sorted(_DECORATORS)
        if entry and (self.typed_inputs or self.complex_input) and \
                "unwrapped_entry_names" in self.avoid:
            names = [n for n in names if n != "halved"]
        if not names:
            return None
        name = self.pick(names)
        self.decorators.add(name)
        self.features.add("decorator")
        self.features.add("decorator_" + name)
        if name == "scale_by":
            return "@scale_by(%s)" % self.pick(["2.0", "-0.5", "0.25"])
        return "@" + name

    def softmax(self, sc, S, depth, pure):
        """A softmax or log-softmax along one axis, stabilised by the max (or min) of it."""
        code, act = self.expr(sc, S, depth - 1, pure)
        u = self.bind(sc, self.squash(code), S, act)
        k = self.rng.randrange(len(S)) - (len(S) if self.chance(0.5) else 0)
        z = "%s - %s(%s, axis=%d, keepdims=True)" % (u, self.pick(["np.max", "np.min"]), u, k)
        self.features.add("softmax")
        if self.chance(0.5):
            return ("(lambda z: z - np.log(np.sum(np.exp(z), axis=%d, keepdims=True)))(%s)"
                    % (k, z)), act
        return "(lambda e: e / np.sum(e, axis=%d, keepdims=True))(np.exp(%s))" % (k, z), act

    def matmul(self, sc, S, depth, pure, ks=None):
        ks = ks or self._matmul_dims(sc, S, 0)
        k = self.pick(ks)
        self.features.add("matmul")
        if len(S) == 2:
            a, act_a = self.expr(sc, (S[0], k), depth, pure)
            b, act_b = self.expr(sc, (k, S[1]), depth, pure)
            forms = ["({0}) @ ({1})", "np.matmul({0}, {1})", "np.dot({0}, {1})",
                     "ops.matmul({0}, {1})"]
            if sc.cell:
                forms.append("self.matmul({0}, {1})")
            return self.pick(forms).format(a, b), act_a or act_b
        a, act_a = self.expr(sc, (S[0], k), depth, pure)
        b, act_b = self.expr(sc, (k,), depth, pure)
        return self.pick(["({0}) @ ({1})", "np.matmul({0}, {1})", "np.dot({0}, {1})"]).format(
            a, b), act_a or act_b

    def note_call(self, sc, c):
        """Record a call (whether it is in a branch, whether it runs a loop)."""
        self.features.add("call")
        if sc.live and c.has_loop:
            self.has_loop = True

    def squash(self, code):
        return self.pick(_SQUASH).format(code)

    # ----------------------------------------------------------- conditions
    def condition(self, sc):
        """A runtime condition whose outcome no FD perturbation can change."""
        r = self.rng
        opts = []
        robust = [(n, i) for n, i in sc.vars.items() if i.robust and i.shape != ()]
        robust0 = [(n, i) for n, i in sc.vars.items() if i.robust and i.shape == ()]
        if robust or robust0:
            opts.append("sign")
        opts.append("bound")
        if sc.counters:
            opts += ["counter", "counter"]
        kind = self.pick(opts)
        self.features.add("tensor_if")
        self.has_branch = True
        assert not self.straight
        if kind == "sign":
            def elem():
                if robust0 and (not robust or self.chance(0.3)):
                    return self.pick(robust0)[0]
                n, i = self.pick(robust)
                return "%s[%s]" % (n, ", ".join(str(r.randrange(d)) for d in i.shape))
            e = elem()
            if self.chance(0.3):
                e = "%s * %s" % (e, elem())
            c = "%s %s 0" % (e, self.pick([">", "<", ">=", "<="]))
        elif kind == "bound":
            S = self.pick(self.makeable_shapes(sc))
            code, _ = self.expr(sc, S, 1, pure=True)
            size = int(np.prod(S)) if S else 1
            c = self.pick([
                "np.tanh(%s).sum() < %d.5" % (code, size),
                "np.sin(%s).mean() > 1.5" % code,
                "np.cos(%s).sum() >= -%d.5" % (code, size),
                "(np.tanh(%s) * 0.5).sum() + %d.0 > 0.25" % (code, size),
            ])
        else:
            i, stop = self.pick(sc.counters)
            c = self.pick(["%s == 1" % i, "%s %% 2 == 0" % i, "%s >= %d" % (i, max(stop - 1, 1)),
                           "%s < 1" % i])
        if self.chance(0.15):
            self.in_select += 1
            try:
                c2 = self.condition(sc)
            finally:
                self.in_select -= 1
            c = "%s %s %s" % (c, self.pick(["and", "or"]), c2)
            self.features.add("boolop")
        elif self.chance(0.1):
            c = "not (%s)" % c
            self.features.add("not")
        return c

    def const_condition(self, sc):
        """``(source, value)`` of a condition known while compiling."""
        forms = [("FLAG", True), ("not FLAG", False), ("K > 2", self.K > 2), ("K >= 2", True),
                 ("MODE == 'tanh'", True), ("2 > 3", False)]
        if sc.cell:
            forms += [("self.flag", True), ("not self.flag", False), ("self.n > 1", True)]
        src, val = self.pick(forms)
        self.features.add("const_if")
        return src, val

    # ------------------------------------------------------------ statements
    def block(self, sc, n, results=()):
        """``n`` statements, then assign each ``(name, shape)`` of ``results``."""
        for _ in range(n):
            self.statement(sc)
        for name, S in results:
            code, act = self.expr(sc, S, 2)
            code = self.fold(sc, code, S, sc.must)
            self.emit("%s = %s" % (name, code))
            sc.vars[name] = _Info(S, active=act or any(sc.vars[m].active for m in sc.must
                                                           if m in sc.vars))

    def fold(self, sc, code, S, names):
        terms = [code]
        for m in dict.fromkeys(names):
            info = sc.vars.get(m)
            if info is None:
                continue
            if info.shape == S:
                terms.append("0.5 * np.tanh(%s)" % m)
            else:
                terms.append("0.25 * np.sin(np.sum(%s))" % m)
        return " + ".join(terms)

    def statement(self, sc):
        r = self.rng
        nest = sc.depth < 2
        kinds = [("assign", 5.0), ("tuple", 1.0)]
        if nest and self.straight:
            kinds += [("const_if", 1.2)]
        elif nest:
            kinds += [("if", 1.6), ("const_if", 0.8), ("while", 1.0), ("for_range", 1.0),
                      ("for_tensor", 1.0), ("for_other", 0.6)]
        if sc.depth == 0:
            kinds += [("stack", 0.6)]
            kinds += [("def", 0.8), ("lambda", 0.5)]
        if self._callable_now(sc):
            kinds.append(("call", 1.2))
        kinds.append(("index_assign", 0.5))
        kind = r.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        getattr(self, "st_" + kind)(sc)

    def _callable_now(self, sc):
        return [c for c in sc.calls.values() if c.name != "self.layers" and
                all(self.can_make(sc, a) for a in c.args)]

    def st_call(self, sc):
        c = self.pick(self._callable_now(sc))
        args = [self.expr(sc, a, 1) for a in c.args]
        self.note_call(sc, c)
        call = "%s(%s)" % (c.name, ", ".join(a for a, _ in args))
        names = [self.fresh() for _ in c.rets]
        if len(names) == 1:
            self.emit("%s = %s" % (names[0], call))
        elif self.chance(0.5):
            self.emit("%s = %s" % (", ".join(names), call))
        else:
            t = self.fresh("tup")
            self.emit("%s = %s" % (t, call))
            for j, n in enumerate(names):
                self.emit("%s = %s[%d]" % (n, t, j))
        for n, S in zip(names, c.rets):
            sc.vars[n] = _Info(S, active=any(act for _, act in args))
        sc.must += names
        if c.has_loop:
            self.protected.update(names)     # never overwritten: they carry the loop's value

    def st_assign(self, sc):
        S = self.pick_shape(sc)
        code, act = self.expr(sc, S, self.rng.choice([1, 2, 2, 3]))
        squashed = self.chance(0.75)
        if squashed:
            code = self.squash(code)
        name = self.fresh()
        self.emit("%s = %s" % (name, code))
        sc.vars[name] = _Info(S, active=act)
        # NumPy's augmented assignment works in place: only on a fresh array, never
        # on one that aliases another variable (``v = x; v -= ...`` changes x)
        if squashed and S != () and self.chance(0.15):
            # augmented assignment
            code2, act2 = self.expr(sc, S, 1, pure=True)   # no temporaries: they could be views of it
            self.emit("%s %s= %s" % (name, self.pick(["+", "*", "-"]), self.squash(code2)))
            sc.vars[name].active = act or act2
            self.features.add("augassign")

    def st_index_assign(self, sc):
        """Item assignment naming one element twice (NumPy keeps the last write; ``+=``
        reads, adds and writes, so repeats add once): ``v[[1, 1]] = ...``,
        ``v[[-1, 2]] += ...``, ``v[:, [0, 1, 0]] = ...``, into a fresh array."""
        shapes = [S for S in self.makeable_shapes(sc) if len(S) >= 1]
        if not shapes:
            return self.st_assign(sc)
        S = self.pick(shapes)
        base, act = self.expr(sc, S, 1)
        name = self.fresh()
        self.emit("%s = (%s) * 1.0" % (name, base))
        columns = len(S) == 2 and self.chance(0.3)
        n = S[1] if columns else S[0]
        i = self.rng.randrange(n)
        forms = ["same", "negative"] + (["three"] if n >= 2 else [])
        form = self.pick(forms)
        if form == "same":
            idx = [i, i]
        elif form == "negative":
            idx = [i - n, i] if self.chance(0.5) else [i, i - n]
        else:
            j = self.pick([k for k in range(n) if k != i])
            idx = [i, j, i]
        part = (S[0],) if columns else S[1:]
        if self.chance(0.3) or not self.can_make(sc, part):
            value, vact = self.expr(sc, (), 1)
        else:
            parts = [self.expr(sc, part, 1) for _ in idx]
            value = "np.stack([%s]%s)" % (", ".join(c for c, _ in parts),
                                          ", axis=1" if columns else "")
            vact = any(a for _, a in parts)
        op = self.pick(["=", "+="])
        target = "%s[:, %r]" % (name, idx) if columns else "%s[%r]" % (name, idx)
        self.emit("%s %s %s" % (target, op, value))
        sc.vars[name] = _Info(S, active=act or vact)
        sc.must.append(name)
        self.features.add("repeated_index")
        if op == "+=":
            self.features.add("repeated_index_aug")

    def st_tuple(self, sc):
        S1, S2 = self.pick_shape(sc), self.pick_shape(sc)
        a, act_a = self.expr(sc, S1, 1)
        b, act_b = self.expr(sc, S2, 1)
        self.features.add("tuple")
        form = self.pick([0, 1, 2, 3])
        if form == 0:
            n1, n2 = self.fresh(), self.fresh()
            self.emit("%s, %s = %s, %s" % (n1, n2, a, b))
            sc.vars[n1], sc.vars[n2] = _Info(S1, active=act_a), _Info(S2, active=act_b)
            if S1 == S2 and self.chance(0.5):
                self.emit("%s, %s = %s, %s" % (n1, n2, n2, n1))
                sc.vars[n1].active = sc.vars[n2].active = act_a or act_b
        elif form == 1:
            t, n = self.fresh("tup"), self.fresh()
            self.emit("%s = (%s, %s)" % (t, a, b))
            c, act_c = self.expr(sc, S1, 0)
            self.emit("%s = %s[0] * %s + %s" % (n, t, c, self.fold(sc, "0.0", S1, [])))
            sc.vars[n] = _Info(S1, active=act_a or act_c)
            n2 = self.fresh()
            self.emit("%s = np.sin(%s[-1])" % (n2, t))
            sc.vars[n2] = _Info(S2, active=act_b)
        elif form == 2:
            n1, n2 = self.fresh(), self.fresh()
            c, act_c = self.expr(sc, S2, 1)
            self.emit("%s, *%s = (%s, %s, %s)" % (n1, n2, a, b, c))
            sc.vars[n1] = _Info(S1, active=act_a)
            n3 = self.fresh()
            self.emit("%s = %s[0] * %s[1]" % (n3, n2, n2))
            sc.vars[n3] = _Info(S2, active=act_b or act_c)
            self.features.add("star_unpack")
        else:
            n1, n2 = self.fresh(), self.fresh()
            self.emit("%s, %s = (%s, (%s, %s))[1]" % (n1, n2, a, b, a))
            sc.vars[n1], sc.vars[n2] = _Info(S2, active=act_b), _Info(S1, active=act_a)

    def _results(self, sc, k=None):
        """Variables a branch or loop will assign: new names or existing ones."""
        k = k or self.rng.choice([1, 1, 2])
        out = []
        for _ in range(k):
            existing = [n for n, i in sc.vars.items()
                        if n[0] == "v" and len(i.shape) <= 2 and n not in dict(out) and
                        n not in self.protected]
            if existing and self.chance(0.4):
                n = self.pick(existing)
                out.append((n, sc.vars[n].shape))
            else:
                out.append((self.fresh(), self.pick_shape(sc)))
        return out

    def maybe_return(self, sc, p=0.25):
        if sc.returns and sc.ret is not None and self.chance(p):
            self.fn_returned = True
            self.emit("return %s" % self.ret_expr(sc))
            self.features.add("early_return")
            return True
        return False

    def ret_expr(self, sc, fold=(), squash=False):
        parts = []
        for j, S in enumerate(sc.ret):
            code, _ = self.expr(sc, S, 2)
            if squash:
                code = self.squash(code)
            if j == 0:
                code = self.fold(sc, code, S, fold)
                if sc.top and self.int_linear:
                    code = "%s + %s" % (code, self.int_linear)
            parts.append(code)
        return parts[0] if len(parts) == 1 else "(%s)" % ", ".join(parts)

    def st_if(self, sc):
        n_elif = self.rng.choice([0, 0, 1])
        # which branch (if any) returns early; it assigns none of the results
        ret_branch = self.rng.randrange(2 + n_elif) if (
            sc.returns and sc.ret is not None and self.chance(0.2)) else None
        results = self._results(sc)
        cond = self.condition(sc)
        self.emit("if %s:" % cond)
        active = {n: False for n, _ in results}
        for branch in range(2 + n_elif):
            if branch > 0:
                if branch <= n_elif:
                    self.emit("elif %s:" % self.condition(sc))
                    self.features.add("elif")
                else:
                    self.emit("else:")
            self.ind += 1
            inner = _Scope(sc, depth=sc.depth + 1, in_branch=True)
            if branch == ret_branch:
                self.maybe_return(inner, 1.0)
            else:
                self.block(inner, self.rng.choice([0, 1, 1, 2]), results)
                for n, _ in results:
                    active[n] = active[n] or inner.vars[n].active
            self.ind -= 1
        for name, S in results:
            prev = sc.vars.get(name)
            sc.vars[name] = _Info(S, active=active[name] or (
                prev is not None and prev.active and ret_branch is not None))
        sc.must += [n for n, _ in results]

    def st_const_if(self, sc):
        results = self._results(sc)
        src, val = self.const_condition(sc)
        self.emit("if %s:" % src)
        for branch, taken in ((0, val), (1, not val)):
            if branch:
                self.emit("else:")
            self.ind += 1
            inner = _Scope(sc, depth=sc.depth + 1, live=sc.live and taken)
            self.block(inner, self.rng.choice([0, 1, 2]), results)
            if taken:
                act = {n: inner.vars[n].active for n, _ in results}
            self.ind -= 1
        for name, S in results:
            sc.vars[name] = _Info(S, active=act[name])
        sc.must += [n for n, _ in results]

    def _carried(self, sc):
        """A variable carried through a loop (existing or new), bounded by its update."""
        existing = [n for n, i in sc.vars.items() if n[0] == "v" and len(i.shape) <= 2]
        if existing and self.chance(0.5):
            n = self.pick(existing)
            info = sc.vars[n]
            sc.vars[n] = _Info(info.shape, active=info.active)
            return n, info.shape
        S = self.pick_shape(sc)
        n = self.fresh()
        code, act = self.expr(sc, S, 1)
        self.emit("%s = %s" % (n, self.squash(code)))
        sc.vars[n] = _Info(S, active=act)
        return n, S

    def update(self, sc, name, S):
        """``name = <bounded function of name and the loop body's values>``."""
        e, act = self.expr(sc, S, self.rng.choice([1, 2]))
        forms = ["np.tanh({v} + {e})", "0.5 * {v} + 0.5 * np.sin({v} * {e})",
                 "np.sin({v}) * np.cos({e})", "{v} + 0.1 * np.tanh({v} * {e})",
                 "np.cos({v} - {e})"]
        if e == name:
            forms = forms[:4]     # never 'v - v'
        code = self.pick(forms).format(v=name, e="(%s)" % e)
        self.emit("%s = %s" % (name, self.fold(sc, code, S, sc.must)))
        info = sc.vars[name]
        info.active = info.active or act or any(sc.vars[m].active for m in sc.must
                                                if m in sc.vars)
        info.robust = False

    def loop_body(self, sc, carried, exits, counter=None):
        """Statements, an update of each carried variable, and maybe an exit."""
        n_before = self.rng.choice([0, 1, 1, 2])
        exit_pos = self.rng.randrange(n_before + 2) if exits else -1
        for j in range(n_before + 1):
            if j == exit_pos:
                self.loop_exit(sc, exits)
            if j < n_before:
                self.statement(sc)
        for name, S in carried:
            self.update(sc, name, S)
        if exit_pos == n_before + 1:
            self.loop_exit(sc, exits)

    def loop_exit(self, sc, exits):
        kind = self.pick(exits)
        cond = self.condition(sc)
        self.emit("if %s:" % cond)
        self.ind += 1
        if kind == "return" and sc.returns and sc.ret is not None:
            inner = _Scope(sc, depth=sc.depth + 1)
            self.fn_returned = True
            self.emit("return %s" % self.ret_expr(inner))
            self.features.add("return_in_loop")
        elif kind == "continue":
            self.emit("continue")
            self.features.add("continue")
        else:
            self.emit("break")
            self.features.add("break")
        self.ind -= 1

    def _mark_loop(self, sc, carried):
        if sc.live:
            self.has_loop = True

    def _loop_setup(self, sc, is_for):
        """The exits a loop body may take, and the body's scope."""
        exits = ["break", "continue", "return"] if self.chance(0.5) else []
        inner = _Scope(sc, depth=sc.depth + 1, in_loop=True, in_for=sc.in_for or is_for)
        return exits, inner

    def st_while(self, sc):
        carried = [self._carried(sc)]
        i = self.fresh("i")
        stop = self.rng.choice([2, 3, 4])
        self.emit("%s = 0" % i)
        form = self.rng.randrange(3)
        exits, inner = self._loop_setup(sc, False)
        if form == 0:
            self.emit("while %s < %d:" % (i, stop))
        elif form == 1:
            self.emit("while True:")
        else:
            self.emit("while %s < %d and (%s):" % (i, stop, self.condition(sc)))
        self.features.add("while")
        # the counter is incremented first, so 'continue' never skips it
        self.ind += 1
        self.emit("%s = %s + 1" % (i, i))
        if form == 1:
            self.emit("if %s >= %d:" % (i, stop + 1))
            self.emit("    break")
        inner.counters.append((i, stop))
        self._mark_loop(sc, carried)
        self.loop_body(inner, carried, exits)
        self.ind -= 1
        self._after_loop(sc, inner, carried)

    def _after_loop(self, sc, inner, carried):
        for n, S in carried:
            sc.vars[n] = inner.vars[n]
            self.protected.add(n)
        sc.must.append(carried[0][0])

    def st_for_range(self, sc):
        carried = [self._carried(sc)]
        i = self.fresh("i")
        form = self.rng.randrange(5)
        x0 = self._first_input(sc)
        if form == 0:
            self.emit("for %s in range(%d):" % (i, self.K))
            stop = self.K
        elif form == 1:
            self.emit("for %s in range(K):" % i)
            stop = self.K
        elif form == 2:
            self.emit("for %s in range(1, %d):" % (i, self.K + 1))
            stop = self.K + 1
        elif form == 3 and x0:
            self.emit("for %s in range(%s.shape[0]):" % (i, x0))
            stop = sc.vars[x0].shape[0]
        else:
            self.emit("for %s in range(%d, 0, -1):" % (i, self.K))
            stop = self.K + 1
        self.features.add("for_range")
        exits, inner = self._loop_setup(sc, True)
        self.ind += 1
        inner.counters.append((i, stop))
        # index a tensor with the loop counter (a runtime index)
        rows = [(n, info) for n, info in inner.vars.items()
                if len(info.shape) >= 1 and info.shape[0] >= stop and n[0] in "vxyz"]
        if rows and self.chance(0.5):
            n, info = self.pick(rows)
            row = self.fresh("row")
            self.emit("%s = %s[%s]" % (row, n, i))
            inner.vars[row] = _Info(info.shape[1:], robust=info.robust, active=info.active)
            self.features.add("runtime_index")
        self._mark_loop(sc, carried)
        self.loop_body(inner, carried, exits)
        self.ind -= 1
        self._after_loop(sc, inner, carried)

    def _first_input(self, sc):
        for n in ("x", "y", "z"):
            if n in sc.vars and len(sc.vars[n].shape) >= 1:
                return n
        return None

    def st_for_tensor(self, sc):
        seqs = [(n, i) for n, i in sc.vars.items() if len(i.shape) in (1, 2)
                and (n[0] in "vxyzt" or n.startswith("self."))]
        if not seqs:
            return self.st_assign(sc)
        carried = [self._carried(sc)]
        n, info = self.pick(seqs)
        r = self.fresh("r")
        form = self.rng.randrange(4)
        inner_vars = {}
        counter = None
        if form == 0:
            self.emit("for %s in %s:" % (r, n))
        elif form == 1:
            i = self.fresh("i")
            self.emit("for %s, %s in enumerate(%s):" % (i, r, n))
            self.features.add("enumerate")
            counter = (i, info.shape[0])
        elif form == 2:
            others = [(m, j) for m, j in sc.vars.items() if len(j.shape) in (1, 2) and m != n
                      and m[0] in "vxyzt"]
            if others:
                m, j = self.pick(others)
                r2 = self.fresh("r")
                self.emit("for %s, %s in zip(%s, %s):" % (r, r2, n, m))
                inner_vars[r2] = _Info(j.shape[1:], robust=j.robust, active=j.active)
                self.features.add("zip")
            else:
                self.emit("for %s in %s:" % (r, n))
        else:
            self.emit("for %s in %s:" % (r, n))
        self.features.add("for_tensor")
        exits, inner = self._loop_setup(sc, True)
        self.ind += 1
        inner.vars[r] = _Info(info.shape[1:], robust=info.robust, active=info.active)
        inner.vars.update(inner_vars)
        if counter:
            inner.counters.append(counter)
        self._mark_loop(sc, carried)
        self.loop_body(inner, carried, exits)
        self.ind -= 1
        self._after_loop(sc, inner, carried)

    def st_for_other(self, sc):
        """Loops unrolled while compiling: over a tuple of tensors, or over sub-Cells."""
        layers = [c for c in sc.calls.values() if c.name == "self.layers" and
                  self.can_make(sc, c.args[0])]
        if layers and self.chance(0.5):
            return self.st_layers(sc, layers[0])
        S = self.pick_shape(sc)
        items = [self.expr(sc, S, 1) for _ in range(self.rng.choice([2, 3]))]
        acc = self.fresh()
        t = self.fresh("t")
        code, act = self.expr(sc, S, 0)
        self.emit("%s = %s" % (acc, code))
        self.emit("for %s in (%s):" % (t, ", ".join(c for c, _ in items) + ","))
        self.ind += 1
        inner = _Scope(sc, depth=sc.depth + 1)
        inner.vars[t] = _Info(S, active=any(a for _, a in items))
        if self.chance(0.4):
            self.emit("if %s:" % self.condition(inner))
            self.emit("    %s" % self.pick(["break", "continue"]))
        self.emit("%s = %s" % (acc, self.squash("%s + %s * 0.5" % (acc, t))))
        self.ind -= 1
        sc.vars[acc] = _Info(S, active=act or any(a for _, a in items))
        sc.must.append(acc)
        self.features.add("for_tuple")

    def st_layers(self, sc, c):
        """``for layer in self.layers: h = layer(h)``, unrolled over a CellList."""
        S = c.args[0]
        h = self.fresh()
        code, act = self.expr(sc, S, 1)
        self.emit("%s = %s" % (h, code))
        lay = self.fresh("layer")
        self.emit("for %s in self.layers:" % lay)
        self.emit("    %s = %s(%s)" % (h, lay, h))
        sc.vars[h] = _Info(S, active=act)
        self.note_call(sc, c)
        if c.has_loop:
            self.protected.add(h)
        self.features.add("cell_list")
        sc.must.append(h)

    def st_stack(self, sc):
        S = self.pick_shape(sc)
        if len(S) > 1:
            S = S[1:]
        acc = self.fresh("acc")
        self.features.add("list_stack")
        if self.chance(0.5):
            k = self.fresh("k")
            self.emit("%s = []" % acc)
            self.emit("for %s in range(%d):" % (k, self.K))
            self.ind += 1
            inner = _Scope(sc, depth=sc.depth + 1)
            code, act = self.expr(inner, S, 1)
            self.emit("%s.append(%s * (%s + 1))" % (acc, self.squash(code), k))
            self.ind -= 1
            n = self.K
        else:
            items = [self.expr(sc, S, 1) for _ in range(2)]
            self.emit("%s = [%s]" % (acc, items[0][0]))
            self.emit("%s.append(%s)" % (acc, self.squash(items[1][0])))
            act = items[0][1] or items[1][1]
            n = 2
        name = self.fresh()
        axis = self.rng.randrange(len(S) + 1)
        self.emit("%s = np.stack(%s%s)" % (name, acc, ", axis=%d" % axis if axis else ""))
        shape = S[:axis] + (n,) + S[axis:]
        sc.vars[name] = _Info(shape, active=act)
        # reduce the stacked value back into something of a usual rank
        red = self.fresh()
        self.emit("%s = np.sum(%s, axis=%d)" % (red, name, axis))
        sc.vars[red] = _Info(S, active=act)
        del sc.vars[name]
        sc.must.append(red)

    def st_def(self, sc):
        """A nested ``def`` capturing tensors (and Parameters in a Cell)."""
        A = self.pick_shape(sc)
        name = self.fresh("g")
        self.emit("def %s(a):" % name)
        self.ind += 1
        inner = _Scope(sc, depth=sc.depth + 1, returns=False, ret=None)
        inner.vars = {k: v for k, v in sc.vars.items()}
        inner.vars["a"] = _Info(A, active=True)
        inner.calls = {k: v for k, v in sc.calls.items()}
        R = self.pick_shape(inner)
        n_st = self.rng.choice([0, 1, 2])
        for _ in range(n_st):
            self.st_assign(inner)
        if self.chance(0.3) and not self.straight:
            cond = self.condition(inner)
            self.emit("if %s:" % cond)
            self.ind += 1
            code, _ = self.expr(_Scope(inner), R, 1)
            self.emit("return %s" % code)
            self.ind -= 1
        code, _ = self.expr(inner, R, 2)
        # always read the argument, so the gradient flows through it
        code = self.fold(inner, self.squash(code), R, ["a"])
        self.emit("return %s" % code)
        self.ind -= 1
        sc.calls[name] = _Callable(name, [A], [R])
        self.features.add("nested_def")

    def st_lambda(self, sc):
        A = self.pick_shape(sc)
        name = self.fresh("lam")
        inner = _Scope(sc)
        inner.vars["u"] = _Info(A, active=True)
        code, _ = self.expr(inner, A, 1, pure=True)
        self.emit("%s = lambda u: np.sin(u) * (%s)" % (name, code))
        sc.calls[name] = _Callable(name, [A], [A])
        self.features.add("lambda")

    # ------------------------------------------------------- whole programs
    def params(self):
        """Parameters of Net: ``(attr, shape)``."""
        N, M, P = self.N, self.M, self.P
        shapes = [(M, P), (P,), (N, M), (M,)]
        k = self.rng.choice([1, 2, 2, 3])
        return [("w%d" % j, s) for j, s in enumerate(self.rng.sample(shapes, k))]

    def gen_callable_function(self, name, args, ret, is_method=False, cell_params=()):
        """A module-level helper (or a Cell's method / construct) body, into lines."""
        saved_out, saved_ind = self.out, self.ind
        self.out, self.ind = [], 1 + (1 if is_method else 0)
        sc = _Scope()
        sc.cell = is_method
        for (an, S) in args:
            sc.vars[an] = _Info(S, active=True)
        for attr, S in cell_params:
            sc.vars["self." + attr] = _Info(S, robust=True)
        if ret is None:
            ret = tuple(self.pick_shape(sc) for _ in range(self.rng.choice([1, 1, 2])))
        elif ret == "single":
            ret = (self.pick_shape(sc),)
        sc.ret = ret
        sc.depth = 1      # helpers hold at most one level of control flow
        loops_before = (self.has_loop, self.fn_returned)
        self.has_loop = self.fn_returned = False
        self.block(sc, self.rng.choice([1, 2, 3]))
        self.emit("return %s" % self.ret_expr(sc, fold=sc.must + [a for a, _ in args],
                                              squash=True))
        has_loop = self.has_loop
        self.has_loop, self.fn_returned = loops_before
        body, self.out, self.ind = self.out, saved_out, saved_ind
        return body, has_loop, ret

    def helper(self, sc_calls, shapes, method_params=None):
        name = self.fresh("helper")
        args = [("a", self.pick(shapes)), ("b", self.pick(shapes))][:self.rng.choice([1, 2])]
        body, has_loop, ret = self.gen_callable_function(name, args, None)
        src = ["def %s(%s):" % (name, ", ".join(a for a, _ in args))] + body
        if len(ret) == 1 and self.chance(0.25):
            src.insert(0, self.decorator())
        self.module.append("\n".join(src))
        sc_calls[name] = _Callable(name, [s for _, s in args], ret, has_loop=has_loop)
        self.features.add("helper")
        return name

    def subcell(self, shapes):
        name = "Sub%d" % self.counter
        self.counter += 1
        A = self.pick(shapes)
        params = [("w", self.pick([(A[-1] if A else self.M, self.P), (self.P,), A or (self.M,)]))]
        params = [(n, s) for n, s in params if len(s) >= 1]
        body, has_loop, (R,) = self.gen_callable_function(
            "construct", [("a", A)], "single", is_method=True, cell_params=params)
        lines = ["class %s(nn.Cell):" % name, "    def __init__(self):",
                 "        super().__init__()"] + _CELL_ATTRS
        for attr, S in params:
            lines.append("        self.%s = Parameter(Tensor(%s), name=%r)"
                         % (attr, _literal(_robust_values(self.nprng, S)), attr))
        lines += ["", "    def construct(self, a):"] + body
        self.module.append("\n".join(lines))
        self.features.add("subcell")
        return name, A, R, has_loop

    def program(self):
        r = self.rng
        N, M, P = self.N, self.M, self.P
        inputs = [("x", (N, M))]
        for nm in ("y", "z"):
            if self.chance(0.55 if nm == "y" else 0.3):
                inputs.append((nm, self.pick([(N, M), (M,), (M, P), (N,)])))
        kinds = self.input_kinds(inputs)
        tensor_inputs = [self.chance(0.35 if self.kind == "cell" else 0.15)
                         and k in ("float", "int") for k in kinds]
        sc = _Scope()
        sc.top = True
        for (nm, S), k in zip(inputs, kinds):
            if nm not in ("k", "b"):
                sc.vars[nm] = _Info(S, robust=True, active=True)
        shapes = [(N, M), (M,), (N,), (M, P), (P,), ()]
        # module-level helpers
        for _ in range(r.choice([0, 0, 1, 2])):
            self.helper(sc.calls, [s for s in shapes if s != ()])
        cell_lines = []
        if self.kind == "cell":
            sc.cell = True
            params = self.params()
            for attr, S in params:
                sc.vars["self." + attr] = _Info(S, robust=True)
            init = ["class Net(nn.Cell):", "    def __init__(self):",
                    "        super().__init__()"]
            for attr, S in params:
                init.append("        self.%s = Parameter(Tensor(%s), name=%r)"
                            % (attr, _literal(_robust_values(self.nprng, S)), attr))
            init += _CELL_ATTRS
            for _ in range(r.choice([0, 1, 1, 2])):
                cls, A, R, has_loop = self.subcell([s for s in shapes if s != ()])
                attr = "sub%d" % self.counter
                self.counter += 1
                init.append("        self.%s = %s()" % (attr, cls))
                sc.calls["self." + attr] = _Callable("self." + attr, [A], [R], has_loop=has_loop)
            if self.chance(0.3):
                S = self.pick([s for s in shapes if s != ()])
                cls = []
                loops = []
                for _ in range(2):
                    # same input and output shape, so they can be chained
                    name, A, R, has_loop = self._same_shape_subcell(S)
                    cls.append(name)
                    loops.append(has_loop)
                init.append("        self.layers = nn.CellList([%s])"
                            % ", ".join("%s()" % c for c in cls))
                sc.calls["self.layers"] = _Callable(
                    "self.layers", [S], [S], has_loop=any(loops))
            if self.chance(0.4):
                # a method of the Cell
                A = self.pick([s for s in shapes if s != ()])
                body, has_loop, (R,) = self.gen_callable_function(
                    "helper", [("a", A)], "single", is_method=True, cell_params=params)
                cell_lines += ["", "    def method(self, a):"] + body
                sc.calls["self.method"] = _Callable("self.method", [A], [R], has_loop=has_loop)
                self.features.add("method")
            header = init + cell_lines + ["", "    def construct(self, %s):"
                                          % ", ".join(n for n, _ in inputs)]
            self.ind = 2
        else:
            header = ["def f(%s):" % ", ".join(n for n, _ in inputs)]
            self.ind = 1
        self.features.add(self.kind)
        if self.straight:
            self.features.add("straight")
        # the output: one tensor, or a tuple of two
        n_out = 2 if self.chance(0.25) else 1
        deco = self.decorator(entry=True) if n_out == 1 and self.chance(0.2) else None
        if deco:
            at = len(header) - 1         # ``def f`` or ``def construct``
            header.insert(at, header[at][:len(header[at]) - len(header[at].lstrip())] + deco)
            self.features.add("decorated_entry")
        sc.ret = tuple(self.pick_shape(sc) for _ in range(n_out))
        self.out = []
        if "b" in dict(inputs):
            self.st_bool_input(sc, dict(inputs)["b"])
        if "self.layers" in sc.calls and self.can_make(sc, sc.calls["self.layers"].args[0]) \
                and self.chance(0.6):
            self.st_layers(sc, sc.calls["self.layers"])
        self.block(sc, r.choice([2, 3, 4, 5]))
        self.emit("return %s" % self.ret_expr(sc, fold=sc.must))
        body = self.out
        mod = ["import functools"] if self.decorators else []
        mod += ["import numpy as np", "from s2sad import nn, ops, Tensor, Parameter", "",
                "FLAG = True", "K = %d" % self.K, "MODE = 'tanh'", ""]
        for name in sorted(self.decorators):
            mod += ["", "\n".join(_DECORATORS[name]), ""]
        for block in self.module:
            mod += ["", block, ""]
        mod += [""] + header + body + [""]
        if self.global_changes:
            self.features.add("global_change")
        prog = Program(self.seed, "\n".join(mod), self.kind, inputs, n_out, self.features,
                       self.has_loop, tensor_inputs, kinds, self.global_changes,
                       self.complex_input)
        prog.has_branch = self.has_branch
        prog.avoid = self.avoid
        return prog

    def input_kinds(self, inputs):
        """Add inputs that are not float arrays; return each input's kind.

        ``s``: a 0-d input given as ``np.float64``; ``y`` or ``z`` may be an integer
        array of -1s and 1s, read like any input; ``k``: an integer array read only
        as ``c * np.sum(k)`` (an exact integer gradient); ``b``: a bool array read
        by ``np.where(b > 0.5, ...)`` (a zero gradient) or ``... * b``.
        """
        N, M = self.N, self.M
        kinds = ["float"] * len(inputs)
        if self.chance(0.2):
            inputs.append(("s", ()))
            kinds.append("npscalar")
            self.features.add("npscalar_input")
        if len(inputs) > 1 and inputs[1][0] == "y" and self.chance(0.6):
            j = max(j for j, (nm, _) in enumerate(inputs) if nm in "yz")
            kinds[j] = "int"
            self.features.add("int_input")
        if self.chance(0.12):
            inputs.append(("k", self.pick([(N,), (M,), (N, M)])))
            kinds.append("int")
            self.int_linear = "%d.0 * np.sum(k)" % self.pick([1, 2, 3])
            self.features.add("int_input_linear")
        if self.chance(0.12):
            inputs.append(("b", self.pick([(N, M), (M,)])))
            kinds.append("bool")
            self.features.add("bool_input")
        self.complex_input = self.chance(0.1)
        if self.complex_input:
            self.features.add("complex_input")
        self.typed_inputs = any(k != "float" for k in kinds)
        return kinds

    def st_bool_input(self, sc, S):
        """Read the bool input ``b``: as a mask of ``np.where`` or as a factor."""
        a, act_a = self.expr(sc, S, 1)
        name = self.fresh()
        if self.chance(0.5):
            c, act_c = self.expr(sc, S, 1)
            self.emit("%s = np.where(b > 0.5, %s, %s)" % (name, a, c))
            act_a = act_a or act_c
            self.features.add("bool_where")
        else:
            self.emit("%s = (%s) * b" % (name, a))
        sc.vars[name] = _Info(S, active=act_a)
        sc.must.append(name)

    def _same_shape_subcell(self, S):
        name = "Sub%d" % self.counter
        self.counter += 1
        params = [("w", S)]
        body, has_loop, _ = self.gen_callable_function(
            "construct", [("a", S)], (S,), is_method=True, cell_params=params)
        lines = ["class %s(nn.Cell):" % name, "    def __init__(self):",
                 "        super().__init__()"] + _CELL_ATTRS + [
                 "        self.w = Parameter(Tensor(%s), name='w')"
                 % _literal(_robust_values(self.nprng, S)),
                 "", "    def construct(self, a):"] + body
        self.module.append("\n".join(lines))
        return name, S, S, has_loop


def generate(seed, kind=None, avoid=None):
    """The program of this seed (``kind``: ``"cell"``, ``"function"`` or random).

    ``avoid``: names of ``KNOWN_BUGS`` whose triggers are not generated (default:
    all of them); ``()`` generates everything.
    """
    return _Gen(seed, kind, avoid).program()


# --------------------------------------------------------------- hypothesis
def seeds():
    """Hypothesis strategy of program seeds."""
    from hypothesis import strategies as st
    return st.integers(min_value=0, max_value=2 ** 31 - 1)


def programs(kind=None, avoid=None):
    """Hypothesis strategy of generated programs."""
    return seeds().map(lambda s: generate(s, kind, avoid))


# ------------------------------------------------------------------- loading
def write_program(program, directory, name=None):
    """Write the program's source to ``directory/<name>.py``; return the path."""
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:10]
    name = name or "gen_%d_%s" % (program.seed, digest)
    path = os.path.join(str(directory), name + ".py")
    with open(path, "w") as f:
        f.write(program.source)
    return path


def load_module(path):
    """Import the module at ``path`` under a unique name."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load(program, directory):
    return load_module(write_program(program, directory))


def target_of(program, module):
    return module.Net() if program.kind == "cell" else module.f


def clear_caches():
    """Drop compiled code, so memory stays bounded across thousands of programs."""
    from s2sad import driver as G
    from s2sad.api import vjp_jvp
    from s2sad.frontend import parse
    G.cache.clear()
    vjp_jvp._jvp_cache.clear()
    parse._cache.clear()


# ------------------------------------------------------------------ checking
class Mismatch(AssertionError):
    """A gradient disagrees with finite differences (or has the wrong structure)."""


class GeneratorError(Exception):
    """The generated program itself is wrong (it fails when run eagerly)."""


class Unreliable(Exception):
    """Finite differences cannot check this program (it is too steep here)."""


def _raw(a):
    return np.asarray(getattr(a, "_data", a), dtype=np.float64)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        out = []
        for e in x:
            out.extend(_leaves(e))
        return out
    return [x]


def _weighted(out, sens):
    return float(sum(np.sum(_raw(o) * _raw(s)) for o, s in zip(_leaves(out), _leaves(sens))))


def _fd_grads(net, args, params, sens, eps=1e-6):
    """Element-wise central differences of ``<net(*args), sens>``: (inputs, params)."""
    from s2sad import Tensor
    args = list(args)

    def grad(base, put):
        """Differences over each element of ``base``; ``put(x)`` makes ``x`` current."""
        g = np.zeros_like(base)
        for k in range(base.size):
            vals = []
            for e in (eps, -eps):
                x = base.copy()
                x.reshape(-1)[k] += e
                put(x)
                vals.append(_weighted(net(*args), sens))
            g.reshape(-1)[k] = (vals[0] - vals[1]) / (2 * eps)
        return g

    g_in = []
    for i, a in enumerate(args):
        g_in.append(grad(_raw(a).copy(), lambda x, i=i, a=a: args.__setitem__(i, _like(x, a))))
        args[i] = a
    g_p = []
    for p in params:
        base = _raw(p).copy()
        g_p.append(grad(base, p.set_data))
        p.set_data(base)
    return g_in, g_p


def _like(x, a):
    """The float64 array ``x`` as the same kind of value as ``a``."""
    from s2sad import Tensor
    if isinstance(a, Tensor):
        return Tensor(x)
    return np.float64(x) if isinstance(a, np.generic) else x


def _close(got, want, what, rtol=1e-5, atol=1e-6):
    got = _raw(got)
    if got.shape != want.shape:
        raise Mismatch("%s: shape %s, expected %s" % (what, got.shape, want.shape))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise Mismatch("%s: max difference %.3g\n got %s\nwant %s"
                       % (what, np.max(np.abs(got - want)), got, want))


def _check_type(g, like, what):
    from s2sad import Tensor
    want = Tensor if isinstance(like, Tensor) else np.ndarray
    if isinstance(like, np.generic):
        want = type(like)        # a NumPy scalar's gradient is a NumPy scalar of its type
    if not isinstance(g, want):
        raise Mismatch("%s: a %s, expected a %s" % (what, type(g).__name__, want.__name__))


def check_flags(net, args, rng, combos=None):
    """Every GradOperation flag combination on a Cell: structure and values vs FD."""
    from s2sad import ops, ParameterTuple, Tensor
    params = list(net.trainable_params())
    out = net(*args)
    ones = tuple(np.ones_like(_raw(o)) for o in _leaves(out))
    ones = ones[0] if not isinstance(out, tuple) else ones
    rand = tuple(rng.standard_normal(np.shape(_raw(o))) for o in _leaves(out))
    rand = rand[0] if not isinstance(out, tuple) else rand
    if isinstance(out, tuple):
        rand = tuple(Tensor(s) if isinstance(o, Tensor) else s for s, o in zip(rand, out))
    elif isinstance(out, Tensor):
        rand = Tensor(rand)
    fd = {False: _fd_grads(net, args, params, ones), True: _fd_grads(net, args, params, rand)}
    combos = combos or [(a, b, c) for a in (False, True) for b in (False, True)
                        for c in (False, True)]
    for get_all, get_by_list, sens_param in combos:
        flags = "get_all=%s, get_by_list=%s, sens_param=%s" % (get_all, get_by_list, sens_param)
        weights = None
        single = False
        if get_by_list:
            form = rng.integers(3) if len(params) == 1 else rng.integers(2)
            if form == 2:
                weights, single = params[0], True
            elif form == 1:
                weights = list(params)
            else:
                weights = ParameterTuple(params)
        gf = ops.GradOperation(get_all=get_all, get_by_list=get_by_list,
                               sens_param=sens_param)(net, weights)
        call = args + ((rand,) if sens_param else ())
        res = gf(*call)
        want_in, want_p = fd[sens_param]
        if get_by_list:
            if get_all:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise Mismatch("%s: expected (inputs, weights), got %r" % (flags, type(res)))
                res_in, res_w = res
            else:
                res_in, res_w = None, res
            if single:
                _check_type(res_w, params[0], flags + ": weight gradient")
                _close(res_w, want_p[0], flags + ": gradient of %s" % params[0].name)
            else:
                if not isinstance(res_w, tuple) or len(res_w) != len(params):
                    raise Mismatch("%s: weight gradients %r, expected a tuple of %d"
                                   % (flags, type(res_w), len(params)))
                for g, p, w in zip(res_w, params, want_p):
                    _check_type(g, p, flags + ": gradient of " + p.name)
                    _close(g, w, flags + ": gradient of " + p.name)
        else:
            res_in = res if get_all else None
            if not get_all:
                _check_type(res, args[0], flags + ": gradient of the first input")
                _close(res, want_in[0], flags + ": gradient of the first input")
        if res_in is not None:
            if not isinstance(res_in, tuple) or len(res_in) != len(args):
                raise Mismatch("%s: input gradients %r, expected a tuple of %d"
                               % (flags, type(res_in), len(args)))
            for j, (g, a, w) in enumerate(zip(res_in, args, want_in)):
                _check_type(g, a, flags + ": gradient of input %d" % j)
                _close(g, w, flags + ": gradient of input %d" % j)


def fd_reliable(target, args, params, rng, tol=1e-4):
    """Whether central differences are trustworthy here: the directional derivative
    of a random projection of the output, in a random direction of the inputs and
    Parameters, is the same with steps 1e-6 and 1e-5 (a branch crossed by the
    step, or a function too steep, makes them differ)."""
    from s2sad import Tensor
    out = target(*args)
    u = [rng.standard_normal(np.shape(_raw(o))) for o in _leaves(out)]
    v = [rng.standard_normal(np.shape(_raw(a))) for a in args]
    w = [rng.standard_normal(np.shape(_raw(p))) for p in params]
    base = [_raw(p).copy() for p in params]

    def at(e):
        xs = [Tensor(_raw(a) + e * d) if isinstance(a, Tensor) else _raw(a) + e * d
              for a, d in zip(args, v)]
        for p, b, d in zip(params, base, w):
            p.set_data(b + e * d)
        try:
            return _weighted(target(*xs), u)
        finally:
            for p, b in zip(params, base):
                p.set_data(b)

    d1 = (at(1e-6) - at(-1e-6)) / 2e-6
    d2 = (at(1e-5) - at(-1e-5)) / 2e-5
    return abs(d1 - d2) <= tol * max(1.0, abs(d1)), (d1, d2)


class Outcome:
    """What happened to one program: ``status`` is ok, mismatch, internal, rejected,
    generator (the program itself is wrong) or skipped (finite differences cannot
    check it: too steep where it is evaluated)."""

    def __init__(self, program, status, message="", stage=""):
        self.program = program
        self.status = status
        self.message = message
        self.stage = stage

    @property
    def ok(self):
        return self.status in ("ok", "skipped")

    def __repr__(self):
        return "Outcome(seed=%d, %s, %s)" % (self.program.seed, self.status, self.stage)


def documented_error(exc):
    """Whether ``exc`` is one of the errors s2sad documents for users."""
    from s2sad.errors import S2SADError
    from s2sad.runtime import UndefinedVariableError
    return isinstance(exc, (S2SADError, UndefinedVariableError))


class Timeout(Exception):
    """A program took longer than the time allowed."""


def _alarm(seconds):
    import signal
    if not seconds or not hasattr(signal, "SIGALRM"):
        return lambda: None

    def handler(signum, frame):
        raise Timeout("no result after %d s" % seconds)
    previous = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)

    def cancel():
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return cancel


def formatted(e):
    """The traceback of ``e`` as text (the one-argument format_exception is Python 3.10+)."""
    return "".join(traceback.format_exception(type(e), e, e.__traceback__))


def check_program(program, directory, order2=True, flags=True, seed=0, timeout=None):
    """Run every check on ``program``; return an ``Outcome`` (never raises).

    ``timeout``: seconds after which the program counts as a failure (an
    internal error, or a generator error if it hangs when run eagerly).
    """
    cancel = _alarm(timeout)
    try:
        return _check_program(program, directory, order2, flags, seed)
    finally:
        cancel()


def _check_program(program, directory, order2, flags, seed):
    import s2sad
    rng = np.random.default_rng(seed + program.seed)
    stage = "import"
    try:
        module = load(program, directory)
        target = target_of(program, module)
        args = program.make_args()
        stage = "eager"
        out = target(*args)
        if not all(np.all(np.isfinite(_raw(o))) and np.max(np.abs(_raw(o)), initial=0) < 1e6
                   for o in _leaves(out)):
            raise GeneratorError("output is not finite or too large: %r" % (out,))
        params = list(target.trainable_params()) if program.kind == "cell" else []
        ok, ds = fd_reliable(target, args, params, rng)
        if not ok:
            raise Unreliable("finite differences are not reliable here (steps 1e-6 and "
                             "1e-5 give %r)" % (ds,))
    except Unreliable as e:
        return Outcome(program, "skipped", str(e), "fd")
    except Exception as e:
        return Outcome(program, "generator", formatted(e), stage)
    try:
        stage = "check_grads"
        s2sad.check_grads(target, args, order=1, modes=("rev", "fwd"))
        if program.kind == "cell" and flags:
            stage = "flags"
            check_flags(target, args, rng)
        if order2:
            stage = "order2"
            s2sad.check_grads(target, args, order=2, modes=("rev", "fwd"))
        if program.typed or program.complex_input:
            stage = "input_types"
            check_input_types(program, target, args)
        if program.global_changes:
            stage = "globals"
            check_global_changes(program, module, target, args, rng)
    except Unreliable as e:
        return Outcome(program, "skipped", str(e), stage)
    except (Mismatch, s2sad.GradCheckError) as e:
        return Outcome(program, "mismatch", "%s: %s" % (type(e).__name__, e), stage)
    except Exception as e:
        status = "rejected" if documented_error(e) else "internal"
        return Outcome(program, status, formatted(e), stage)
    return Outcome(program, "ok", "", stage)


# --------------------------------------------------- inputs of other types, globals
def _ones_like_output(out):
    ones = tuple(np.ones_like(_raw(o)) for o in _leaves(out))
    return ones if isinstance(out, tuple) else ones[0]


def _exact_or_not(fd, kind):
    """Whether the float gradient ``fd`` (central differences) survives a cast to
    the input's integer or bool dtype: ``(True, values)`` or ``(False, None)``.
    Too close to call: ``Unreliable``."""
    near = np.round(fd)
    off = np.abs(fd - near)
    if kind == "bool":
        off = np.where((near == 0) | (near == 1), off, 1.0)
    if np.all(off < 1e-6):
        return True, near
    if np.any(off > 1e-4):
        return False, None
    raise Unreliable("an integer gradient too close to an integer to tell: %r" % (fd,))


def _data(g):
    return np.asarray(getattr(g, "_data", g))


def check_input_types(program, target, args):
    """Integer, bool, NumPy-scalar and complex inputs (docs/semantics.md, "Input types").

    ``args`` are the float64 versions of the inputs; the program run eagerly on
    them gives the reference.  With the inputs in their own types, every input
    differentiated: float and NumPy-scalar inputs get their gradient in their own
    type; an integer or bool input gets its gradient in its dtype when the cast
    changes no value, else the call is a TypeError naming it.  Integer and bool
    inputs left out of ``grad_position`` change nothing.  A complex first input
    is checked as ``_check_complex_input`` says.
    """
    import s2sad
    from s2sad import ops
    typed = program.make_args(typed=True)
    kinds = program.input_kinds
    names = [n for n, _ in program.inputs]
    want, _ = _fd_grads(target, args, [], _ones_like_output(target(*args)))
    expect, refused = [], []
    for j, (kind, fd) in enumerate(zip(kinds, want)):
        if kind in ("int", "bool"):
            exact, values = _exact_or_not(fd, kind)
            expect.append(values)
            if not exact:
                refused.append(j)
        else:
            expect.append(fd)
    if any(k != "float" for k in kinds):
        try:
            res = ops.GradOperation(get_all=True)(target)(*typed)
        except TypeError as e:
            if "is not exact in its dtype" not in str(e):
                raise                   # not the documented error: an internal one
            named = ["position %d ('%s') is not exact in its dtype" % (j, names[j])
                     for j in refused]
            if not any(n in str(e) for n in named):
                _refused_within_fd(target, args, kinds, names, want, str(e))
                raise Mismatch("every input differentiated: %s; expected a TypeError naming "
                               "one of %s" % (e, [names[j] for j in refused]))
        else:
            if refused:
                raise Mismatch("every input differentiated: no error, but the gradient of %s "
                               "is not exact in its dtype (%r)"
                               % (names[refused[0]], want[refused[0]]))
            _check_typed(res, typed, kinds, expect, "every input differentiated")
        kept = tuple(j for j, k in enumerate(kinds) if k in ("float", "npscalar"))
        if len(kept) < len(kinds):
            res = s2sad.grad(target, grad_position=kept)(*typed)
            _check_typed(res, [typed[j] for j in kept], [kinds[j] for j in kept],
                         [expect[j] for j in kept], "grad_position=%r" % (kept,))
    if program.complex_input:
        # the other inputs in float64: integer inputs' exactness was checked above
        _check_complex_input(target, (_raw(args[0]) + 0.5j,) + tuple(args[1:]))


def _refused_within_fd(target, args, kinds, names, want, message):
    """``Unreliable`` where s2sad refused an integer input whose gradient central
    differences put within 1e-6 of an integer: a true gradient of 2e-7 is not
    exact, and differences cannot tell it from 0.  Only when the float64
    gradient s2sad computes agrees with the differences there; else nothing."""
    from s2sad import ops
    for j, (kind, name) in enumerate(zip(kinds, names)):
        if kind not in ("int", "bool") or \
                "position %d ('%s') is not exact in its dtype" % (j, name) not in message:
            continue
        got = _raw(ops.GradOperation(get_all=True)(target)(*args)[j])
        near = np.round(want[j])
        if np.all(np.abs(got - near) <= 1e-6) and np.allclose(got, want[j], atol=1e-6):
            raise Unreliable("the gradient of integer input %r is within 1e-6 of an integer "
                             "(%r): too close for differences to say it is not one" % (name, got))


def _check_complex_input(target, args):
    """A complex first input: its gradient is ``df/dx - 1j df/dy`` of the sum of the
    outputs (JAX's convention; central differences along both directions), or the
    program is refused clearly: a CompileError naming a function without a complex
    rule, or a TypeError saying the output is complex."""
    from s2sad import ops
    from s2sad.errors import CompileError
    try:
        got = ops.GradOperation(get_all=True)(target)(*args)[0]
    except CompileError as e:
        if "has no complex rule" not in str(e):
            raise Mismatch("a complex input: %s" % e)
        return
    except TypeError as e:
        if "needs a real-valued output" not in str(e):
            raise Mismatch("a complex input: %s" % e)
        return
    z = args[0]

    def total(v):
        return sum(np.sum(_data(o)) for o in _leaves(target(v, *args[1:])))
    want = np.zeros_like(z)
    h = 1e-6
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = h
        dx = (total(z + e) - total(z - e)) / (2 * h)
        dy = (total(z + 1j * e) - total(z - 1j * e)) / (2 * h)
        want[i] = dx - 1j * dy
    if not np.allclose(_data(got), want, rtol=1e-4, atol=1e-5 * (1 + np.max(np.abs(want)))):
        raise Mismatch("a complex input: gradient %r, finite differences %r" % (got, want))


def _check_typed(res, typed, kinds, expect, what):
    if not isinstance(res, tuple) or len(res) != len(typed):
        raise Mismatch("%s: %r, expected a tuple of %d" % (what, type(res), len(typed)))
    for j, (g, a, kind, w) in enumerate(zip(res, typed, kinds, expect)):
        where = "%s: gradient of input %d" % (what, j)
        _check_type(g, a, where)
        if kind in ("int", "bool"):
            if _data(g).dtype != _data(a).dtype or not np.array_equal(_data(g), w):
                raise Mismatch("%s: %r, expected %r exactly in %s"
                               % (where, _data(g), w, _data(a).dtype))
        else:
            _close(g, w, where)


def check_global_changes(program, module, target, args, rng):
    """One gradient function, called before and after the module's globals change
    (``program.global_changes``), against central differences of the program as
    it is at each call."""
    from s2sad import ops, ParameterTuple
    params = list(target.trainable_params()) if program.kind == "cell" else []
    if params:
        gf = ops.GradOperation(get_all=True, get_by_list=True)(target, ParameterTuple(params))
    else:
        gf = ops.GradOperation(get_all=True)(target)

    def compare(what):
        want_in, want_p = _fd_grads(target, args, params, _ones_like_output(target(*args)))
        res = gf(*args)
        res_in, res_p = res if params else (res, ())
        for j, (g, w) in enumerate(zip(res_in, want_in)):
            _close(g, w, "%s: gradient of input %d" % (what, j))
        for g, p, w in zip(res_p, params, want_p):
            _close(g, w, "%s: gradient of %s" % (what, p.name))

    compare("before the globals change")
    for change in program.global_changes:
        exec(change, module.__dict__)
    ok, ds = fd_reliable(target, args, params, rng)
    if not ok:
        raise Unreliable("after the globals change, steps 1e-6 and 1e-5 give %r" % (ds,))
    compare("after " + "; ".join(program.global_changes))
