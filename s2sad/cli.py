"""Command line interface: ``s2sad dump FILE::NAME`` prints the generated adjoint.

Reading the generated code is the point of a source-to-source differentiator,
so the CLI makes it available without writing a driver script.  Exit codes:
0 success, 1 the program cannot be compiled (or its file fails to import),
2 the command line is wrong.
"""
import argparse
import hashlib
import importlib.util
import inspect
import os
import sys
import traceback

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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    dump = sub.add_parser(
        "dump",
        help="print the generated gradient (adjoint) source of a Cell or function",
        description="Compile the gradient of a Cell or function and print the generated "
                    "Python source (or its IR with --ir). Every required positional input "
                    "is assumed to be a Tensor; no example values are needed.",
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
    dump.add_argument("--ir", action="store_true",
                      help="print the IR of the forward program, a blank line, then the IR "
                           "of the gradient program instead of the Python source")
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


def _user_frames_report(exc, path):
    """The exception as ``File ..., line N`` lines in the user's file, without internals."""
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    frames = traceback.extract_tb(exc.__traceback__)
    target = os.path.abspath(path)
    mine = [f for f in frames if os.path.abspath(f.filename) == target] or frames[-1:]
    lines = []
    for f in mine:
        lines.append('File "%s", line %d, in %s' % (f.filename, f.lineno, f.name))
        if f.line:
            lines.append("    " + f.line.strip())
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "\n".join(s.rstrip("\n") for s in lines)


def load_file(path):
    """Import ``path`` as a fresh module, with its directory first on ``sys.path``."""
    if not os.path.isfile(path):
        raise UsageError("no such file: %s" % path)
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError("cannot import %s as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.modules[name] = module
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code failed: report it like a compile error
        sys.modules.pop(name, None)
        raise UserCodeError("importing %s failed:\n%s" % (path, _user_frames_report(exc, path)))
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
        try:
            net = obj()
        except Exception as exc:
            raise UserCodeError("constructing %s() failed:\n%s"
                                % (name, _user_frames_report(exc, path)))
        weights = ParameterTuple(net.trainable_params()) if get_by_list else None
        return net, weights
    if inspect.isfunction(obj):
        if get_by_list:
            raise UsageError("--get-by-list needs a Cell with parameters, but %s is a function"
                             % name)
        return obj, None
    raise UsageError("%s is a %s; dump expects a Cell subclass or a function"
                     % (name, type(obj).__name__))


# ----------------------------------------------------------------- commands
def _cmd_dump(args, out):
    from .ir import format_func
    from .ops import GradOperation

    fn, weights = resolve_target(args.target, args.get_by_list)
    grad_op = GradOperation(get_all=args.get_all, get_by_list=args.get_by_list,
                            sens_param=args.sens_param)
    compiled = grad_op(fn, weights).compile_symbolic()
    if args.ir:
        text = format_func(compiled.forward) + "\n\n" + format_func(compiled.grad_ir)
    else:
        text = compiled.source
    out.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def _error(message):
    first, _, rest = message.partition("\n")
    sys.stderr.write("s2sad: error: %s\n" % first)
    if rest:
        sys.stderr.write(rest + "\n")


def main(argv=None):
    """Run the CLI and return its exit code (the console script exits with it)."""
    from .errors import S2SADError

    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and the message
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return args.handler(args, sys.stdout)
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
