"""The generated functions of runtime recursions (see ``frontend/recursion.py``).

Each ``RecursionGroup`` a program calls is written as functions of its own,
one per mode the program uses (``<name>_rec`` runs it, ``_rec_fwd`` also
returns what ``_rec_bwd`` needs, ``_rec_jvp`` carries tangents), compiled
apart and reached through the group's ``runtime`` namespace, so they call
each other (and themselves) as deep as a run needs.
"""
from ..ir.nodes import walk_ops
from ..ir.control import RecursiveCall
from .codegen import CodeGen
from .compile import compile_source

_SUFFIX = {"call": "_rec", "fwd": "_rec_fwd", "bwd": "_rec_bwd", "jvp": "_rec_jvp"}


def groups_in(func):
    """The groups ``func`` calls, directly or through another group, in order of first call."""
    found, todo = [], [func.body]
    while todo:
        for op in walk_ops(todo.pop()):
            if isinstance(op.prim, RecursiveCall) and op.prim.group not in found:
                found.append(op.prim.group)
                todo.extend(f.body for f in _funcs(op.prim.group).values())
    return found


def _funcs(group):
    funcs = {"call": group.func, "fwd": group.fwd, "bwd": group.bwd, "jvp": group.jvp}
    return {m: f for m, f in funcs.items() if f is not None}


def compile_groups(func):
    """Compile every function of the groups ``func`` calls; their sources, for reading."""
    sources = []
    for group in groups_in(func):
        for mode, f in _funcs(group).items():
            if mode not in group.compiled:
                # ``fwd`` and ``bwd`` share names: a residual is called the same in both
                gen = CodeGen(release=False)
                if mode in ("fwd", "bwd"):
                    gen.namer = group.__dict__.setdefault("namer", gen.namer)
                group.compiled[mode] = _compile(group, mode, f, gen)
                setattr(group.runtime, mode, group.compiled[mode][1])
            sources.append(group.compiled[mode][0])
    return sources


def _compile(group, mode, func, gen):
    func.name = group.name + _SUFFIX[mode]
    lines = gen.function(func).split("\n")
    if mode == "fwd":
        # a residual only the branch taken defined is returned all the same
        lines[1:1] = ["    %s = rt.UNDEFINED" % gen.namer.names[v.id]
                      for v in group.maybe_undefined if v.id in gen.namer.names]
    source = "\n".join(lines)
    shown = gen.readable(source)
    # unwrapped (no ``where``): one Python frame per level of the recursion; an
    # error inside is still noted at the program's line that made the first call
    return shown, compile_source(source, func.name, gen.consts.namespace(), shown=shown)
