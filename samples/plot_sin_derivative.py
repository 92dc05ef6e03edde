"""sin(x) and its derivative computed by s2sad, checked against cos(x) and plotted.

``f(x) = ops.sin(x)`` is differentiated once by ``GradOperation()``, and
its gradient, with the default sens of ones, is d/dx sin(x) at every point of
the grid at once (sin is elementwise).  The plot is written with matplotlib
when it is installed (``pip install matplotlib``); without it the sample still
computes and checks the derivative and says the plot was skipped.

The picture has two panels.  The top one draws sin(x), the closed form cos(x)
as a solid line and s2sad's derivative as markers on it, so that both stay
visible where they coincide.  The bottom one draws the absolute error
|s2sad - cos(x)| on a log scale, next to the error of central finite
differences for contrast: automatic differentiation is exact up to rounding,
finite differences are not.  An error of exactly 0 has no place on a log
scale, so such points are drawn on a floor line below machine epsilon, and
the legend says so.

    python samples/plot_sin_derivative.py [--out sin_derivative.png] [--points 200]
"""
import argparse
import sys
from fractions import Fraction

import numpy as np

from s2sad import ops, Tensor

FD_STEP = 1e-6          # central finite differences shown for contrast
ZERO_FLOOR = 1e-18      # where an error of exactly 0 is drawn on the log scale


def f(x):
    return ops.sin(x)


def derivative_on_grid(points=200):
    """(x, sin x, s2sad's d/dx sin x) on ``points`` values in [-2 pi, 2 pi], float64."""
    x = np.linspace(-2 * np.pi, 2 * np.pi, points)
    dfdx = ops.GradOperation()(f)(Tensor(x))
    return x, np.sin(x), dfdx.asnumpy()


def finite_differences(x, h=FD_STEP):
    """Central differences of sin: the usual numerical derivative, for contrast."""
    return (np.sin(x + h) - np.sin(x - h)) / (2 * h)


def pi_label(multiple):
    """'0', 'π', '-π/2', '3π/2'... for ``multiple`` (a Fraction) times π."""
    if multiple == 0:
        return "0"
    sign = "\u2212" if multiple < 0 else ""         # a true minus sign, as matplotlib's
    num, den = abs(multiple.numerator), multiple.denominator
    head = "\u03c0" if num == 1 else "%d\u03c0" % num
    return sign + head + ("" if den == 1 else "/%d" % den)


def pi_ticks(lo, hi, step=Fraction(1, 2)):
    """Tick positions and labels at the multiples of ``step`` * π within [lo, hi]."""
    first = int(np.ceil(lo / (step * np.pi) - 1e-9))
    last = int(np.floor(hi / (step * np.pi) + 1e-9))
    multiples = [k * step for k in range(first, last + 1)]
    return [float(m) * np.pi for m in multiples], [pi_label(m) for m in multiples]


def error_for_log_scale(err, floor=ZERO_FLOOR):
    """(err with exact zeros moved up to ``floor``, how many were zero)."""
    zero = err == 0
    return np.where(zero, floor, err), int(zero.sum())


def plot(x, y, dydx, out):
    """Write the plot to ``out``; False when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = figure(plt, x, y, dydx)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return True


def figure(plt, x, y, dydx):
    """The two panels: the curves on top, the error on a log scale below."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]},
                                      constrained_layout=True)
    cos = np.cos(x)
    every = max(1, len(x) // 50)      # markers far enough apart to see the line under them
    top.plot(x, y, color="tab:gray", linewidth=1.5, label="sin(x)")
    top.plot(x, cos, color="tab:blue", linewidth=2, label="cos(x), closed form")
    top.plot(x, dydx, linestyle="none", marker="o", markersize=5, markevery=every,
             markerfacecolor="none", markeredgecolor="tab:red", markeredgewidth=1.3,
             label="d/dx sin(x) by s2sad")
    top.set_ylabel("value")
    top.set_ylim(-1.15, 1.15)
    top.set_title("s2sad's derivative of sin(x) is cos(x) at all %d points" % len(x))
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    top.grid(alpha=0.3)

    err, zeros = error_for_log_scale(np.abs(dydx - cos))
    fd_err = np.abs(finite_differences(x) - cos)
    bottom.semilogy(x, fd_err, color="tab:orange", linewidth=1.2,
                    label="finite differences, h = %.0e" % FD_STEP)
    bottom.semilogy(x, err, linestyle="none", marker="o", markersize=3, color="tab:red",
                    label="|s2sad \u2212 cos(x)|")
    if zeros:
        bottom.annotate("s2sad \u2212 cos(x) is exactly 0 at %d of %d points (drawn on this line)"
                        % (zeros, len(x)), (0.5, ZERO_FLOOR), xycoords=("axes fraction", "data"),
                        xytext=(0, 6), textcoords="offset points", ha="center",
                        color="tab:red")
    bottom.axhline(np.finfo(np.float64).eps, color="black", linestyle="--", linewidth=1,
                   label="float64 machine epsilon")
    bottom.set_ylim(ZERO_FLOOR / 10, 1e-6)
    bottom.set_ylabel("absolute error")
    bottom.set_xlabel("x")
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    bottom.grid(alpha=0.3, which="major")

    ticks, labels = pi_ticks(x[0], x[-1])
    bottom.set_xticks(ticks)
    bottom.set_xticklabels(labels)
    bottom.set_xlim(x[0], x[-1])
    return fig


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
