"""s2sad.compat: the behaviour of newer Python and NumPy versions on the oldest supported.

CI runs the whole suite on Python 3.9 (with NumPy 2.0) and 3.13 too; these tests
imitate the older versions on any interpreter, so a change to ``compat`` is
checked wherever the suite runs.
"""
import inspect
import linecache

import numpy as np
import pytest

from s2sad import compat, ops

_REAL_SIGNATURE = inspect.signature


def _numpy_2_0_signature(fn, **kwargs):
    """inspect.signature as it behaves for ufuncs with NumPy < 2.1."""
    if isinstance(fn, np.ufunc):
        raise ValueError("callable %r is not supported by signature" % fn)
    return _REAL_SIGNATURE(fn, **kwargs)


@pytest.mark.parametrize("ufunc", [np.tanh, np.add])
def test_ufunc_signature_matches_what_newer_numpy_declares(ufunc, monkeypatch):
    try:
        declared = _REAL_SIGNATURE(ufunc)
    except ValueError:
        pytest.skip("this NumPy declares no ufunc signature to compare with")
    monkeypatch.setattr(inspect, "signature", _numpy_2_0_signature)
    assert compat.signature(ufunc) == declared


def test_gradient_of_a_ufunc_when_numpy_declares_no_signature(monkeypatch):
    monkeypatch.setattr(inspect, "signature", _numpy_2_0_signature)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(ops.GradOperation()(np.tanh)(x), 1 - np.tanh(x) ** 2,
                               rtol=1e-15)
    dx, dy = ops.GradOperation(get_all=True)(np.multiply)(x, 3 * x)
    np.testing.assert_array_equal(dx, 3 * x)
    np.testing.assert_array_equal(dy, x)


def test_signature_errors_of_other_callables_are_kept(monkeypatch):
    def no_signature(fn, **kwargs):
        raise ValueError("no signature found")
    monkeypatch.setattr(inspect, "signature", no_signature)
    with pytest.raises(ValueError, match="no signature found"):
        compat.signature(len)


def test_module_name_of_numpy_ufuncs():
    assert compat.module_name(np.cbrt) == "numpy"
    assert compat.module_name(np.sum) == "numpy"
    assert compat.module_name(test_module_name_of_numpy_ufuncs) == __name__


def test_getline_of_an_undecodable_file(tmp_path, monkeypatch):
    """Python 3.9's linecache raises UnicodeDecodeError here; later versions return ''."""
    path = tmp_path / "latin.py"
    path.write_bytes(b"x = 1\n# caf\xe9\n")
    assert compat.getline(str(path), 1) in ("", "x = 1\n")

    def raising(filename, lineno, module_globals=None):
        raise UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte")
    monkeypatch.setattr(linecache, "getline", raising)
    assert compat.getline(str(path), 2) == ""
