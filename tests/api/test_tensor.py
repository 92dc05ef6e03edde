import copy
import pickle

import numpy as np
import pytest

from s2sad import dtype as mstype
from s2sad.tensor import Parameter, ParameterTuple, Tensor


# ---------------------------------------------------------------- dtype module
def test_dtype_names_and_identity():
    names = [str(t) for t in (mstype.float16, mstype.float32, mstype.float64, mstype.int8,
                              mstype.int16, mstype.int32, mstype.int64, mstype.uint8,
                              mstype.bool_)]
    assert names == ['Float16', 'Float32', 'Float64', 'Int8', 'Int16', 'Int32', 'Int64',
                     'UInt8', 'Bool']
    assert repr(mstype.float32) == 'Float32'
    assert mstype.float32.np_dtype == np.dtype(np.float32)
    assert mstype.half is mstype.float16 and mstype.single is mstype.float32
    assert mstype.double is mstype.float64


def test_dtype_equality_hash_and_copy():
    assert mstype.float32 == mstype.Type('Float32', np.float32)
    assert mstype.float32 != mstype.float64
    assert mstype.float32 != np.float32  # strict: Type vs Type only
    assert len({mstype.float32, mstype.Type('Float32', np.float32)}) == 1
    assert copy.deepcopy(mstype.int64) is mstype.int64
    assert pickle.loads(pickle.dumps(mstype.bool_)) is mstype.bool_


def test_to_numpy_and_from_numpy():
    assert mstype.to_numpy(mstype.int32) == np.dtype(np.int32)
    assert mstype.to_numpy(np.float16) == np.dtype(np.float16)
    assert mstype.to_numpy(np.dtype('uint8')) == np.dtype(np.uint8)
    assert mstype.to_numpy(None) is None
    with pytest.raises(TypeError, match='complex'):
        mstype.to_numpy(np.complex64)
    with pytest.raises(TypeError, match='nonsense'):
        mstype.to_numpy('nonsense')
    assert mstype.from_numpy(np.dtype(np.float64)) is mstype.float64
    assert mstype.from_numpy(np.bool_) is mstype.bool_
    with pytest.raises(TypeError):
        mstype.from_numpy(np.complex128)


def test_is_float_is_int():
    assert mstype.is_float(mstype.float16) and mstype.is_float(np.float64)
    assert not mstype.is_float(mstype.int32)
    assert mstype.is_int(mstype.uint8) and mstype.is_int(np.dtype(np.int64))
    assert not mstype.is_int(mstype.bool_) and not mstype.is_int(mstype.float32)


# ---------------------------------------------------------------- construction
def test_default_dtypes():
    assert Tensor([1.0, 2]).dtype == mstype.float32
    assert Tensor([[1, 2], [3, 4]]).dtype == mstype.int64
    assert Tensor((True, False)).dtype == mstype.bool_
    assert Tensor(1.5).dtype == mstype.float32 and Tensor(1.5).shape == ()
    assert Tensor(3).dtype == mstype.int64
    assert Tensor(True).dtype == mstype.bool_
    assert Tensor(np.ones(2)).dtype == mstype.float64
    s = Tensor(np.float64(1.0))
    assert s.dtype == mstype.float64 and s.ndim == 0
    assert isinstance(s._data, np.ndarray)
    assert Tensor(np.int32(4)).dtype == mstype.int32


def test_no_copy_and_casting():
    a = np.arange(3.0)
    t = Tensor(a)
    assert t._data is a and t.asnumpy() is a
    assert Tensor(t)._data is a
    c = Tensor(a, dtype=mstype.float32)
    assert c.dtype == mstype.float32 and c._data is not a
    assert Tensor([1, 2], dtype=np.float16).dtype == mstype.float16
    assert Tensor(2.5, mstype.int32).item() == 2
    assert Tensor(t, dtype=mstype.int8).dtype == mstype.int8


def test_bad_input():
    with pytest.raises(TypeError):
        Tensor()
    with pytest.raises(TypeError):
        Tensor({'a': 1})
    with pytest.raises(TypeError):
        Tensor([1.0], dtype='complex64')


