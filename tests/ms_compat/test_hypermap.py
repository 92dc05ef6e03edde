"""``MultitypeFuncGraph``, ``HyperMap`` and ``Map`` as model-zoo training code uses them."""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter
from s2sad.ops import composite as C

ADD = ops.MultitypeFuncGraph("add")


@ADD.register("Number", "Number")
def _add_numbers(x, y):
    return x + y


@ADD.register("Tensor", "Tensor")
def _add_tensors(x, y):
    return ops.Add()(x, y)


SCALE = C.MultitypeFuncGraph("grad_scale")


@SCALE.register("Number", "Tensor")
def _scale(k, grad):
    return grad * k


def test_overloads_dispatch_on_argument_types_as_mindsporess_example():
    # mindspore.ops.MultitypeFuncGraph's example prints 3 and [0.2 1.2 2.4]
    assert ADD(1, 2) == 3
    t = Tensor(np.array([0.1, 0.6, 1.2], np.float32))
    np.testing.assert_allclose(ADD(t, t).asnumpy(), [0.2, 1.2, 2.4], rtol=1e-6)
    with pytest.raises(ValueError, match="no function is registered for arguments of types "
                                         r"\(str, int\)"):
        ADD("a", 1)
    with pytest.raises(TypeError, match="is not one of"):
        ADD.register("Tenser")


def test_hypermap_scales_nested_gradient_tuples():
    grads = (Tensor(np.array([1.0, -2.0])), (Tensor(np.array([3.0])), Tensor(np.eye(2))))
    out = C.HyperMap()(ops.partial(SCALE, 0.5), grads)
    assert isinstance(out, tuple) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[0].asnumpy(), [0.5, -1.0])
    np.testing.assert_array_equal(out[1][1].asnumpy(), 0.5 * np.eye(2))
    pairs = C.HyperMap(ADD)((1, 2), (10, 20))
    assert pairs == (11, 22)
    assert C.Map()(ADD, [1, 2], [3, 4]) == [4, 6]
    assert C.HyperMap(ADD, reverse=True)((1, 2), (10, 20)) == (11, 22)
    with pytest.raises(ValueError, match="one length"):
        C.HyperMap(ADD)((1, 2), (1,))


class ScaledInside(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1.0, 2.0])), name="w")
        self.hyper_map = C.HyperMap()

    def construct(self, x):
        (y,) = self.hyper_map(ops.partial(SCALE, 2.0), (self.w * x,))
        return y.sum()


def test_inside_differentiated_code_the_call_is_refused_at_the_users_line():
    net = ScaledInside()
    x = Tensor(np.ones(2))
    assert float(net(x)) == 6.0                                  # eagerly it runs
    with pytest.raises(s2sad.CompileError, match="HyperMap cannot be called inside") as info:
        ops.GradOperation()(net)(x)
    assert "test_hypermap.py" in str(info.value).splitlines()[0]
