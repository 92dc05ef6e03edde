"""Pytrees (dicts, nested lists, namedtuples, dataclasses, registered containers) in the
functional API: every derivative is checked against float64 central differences of
the leaves, and the results mirror the inputs' (and outputs') structure."""
import collections
import dataclasses
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.api.pytree import (tree_flatten, tree_leaves, tree_map, tree_structure,
                              tree_unflatten)
from gradcheck import numeric_grad

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 2))
B = RNG.standard_normal(2)
X = RNG.standard_normal((4, 3))

Point = collections.namedtuple("Point", ["w", "b"])


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


class Pair:
    """A user container registered with s2sad.register_pytree_node."""

    def __init__(self, first, second):
        self.first = first
        self.second = second


s2sad.register_pytree_node(Pair, lambda p: ((p.first, p.second), None),
                           lambda aux, children: Pair(*children))


def _w_and_b(p):
    """(w, b) of any of the containers the tests use, read as the user's code would."""
    if isinstance(p, dict):
        return p["w"], p["b"]
    if isinstance(p, Pair):
        return p.first, p.second
    return p.w, p.b


def loss_dict(p, x):
    return (np.tanh(x @ p["w"] + p["b"]) ** 2).sum()


def loss_nested(p, x):
    h = x @ p["layers"][0]["w"] + p["layers"][0]["b"]
    return (np.sin(h) * p["scale"][1]).sum() + p["scale"][0] ** 2


def loss_point(p, x):
    return (np.tanh(x @ p.w + p.b) ** 2).sum()


def loss_pair(p, x):
    return (np.tanh(x @ p.first + p.second) ** 2).sum()


CASES = [
    ("dict", loss_dict, {"w": W, "b": B}),
    ("nested", loss_nested, {"layers": [{"w": W, "b": B}], "scale": (np.float64(0.7), B * 2)}),
    ("namedtuple", loss_point, Point(W, B)),
    ("dataclass", loss_point, Params(W, B)),
    ("registered", loss_pair, Pair(W, B)),
]


def fd_tree_grad(f, args, p):
    """Central differences of ``f`` in every leaf of ``args[p]``, in its structure."""
    leaves, treedef = tree_flatten(args[p])

    def of_leaf(k):
        def g(leaf):
            new = list(leaves)
            new[k] = leaf
            rebuilt = list(args)
            rebuilt[p] = tree_unflatten(treedef, new)
            return f(*rebuilt)
        return g
    return tree_unflatten(treedef, [numeric_grad(of_leaf(k), (leaf,), 0)
                                    for k, leaf in enumerate(leaves)])


def assert_tree_close(got, want, rtol=1e-6, atol=1e-7):
    assert tree_structure(got) == tree_structure(want), (got, want)
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g, dtype=float), w, rtol=rtol, atol=atol)


# ------------------------------------------------------------- the module
def test_flatten_sorts_dict_keys_and_rebuilds_every_container():
    tree = {"b": [1, (2, None)], "a": Point(3, Params(4, 5)), "c": Pair(6, 7),
            "o": collections.OrderedDict([("z", 8), ("y", 9)])}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [3, 4, 5, 1, 2, 6, 7, 8, 9]     # sorted keys; OrderedDict keeps its order
    back = tree_unflatten(treedef, leaves)
    assert list(back) == ["a", "b", "c", "o"] and back["b"] == [1, (2, None)]
    assert back["a"] == Point(3, Params(4, 5)) and isinstance(back["c"], Pair)
    assert list(back["o"]) == ["z", "y"]
    assert tree_map(lambda v: v * 10, {"x": (1, 2)}) == {"x": (10, 20)}


def test_treedefs_compare_by_structure():
    assert tree_structure({"a": 1, "b": 2}) == tree_structure({"b": 3.0, "a": W})
    assert hash(tree_structure({"a": 1})) == hash(tree_structure({"a": 5}))
    assert tree_structure({"a": 1}) != tree_structure({"c": 1})
    assert tree_structure({"a": 1}) != tree_structure(collections.OrderedDict(a=1))
    assert tree_structure([1, 2]) != tree_structure((1, 2))
    assert tree_structure(Point(1, 2)) != tree_structure(Params(1, 2))


