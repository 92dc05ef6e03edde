"""Runtime helpers (``rt.<name>`` in generated code) for nn primitives."""
import numpy as np  # noqa: F401
