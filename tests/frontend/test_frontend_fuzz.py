"""Frontend fuzzing: random and mutated sources fed to the compiler.

Sources are random programs from ``program_gen`` and mutations of them: lines
deleted, duplicated or swapped, operators and functions replaced, and
unsupported statements inserted (``try``, ``with``, ``global``, ``yield``,
``async def``, ``del``, ``import``, dict/set displays, ``:=``, star-args,
keyword-only arguments, decorators, f-strings, chained comparisons,
attribute assignment, ``nonlocal``).  A source Python itself refuses to
compile is skipped: that is Python's error, not s2sad's.

Each source is written to a file, imported, and differentiated with
``GradOperation()(fn)(*args)``.  The contract:

- it compiles and runs, or
- it raises one of s2sad's documented errors (``CompileError`` and its
  subclasses -- with the file and line in the message --, ``RuleError``,
  ``UndefinedVariableError``, the ``TypeError``/``ValueError`` MindSpore's
  ``GradOperation`` raises), or
- the user's own computation fails: then running the function eagerly (plain
  Python, no s2sad) fails too, and s2sad may fail the same way (NumPy's error
  while running the user's computation).

Anything else -- an internal ``AttributeError``, ``KeyError``,
``AssertionError``, ``IndexError``, ``NameError``, a ``SyntaxError`` in the
code s2sad generated, or any error raised by generated code for a program
that runs fine eagerly -- fails the test, with the source in the message.
"""
import os
import random
import sys
import traceback
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from s2sad import ops
from s2sad.runtime import UndefinedVariableError
from s2sad.errors import CompileError, RuleError

import program_gen as pg
from campaign import scaled

S2SAD_DIR = os.path.dirname(os.path.abspath(sys.modules["s2sad"].__file__))

# statements s2sad does not support, written at the indentation of the line
# they are inserted before ("{x}" is a tensor in scope; "{f}" the cell/function)
UNSUPPORTED = {
    "try": ["try:", "    {x} = {x} * 2.0", "except Exception:", "    pass"],
    "with": ["with open('/dev/null') as fh:", "    {x} = {x} * 2.0"],
    "global": ["global FLAG"],
    "yield": ["yield {x}"],
    "async_def": ["async def co(a):", "    return a"],
    "del": ["del {x}"],
    "import": ["import math"],
    "import_from": ["from math import pi"],
    "dict": ["d = {{'a': {x}}}", "{x} = d['a'] * 1.0"],
    "set": ["s = {{1, 2}}"],
    "walrus": ["{x} = ({x} * 2.0 if (n := 2) > 1 else {x})"],
    "star_args": ["def h(*a):", "    return a[0] * 2.0", "{x} = h(*({x},))"],
    "kwonly": ["def h(a, *, k=2.0):", "    return a * k", "{x} = h({x}, k=3.0)"],
    "decorator": ["@staticmethod", "def h(a):", "    return a * 2.0", "{x} = h({x})"],
    "fstring": ["name = f'{{{x}}}'"],
    "chained": ["if 0 < {x}.sum() < 3:", "    {x} = {x} * 2.0"],
    "attr_self": ["self.cache = {x}"],
    "attr_other": ["{x}.y = 1"],
    "nonlocal": ["def h():", "    nonlocal {x}", "    {x} = {x} * 2.0", "h()"],
    "raise": ["raise ValueError('no')"],
    "class": ["class Inner:", "    pass"],
    "lambda_default": ["h = lambda a, b=2.0: a * b", "{x} = h({x})"],
    "setcomp": ["s = {{i for i in range(3)}}"],
    "dictcomp": ["d = {{i: i for i in range(3)}}"],
    "for_else": ["for i in range(2):", "    {x} = {x} * 1.0", "else:", "    {x} = {x} + 1.0"],
    "while_else": ["i = 0", "while i < 2:", "    i = i + 1", "else:", "    {x} = {x} + 1.0"],
    "assert": ["assert {x}.sum() > -1e9"],
    "print": ["print('hello')"],
    "kwargs_call": ["kw = dict(axis=0)", "{x} = np.sum({x}, **kw)"],
    "bitop": ["{x} = {x} * float(3 ^ 1)"],
    "slice_runtime": ["{x} = {x}[:{x}.shape[0]]"],
    "is_none": ["if {x} is None:", "    {x} = {x} * 0.0"],
}