def test_tree_map_mismatch_and_bad_registration_are_errors():
    with pytest.raises(ValueError, match="structure"):
        tree_map(lambda a, b: a + b, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match="already registered"):
        s2sad.register_pytree_node(Pair, lambda p: ((), None), lambda a, c: Pair(1, 2))
    with pytest.raises(TypeError, match="nodetype"):
        s2sad.register_pytree_node("Pair", lambda p: ((), None), lambda a, c: None)


# -------------------------------------------------------------- gradients
@pytest.mark.parametrize("name,loss,params", CASES, ids=[c[0] for c in CASES])
def test_grad_mirrors_the_input_structure(name, loss, params):
    g = s2sad.grad(loss)(params, X)
    assert type(g) is type(params)
    assert_tree_close(g, fd_tree_grad(loss, (params, X), 0))


@pytest.mark.parametrize("name,loss,params", CASES, ids=[c[0] for c in CASES])
def test_value_and_grad_with_positions(name, loss, params):
    value, (gp, gx) = s2sad.value_and_grad(loss, grad_position=(0, 1))(params, X)
    np.testing.assert_allclose(value, loss(params, X), rtol=1e-12)
    assert_tree_close(gp, fd_tree_grad(loss, (params, X), 0))
    np.testing.assert_allclose(gx, numeric_grad(lambda x: loss(params, x), (X,), 0),
                               rtol=1e-6, atol=1e-7)


def test_grad_of_dict_with_items_loop_get_and_len():
    def loss(p):
        total = 0.0
        for k, v in p.items():
            total = total + (v ** 2).sum() * len(p)
        for k in p:
            total = total + np.sin(p[k]).sum()
        return total + p.get("w").sum() * 3.0 + (p.get("zz", 1.0) * p["b"]).sum()
    params = {"w": W, "b": B}
    assert_tree_close(s2sad.grad(loss)(params), fd_tree_grad(loss, (params,), 0))


class Layer:
    """A registered container whose loss is written with a method and a property."""

    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w = w
        self.b = b

    @property
    def scale(self):
        return np.exp(self.b).sum()

    def apply(self, x, power=2):
        return (np.tanh(x @ self.w) ** power).sum() * self.scale


s2sad.register_pytree_node(Layer, lambda l: ((l.w, l.b), None), lambda aux, c: Layer(*c))


def test_methods_and_properties_of_a_container_are_inlined():
    def loss(layer, x):
        return layer.apply(x, power=3)
    layer = Layer(W, B)
    g = s2sad.grad(loss)(layer, X)
    assert isinstance(g, Layer)
    want = fd_tree_grad(loss, (layer, X), 0)
    np.testing.assert_allclose(g.w, want.w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g.b, want.b, rtol=1e-6, atol=1e-7)


