"""``set_context(save_graphs=True)``: write each compiled gradient to files.

For every gradient compiled while ``save_graphs`` is on, two files appear
under ``save_graphs_path`` (created if missing), numbered in compile order
so that a later compile never overwrites an earlier one of the same run:

* ``NNNN_<name>.py``: the generated source, as ``s2sad.get_source`` shows it;
* ``NNNN_<name>.ir``: the forward IR and the gradient IR, as ``s2sad.get_ir``
  shows them.

The compile driver's function that makes a compiled entry is decorated with
``saving_graphs``; when the setting is off, a compile pays one dict lookup.
"""
import functools
import itertools
import os
import re

from .context import graphs_folder
from .ir import format_func

__all__ = ["save", "saving_graphs"]

_numbers = itertools.count()


def saving_graphs(make_compiled):
    """Decorate the function returning each compiled entry, so that it is saved."""
    @functools.wraps(make_compiled)
    def make_and_save(*args, **kwargs):
        compiled = make_compiled(*args, **kwargs)
        save(compiled)
        return compiled
    return make_and_save


def save(compiled):
    """Write ``compiled``'s source and IR when ``save_graphs`` is on; the paths written or ()."""
    folder = graphs_folder()
    if folder is None:
        return ()
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, "%04d_%s" % (next(_numbers), _file_name(compiled.grad_ir.name)))
    ir_text = "# forward\n%s\n\n# gradient\n%s\n" % (format_func(compiled.forward),
                                                    format_func(compiled.grad_ir))
    written = []
    for suffix, text in ((".py", compiled.source), (".ir", ir_text)):
        with open(stem + suffix, "w", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
        written.append(stem + suffix)
    return tuple(written)


def _file_name(name):
    """``name`` with anything but letters, digits and ``_`` replaced (safe on every OS)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:80] or "gradient"
