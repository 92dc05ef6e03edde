"""``s2sad dump --format dot``: the forward and gradient IR as a Graphviz graph.

One cluster per function, a node per input, op and result, and one nested
cluster per region of a structured op (the branches of an ``If``, a loop's
body), so control flow reads as it does in the generated source.
"""
from ..ir.nodes import Const, Var, leaves
from .explain import display_path


def _dot_quote(text):
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"').replace(
        "\n", "\\n")


def _short(value, limit=24):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_REGION_NAMES = {"If": ("then", "else"), "While": ("cond", "body"), "ForRange": ("body",),
                 "CustomBprop": ("forward",)}


class _DotWriter:
    """One IR function as a DOT cluster: nodes for inputs, ops and the result."""

    def __init__(self, prefix, explain):
        self.prefix = prefix
        self.explain = explain
        self.lines = []
        self.edges = []     # written after every cluster: an edge inside a subgraph
        self.names = {}     # would pull both of its nodes into that subgraph
        self.producer = {}
        self.count = 0

    def node_id(self, kind):
        self.count += 1
        if kind == "cluster":   # Graphviz draws a subgraph as a box only if named cluster*
            return "cluster_%s_%d" % (self.prefix, self.count)
        return "%s_%s%d" % (self.prefix, kind, self.count)

    def name(self, var):
        if var.id not in self.names:
            hint = var.hint if isinstance(var.hint, str) else str(var.hint or "v")
            self.names[var.id] = "%s.%d" % (hint, len(self.names))
        return self.names[var.id]

    def emit(self, indent, text):
        self.lines.append(indent + text)

    def edges_into(self, target, args, indent):
        for a in args:
            for leaf in leaves(a):
                if isinstance(leaf, Var):
                    src = self.producer.get(leaf.id)
                    if src is None:
                        src = self.node_id("free")
                        self.emit(indent, "%s [label=%s, shape=plaintext];"
                                  % (src, _dot_quote(self.name(leaf))))
                        self.producer[leaf.id] = src
                    self.edges.append("%s -> %s [label=%s];"
                                      % (src, target, _dot_quote(self.name(leaf))))

    def op_label(self, op):
        name = op.prim.name
        attrs = getattr(op.prim, "attrs", None)
        if attrs:
            name += "[%s]" % ", ".join("%s=%s" % (k, _short(v, 16))
                                       for k, v in sorted(attrs.items()))
        args = []
        for a in op.args:
            for leaf in leaves(a):
                args.append(self.name(leaf) if isinstance(leaf, Var)
                            else _short(leaf.value) if isinstance(leaf, Const) else _short(leaf))
        outs = ", ".join(self.name(o) for o in op.outs)
        text = "%s(%s)" % (name, ", ".join(args))
        if outs:
            text = "%s = %s" % (outs, text)
        parts = [text]
        if op.loc is not None:
            parts.append("line %d" % op.loc.lineno)
        if self.explain and op.origin:
            parts.append("rule: %s" % op.origin)
        return "\n".join(parts)

    def block(self, ops, indent):
        for op in ops:
            node = self.node_id("op")
            if op.regions:
                self.region_op(op, node, indent)
                continue
            self.emit(indent, "%s [label=%s];" % (node, _dot_quote(self.op_label(op))))
            self.edges_into(node, op.args, indent)
            for o in op.outs:
                self.producer[o.id] = node

    def region_op(self, op, node, indent):
        names = _REGION_NAMES.get(type(op.prim).__name__, ())
        cluster = self.node_id("cluster")
        self.emit(indent, "subgraph %s {" % cluster)
        inner = indent + "  "
        line = " (line %d)" % op.loc.lineno if op.loc is not None else ""
        self.emit(inner, "label=%s; style=rounded; color=gray40;"
                  % _dot_quote(type(op.prim).__name__ + line))
        self.emit(inner, "%s [label=%s, shape=diamond];" % (node, _dot_quote(self.op_label(op))))
        self.edges_into(node, op.args, inner)
        for i, region in enumerate(op.regions):
            title = names[i] if i < len(names) else "region %d" % i
            sub = self.node_id("cluster")
            self.emit(inner, "subgraph %s {" % sub)
            body = inner + "  "
            self.emit(body, "label=%s; style=dashed;" % _dot_quote(title))
            for p in region.params:
                pid = self.node_id("param")
                self.emit(body, "%s [label=%s, shape=ellipse];" % (pid, _dot_quote(self.name(p))))
                self.edges.append("%s -> %s [style=dashed];" % (node, pid))
                self.producer[p.id] = pid
            self.block(region.ops, body)
            yid = self.node_id("yield")
            self.emit(body, "%s [label=\"yield\", shape=plain];" % yid)
            self.edges_into(yid, [region.result], body)
            self.edges.append("%s -> %s [style=dashed, constraint=false];" % (yid, node))
            self.emit(inner, "}")
        self.emit(indent, "}")
        for o in op.outs:
            self.producer[o.id] = node

    def function(self, func, title):
        self.emit("  ", "subgraph cluster_%s {" % self.prefix)
        indent = "    "
        self.emit(indent, "label=%s;" % _dot_quote(title))
        for p in func.params:
            pid = self.node_id("in")
            self.emit(indent, "%s [label=%s, shape=ellipse, style=filled, fillcolor=lightyellow];"
                      % (pid, _dot_quote(self.name(p))))
            self.producer[p.id] = pid
        self.block(func.body, indent)
        rid = self.node_id("return")
        self.emit(indent, "%s [label=\"return\", shape=doubleoctagon];" % rid)
        self.edges_into(rid, [func.result], indent)
        self.emit("  ", "}")
        return self.lines + ["  " + e for e in self.edges]


def to_dot(compiled, explain=False):
    """The forward and gradient IR of ``compiled`` as one Graphviz ``digraph``."""
    where = display_path(getattr(compiled.info, "filename", None))
    lines = ["digraph s2sad {",
             "  compound=true; rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']
    lines += _DotWriter("forward", explain).function(
        compiled.forward, "forward: %s (%s)" % (compiled.forward.name, where))
    lines += _DotWriter("grad", explain).function(
        compiled.grad_ir, "gradient: %s" % compiled.grad_ir.name)
    lines.append("}")
    return "\n".join(lines) + "\n"
