"""Write ``docs/primitives.md``: every primitive class, its gradient and its rules.

The page is generated from the code, never edited by hand:

- the primitive classes exported by ``s2sad.ops.operations`` (one table per
  family: ``math_ops``, ``array_ops``, ``nn_ops``, ``elementwise_ops``,
  ``contract_ops``...), in definition order;
- the internal AD helpers: the primitives that only rules and the AD itself
  emit (``AD_HELPERS`` below, taken out of their family tables), the primitives
  of ``s2sad.ir.control`` that the frontend and reverse mode insert, and any
  other class with a rule in the registry.

One row per class: its name (with aliases), what it computes (the first
paragraph of its docstring), its gradient (``formula``), where it has no
derivative (``nondifferentiable``), whether ``bprop_getters`` and
``jvp_getters`` hold a rule for it, and whether it is differentiable.  The
output depends only on the code, so it is byte-for-byte reproducible.

    python tools/gen_primitives_doc.py            # (re)write docs/primitives.md
    python tools/gen_primitives_doc.py --check    # exit 1 if it is out of date
    python tools/gen_primitives_doc.py --stdout   # print instead of writing
"""
import inspect
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from docgen import write_or_check  # noqa: E402
from s2sad.ir import control  # noqa: E402
from s2sad.ops._grad import bprop_getters, jvp_getters  # noqa: E402
from s2sad.ops import operations  # noqa: E402
from s2sad.ops.operations import (array_ops, arrange_ops, contract_ops,  # noqa: E402
                                  elementwise_ops, fft_ops, linalg_ops, math_ops, nn_ops,
                                  special_ops)
from s2sad.ops.primitive import Primitive  # noqa: E402

DOC_PATH = os.path.join(ROOT, "docs", "primitives.md")
COMMAND = "python tools/gen_primitives_doc.py"

FAMILIES = (
    ("math", math_ops, "Elementwise math, comparisons, products, linear algebra and "
                       "reductions (`s2sad/ops/operations/math_ops.py`)."),
    ("array", array_ops, "Shapes, layout, joining, indexing, creation and dtypes "
                         "(`s2sad/ops/operations/array_ops.py`)."),
    ("arrange", arrange_ops, "Sorting, rolling, padding, windows and the stacking and "
                             "splitting whose axis depends on the rank "
                             "(`s2sad/ops/operations/arrange_ops.py`)."),
    ("nn", nn_ops, "Activations, losses, convolution, pooling, dropout and normalisation "
                   "(`s2sad/ops/operations/nn_ops.py`)."),
    ("elementwise", elementwise_ops,
     "NumPy's further elementwise functions, the cumulative product, quantile weights and "
     "`scipy.special` basics (`s2sad/ops/operations/elementwise_ops.py`; their NumPy "
     "mappings are in `s2sad/ops/function/stats_func.py`)."),
    ("contract", contract_ops, "Einstein summation, diagonals, traces and triangles "
                               "(`s2sad/ops/operations/contract_ops.py`)."),
    ("linalg", linalg_ops, "Solves, determinants and factorisations of stacked matrices "
                           "(`s2sad/ops/operations/linalg_ops.py`)."),
    ("fft", fft_ops, "Discrete Fourier transforms, `numpy.fft` "
                     "(`s2sad/ops/operations/fft_ops.py`)."),
    ("special", special_ops,
     "`scipy.special` past the basics: gamma, incomplete gamma and beta, inverse error "
     "functions, log_ndtr, Student's t CDF, Bessel functions "
     "(`s2sad/ops/operations/special_ops.py`; their SciPy mappings, `scipy.stats` "
     "included, are in `s2sad/ops/function/scipy_func.py`)."),
)

