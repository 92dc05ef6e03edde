"""Python calls made on every run of compiled code, never while compiling.

A random draw (``np.random.normal(size=x.shape)``, ``rng.random()``,
``random.random()``), a ``print``, a log record, a warning and a runtime
``assert`` must happen each time the user's function runs, as they would
eagerly: evaluating them once while compiling would bake one draw (or one
print) into the compiled code for good.  They are staged as stateful primitives without gradient, which no
pass folds, merges or moves out of a loop; a reverse-mode program computes
them once, in its forward sweep, so the backward sweep reads the very values
(a dropout mask) the forward sweep drew.
"""
import builtins
import logging
import random
import sys
import warnings

import numpy as np

from ...ir.primitive import Primitive

_NO_GRAD = "no gradient: called at run time"


def _call_text(target, args, keywords, starred):
    """``target(a, *b, k=c)`` from argument expressions: the last ones named by
    ``keywords``, those at positions ``starred`` unpacked (``*x.shape``)."""
    n_pos = len(args) - len(keywords)
    parts = ["*" + a if i in starred else a for i, a in enumerate(args[:n_pos])]
    parts += ["%s=%s" % kv for kv in zip(keywords, args[n_pos:])]
    return "%s(%s)" % (target, ", ".join(parts))


def _apply(fn, args, keywords, starred):
    """``fn`` called as ``_call_text`` writes it, on values."""
    n_pos = len(args) - len(keywords)
    pos = []
    for i, a in enumerate(args[:n_pos]):
        pos.extend(a) if i in starred else pos.append(a)
    return fn(*pos, **dict(zip(keywords, args[n_pos:])))


class PyCall(Primitive):
    """``fn(*args, **kwargs)`` on every run; ``text`` names ``fn`` in generated code."""
    stateful = True
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, fn, text, keywords=(), starred=()):
        super().__init__(fn=fn, text=text, keywords=tuple(keywords), starred=tuple(starred))
        self.name = text.rsplit(".", 1)[-1]     # its value is named after it: ``normal``
        if fn is builtins.print or fn is warnings.warn or \
                fn is getattr(logging, self.name, None):
            self.num_outputs = 0                # a statement in generated code
        else:
            self.draws = True                   # a function of a random module

    def emit(self, *args):
        return _call_text(self.text, args, self.keywords, self.starred)

    def impl(self, *args):
        return _apply(self.fn, args, self.keywords, self.starred)


class PyMethodCall(Primitive):
    """``obj.name(*args, **kwargs)`` on every run (a random generator's method, or a
    logger's)."""
    stateful = True
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, name, keywords=(), starred=()):
        super().__init__(name=name, keywords=tuple(keywords), starred=tuple(starred))
        self.draws = name not in _LOGGING

    def emit(self, obj, *args):
        return _call_text("%s.%s" % (obj, self.name), args, self.keywords, self.starred)

    def impl(self, obj, *args):
        return _apply(getattr(obj, self.name), args, self.keywords, self.starred)


class FormatText(Primitive):
    """A string made at run time from runtime values (an f-string, ``str.format``,
    ``%``): ``template.format(*values)``, ``template % (values,)`` with
    ``style="%tuple"``, ``template % value`` with ``style="%"``.  Printed or
    logged, it shows the values of that run."""
    differentiable = False
    formula = "no gradient: the result is a string"

    def __init__(self, template, style="format", keywords=()):
        super().__init__(template=str(template), style=style, keywords=tuple(keywords))

    def emit(self, *values):
        if self.style == "%":
            return "%r %% %s" % (self.template, values[0])
        if self.style == "%tuple":
            return "%r %% (%s)" % (self.template, "".join(v + ", " for v in values))
        return "%r.%s" % (self.template, _call_text("format", values, self.keywords, ()))


class RuntimeAssert(Primitive):
    """``assert test, message`` checked on every run: ``rt.check_assert(test, message)``."""
    stateful = True
    differentiable = False
    num_outputs = 0
    formula = _NO_GRAD

    def emit(self, test, message):
        return "rt.check_assert(%s, %s)" % (test, message)