# ---------------------------------------------------------------- properties
def test_properties():
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert t.shape == (2, 3) and all(type(d) is int for d in t.shape)
    assert t.ndim == 2 and t.size == 6
    assert isinstance(t.T, Tensor) and t.T.shape == (3, 2)
    np.testing.assert_array_equal(t.T.asnumpy(), t.asnumpy().T)
    assert Tensor(2.5).item() == 2.5 and isinstance(Tensor(2.5).item(), float)
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_python_protocols():
    t = Tensor([1.0, 2.0, 3.0])
    assert np.asarray(t) is t._data
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert len(t) == 3
    rows = list(Tensor([[1, 2], [3, 4]]))
    assert len(rows) == 2 and all(isinstance(r, Tensor) for r in rows)
    assert rows[1].tolist() == [3, 4]
    assert float(Tensor([2.5])) == 2.5 and int(Tensor(7.9)) == 7
    assert bool(Tensor(1)) is True and bool(Tensor([0.0])) is False
    with pytest.raises(ValueError):
        bool(t)
    with pytest.raises(TypeError):
        float(t)
    with pytest.raises(TypeError):
        len(Tensor(1.0))
    with pytest.raises(TypeError):
        iter(Tensor(1.0)).__next__()
    assert '{:.2f}'.format(Tensor(1.23456)) == '1.23'


# ---------------------------------------------------------------- printing
def test_repr_exact_strings():
    assert repr(Tensor(np.array([15.337], np.float32))) == \
        'Tensor(shape=[1], dtype=Float32, value= [ 1.53369999e+01])'
    # Float32 values whose exact digits are 1.41000009 / 1.59999990 / 6.59999990.
    row = [1.41000009, 1.5999999, 6.6]
    t = Tensor(np.array([row, row], np.float32))
    assert repr(t) == ('Tensor(shape=[2, 3], dtype=Float32, value=\n'
                       '[[ 1.41000009e+00,  1.59999990e+00,  6.59999990e+00],\n'
                       ' [ 1.41000009e+00,  1.59999990e+00,  6.59999990e+00]])')


def test_repr_digits_follow_stored_value():
    t = Tensor(np.array([[1.41, 1.6, 6.6], [1.41, 1.6, 6.6]], np.float32))
    digits = ['% .8e' % float(np.float32(v)) for v in (1.41, 1.6, 6.6)]
    cells = ', '.join(digits)
    assert repr(t) == ('Tensor(shape=[2, 3], dtype=Float32, value=\n'
                       '[[' + cells + '],\n [' + cells + ']])')


def test_repr_other_cases():
    assert repr(Tensor(1.5)) == 'Tensor(shape=[], dtype=Float32, value= 1.5)'
    assert repr(Tensor(np.array([-0.4028624, 2.0], np.float32))) == \
        'Tensor(shape=[2], dtype=Float32, value= [-4.02862400e-01,  2.00000000e+00])'
    assert repr(Tensor([[1, 2], [3, 4]])) == \
        'Tensor(shape=[2, 2], dtype=Int64, value=\n[[1, 2],\n [3, 4]])'
    assert repr(Tensor([True, False])) == \
        'Tensor(shape=[2], dtype=Bool, value= [ True, False])'
    assert repr(Tensor(3)) == 'Tensor(shape=[], dtype=Int64, value= 3)'


def test_str_is_numpy_str():
    a = np.array([[1.5, 2.0]], np.float32)
    assert str(Tensor(a)) == str(a)


# ---------------------------------------------------------------- operators
def _check(t, values, dt):
    assert type(t) is Tensor
    assert isinstance(t._data, np.ndarray)
    assert t.dtype == dt
    np.testing.assert_allclose(t.asnumpy(), values)