#: Primitives exported by ``s2sad.ops.operations`` that user code has no reason
#: to call: the rules (and reverse mode's seeding) emit them as the adjoints or
#: tangents of other primitives, or for shapes and axes known only at run time.
#: Each still has rules of its own, so adjoints differentiate again.
AD_HELPERS = (
    # array_ops: adjoints of broadcasting and reductions, the sens check
    "Unbroadcast", "BroadcastLike", "ExpandReduced", "ReducedCount", "CheckSens",
    # array_ops: adjoints of layout and indexing primitives
    "TileGrad", "RepeatGrad", "SplitLike", "GetItemGrad", "SetItemValueGrad", "GatherGrad",
    "PadCrop", "CastLike",
    # arrange_ops: adjoints of Rearrange and TakeAlongAxis
    "RearrangeGrad", "TakeAlongAxisGrad",
    # math_ops: helpers of the MatMulExt, Tensordot and ArgMax/ArgMinWithValue rules
    "MatMulGradA", "MatMulGradB", "TensordotGradA", "TensordotGradB", "ArgIndicator",
    # nn_ops: gradient primitives of GeLU and the pools, axes for normalisation rules
    "GeLUGrad", "MaxPoolGrad", "MaxPoolGradGrad", "AvgPoolGrad", "NormAxes",
    # elementwise_ops: slopes of Sinc and Xlogy, masks and shapes of CumProd and the statistics
    "SincSlope", "Xdivy", "ZeroCount", "QuantileWeights", "StatsShape",
    # contract_ops: adjoints of einsum's reductions, of kron and of the diagonal family
    "EinsumExpand", "KronGradA", "KronGradB", "DiagonalGrad", "DiagGrad",
    # linalg_ops: vector right-hand sides of solve, triangles, eigenvalue gaps, the
    # columns of a full SVD, QR's precondition, identities and tensorsolve's shapes
    "SolveColumn", "SolveUncolumn", "TriangleMask", "GapQuotient", "KeepLeading", "PadLeading",
    "QrCheck", "EyeLike", "TensorShape",
    # special_ops: the crop of a full convolution to its mode, and its adjoint
    "ConvolveCrop", "ConvolvePad",
)

HELPERS_TITLE = "Internal AD helpers"
HELPERS_INTRO = (
    "Primitives that rules and the AD emit rather than user code: the adjoints and "
    "tangent maps of other primitives, shape and axis helpers evaluated at run time, "
    "and the operations the frontend and reverse mode insert (`s2sad/ir/control.py`: "
    "parameter copies, definedness checks, control flow, the stacks loops record "
    "with).  Control-flow and stack operations (`ControlOp`) have no rule: forward "
    "and reverse mode transform them structurally, differentiating their regions.")

DASH = "\u2014"


# ------------------------------------------------------------------- registry
def _exported(module):
    """(class, [names]) for the module's ``__all__``, in definition order, aliases merged."""
    out = []
    index = {}
    for name in module.__all__:
        cls = getattr(module, name)
        if not (inspect.isclass(cls) and issubclass(cls, Primitive)):
            continue
        if cls not in index:
            index[cls] = len(out)
            out.append((cls, []))
        if name != cls.__name__:
            out[index[cls]][1].append(name)
    return out


def _module_primitives(module):
    """Primitive classes defined in ``module``, in definition order (no aliases)."""
    out = []
    for value in vars(module).values():
        if inspect.isclass(value) and issubclass(value, Primitive) and value is not Primitive \
                and value.__module__ == module.__name__ and value not in out:
            out.append(value)
    return out


def _has_rule(registry, cls):
    for klass in cls.__mro__:
        if klass in registry or getattr(klass, "__name__", None) in registry:
            return True
    return False


def collect():
    """``[(title, intro, [(cls, aliases)])]``: the family tables, then the helpers."""
    exported = {}
    tables = []
    helper_names = set(AD_HELPERS)
    helpers = []
    for title, module, intro in FAMILIES:
        rows = []
        for cls, aliases in _exported(module):
            exported[cls] = aliases
            if cls.__name__ in helper_names:
                helpers.append((cls, aliases))
            else:
                rows.append((cls, aliases))
        tables.append((title, intro, rows))
    unknown = helper_names - {cls.__name__ for cls, _ in helpers}
    if unknown:
        raise SystemExit("gen_primitives_doc: AD_HELPERS names no exported primitive: %s"
                         % ", ".join(sorted(unknown)))
    # a primitive exported by s2sad.ops.operations from a module not in FAMILIES
    others = {}
    for name in sorted(dir(operations)):
        cls = getattr(operations, name)
        if inspect.isclass(cls) and issubclass(cls, Primitive) and cls is not Primitive \
                and cls not in exported:
            others.setdefault(cls.__module__, {}).setdefault(cls, [])
            if name != cls.__name__:
                others[cls.__module__][cls].append(name)
    for module_name in sorted(others):
        rows = sorted(others[module_name].items(), key=lambda item: item[0].__name__)
        exported.update(others[module_name])
        tables.append((module_name.rsplit(".", 1)[-1], "`%s`." % module_name, rows))
    listed = set(exported)
    for cls in _module_primitives(control):
        if cls is not control.ControlOp and cls not in listed:
            helpers.append((cls, []))
            listed.add(cls)
    # anything else the registry holds a rule for (sorted: registration order varies)
    extra = [k for k in list(bprop_getters) + list(jvp_getters)
             if inspect.isclass(k) and issubclass(k, Primitive) and k not in listed
             and k.__module__.startswith("s2sad.")]
    for cls in sorted(set(extra), key=lambda c: (c.__module__, c.__name__)):
        helpers.append((cls, []))
    tables.append((HELPERS_TITLE, HELPERS_INTRO, helpers))
    return tables


