"""Runtime helpers (``rt.<name>`` in generated code) for array primitives."""
import numpy as np  # noqa: F401
