"""Command line interface: ``s2sad dump FILE::NAME`` prints the generated adjoint.

Reading the generated code is the point of a source-to-source differentiator,
so the CLI makes it available without writing a driver script: as Python, a
module that can be saved and imported (highlighted on a terminal,
``--explain`` naming the rule behind each line and the runtime helpers),
as the IR's text (``--format ir``) or as a Graphviz graph (``--format dot``).
Exit codes: 0 success (also when the reader closes the pipe early, as
``| head`` does), 1 the program cannot be compiled (or its file fails to import
or exits while importing), 2 the command line is wrong or names something
``dump`` cannot call.
"""
import argparse
import contextlib
import hashlib
import importlib.util
import inspect
import os
import sys
import traceback

from .backend.dot import to_dot
from .backend.explain import explained_source
from .backend.standalone import module_source
from .highlight import ansi
from .ir import format_func

EXIT_OK = 0
EXIT_COMPILE = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A command line that names nothing s2sad can differentiate."""


class UserCodeError(Exception):
    """The user's file raised while importing or constructing; carries a short report."""


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="s2sad",
        description="Source-to-source automatic differentiation for Python with a "
                    "MindSpore-like API.",
    )
    from . import __version__
    parser.add_argument("--version", action="version", version="s2sad " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    dump = sub.add_parser(
        "dump",
        help="print the generated gradient (adjoint) source of a Cell or function",
        description="Compile the gradient of a Cell or function and print the generated "
                    "Python source as a module that runs on its own (or its IR with --ir). "
                    "Every required positional input "
                    "is assumed to be a Tensor; no example values are needed. FILE is "
                    "imported, so its top-level code runs (keep script code under "
                    "'if __name__ == \"__main__\":'); whatever it prints while being "
                    "imported, constructed or compiled goes to stderr, so stdout holds "
                    "only the dump.",
    )
    dump.add_argument(
        "target", metavar="FILE::NAME",
        help="a .py file and the name of a Cell subclass (instantiated with no arguments) "
             "or a function defined in it, e.g. samples/sin_cos_net.py::Net")
    dump.add_argument("--get-all", action="store_true",
                      help="differentiate with respect to every input (GradOperation get_all)")
    dump.add_argument("--get-by-list", action="store_true",
                      help="also differentiate with respect to all of the Cell's "
                           "trainable_params() (GradOperation get_by_list; Cells only)")
    dump.add_argument("--sens-param", action="store_true",
                      help="take the output's sensitivity as an extra last argument "
                           "(GradOperation sens_param)")
    dump.add_argument("--format", choices=("python", "ir", "dot"), default=None,
                      help="python: the generated source (default); ir: the IR of the forward "
                           "program, a blank line, then the IR of the gradient program; dot: "
                           "both IRs as one Graphviz graph (ops as nodes with their primitive "
                           "and source line, data flow as edges, if/while/for regions as "
                           "clusters), e.g. s2sad dump F::Net --format dot | dot -Tsvg")
    dump.add_argument("--varargs", type=int, default=None, metavar="N",
                      help="pass N Tensor inputs through the function's *args (default 0)")
    dump.add_argument("--ir", action="store_true",
                      help="same as --format ir")
    dump.add_argument("--explain", action="store_true",
                      help="annotate each generated line with the bprop rule that produced it, "
                           "list where those rules are defined and what each rt.<name> "
                           "runtime helper the code calls does (python and dot formats)")
    dump.add_argument("--order", type=int, default=1, metavar="N",
                      help="the N-th derivative: the gradient of the gradient ... (N >= 1), "
                           "as GradOperation() applied N times compiles it; the flags apply "
                           "to the outermost derivative, the inner ones are GradOperation() "
                           "of the first input")
    dump.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                      help="reverse (default): the gradient program; forward: the forward-mode "
                           "(JVP) program, taking one tangent per input and returning "
                           "(output, tangent)")
    dump.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                      help="highlight keywords, comments and adjoint names (d_*) in the "
                           "Python source: auto (default) when writing to a terminal and "
                           "NO_COLOR is unset, always, or never")
    dump.set_defaults(handler=_cmd_dump)
    return parser


# ------------------------------------------------------------------ loading
def _split_target(target):
    path, sep, name = target.rpartition("::")
    if not sep or not path or not name:
        raise UsageError("expected FILE::NAME (e.g. samples/sin_cos_net.py::Net), got %r"
                         % target)
    return path, name


