"""``s2sad dump`` prints a module that runs on its own and names the user's code.

Each dump is saved to a ``.py`` file, imported as a module of its own (no
namespace filled by s2sad), and its function is called: the values must be
those of the gradient function the user would call (``GradOperation``,
``s2sad.grad``, ``s2sad.jvp``).
"""
import builtins
import dis
import importlib.util
import inspect
import itertools
import linecache
import re
import types

import numpy as np
import pytest

import s2sad
from s2sad import cli, ops, Tensor

_count = itertools.count()

USER = '''\
import numpy as np

W = np.array([[1.0, 2.0, 0.5], [3.0, -0.5, 1.5]])


def make():
    scale = np.array([0.5, 2.0])

    def loss(x):
        return np.sum(np.tanh(W @ x) * scale)
    return loss


loss = make()


def helper(a):
    return np.sin(a) * a


def f(x, n):
    acc = x
    for i in range(3):
        if np.sum(acc) > 0:
            acc = helper(acc) * 0.5
        else:
            acc = acc * acc
    return np.sum(acc * np.float64(2.5) + x[np.array([0, 2])].sum())


def g(x):
    y = np.sin(x) * x
    return np.sum(y * y)
'''


@pytest.fixture
def user(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text(USER)
    return str(path), cli.load_file(str(path))


def dump(capsys, *argv):
    assert cli.main(["dump", *argv, "--color", "never"]) == 0
    return capsys.readouterr().out


def import_dumped(tmp_path, text):
    """The dumped text saved as a file and imported as a fresh module."""
    name = "dumped_%d" % next(_count)
    path = tmp_path / (name + ".py")
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not unresolved_globals(module), unresolved_globals(module)
    return module


def unresolved_globals(module):
    """Global names the module's functions read that neither it nor builtins define."""
    missing = set()

    def walk(code):
        for ins in dis.get_instructions(code):
            if ins.opname == "LOAD_GLOBAL" and ins.argval not in vars(module) \
                    and not hasattr(builtins, ins.argval):
                missing.add(ins.argval)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                walk(c)
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            walk(value.__code__)
    return missing


def main_function(module, text):
    """The function the module is for: the last one defined at the top level."""
    return getattr(module, re.findall(r"^def (\w+)\(", text, re.M)[-1])


def arrays(values):
    return [np.asarray(v.asnumpy() if isinstance(v, Tensor) else v) for v in values]


def assert_values(got, want):
    got, want = arrays(got), arrays(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


# --------------------------------------------------------- runnable on its own
def test_a_cell_dump_runs_on_its_own(capsys, tmp_path):
    from samples.sin_cos_net import Net
    text = dump(capsys, "samples/sin_cos_net.py::Net")
    fn = main_function(import_dumped(tmp_path, text), text)
    x = np.array([0.3, -1.1, 2.0])
    assert_values(fn(x), [ops.GradOperation()(Net())(Tensor(x))])


def test_a_cell_with_a_parameter_names_it_and_runs(capsys, tmp_path):
    from samples.matmul_net import Net
    text = dump(capsys, "samples/matmul_net.py::Net", "--get-all", "--get-by-list")
    assert "#   self_z: the Cell's self.z, read at each call" in text
    fn = main_function(import_dumped(tmp_path, text), text)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3)).astype(np.float32)
    net = Net()
    inputs, weights = net.trainable_params()[0], s2sad.ParameterTuple(net.trainable_params())
    want = ops.GradOperation(get_all=True, get_by_list=True)(net, weights)(Tensor(x),
                                                                           Tensor(y))
    assert_values(fn(x, y, inputs.asnumpy()), list(want[0]) + list(want[1]))


@pytest.mark.parametrize("x", [[0.4, 0.9, 0.2], [-0.4, 0.3, -0.8]])
def test_control_flow_calls_and_constants_run_on_their_own(capsys, tmp_path, user, x):
    path, mod = user
    text = dump(capsys, path + "::f")
    # the constants are written as source, saying where they came from
    assert re.search(r"^_k\d+ = xp\.float64\(2\.5\)  # ", text, re.M), text
    # an array of constants is built while compiling and written as source too
    assert re.search(r"^_k\d+ = xp\.array\(\[0, 2\], dtype='<i[48]'\)  # ", text, re.M), text
    assert "def helper_fwd(" in text        # the outlined call comes along
    fn = main_function(import_dumped(tmp_path, text), text)
    x, n = np.array(x), np.array(1.0)
    assert_values(fn(x, n), [ops.GradOperation()(mod.f)(x, n)])


def test_a_closure_names_what_it_captured_and_runs(capsys, tmp_path, user):
    path, mod = user
    text = dump(capsys, path + "::loss")
    for name in ("W", "scale"):
        assert "#   %s: a global or captured variable the function reads" % name in text
    fn = main_function(import_dumped(tmp_path, text), text)
    scale = inspect.getclosurevars(mod.loss).nonlocals["scale"]
    x = np.array([0.2, -0.7, 0.5])
    assert_values(fn(x, mod.W, scale), [s2sad.grad(mod.loss)(x)])


def test_order_2_of_a_cell_runs_on_its_own(capsys, tmp_path):
    from samples.sin_cos_net import Net
    text = dump(capsys, "samples/sin_cos_net.py::Net", "--order", "2")
    fn = main_function(import_dumped(tmp_path, text), text)
    x = np.array([0.3, -1.1, 2.0])
    assert_values(fn(x), [ops.GradOperation()(ops.GradOperation()(Net()))(Tensor(x))])