# ------------------------------------------------------------------ rendering
def _cell(text):
    """Markdown-table-safe single line."""
    if text is None or not str(text).strip():
        return DASH
    text = " ".join(str(text).split())
    return text.replace("|", "\\|")


def _summary(cls):
    """The first paragraph of the class's own docstring (not an inherited one)."""
    doc = cls.__dict__.get("__doc__")
    if not doc:
        return None
    doc = inspect.cleandoc(doc)
    return doc.split("\n\n", 1)[0]


def _differentiable(cls):
    if issubclass(cls, control.ControlOp):
        return "structural"
    text = "yes" if cls.differentiable else "no"
    if getattr(cls, "stateful", False):
        text += " (stateful)"
    return text


def _name(cls, aliases):
    text = "`%s`" % cls.__name__
    if aliases:
        text += " (alias %s)" % ", ".join("`%s`" % a for a in aliases)
    return text


def _yes_no(flag):
    return "yes" if flag else "no"


HEADER = ("| primitive | computes | gradient | not differentiable at | bprop | JVP "
          "| differentiable |\n|---|---|---|---|---|---|---|")


def render():
    tables = collect()
    lines = [
        "# Primitives",
        "",
        "<!-- Generated by %s from the primitive classes and the rule registry; "
        "do not edit by hand. -->" % COMMAND,
        "",
        "Every primitive class s2sad differentiates with: what it computes (the first "
        "paragraph of its docstring), its gradient (the class's `formula`), where it "
        "has no derivative (`nondifferentiable`; the value used there is in "
        "parentheses), whether a reverse-mode rule (`bprop_getters`) and a "
        "forward-mode rule (`jvp_getters`) are registered for it, and whether it "
        "is differentiable.  `dout` is the output's cotangent, `out` the "
        "primitive's output.  Regenerate with `%s`; `%s --check` (run by "
        "`tests/docs/test_primitives_doc.py`) fails when this page is out of date." % (COMMAND,
                                                                                  COMMAND),
        "",
        "| table | primitives | differentiable | with bprop | with JVP |",
        "|---|---|---|---|---|",
    ]
    for title, _, rows in tables:
        classes = [cls for cls, _ in rows]
        lines.append("| [%s](#%s) | %d | %d | %d | %d |" % (
            title, _anchor(title), len(classes),
            sum(1 for c in classes if c.differentiable),
            sum(1 for c in classes if _has_rule(bprop_getters, c)),
            sum(1 for c in classes if _has_rule(jvp_getters, c))))
    for title, intro, rows in tables:
        lines += ["", "## %s" % title, "", intro, "", HEADER]
        for cls, aliases in rows:
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                _name(cls, aliases), _cell(_summary(cls)),
                _cell(getattr(cls, "formula", None)),
                _cell(getattr(cls, "nondifferentiable", None)),
                _yes_no(_has_rule(bprop_getters, cls)), _yes_no(_has_rule(jvp_getters, cls)),
                _differentiable(cls)))
    return "\n".join(lines) + "\n"


def _anchor(title):
    return "-".join(title.lower().split())


# ----------------------------------------------------------------------- main
def main(argv=None):
    return write_or_check(render, DOC_PATH, COMMAND, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
