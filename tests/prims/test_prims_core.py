"""The core primitives' bprop rules (arithmetic with broadcasting, unary math,
matmul, reductions, layout, indexing, the internal rule helpers) against
float64 central finite differences.

Every differentiated function below is a small plain function defined in this
file calling one primitive (or the Python syntax, method, functional form or
NumPy call that stages it), checked through ``gradcheck.check_vjp``.
"""
import inspect

import re

import numpy as np
import pytest

import s2sad
from s2sad.ops import operations as P
from s2sad.ops._grad import bprop_getters
from s2sad.ops.primitive import Primitive

from gradcheck import check_vjp


# ------------------------------------------------------------------ primitives
add = P.Add()
sub = P.Sub()
mul = P.Mul()
realdiv = P.RealDiv()
power = P.Pow()
neg = P.Neg()
sin = P.Sin()
cos = P.Cos()
exp = P.Exp()
log = P.Log()
tanh = P.Tanh()
sqrt = P.Sqrt()
square = P.Square()
reshape = P.Reshape()
transpose = P.Transpose()
getitem = P.GetItem()
getitem_grad = P.GetItemGrad()
depend = P.Depend()
unbroadcast = P.Unbroadcast()
broadcast_like = P.BroadcastLike()
transpose_t = P.TransposeT()
check_sens = P.CheckSens()


def normal(shape, seed):
    """A float64 array (or np.float64 for shape ``None``) of standard normals."""
    rng = np.random.default_rng(seed)
    if shape is None:
        return np.float64(rng.standard_normal())
    return rng.standard_normal(shape)


def positive(shape, seed):
    """Uniform(0.5, 2) float64 values, for Log, Sqrt and Pow."""
    rng = np.random.default_rng(seed)
    if shape is None:
        return np.float64(rng.uniform(0.5, 2.0))
    return rng.uniform(0.5, 2.0, shape)


# ------------------------------------------------------- binary broadcasting ops
def f_add(x, y):
    return add(x, y)


def f_sub(x, y):
    return sub(x, y)


def f_mul(x, y):
    return mul(x, y)


def f_realdiv(x, y):
    return realdiv(x, y)


def f_pow(x, y):
    return power(x, y)


def f_add_op(x, y):
    return x + y


def f_sub_op(x, y):
    return x - y


def f_mul_op(x, y):
    return x * y


def f_div_op(x, y):
    return x / y


def f_pow_op(x, y):
    return x ** y


BINARY = {
    "Add": (f_add, f_add_op, normal, normal),
    "Sub": (f_sub, f_sub_op, normal, normal),
    "Mul": (f_mul, f_mul_op, normal, normal),
    # the divisor is kept away from zero so finite differences stay accurate
    "RealDiv": (f_realdiv, f_div_op, normal, positive),
    "Pow": (f_pow, f_pow_op, positive, positive),
}