def test_arithmetic_with_tensors():
    a = Tensor([1.0, 2.0, 4.0])
    b = Tensor([2.0, 2.0, 2.0])
    f32 = mstype.float32
    _check(a + b, [3, 4, 6], f32)
    _check(a - b, [-1, 0, 2], f32)
    _check(a * b, [2, 4, 8], f32)
    _check(a / b, [0.5, 1, 2], f32)
    _check(a // b, [0, 1, 2], f32)
    _check(a % b, [1, 0, 0], f32)
    _check(a ** b, [1, 4, 16], f32)
    _check(-a, [-1, -2, -4], f32)
    _check(+a, [1, 2, 4], f32)
    _check(abs(Tensor([-1.0, 2.0])), [1, 2], f32)
    m = Tensor([[1.0, 2.0], [3.0, 4.0]])
    _check(m @ m, [[7, 10], [15, 22]], f32)


def test_scalars_keep_float32():
    a = Tensor([1.0, 2.0])
    _check(a * 2.0, [2, 4], mstype.float32)
    _check(2.0 * a, [2, 4], mstype.float32)
    _check(a + 1, [2, 3], mstype.float32)
    _check(1 - a, [0, -1], mstype.float32)
    _check(1.0 / a, [1, 0.5], mstype.float32)
    _check(7.0 // a, [7, 3], mstype.float32)
    _check(5.0 % a, [0, 1], mstype.float32)
    _check(2.0 ** a, [2, 4], mstype.float32)
    _check(Tensor(3.0) * 2.0, 6.0, mstype.float32)  # 0-d stays an ndarray
    _check(np.float32(3.0) * a, [3, 6], mstype.float32)
    _check(a * [1.0, 2.0], [1, 4], mstype.float32)
    _check(Tensor([1, 2]) * 3, [3, 6], mstype.int64)


def test_reflected_with_ndarray():
    a = Tensor([1.0, 2.0])
    arr = np.array([10.0, 20.0], np.float32)
    _check(arr + a, [11, 22], mstype.float32)
    _check(arr - a, [9, 18], mstype.float32)
    _check(arr * a, [10, 40], mstype.float32)
    _check(arr / a, [10, 10], mstype.float32)
    _check(arr // a, [10, 10], mstype.float32)
    _check(arr % a, [0, 0], mstype.float32)
    _check(arr ** Tensor([1.0, 0.0]), [10, 1], mstype.float32)
    _check(np.ones((2, 2), np.float32) @ a, [3, 3], mstype.float32)
    _check(np.ones(2) + a, [2, 3], mstype.float64)
    _check(a + arr, [11, 22], mstype.float32)


def test_comparisons():
    a = Tensor([1.0, 2.0, 3.0])
    b = Tensor([3.0, 2.0, 1.0])
    for res, exp in [(a == b, [0, 1, 0]), (a != b, [1, 0, 1]), (a < b, [1, 0, 0]),
                     (a <= b, [1, 1, 0]), (a > b, [0, 0, 1]), (a >= b, [0, 1, 1]),
                     (a > 1.5, [0, 1, 1]), (np.array([2.0, 2, 2]) == a, [0, 1, 0]),
                     (2.0 < a, [0, 0, 1])]:
        assert type(res) is Tensor and res.dtype == mstype.bool_
        np.testing.assert_array_equal(res.asnumpy(), np.array(exp, bool))
    assert (a == 'x') is False and (a != 'x') is True  # foreign types fall back to identity


def test_hash_is_identity():
    a, b = Tensor([1.0]), Tensor([1.0])
    assert hash(a) == object.__hash__(a)
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2


# ---------------------------------------------------------------- indexing
def test_getitem():
    t = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    _check(t[1], [4, 5, 6, 7], mstype.float32)
    s = t[1, 2]
    assert type(s) is Tensor and s.shape == () and isinstance(s._data, np.ndarray)
    assert s.item() == 6
    assert t[:, 1:3].shape == (3, 2)
    assert t[..., None].shape == (3, 4, 1)
    _check(t[t > 9.0], [10, 11], mstype.float32)
    _check(t[np.array([0, 2]), 0], [0, 8], mstype.float32)
    _check(t[Tensor([2, 0])][:, 0], [8, 0], mstype.float32)
    _check(t[Tensor(1), Tensor(3)], 7, mstype.float32)
    _check(t[[0, 1], [1, 2]], [1, 6], mstype.float32)


def test_setitem_in_place():
    t = Tensor(np.zeros((2, 3), np.float32))
    data = t._data
    t[0] = Tensor([1.0, 2.0, 3.0])
    t[1, Tensor(2)] = 9
    t[:, 0] = np.array([5.0, 6.0])
    assert t._data is data
    np.testing.assert_array_equal(data, [[5, 2, 3], [6, 0, 9]])
    t[t > 4.0] = 0.0
    np.testing.assert_array_equal(data, [[0, 2, 3], [0, 0, 0]])


# ---------------------------------------------------------------- methods
def test_reductions():
    t = Tensor([[1.0, 2.0], [3.0, 4.0]])
    _check(t.sum(), 10, mstype.float32)
    _check(t.sum(axis=0), [4, 6], mstype.float32)
    assert t.sum(axis=1, keepdims=True).shape == (2, 1)
    assert t.sum(axis=(0, 1)).shape == ()
    _check(t.mean(), 2.5, mstype.float32)
    assert t.mean(axis=1, keep_dims=True).shape == (2, 1)
    _check(t.max(), 4, mstype.float32)
    _check(t.max(axis=0), [3, 4], mstype.float32)
    assert t.min(axis=1, keepdims=True).shape == (2, 1)
    _check(t.min(), 1, mstype.float32)
    n = Tensor([3.0, 4.0]).norm()
    assert n.shape == () and n.dtype == mstype.float32 and n.item() == 5.0


def test_shape_methods():
    t = Tensor(np.arange(6.0))
    assert t.reshape(2, 3).shape == (2, 3)
    assert t.reshape((3, 2)).shape == (3, 2)
    assert t.reshape([3, -1]).shape == (3, 2)
    m = Tensor(np.zeros((2, 3, 4)))
    assert m.transpose().shape == (4, 3, 2)
    assert m.transpose(1, 0, 2).shape == (3, 2, 4)
    assert m.transpose((2, 0, 1)).shape == (4, 2, 3)
    assert Tensor(np.zeros((1, 3))).squeeze().shape == (3,)
    assert Tensor([1.0, 2.0]).expand_dims(0).shape == (1, 2)
    assert m.flatten().shape == (24,)


def test_elementwise_methods():
    t = Tensor([1.0, 4.0])
    _check(Tensor([-1.0, 2.0]).abs(), [1, 2], mstype.float32)
    _check(t.exp(), np.exp([1.0, 4.0]), mstype.float32)
    _check(t.log(), np.log([1.0, 4.0]), mstype.float32)
    _check(t.sqrt(), [1, 2], mstype.float32)
    _check(t.square(), [1, 16], mstype.float32)
    _check(t.astype(mstype.int32), [1, 4], mstype.int32)
    _check(t.astype(np.float64), [1, 4], mstype.float64)
    c = t.copy()
    c[0] = 100.0
    assert t.asnumpy()[0] == 1.0 and c._data is not t._data


# ---------------------------------------------------------------- Parameter
def test_parameter_basics():
    p = Parameter(Tensor(np.array([1.0], np.float32)), name='z')
    assert isinstance(p, Tensor) and p.name == 'z' and p.requires_grad is True
    assert repr(p) == 'Parameter (name=z, shape=(1,), dtype=Float32, requires_grad=True)'
    assert p.data is p
    q = Parameter([1.0, 2.0], requires_grad=False)
    assert q.name is None and q.requires_grad is False and q.dtype == mstype.float32
    assert Parameter(3).dtype == mstype.int64
    assert Parameter(np.ones(2)).dtype == mstype.float64
    assert type(p + 1.0) is Tensor
    assert len({p, q}) == 2 and hash(p) == object.__hash__(p)


def test_parameter_owns_its_storage():
    src = np.ones(2, np.float32)
    p = Parameter(src)
    p[0] = 5.0
    assert src[0] == 1.0


def test_parameter_set_data():
    p = Parameter(np.zeros(2, np.float32), name='w')
    new = np.array([1.0, 2.0, 3.0])
    assert p.set_data(new) is p
    assert p._data is new and p.dtype == mstype.float64 and p.shape == (3,)
    p.set_data(Tensor([1, 2]))
    assert p.dtype == mstype.int64
    assert p.name == 'w'


def test_parameter_tuple():
    a = Parameter(1.0, name='a')
    b = Parameter(2.0, name='b')
    pt = ParameterTuple([a, b])
    assert isinstance(pt, tuple)
    assert len(pt) == 2 and pt[0] is a and pt[1] is b
    assert len(ParameterTuple(p for p in (a, b))) == 2
    assert len(ParameterTuple([Parameter(1.0), Parameter(2.0)])) == 2  # unnamed are fine
    with pytest.raises(TypeError, match='ParameterTuple input should be `Parameter` collection'):
        ParameterTuple([a, Tensor(1.0)])
    with pytest.raises(ValueError, match="'a'"):
        ParameterTuple([a, Parameter(3.0, name='a')])