OPERATORS = [" + ", " - ", " * ", " / ", " @ ", " ** ", " // ", " % "]
FUNCTIONS = ["np.sin", "np.cos", "np.tanh", "np.exp", "np.log", "np.sqrt", "np.abs",
             "np.sum", "np.mean", "np.max", "ops.sin", "ops.relu", "len", "float", "print",
             "np.linalg.norm", "np.sort", "np.argmax", "sorted", "id"]


# ------------------------------------------------------------------ mutations
def _body_lines(lines):
    """Indices of the lines inside the function or construct being differentiated."""
    start = None
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("def f(") or s.startswith("def construct(self, x"):
            start = i + 1
    return list(range(start, len(lines))) if start is not None else []


def _indent(line):
    return line[:len(line) - len(line.lstrip())]


def mutate(source, ops_list, is_cell):
    """Apply ``ops_list`` (``(kind, a, b)`` with integers ``a``, ``b``) to ``source``."""
    lines = source.splitlines()
    for kind, a, b in ops_list:
        body = [i for i in _body_lines(lines) if lines[i].strip()]
        if not body:
            break
        i = body[a % len(body)]
        j = body[b % len(body)]
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "operator":
            present = [o for o in OPERATORS if o in lines[i]]
            if present:
                old = present[a % len(present)]
                lines[i] = lines[i].replace(old, OPERATORS[b % len(OPERATORS)], 1)
        elif kind == "function":
            present = [f for f in FUNCTIONS if f + "(" in lines[i]]
            if present:
                old = present[a % len(present)]
                lines[i] = lines[i].replace(old + "(", FUNCTIONS[b % len(FUNCTIONS)] + "(", 1)
        elif kind == "constant":
            for c in ("0.5", "1.0", "2.0", "0.25"):
                if c in lines[i]:
                    lines[i] = lines[i].replace(c, ["0.0", "-1.0", "1e308", "None", "x", "(1, 2)",
                                                    "'a'", "True"][b % 8], 1)
                    break
        elif kind == "insert":
            names = sorted(UNSUPPORTED)
            stmt = UNSUPPORTED[names[b % len(names)]]
            if "self." in " ".join(stmt) and not is_cell:
                continue
            ind = _indent(lines[i])
            lines[i:i] = [ind + s.format(x="x") for s in stmt]
        elif kind == "dedent" and lines[i].startswith("        "):
            lines[i] = lines[i][4:]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the oracle
class Internal(AssertionError):
    pass


def _raised_in_s2sad(exc):
    """Whether the innermost frame of ``exc``'s traceback is s2sad's own Python source."""
    tb = traceback.extract_tb(exc.__traceback__)
    return bool(tb) and os.path.abspath(tb[-1].filename).startswith(S2SAD_DIR)


def documented(exc):
    """``None`` if ``exc`` is one of s2sad's documented errors, else why not."""
    if isinstance(exc, CompileError):
        text = str(exc)
        if exc.loc is None or not text.startswith('File "') or ", line " not in text:
            return "a CompileError without the file and line: %r" % text
        return None
    if isinstance(exc, (RuleError, UndefinedVariableError)):
        return None
    if isinstance(exc, (TypeError, ValueError)) and (
            str(exc).startswith("For 'GradOperation'") or
            str(exc).startswith("The parameters number of the function")):
        return None
    return "not a documented error"


