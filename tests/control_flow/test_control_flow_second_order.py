"""Every control-flow program of this directory, differentiated twice.

Reverse over reverse (the adjoints of popped values travel on companion
stacks) and forward over reverse, against finite differences of the first
derivative.
"""
import pytest

import s2sad

from cf_common import V
from test_exits import EXIT_CASES, MORE_CASES, f_break_on_index
from test_loops import (LOOP_CASES, f_for_negative_step_n, f_for_range_n,
                        f_for_range_start_stop_step_n, f_python_float_init)


# ------------------------------------------------------------ second order
# check_grads perturbs every argument, so a Python int argument is bound by a
# wrapper.
def f_for_range_n_4(x):
    return f_for_range_n(x, 4)


def f_for_range_start_stop_step_6(x):
    return f_for_range_start_stop_step_n(x, 6)


def f_for_negative_step_4(x):
    return f_for_negative_step_n(x, 4)


def f_python_float_init_3(x):
    return f_python_float_init(x, 3)


def f_break_on_index_5(x):
    return f_break_on_index(x, 5)


def f_break_on_index_1(x):
    return f_break_on_index(x, 1)


SECOND_ORDER_CASES = [
    c for c in LOOP_CASES + EXIT_CASES + MORE_CASES
    if not any(isinstance(a, (int, float)) for a in c[2])
] + [(fn.__name__, fn, (V,)) for fn in (
    f_for_range_n_4, f_for_range_start_stop_step_6, f_for_negative_step_4,
    f_python_float_init_3, f_break_on_index_5, f_break_on_index_1)]


@pytest.mark.parametrize("fn,args", [c[1:] for c in SECOND_ORDER_CASES],
                         ids=[c[0] for c in SECOND_ORDER_CASES])
def test_second_order(fn, args):
    s2sad.check_grads(fn, args, order=2, modes=("rev", "fwd"))
