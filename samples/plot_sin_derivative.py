"""sin(x) and its derivative computed by s2sad, checked against cos(x) and plotted.

``f(x) = ops.sin(x)`` is differentiated once by ``GradOperation()``, and
its gradient, with the default sens of ones, is d/dx sin(x) at every point of
the grid at once (sin is elementwise).  The plot is written with matplotlib
when it is installed (``pip install matplotlib``); without it the sample still
computes and checks the derivative and says the plot was skipped.

    python samples/plot_sin_derivative.py [--out sin_derivative.png] [--points 200]
"""
import argparse
import sys

import numpy as np

from s2sad import ops, Tensor


def f(x):
    return ops.sin(x)


def derivative_on_grid(points=200):
    """(x, sin x, s2sad's d/dx sin x) on ``points`` values in [-2 pi, 2 pi], float64."""
    x = np.linspace(-2 * np.pi, 2 * np.pi, points)
    dfdx = ops.GradOperation()(f)(Tensor(x))
    return x, np.sin(x), dfdx.asnumpy()


def plot(x, y, dydx, out):
    """Write the plot to ``out``; False when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, y, label="sin(x)")
    ax.plot(x, dydx, label="d/dx sin(x) (s2sad)")
    ax.plot(x, np.cos(x), linestyle=":", color="black", label="cos(x)")
    ax.set_xlabel("x")
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="sin_derivative.png", help="PNG file to write")
    parser.add_argument("--points", type=int, default=200, help="grid size (default 200)")
    args = parser.parse_args(argv)
    x, y, dydx = derivative_on_grid(args.points)
    err = float(np.max(np.abs(dydx - np.cos(x))))
    print("points          = %d in [-2 pi, 2 pi]" % len(x))
    print("max |d - cos x| = %.3g" % err)
    if plot(x, y, dydx, args.out):
        print("plot written to %s" % args.out)
    else:
        print("matplotlib is not installed: plot skipped (pip install matplotlib)")
    return 0 if err < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
