"""The import graph of the ``s2sad`` package, checked against its layer order.

s2sad is built in layers: each may import the layers below it and never one
above, and no group of modules imports each other in a circle.  This module
reads every ``import`` statement of the package with ``ast`` (imports inside
functions count: moving an import into a function hides a cycle from Python,
not from a reader), maps each module to its layer with ``LAYERS`` and reports

* upward imports (a module importing a layer above its own), and
* cycles (strongly connected groups of modules).

``EXCEPTIONS`` lists imports allowed to break those rules, each an
(importer, imported) pair; it is empty.  ``tests/structure/test_layering.py`` fails on
any upward import or cycle not listed there, and on any listed pair that no
longer exists.

Run ``python tools/layers.py`` to print the layers, the remaining exceptions
and any new violation with its file and line.
"""
import ast
import os
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lowest first.  A module belongs to the layer of the longest prefix that
# names it; imports within one layer are allowed (but not in a circle).
LAYERS = (
    ("base", ("s2sad.errors", "s2sad.dtype", "s2sad.tracebacks", "s2sad.compat",
              "s2sad.highlight", "s2sad.context", "s2sad.communication")),
    ("runtime", ("s2sad.runtime", "s2sad.common.seed")),
    ("data", ("s2sad.tensor", "s2sad.common.initializer")),
    ("ir", ("s2sad.ir",)),
    ("ops", ("s2sad.ops.primitive", "s2sad.ops.operations", "s2sad.ops._grad",
             "s2sad.ops.function", "s2sad.ops.tensor_methods")),
    ("cell", ("s2sad.nn.cell",)),
    ("frontend", ("s2sad.frontend",)),
    # below AD: reverse mode asks the options whether an in-AD optimisation is
    # on, and no pass needs AD
    ("opt", ("s2sad.opt",)),
    ("ad", ("s2sad.ad",)),
    ("backend", ("s2sad.backend", "s2sad.saved_graphs")),
    ("driver", ("s2sad.driver",)),
    ("api", ("s2sad.api", "s2sad.ops")),
    ("nn", ("s2sad.nn",)),
    ("top", ("s2sad", "s2sad.common", "s2sad.cli", "s2sad.__main__", "s2sad.train",
             "s2sad.dataset")),
)

# Imports allowed to break the layer order or close a cycle: none.  Keep it
# so; a pair added here needs a reason next to it and a plan to remove it.
EXCEPTIONS = frozenset()


def modules(root=ROOT):
    """{dotted module name: file path} for every .py file of the package."""
    found = {}
    for folder, _dirs, files in os.walk(os.path.join(root, "s2sad")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                if dotted.endswith(".__init__"):
                    dotted = dotted[:-len(".__init__")]
                found[dotted] = path
    return found


def _type_checking_only(node, parents):
    """Whether ``node`` sits under ``if TYPE_CHECKING:`` (never runs)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            return True
    return False


def _targets(module, path, node, known):
    """The package modules one import statement loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - (node.level - 1)])
        source = base + ("." + node.module if node.module else "")
    else:
        source = node.module
    submodules = [source + "." + a.name for a in node.names if source + "." + a.name in known]
    # ``from pkg import sub`` loads pkg/__init__ too, but depends on sub only.
    return submodules + ([source] if len(submodules) < len(node.names) else [])


def _owner(name, known):
    """The package module ``name`` lives in (``a.b.c`` -> ``a.b`` for a function c)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root=ROOT):
    """{importer: {imported: line number of the first such import}}."""
    known = modules(root)
    graph = defaultdict(dict)
    for module, path in sorted(known.items()):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        parents = {child: parent for parent in ast.walk(tree)
                   for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if _type_checking_only(node, parents):
                continue
            for target in _targets(module, path, node, known):
                target = _owner(target, known)
                if target and target != module and target.startswith("s2sad"):
                    graph[module].setdefault(target, node.lineno)
        graph.setdefault(module, {})
    return dict(graph)


def layer_of(module):
    """(index, name) of the layer ``module`` belongs to."""
    best = None
    for index, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[2]:
                    best = (index, name, len(prefix))
    if best is None:
        raise KeyError("module %s is in no layer: add it to LAYERS in tools/layers.py" % module)
    return best[:2]


def upward_imports(graph):
    """{(importer, imported)} where the imported module's layer is higher."""
    return {(a, b) for a, targets in graph.items() for b in targets
            if layer_of(b)[0] > layer_of(a)[0]}


def cycles(graph, ignore=frozenset()):
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []
    counter = [0]

    def edges(node):
        return [b for b in sorted(graph.get(node, ())) if (node, b) not in ignore]

    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(edges(start)))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter[0]
                    counter[0] += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges(succ))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def where(graph, pair, root=ROOT):
    """'s2sad/x.py:12: imports s2sad.y' for a report."""
    path = os.path.relpath(modules(root)[pair[0]], root)
    return "%s:%d: imports %s" % (path, graph[pair[0]][pair[1]], pair[1])


def report(root=ROOT):
    """Lines describing the structure and what breaks it; empty list of problems = clean."""
    graph = import_graph(root)
    problems = []
    for pair in sorted(upward_imports(graph) - EXCEPTIONS):
        problems.append("upward import (%s -> %s): %s" % (
            layer_of(pair[0])[1], layer_of(pair[1])[1], where(graph, pair, root)))
    for group in cycles(graph, EXCEPTIONS):
        problems.append("import cycle among: " + ", ".join(group))
    edges = {(a, b) for a, targets in graph.items() for b in targets}
    for pair in sorted(EXCEPTIONS - edges):
        problems.append("%s no longer imports %s: delete the pair from EXCEPTIONS" % pair)
    return graph, problems


def main():
    graph, problems = report()
    for index, (name, prefixes) in enumerate(LAYERS):
        print("%2d %-9s %s" % (index, name, ", ".join(prefixes)))
    print("\n%d exceptions left; %d module cycles ignoring none:" % (
        len(EXCEPTIONS), len(cycles(graph))))
    for group in cycles(graph):
        print("  %d modules: %s" % (len(group), ", ".join(group)))
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
