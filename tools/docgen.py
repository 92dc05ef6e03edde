"""The command line every generated documentation page shares.

``write_or_check(render, path, command)``: ``--check`` exits 1 when the page
on disk differs from what ``render()`` gives (the docs tests run it; ``same``
may compare only the part the environment can reproduce),
``--stdout`` prints it, and no option (re)writes it.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_or_check(render, path, command, description, argv=None, same=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the file on disk differs from what would be written")
    parser.add_argument("--stdout", action="store_true", help="print instead of writing")
    parser.add_argument("--output", default=path, help="where to write (default %(default)s)")
    args = parser.parse_args(argv)
    text = render()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        try:
            with open(args.output, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if not (same(current, text) if same is not None else current == text):
            sys.stderr.write("%s is out of date: run `%s` and commit the result\n"
                             % (os.path.relpath(args.output, ROOT), command))
            return 1
        return 0
    with open(args.output, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    return 0
