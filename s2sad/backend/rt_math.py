"""Runtime helpers (``rt.<name>`` in generated code) for math primitives."""
import numpy as np  # noqa: F401