def test_order_2_of_a_function_is_the_code_its_gradient_runs(capsys, tmp_path, user):
    path, mod = user
    text = dump(capsys, path + "::g", "--order", "2")
    fn = main_function(import_dumped(tmp_path, text), text)
    x = np.array([0.3, -1.1, 2.0])
    gg = ops.GradOperation()(ops.GradOperation()(mod.g))
    want = gg(x)
    assert_values(fn(x), [want])
    # same code, Taylor mode: the dump's, compiled from specs alone, holds for any shapes,
    # as the gradient's does without specialising to the shapes of x
    with s2sad.options(disabled_passes={"static_shapes"}):
        assert text.endswith(s2sad.get_source(gg, x).split("\n", 1)[1])


def test_forward_mode_runs_on_its_own(capsys, tmp_path, user):
    from samples.sin_cos_net import Net
    text = dump(capsys, "samples/sin_cos_net.py::Net", "--mode", "forward")
    fn = main_function(import_dumped(tmp_path, text), text)
    x, t = np.array([0.3, -1.1]), np.array([1.0, 0.5])
    assert_values(fn(x, t), s2sad.jvp(Net(), Tensor(x), Tensor(t)))
    path, mod = user
    text = dump(capsys, path + "::f", "--mode", "forward")
    fn = main_function(import_dumped(tmp_path, text), text)
    x, n = np.array([0.4, 0.9, 0.2]), np.array(1.0)
    out, t_out = fn(x, n, np.array([1.0, -2.0, 0.5]), np.array(0.0))
    want_out, want_t = s2sad.jvp(mod.f, (x, n), (np.array([1.0, -2.0, 0.5]), np.array(0.0)))
    assert_values([out, t_out], [want_out, want_t])


def test_get_source_gives_the_function_or_the_module(tmp_path, user):
    _, mod = user
    grad_fn = ops.GradOperation()(mod.f)
    x, n = np.array([0.4, 0.9, 0.2]), np.array(1.0)
    want = grad_fn(x, n)
    plain = s2sad.get_source(grad_fn)
    assert plain.startswith("# s2sad: gradient of f (") and "import" not in plain
    text = s2sad.get_source(grad_fn, standalone=True)
    assert text.endswith(plain.split("\n", 1)[1])
    fn = main_function(import_dumped(tmp_path, text), text)
    assert_values(fn(x, n), [want])


def test_a_constant_without_a_source_form_is_named_not_guessed(tmp_path):
    from s2sad.backend.codegen import Constants
    from s2sad.backend.standalone import module_source
    consts = Constants()
    name = consts.name(object(), ("helper",))
    big = consts.name(np.zeros(20001))
    source = "# s2sad: gradient of f (f.py)\ndef f_grad(x):\n    return (%s(x), %s)\n" % (
        name, big)
    compiled = types.SimpleNamespace(source=source, constants=consts, inputs=None,
                                     grad_ir=types.SimpleNamespace(name="f_grad", params=[]))
    text = module_source(compiled)
    with pytest.raises(ImportError, match=r"_k0 \(an object of type object, the Cell's self.helper\) "
                                          r"cannot be written as source"):
        import_dumped(tmp_path, text)
    assert "# _k1: a float64 array of shape (20001,), larger than" in text


def test_values_are_written_exactly():
    from s2sad.backend.standalone import value_source
    values = [np.float32(0.1), np.float64(1 / 3), np.array([[1e-300, -np.inf], [np.nan, 2.5]]),
              np.arange(4, dtype=np.int32), (1.5, float("nan"), complex(1, -2)), np.float64,
              np.dtype("float32"), np.array(True), np.zeros((0, 3))]
    for v in values:
        imports = []
        back = eval(value_source(v, imports), {"xp": np})
        assert type(back) is type(v)
        if isinstance(v, (np.ndarray, np.generic)):
            assert back.dtype == v.dtype and back.shape == v.shape
            np.testing.assert_array_equal(back, v)
        elif isinstance(v, tuple):
            assert repr(back) == repr(v)
        else:
            assert back == v


@pytest.mark.parametrize("seed", range(8))
def test_generated_programs_dump_as_modules_that_import(capsys, tmp_path, seed):
    """Every name the printed code reads is defined by the module (or is a builtin)."""
    import program_gen
    program = program_gen.generate(seed)
    path = program_gen.write_program(program, tmp_path)
    target = path + ("::Net" if program.kind == "cell" else "::f")
    for options in ([], ["--mode", "forward"], ["--order", "2"]):
        assert cli.main(["dump", target, "--color", "never"] + options) == 0
        import_dumped(tmp_path, capsys.readouterr().out)


def test_explained_dump_runs_and_reads_the_same_constants(capsys, tmp_path, user):
    """``--explain`` writes the code again: its ``_kN`` must be the module's ``_kN``."""
    path, mod = user
    text = dump(capsys, path + "::f", "--explain")
    assert "def helper_fwd(" not in text    # written inline, one rule comment per line
    fn = main_function(import_dumped(tmp_path, text), text)
    x, n = np.array([0.4, 0.9, 0.2]), np.array(1.0)
    assert_values(fn(x, n), [ops.GradOperation()(mod.f)(x, n)])