def check_source(source, tmp_dir, name, program, is_cell):
    """Compile, import and differentiate ``source``; raise ``Internal`` on a contract breach.

    Returns what happened: "python-error" (skipped), "ok", "documented" or "user-error".
    """
    try:
        compile(source, "<mutated>", "exec")
    except (SyntaxError, ValueError):
        return "python-error"
    path = os.path.join(str(tmp_dir), name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    try:
        module = pg.load_module(path)
        target = pg.target_of(program, module)
    except Exception:
        return "python-error"          # the module itself does not import: Python's error
    args = program.make_args()
    # the oracle: does the user's computation itself run?
    eager_error = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target(*args)
        eager_ok = True
    except BaseException as e:
        eager_ok, eager_error = False, type(e)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ops.GradOperation()(target)(*args)
    except Exception as e:
        why = documented(e)
        if why is None:
            return "documented"
        if isinstance(e, SyntaxError):
            raise Internal("s2sad generated code that does not compile:\n%s\n--- source ---\n%s"
                           % (pg.formatted(e), source))
        if eager_ok:
            raise Internal("%s, for a program that runs eagerly:\n%s\n--- source ---\n%s"
                           % (why, pg.formatted(e), source))
        # the program's own error (NumPy's AxisError, an IndexError, from a runtime
        # helper) is the user's when running it eagerly raises it too
        if isinstance(e, (AttributeError, KeyError, AssertionError, IndexError, NameError)) \
                and type(e) is not eager_error and _raised_in_s2sad(e):
            raise Internal("an internal %s from inside s2sad:\n%s\n--- source ---\n%s"
                           % (type(e).__name__, pg.formatted(e), source))
        return "user-error"
    finally:
        pg.clear_caches()
    return "ok"


# ------------------------------------------------------------------ the tests
MUTATION = st.tuples(st.sampled_from(["delete", "duplicate", "swap", "operator", "function",
                                      "constant", "insert", "insert", "dedent"]),
                     st.integers(0, 10_000), st.integers(0, 10_000))


MUTATED_EXAMPLES = 250          # marked long; the default run checks MUTATED_SLICE
MUTATED_SLICE = 40


def _check_mutated(seed, mutations, tmp_path_factory, progress, name, total):
    program = pg.generate(seed, avoid=())
    source = mutate(program.source, mutations, program.kind == "cell")
    tmp = tmp_path_factory.getbasetemp()
    check_source(source, tmp, "mut_%d_%d" % (seed, abs(hash(source)) % 10 ** 8), program,
                 program.kind == "cell")
    progress.step(name, total)


@pytest.mark.long
@settings(max_examples=scaled(MUTATED_EXAMPLES), derandomize=True, deadline=None,
          database=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 31 - 1), mutations=st.lists(MUTATION, min_size=0, max_size=3))
def test_mutated_programs(seed, mutations, tmp_path_factory, progress):
    _check_mutated(seed, mutations, tmp_path_factory, progress, "test_mutated_programs",
                   scaled(MUTATED_EXAMPLES))


@settings(max_examples=MUTATED_SLICE, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 31 - 1), mutations=st.lists(MUTATION, min_size=0, max_size=3))
def test_mutated_programs_slice(seed, mutations, tmp_path_factory, progress):
    _check_mutated(seed, mutations, tmp_path_factory, progress, "test_mutated_programs_slice",
                   MUTATED_SLICE)


@pytest.mark.parametrize("construct", sorted(UNSUPPORTED))
@pytest.mark.parametrize("kind", ["function", "cell"])
def test_each_unsupported_statement(construct, kind, tmp_path):
    """Every construct of the list, inserted at several places of a few programs."""
    outcomes = set()
    rng = random.Random(construct + kind)
    names = sorted(UNSUPPORTED)
    for k in range(4):
        program = pg.generate(rng.randrange(10 ** 6), kind=kind)
        body = _body_lines(program.source.splitlines())
        muts = [("insert", rng.randrange(len(body)), names.index(construct))]
        source = mutate(program.source, muts, kind == "cell")
        outcomes.add(check_source(source, tmp_path, "ins_%s_%s_%d" % (construct, kind, k),
                                  program, kind == "cell"))
    assert outcomes


def test_oracle_flags_an_internal_error(tmp_path):
    """The oracle itself: a documented error passes, an internal one does not."""
    assert documented(CompileError("x")) is not None          # no location
    program = pg.generate(7, kind="function")
    assert check_source(program.source, tmp_path, "oracle_ok", program, False) == "ok"
    bad = program.source.replace("def f(", "def f_renamed(")
    assert check_source(bad, tmp_path, "oracle_skip", program, False) == "python-error"