def _module_name(path):
    """A unique, stable module name so user files never shadow real modules."""
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])
    digest = hashlib.sha1(os.path.abspath(path).encode("utf-8")).hexdigest()[:12]
    return "_s2sad_user_%s_%s" % (stem, digest)


def _user_frames(exc, path):
    """The traceback frames of ``exc`` in the user's file (the last frame if none is)."""
    frames = traceback.extract_tb(exc.__traceback__)
    target = os.path.abspath(path)
    return [f for f in frames if os.path.abspath(f.filename) == target] or frames[-1:]


def _user_frames_report(exc, path):
    """The exception as ``File ..., line N`` lines in the user's file, without internals."""
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    lines = []
    for f in _user_frames(exc, path):
        lines.append('File "%s", line %d, in %s' % (f.filename, f.lineno, f.name))
        if f.line:
            lines.append("    " + f.line.strip())
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "\n".join(s.rstrip("\n") for s in lines)


def _exit_report(exc, path, doing):
    """One line for a ``sys.exit`` in the user's code: the file, the code and where.

    ``dump`` cannot go on without the module, and the user's exit code is no
    code of ``dump``'s, so it becomes an error naming the exit.
    """
    code = exc.code
    if code is None or isinstance(code, int):
        what = "exited with code %d" % (code or 0)
    else:
        what = "exited with message %r" % (code,)
    frames = _user_frames(exc, path)
    where = " at line %d" % frames[-1].lineno if frames and \
        os.path.abspath(frames[-1].filename) == os.path.abspath(path) else ""
    text = "%s: %s %s%s" % (doing, path, what, where)
    if doing.startswith("importing"):
        text += "; dump imports the file, so keep script code under " \
                "'if __name__ == \"__main__\":'"
    return text


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send what the user's code prints to stderr, so stdout carries only the dump.

    Both ``sys.stdout`` and file descriptor 1 are redirected: a subprocess or a
    C extension the user's file starts writes to the descriptor.
    """
    saved = None
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError):       # no descriptor 1 or 2: Python's streams only
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            try:
                sys.stderr.flush()
            finally:
                os.dup2(saved, 1)
                os.close(saved)


def _run_user_code(run, path, doing):
    """``run()``, with the user's exceptions and exits turned into a ``UserCodeError``."""
    try:
        return run()
    except SystemExit as exc:
        raise UserCodeError(_exit_report(exc, path, doing)) from None
    except Exception as exc:  # the user's code failed: report it like a compile error
        raise UserCodeError("%s failed:\n%s" % (doing, _user_frames_report(exc, path))) \
            from None


def load_file(path):
    """Import ``path`` as a fresh module, with its directory first on ``sys.path``."""
    from .frontend.parse import check_decodable
    if not os.path.isfile(path):
        raise UsageError("no such file: %s" % path)
    check_decodable(path)
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError("cannot import %s as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.modules[name] = module
    sys.path.insert(0, folder)
    try:
        _run_user_code(lambda: spec.loader.exec_module(module), path, "importing " + path)
    except UserCodeError:
        sys.modules.pop(name, None)
        raise
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
    return module


def resolve_target(target, get_by_list):
    """The object to differentiate and its weights (``None`` unless ``get_by_list``)."""
    from .nn import Cell
    from .tensor import ParameterTuple

    path, name = _split_target(target)
    module = load_file(path)
    if not hasattr(module, name):
        raise UsageError("%s has no top-level name %r" % (path, name))
    obj = getattr(module, name)
    if inspect.isclass(obj) and issubclass(obj, Cell):
        try:
            inspect.signature(obj).bind()
        except TypeError:
            raise UsageError("%s::%s cannot be constructed without arguments; dump needs a "
                             "Cell whose __init__ takes none" % (path, name)) from None
        except ValueError:
            pass  # no introspectable signature: just try to construct it
        net = _run_user_code(obj, path, "constructing %s()" % name)
        weights = ParameterTuple(net.trainable_params()) if get_by_list else None
        return net, weights
    if inspect.isfunction(obj):
        if get_by_list:
            raise UsageError("--get-by-list needs a Cell with parameters, but %s is a function"
                             % name)
        return obj, None
    raise UsageError("%s is a %s; dump expects a Cell subclass or a function"
                     % (name, type(obj).__name__))


# ------------------------------------------------------------ highlighting
def highlight(source):
    """``source`` with ANSI colours (Pygments when installed); see :mod:`s2sad.highlight`."""
    return ansi(source)


def _use_color(choice, stream):
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):
        return False