def test_python_number_leaves_are_constants_with_none_gradients():
    def loss(p):
        return (p["w"] * p["k"]).sum()
    g = s2sad.grad(loss)({"w": W, "k": 3.0})
    assert g["k"] is None
    np.testing.assert_allclose(g["w"], np.full_like(W, 3.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert s2sad.grad(loss)({"w": 2.0, "k": 3.0}) == ()
    assert any("constant" in str(w.message) for w in caught)


def test_has_aux_returns_a_pytree_aux_as_is():
    def loss(p, x):
        out = np.tanh(x @ p["w"] + p["b"])
        return (out ** 2).sum(), {"mean": out.mean(), "tag": [out[0]]}
    (g, aux) = s2sad.grad(loss, has_aux=True)({"w": W, "b": B}, X)
    assert_tree_close(g, fd_tree_grad(lambda p, x: loss(p, x)[0], ({"w": W, "b": B}, X), 0))
    (aux,) = aux                    # the tuple out[1:], as grad's has_aux always gives
    assert set(aux) == {"mean", "tag"}
    np.testing.assert_allclose(aux["mean"], np.tanh(X @ W + B).mean())


def test_grad_of_a_dict_output_is_a_clear_error():
    def f(p):
        return {"y": p["w"] * 2}
    with pytest.raises(s2sad.errors.CompileError, match="scalar loss"):
        s2sad.grad(f)({"w": W})
    with pytest.raises(s2sad.errors.CompileError, match="scalar loss"):
        s2sad.grad(lambda x: {"y": x.sum()})(W)


def test_generated_code_names_leaves_after_keys():
    source = s2sad.get_source(s2sad.grad(loss_dict, (0, 1)), {"w": W, "b": B}, X)
    assert "def loss_dict_grad(p_b, p_w, x)" in source
    assert "return (d_p_b, d_p_w, d_x)" in source


# ---------------------------------------------------------------- vjp/jvp
def model(p, x):
    h = np.tanh(x @ p["w"] + p["b"])
    return {"h": h, "stats": [h.sum(), np.exp(p["b"])]}


def test_vjp_takes_and_gives_pytrees():
    params = {"w": W, "b": B}
    out, vjp_fn = s2sad.vjp(model, params, X)
    assert set(out) == {"h", "stats"}
    u = {"h": RNG.standard_normal((4, 2)), "stats": [1.5, RNG.standard_normal(2)]}
    gp, gx = vjp_fn(u)

    def dot(p, x):
        o = model(p, x)
        return (o["h"] * u["h"]).sum() + o["stats"][0] * u["stats"][0] + \
            (o["stats"][1] * u["stats"][1]).sum()
    assert_tree_close(gp, fd_tree_grad(dot, (params, X), 0))
    np.testing.assert_allclose(gx, numeric_grad(lambda x: dot(params, x), (X,), 0),
                               rtol=1e-6, atol=1e-7)


def test_vjp_cotangent_of_another_structure_is_an_error_naming_both():
    out, vjp_fn = s2sad.vjp(model, {"w": W, "b": B}, X)
    with pytest.raises(ValueError, match=r"structure \{'h': \*, 'stats': \[\*, \*\]\}.*"
                                         r"structure \{'h': \*\}"):
        vjp_fn({"h": np.ones((4, 2))})


def test_jvp_tangents_mirror_primals_and_output_structure_comes_back():
    params = {"w": W, "b": B}
    tp = {"w": RNG.standard_normal(W.shape), "b": RNG.standard_normal(B.shape)}
    tx = RNG.standard_normal(X.shape)
    out, t_out = s2sad.jvp(model, (params, X), (tp, tx))
    assert tree_structure(out) == tree_structure(t_out) == tree_structure(model(params, X))
    eps = 1e-6
    plus = model(tree_map(lambda a, t: a + eps * t, params, tp), X + eps * tx)
    minus = model(tree_map(lambda a, t: a - eps * t, params, tp), X - eps * tx)
    assert_tree_close(t_out, tree_map(lambda a, b: (a - b) / (2 * eps), plus, minus))


def test_jvp_tangent_of_another_structure_is_an_error_naming_both():
    with pytest.raises(ValueError, match=r"structure \{'b': \*, 'w': \*\}.*structure "
                                         r"\{'w': \*\}"):
        s2sad.jvp(model, ({"w": W, "b": B}, X), ({"w": W}, X))


def test_jvp_of_array_inputs_with_a_dict_output():
    def f(x):
        return {"a": np.sin(x), "b": [x.sum()]}
    out, t = s2sad.jvp(f, (B,), (np.ones(2),))
    assert_tree_close(t, {"a": np.cos(B), "b": [2.0]})


# -------------------------------------------------------------- jacobians
@pytest.mark.parametrize("api", ["jacfwd", "jacrev"])
def test_jacobians_nest_output_structure_outside_input_structure_inside(api):
    params = {"w": W, "b": B}
    jac = getattr(s2sad, api)(model)(params, X)
    assert set(jac) == {"h", "stats"} and set(jac["h"]) == {"w", "b"}
    assert jac["h"]["w"].shape == (4, 2, 3, 2) and jac["stats"][1]["b"].shape == (2, 2)
    np.testing.assert_allclose(jac["stats"][1]["b"], np.diag(np.exp(B)), rtol=1e-12)
    # one row of the Jacobian against finite differences: d h[1, 0] / d params
    want = fd_tree_grad(lambda p, x: model(p, x)["h"][1, 0], (params, X), 0)
    assert_tree_close({k: v[1, 0] for k, v in jac["h"].items()}, want)


def test_hessian_of_a_dict_is_a_dict_of_dicts():
    def f(p):
        return (np.sin(p["w"]).sum() * p["b"] ** 2).sum()
    params = {"w": W, "b": B}
    h = s2sad.hessian(f)(params)
    assert set(h) == {"w", "b"} and set(h["w"]) == {"w", "b"}
    assert h["w"]["b"].shape == W.shape + B.shape
    np.testing.assert_allclose(h["b"]["b"], 2 * np.sin(W).sum() * np.eye(2), rtol=1e-10)
    # h[w][b] = d/db (d f / d w) = cos(w) * 2 b (for each w entry, each b entry)
    want = np.cos(W)[:, :, None] * 2 * B[None, None, :]
    np.testing.assert_allclose(h["w"]["b"], want, rtol=1e-10)


def test_check_grads_on_pytrees_first_and_second_order():
    params = {"layers": [{"w": W, "b": B}], "scale": Point(np.float64(0.7), B * 2)}

    def f(p, x):
        return {"y": np.tanh(x @ p["layers"][0]["w"] + p["layers"][0]["b"]) * p["scale"].w,
                "z": p["scale"].b ** 3}
    assert s2sad.check_grads(f, (params, X)) < 1e-6
    assert s2sad.check_grads(f, (params, X), order=2) < 1e-6


def test_second_order_grad_of_grad_through_a_dict():
    def f(p):
        return (p["a"] ** 3).sum() * p["c"].sum()
    a, c = np.array([0.5, -1.5]), np.array([2.0])
    g = s2sad.grad(lambda a: s2sad.grad(f)({"a": a, "c": c})["a"].sum())
    with pytest.raises(s2sad.errors.CompileError, match="dict"):
        g(a)        # refused inside a differentiated function, not computed wrongly


# ------------------------------------------------------------ cache soundness
def test_structure_is_part_of_the_cache_key():
    def f(p):
        keys = list(p)
        return (p[keys[0]] * 2.0 + p[keys[1]] * 5.0).sum()
    gf = s2sad.grad(f)
    a = {"u": W, "v": W * 3}
    b = {"u": W, "z": W * 3}             # other keys, same leaves: another structure
    c = {"v": W, "w": W * 3}
    for tree in (a, b, c, a, b):
        assert_tree_close(gf(tree), fd_tree_grad(f, (tree,), 0))
    gp = s2sad.grad(loss_point)
    for tree in (Point(W, B), Params(W, B), Point(W, B)):
        g = gp(tree, X)
        assert type(g) is type(tree)
        assert_tree_close(g, fd_tree_grad(loss_point, (tree, X), 0))


def test_dict_and_ordered_dict_are_different_structures():
    def f(p):
        first = list(p.values())[0]
        return (first * 2.0).sum() + (list(p.values())[1] * 7.0).sum()
    gf = s2sad.grad(f)
    d = {"b": B, "a": B}                        # sorted: a first
    od = collections.OrderedDict([("b", B), ("a", B)])   # insertion: b first
    for tree in (d, od, d):
        assert_tree_close(gf(tree), fd_tree_grad(f, (tree,), 0))
    assert type(gf(od)) is collections.OrderedDict


def test_tuple_inputs_keep_their_meaning():
    def f(t):
        return (t[0] * t[1]).sum()
    g = s2sad.grad(f)((W, W * 2))
    assert isinstance(g, tuple) and len(g) == 2
    np.testing.assert_allclose(g[0], W * 2)


class DotDict(dict):
    """A dict whose items read as attributes (JAX's training cookbook's ``dot_dict``)."""
    __getattr__ = dict.__getitem__


s2sad.register_pytree_node(
    DotDict, lambda d: (tuple(d[k] for k in sorted(d)), tuple(sorted(d))),
    lambda keys, values: DotDict(zip(keys, values)))


def dot_dict_loss(params, x):
    return np.sum(np.tanh(x @ params.layer.w) + params.b)


def test_items_of_a_registered_dot_dict_read_as_attributes():
    rng = np.random.default_rng(4)
    w, b, x = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 3))
    g = s2sad.grad(dot_dict_loss)(DotDict(layer=DotDict(w=w), b=b), x)
    assert type(g) is DotDict and type(g.layer) is DotDict
    np.testing.assert_allclose(g.layer.w, x.T @ (1 - np.tanh(x @ w) ** 2), rtol=1e-13)
    np.testing.assert_allclose(g.b, np.full(2, 4.0), rtol=1e-15)


class Unregistered(dict):
    __getattr__ = dict.__getitem__


def test_a_dict_subclass_that_is_no_pytree_is_named_not_taken_for_a_constant():
    """It used to give () with a warning that Python numbers and tuples without
    arrays are constants, though it holds arrays."""
    with pytest.raises(TypeError, match=r"the input at position 0 \('params'\) is a "
                                        r"Unregistered, a subclass of dict that is not a "
                                        r"registered pytree.*register_pytree_node"):
        s2sad.grad(dot_dict_loss)(Unregistered(layer={"w": np.ones((3, 2))}, b=np.ones(2)),
                                  np.ones((4, 3)))