# (shape of x, shape of y); ``None`` is a NumPy scalar (np.float64), () a 0-d array
BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 3), ()),
    (None, (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("form", ["primitive", "operator"])
def test_binary_broadcasting(name, shapes, form):
    f_prim, f_op, gen_x, gen_y = BINARY[name]
    fn = f_prim if form == "primitive" else f_op
    x = gen_x(shapes[0], 1)
    y = gen_y(shapes[1], 2)
    grads = check_vjp(fn, (x, y))
    assert np.shape(grads[0]) == np.shape(x) and np.shape(grads[1]) == np.shape(y)


def f_mul_const(x):
    return x * 2.0


def f_rsub_const(x):
    return 2.0 - x


def f_add_const(x):
    return x + 2.0


def f_radd_const(x):
    return 2.0 + x


def f_div_const(x):
    return x / 2.0


def f_rdiv_const(x):
    return 2.0 / x


def f_pow_const(x):
    return x ** 3.0


def f_rpow_const(x):
    return 2.0 ** x


def f_prim_const(x):
    return mul(3.0, sub(x, 1.5))


@pytest.mark.parametrize("fn", [f_mul_const, f_rsub_const, f_add_const, f_radd_const,
                                f_div_const, f_rdiv_const, f_pow_const, f_rpow_const,
                                f_prim_const], ids=lambda f: f.__name__)
def test_python_float_constant_operand(fn):
    x = positive((2, 3), 3)
    grads = check_vjp(fn, (x,))
    assert len(grads) == 1


def test_python_float_constant_closed_form():
    x = normal((2, 3), 4)
    (g,) = s2sad.ops.GradOperation(get_all=True)(f_rsub_const)(x)
    np.testing.assert_array_equal(g, -np.ones((2, 3)))
    (g,) = s2sad.ops.GradOperation(get_all=True)(f_mul_const)(x)
    np.testing.assert_array_equal(g, np.full((2, 3), 2.0))


# ------------------------------------------------------------------ unary ops
def f_neg(x):
    return neg(x)


def f_neg_op(x):
    return -x


def f_sin(x):
    return sin(x)


def f_cos(x):
    return cos(x)


def f_exp(x):
    return exp(x)


def f_log(x):
    return log(x)


def f_tanh(x):
    return tanh(x)


def f_sqrt(x):
    return sqrt(x)


def f_square(x):
    return square(x)


UNARY = [
    (f_neg, normal), (f_neg_op, normal), (f_sin, normal), (f_cos, normal), (f_exp, normal),
    (f_log, positive), (f_tanh, normal), (f_sqrt, positive), (f_square, normal),
]


@pytest.mark.parametrize("fn,gen", UNARY, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("shape", [(2, 3), (4,), ()], ids=str)
def test_unary(fn, gen, shape):
    check_vjp(fn, (gen(shape, 5),))


@pytest.mark.parametrize("fn,gen", UNARY, ids=lambda v: getattr(v, "__name__", ""))
def test_unary_numpy_scalar(fn, gen):
    x = gen(None, 6)
    grads = check_vjp(fn, (x,))
    assert np.shape(grads[0]) == ()


# --------------------------------------------------------------------- MatMul
def make_matmul(ta, tb):
    op = P.MatMul(transpose_a=ta, transpose_b=tb)

    def f_matmul(x, w):
        return op(x, w)
    return f_matmul


MATMUL_FNS = {(ta, tb): make_matmul(ta, tb) for ta in (False, True) for tb in (False, True)}


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(ta, tb):
    x = normal((3, 2) if ta else (2, 3), 7)
    w = normal((4, 3) if tb else (3, 4), 8)
    grads = check_vjp(MATMUL_FNS[(ta, tb)], (x, w))
    assert grads[0].shape == x.shape and grads[1].shape == w.shape


def f_matmul_op(x, w):
    return x @ w


def test_matmul_operator():
    check_vjp(f_matmul_op, (normal((2, 3), 9), normal((3, 4), 10)))


# ----------------------------------------------------------------- reductions
def make_reduce(cls, axis, keep_dims):
    op = cls(keep_dims)

    def f_reduce(x):
        return op(x, axis)
    return f_reduce


AXES = [(), 0, 1, (0, 1), -1]


@pytest.mark.parametrize("cls", [P.ReduceSum, P.ReduceMean], ids=lambda c: c.__name__)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_reduce(cls, axis, keep_dims):
    check_vjp(make_reduce(cls, axis, keep_dims), (normal((2, 3), 11),))


@pytest.mark.parametrize("cls", [P.ReduceSum, P.ReduceMean], ids=lambda c: c.__name__)
@pytest.mark.parametrize("axis,keep_dims", [((0, 2), False), (1, True), ((), True)], ids=str)
def test_reduce_3d(cls, axis, keep_dims):
    check_vjp(make_reduce(cls, axis, keep_dims), (normal((2, 3, 4), 12),))


def test_reduce_mean_closed_form():
    x = normal((2, 3), 13)
    g = s2sad.ops.GradOperation()(make_reduce(P.ReduceMean, 1, False))(x)
    np.testing.assert_allclose(g, np.full((2, 3), 1.0 / 3.0), rtol=1e-15)


# ---------------------------------------------------------- layout primitives
def f_reshape(x):
    return reshape(x, (3, 2))


def f_reshape_infer(x):
    return reshape(x, (-1,))


def f_transpose(x):
    return transpose(x, (1, 0, 2))


def f_transpose_cyclic(x):
    return transpose(x, (2, 0, 1))


def f_transpose_t(x):
    return transpose_t(x)


@pytest.mark.parametrize("fn,shape", [(f_reshape, (2, 3)), (f_reshape_infer, (2, 3)),
                                      (f_transpose, (2, 3, 4)),
                                      (f_transpose_cyclic, (2, 3, 4)),
                                      (f_transpose_t, (2, 3)), (f_transpose_t, (2, 3, 4))],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_layout(fn, shape):
    check_vjp(fn, (normal(shape, 14),))


# ------------------------------------------------------------------- indexing
def f_index_int(x):
    return x[0]


def f_index_slice(x):
    return x[:, 1:3]


def f_index_newaxis(x):
    return x[..., None]


def f_index_reverse(x):
    return x[::-1]


def f_index_pair(x):
    return x[1, 2]


def f_index_negative(x):
    return x[-1, ::2]


def f_index_twice(x):
    # the same element read twice: contributions must add up
    return x[0] * x[0] + x[:, 0:1]


def f_getitem_prim(x):
    return getitem(x, (slice(None), 1))


def f_index_list(x):
    # fancy indexing with a repeated row: the adjoint must add both reads
    return x[[0, 0, 2]]


@pytest.mark.parametrize("fn", [f_index_int, f_index_slice, f_index_newaxis, f_index_reverse,
                                f_index_pair, f_index_negative, f_index_twice, f_getitem_prim,
                                (f_index_list)],
                         ids=lambda f: f.__name__)
def test_getitem(fn):
    check_vjp(fn, (normal((3, 4), 15),))


# ------------------------------------------------------ internal rule helpers
# These primitives appear in generated adjoints; their own rules make the
# adjoints differentiable, so they are checked like any other primitive.
def f_getitem_grad(dout, x):
    return getitem_grad(dout, x, (slice(None), slice(1, 3)))


def f_getitem_grad_repeat(dout, x):
    # a fancy index naming one row twice: the scatter adds, its adjoint gathers
    return getitem_grad(dout, x, ([0, 0, 2],))


def f_unbroadcast(dx, x):
    return unbroadcast(dx, x)


def f_broadcast_like(a, x):
    return broadcast_like(a, x)


def make_expand_reduced(axis, keep_dims):
    op = P.ExpandReduced(keep_dims)

    def f_expand_reduced(dout, x):
        return op(dout, x, axis)
    return f_expand_reduced


def f_check_sens(sens, out):
    return check_sens(sens, out, "output")


def f_depend(a, b):
    return depend(a * 3.0, b)


INTERNAL = [
    ("GetItemGrad", f_getitem_grad, [(3, 2), (3, 4)]),
    ("GetItemGrad", f_getitem_grad_repeat, [(3, 4), (3, 4)]),
    ("Unbroadcast", f_unbroadcast, [(2, 3, 4), (3, 1)]),
    ("Unbroadcast", f_unbroadcast, [(2, 3), (2, 3)]),
    ("BroadcastLike", f_broadcast_like, [(3, 1), (2, 3, 4)]),
    ("ExpandReduced", make_expand_reduced(1, False), [(2, 4), (2, 3, 4)]),
    ("ExpandReduced", make_expand_reduced((), False), [(), (2, 3)]),
    ("ExpandReduced", make_expand_reduced(0, True), [(1, 3), (2, 3)]),
    ("CheckSens", f_check_sens, [(2, 3), (2, 3)]),
    ("Depend", f_depend, [(2, 3), (4,)]),
]


@pytest.mark.parametrize("name,fn,shapes", INTERNAL,
                         ids=["case%d" % i for i in range(len(INTERNAL))])
def test_internal_rules(name, fn, shapes):
    args = tuple(normal(s, 16 + i) for i, s in enumerate(shapes))
    check_vjp(fn, args)


# ------------------------------------------------------------------- registry
def _exported_primitive_classes():
    out = {}
    for name in dir(P):
        obj = getattr(P, name)
        if inspect.isclass(obj) and issubclass(obj, Primitive) and obj is not Primitive:
            out[obj.__name__] = obj
    return out


EXPORTED = _exported_primitive_classes()
DIFFERENTIABLE = sorted(n for n, c in EXPORTED.items() if c.differentiable)

# every primitive with a rule, mapped to the tests above that check it
COVERED = {
    "Add": "test_binary_broadcasting", "Sub": "test_binary_broadcasting",
    "Mul": "test_binary_broadcasting", "RealDiv": "test_binary_broadcasting",
    "Pow": "test_binary_broadcasting", "Neg": "test_unary", "Sin": "test_unary",
    "Cos": "test_unary", "Exp": "test_unary", "Log": "test_unary", "Tanh": "test_unary",
    "Sqrt": "test_unary", "Square": "test_unary", "MatMul": "test_matmul",
    "ReduceSum": "test_reduce", "ReduceMean": "test_reduce", "Reshape": "test_layout",
    "Transpose": "test_layout", "TransposeT": "test_layout", "GetItem": "test_getitem",
    "GetItemGrad": "test_internal_rules", "Unbroadcast": "test_internal_rules",
    "BroadcastLike": "test_internal_rules", "ExpandReduced": "test_internal_rules",
    "CheckSens": "test_internal_rules", "Depend": "test_internal_rules",
}


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_differentiable_primitive_has_bprop(name):
    cls = EXPORTED[name]
    prim = cls.__new__(cls)  # lookup only needs the type; no constructor arguments
    assert bprop_getters.lookup(prim) is not None, "%s has no registered bprop" % name


def test_every_rule_is_checked_somewhere():
    """Each primitive with a rule is exercised here, in its family's test file or in a
    second-order case (``check_grads(order=2)`` checks the first order on the way)."""
    import pathlib
    here = pathlib.Path(__file__).parent
    files = sorted(here.glob("test_prim*.py")) + sorted(here.glob("second_order*cases.py"))
    text = "\n".join(p.read_text() for p in files)
    with_rule = sorted(n for n, c in EXPORTED.items()
                       if bprop_getters.lookup(c.__new__(c)) is not None)
    missing = [n for n in with_rule if n not in COVERED and
               not re.search(r"\b%s\b" % n, text.replace("COVERED", ""))]
    assert not missing, "add a gradient check for %s" % missing
    for test_name in COVERED.values():
        assert callable(globals()[test_name])
