"""How many examples a long campaign runs.

The tests marked ``long`` (random programs, the frontend fuzzer's mutations)
are left out of the default run, which runs a small slice of each instead:
the same code paths on fewer examples.  ``python -m pytest -m long`` runs
them whole; ``S2SAD_LONG_SCALE`` (a fraction, default 1) makes each run that
share of its examples or programs, at least one, so CI can run a bounded
slice of every campaign (``.ci/run``, docs/testing.md).
"""
import math
import os

LONG_SCALE = float(os.environ.get("S2SAD_LONG_SCALE", "1"))
if not 0 < LONG_SCALE <= 1:
    raise ValueError("S2SAD_LONG_SCALE must be a fraction in (0, 1], not %r"
                     % os.environ["S2SAD_LONG_SCALE"])


def scaled(n):
    """The number of the ``n`` examples of a long campaign that this run checks."""
    return max(1, math.ceil(n * LONG_SCALE))
