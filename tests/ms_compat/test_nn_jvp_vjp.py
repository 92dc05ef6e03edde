"""``nn.Jvp`` and ``nn.Vjp``: MindSpore's Cells around forward and reverse mode."""
import numpy as np

from s2sad import nn, Tensor

from gradcheck import numeric_grad


class CubePlus(nn.Cell):
    def construct(self, x, y):
        return x ** 3 + y


X = np.array([[1, 2], [3, 4]], np.float32)


def test_jvp_prints_what_mindsporess_docs_print():
    # mindspore.nn.Jvp's example (r1.7 docs): out [[2, 10], [30, 68]], jvp [[4, 13], [28, 49]]
    v = Tensor(np.ones((2, 2), np.float32))
    out, tangent = nn.Jvp(CubePlus())(Tensor(X), Tensor(X), (v, v))
    np.testing.assert_array_equal(out.asnumpy(), [[2, 10], [30, 68]])
    np.testing.assert_array_equal(tangent.asnumpy(), [[4, 13], [28, 49]])


def test_vjp_matches_finite_differences_per_input():
    x = np.array([[0.5, -1.0], [2.0, 0.3]])
    y = np.array([[1.0, 2.0], [3.0, 4.0]])
    u = np.array([[1.0, -2.0], [0.5, 3.0]])
    out, (dx, dy) = nn.Vjp(CubePlus())(Tensor(x), Tensor(y), Tensor(u))
    np.testing.assert_allclose(out.asnumpy(), x ** 3 + y)

    def dotted(a, b):
        return float(np.sum(u * (a ** 3 + b)))
    np.testing.assert_allclose(dx.asnumpy(), numeric_grad(dotted, (x, y), 0), rtol=1e-7)
    np.testing.assert_allclose(dy.asnumpy(), numeric_grad(dotted, (x, y), 1), rtol=1e-7)


class Square(nn.Cell):
    def construct(self, x):
        return x * x


def test_one_input_gives_a_bare_cotangent():
    out, dx = nn.Vjp(Square())(Tensor(np.array([1.5, -2.0])), Tensor(np.ones(2)))
    np.testing.assert_allclose(dx.asnumpy(), [3.0, -4.0])
