"""Programs written as source text in a test, imported from a real file (s2sad
reads source with ``inspect``).
"""
import importlib.util
import sys
import textwrap


def load_source(tmp_path, source, name):
    """Write ``source`` (dedented, after NumPy's and s2sad's imports) to ``name``.py and import it."""
    path = tmp_path / (name + ".py")
    path.write_text("import numpy as np\nfrom s2sad import nn, ops, Tensor, Parameter\n\n"
                    + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