class CheckFloatOutput(Primitive):
    """The differentiated output, when no gradient flows into it, checked on every
    run to be floating-point (or complex): ``grad`` of a comparison or of an
    integer raises, as in JAX and autograd, instead of returning zeros."""
    stateful = True
    differentiable = False
    num_outputs = 0
    formula = _NO_GRAD

    def emit(self, out):
        return "rt.check_float_output(%s)" % out


class CheckScalarOutput(Primitive):
    """The output of a function ``hessian`` differentiates, checked on every run to
    have one element (``rt.check_scalar_output``); dropped where it is known 0-d
    (``opt/scalars.py``), so a loss ending in a full sum or mean costs nothing."""
    stateful = True
    differentiable = False
    num_outputs = 0
    formula = _NO_GRAD

    def __init__(self, api="hessian", alternative="jacrev"):
        super().__init__(api=api, alternative=alternative)

    def emit(self, out):
        return "rt.check_scalar_output(%s, %r, %r)" % (out, self.api, self.alternative)


class WriteParameter(Primitive):
    """``self.param = value`` (or ``ops.assign``) in compiled code, on every run:
    ``rt.assign_parameter(param, value)``.

    Its first input is the Parameter object itself (a runtime input passed as
    the object, not its array): the write gives the Parameter a new array, so
    the array read before it, which a backward sweep may still read, keeps
    its value.
    """
    stateful = True
    draws = True
    differentiable = False
    num_outputs = 0
    formula = "no gradient: writes a Parameter"

    def emit(self, param, value):
        return "rt.assign_parameter(%s, %s)" % (param, value)


# ------------------------------------------------------------ what runs late
_texts = None
_texts_have_numpy_random = False
#: the functions of ``logging`` that log (on every call, with that call's values)
_LOGGING = ("debug", "info", "warning", "error", "exception", "critical", "log")


def _runtime_texts():
    """``id(function) -> (function, how generated code names it)`` for functions that
    must run on every call: NumPy's and Python's random module, and ``print``."""
    global _texts, _texts_have_numpy_random
    if _texts is None:
        _texts = {id(builtins.print): (builtins.print, "print"),
                  id(warnings.warn): (warnings.warn, "warnings.warn")}
        for name in _LOGGING:
            _texts[id(getattr(logging, name))] = (getattr(logging, name), "logging." + name)
        _add_module_texts(random, "random.")
    if not _texts_have_numpy_random and _numpy_random() is not None:
        _add_module_texts(_numpy_random(), "xp.random.")
        _texts_have_numpy_random = True
    return _texts


def _add_module_texts(module, prefix):
    """Name the public callables of ``module`` ``prefix + name`` in ``_texts``."""
    for name in dir(module):
        value = getattr(module, name)
        if not name.startswith("_") and callable(value):
            _texts.setdefault(id(value), (value, prefix + name))


def _numpy_random():
    """``numpy.random`` if some code imported it, else ``None``: no value of a
    program can come from it before, and s2sad does not import it itself (it is
    a tenth of s2sad's import time)."""
    return sys.modules.get("numpy.random")


def _random_types():
    """The classes whose instances draw random numbers on every call."""
    nr = _numpy_random()
    if nr is None:
        return (random.Random,)
    return (nr.Generator, nr.RandomState, nr.BitGenerator, random.Random)


def runtime_call_text(f):
    """How generated code names ``f`` if ``f`` must be called on every run, else ``None``."""
    hit = _runtime_texts().get(id(f))
    return hit[1] if hit is not None and hit[0] is f else None


def numpy_text(f):
    """``xp.<name>`` for a function of NumPy's main namespace, else ``None``."""
    name = getattr(f, "__name__", None)
    if name and not name.startswith("_") and getattr(np, name, None) is f and \
            not isinstance(f, type):
        return "xp." + name
    return None


def makes_random_state(fn):
    """Whether calling ``fn`` makes a random generator (``np.random.default_rng``)."""
    nr = _numpy_random()
    return (nr is not None and fn is nr.default_rng) or (isinstance(fn, type) and
                                                          issubclass(fn, _random_types()))


def is_random_state(obj):
    """Whether ``obj`` is a random generator, whose methods draw on every call."""
    return isinstance(obj, _random_types())


def is_logger(obj):
    """Whether ``obj`` is a logger, whose methods write on every call."""
    return isinstance(obj, (logging.Logger, logging.LoggerAdapter))