# ----------------------------------------------------------------- commands
def _cmd_dump(args, out):
    fmt = args.format
    if args.ir:
        if fmt not in (None, "ir"):
            raise UsageError("--ir is --format ir; it cannot be combined with --format %s" % fmt)
        fmt = "ir"
    fmt = fmt or "python"
    if args.explain and fmt == "ir":
        raise UsageError("--explain annotates the Python source or the DOT graph; the IR "
                         "format has no rule annotations")
    with _stdout_to_stderr():
        fn, weights = resolve_target(args.target, args.get_by_list)
        compiled = _compile(fn, weights, args)
    if fmt == "ir":
        text = format_func(compiled.forward) + "\n\n" + format_func(compiled.grad_ir)
    elif fmt == "dot":
        text = to_dot(compiled, explain=args.explain)
    else:
        text = module_source(compiled, explained_source(compiled) if args.explain else None)
        if not text.endswith("\n"):
            text += "\n"
        if _use_color(args.color, out):
            text = highlight(text)
    out.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def _compile(fn, weights, args):
    """The Compiled program ``dump`` prints: reverse or forward mode, of any order."""
    from .ops import GradOperation
    from .api.gradfunction import GradFunction, as_function
    from . import driver as G
    if args.order < 1:
        raise UsageError("--order must be 1 or more, got %d" % args.order)
    if args.mode == "forward" and (args.get_all or args.get_by_list or args.sens_param):
        raise UsageError("--get-all, --get-by-list and --sens-param are GradOperation flags; "
                         "forward mode differentiates every input and takes no sens")
    probe = GradFunction(fn, None, GradOperation())
    n_inputs = _count_inputs(probe, args)
    target = fn
    for _ in range(args.order - 1):
        # what ``GradOperation()(GradOperation()(f))`` compiles: Taylor mode when it applies
        target = GradOperation()(target)
    if args.mode == "forward":
        if target is not fn:
            target = as_function(target)
        py_fn, root = (type(target).construct, target) if probe.root is not None and \
            target is fn else (target, None)
        specs = tuple(("tensor",) for _ in range(n_inputs))
        return G.compile_jvp(py_fn, root, [None] * n_inputs, specs)
    grad_op = GradOperation(get_all=args.get_all, get_by_list=args.get_by_list,
                            sens_param=args.sens_param)
    return grad_op(target, weights).compile_symbolic(n_inputs)


def _count_inputs(probe, args):
    """How many Tensor inputs ``dump`` passes: the required positional parameters,
    plus ``--varargs`` through ``*args``.

    ``dump`` has no values to give a keyword-only parameter without a default,
    so such a function is refused rather than compiled for a call it cannot make.
    """
    _, name = _split_target(args.target)
    params = list(inspect.signature(probe.fn).parameters.values())
    if probe.root is not None:
        params, name = params[1:], name + ".construct"
    missing = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if missing:
        raise UsageError("%s has keyword-only parameters without a default (%s); dump passes "
                         "Tensor inputs by position only, so it cannot call it: give them "
                         "defaults, or dump a function that calls %s with them"
                         % (name, ", ".join(missing), name))
    if args.varargs is not None and not probe._varargs:
        raise UsageError("--varargs passes inputs through *args, but %s has no *args" % name)
    if args.varargs is not None and args.varargs < 0:
        raise UsageError("--varargs must be 0 or more, got %d" % args.varargs)
    if probe._varargs and args.varargs is None:
        sys.stderr.write("s2sad: note: %s takes *args; dump passes no input through it "
                         "(--varargs N passes N Tensors)\n" % name)
    return probe._nrequired + (args.varargs or 0)


def _error(message):
    first, _, rest = message.partition("\n")
    sys.stderr.write("s2sad: error: %s\n" % first)
    if rest:
        sys.stderr.write(rest + "\n")


def _discard_stdout():
    """Point descriptor 1 at the null device after the reader closed the pipe.

    Reading only the start of the dump (``| head``) is no failure of ``dump``;
    the output still buffered would fail again when the interpreter flushes it
    at exit, printing a BrokenPipeError there, so it goes to the null device.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):    # no descriptor (a stream object in tests)
        pass


def main(argv=None):
    """Run the CLI and return its exit code (the console script exits with it)."""
    from .errors import S2SADError

    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and the message
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        code = args.handler(args, sys.stdout)
        sys.stdout.flush()          # a closed pipe shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_OK
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except UserCodeError as exc:
        _error(str(exc))
        return EXIT_COMPILE
    except S2SADError as exc:
        # The message already starts with the location, source line and caret.
        sys.stderr.write("%s\n" % exc)
        return EXIT_COMPILE


if __name__ == "__main__":
    sys.exit(main())
