"""The call graph: which kernels reach which functions.

A node is a function definition: (path of its file, name). A call from a function
to a name resolves to the definition of that name in the caller's own file when there
is one (a `static __device__` helper, or one that several samples each define for
themselves); otherwise to the definitions nearest the caller in the tree (the same
folder first, then the closest parent folder: a helper in the sample's or module's own
header rather than a same-named one in another sample); a method call (`group.sync()`)
only to definitions in the caller's folder or below. Edges go from caller to callee,
and from a host function to each kernel it launches. A hazard inside a device helper is
then attributed to every kernel that reaches the helper.

Resolving names by place matters for size as well as precision: with names alone, a
helper name that recurs in many files joins them into one node, and every finding in
any of them was attributed to every kernel of all of them, a cost that grew with the
square of the tree.

A plain adjacency map: the graph needs only "what can this kernel reach", and
importing a graph library cost more (~0.2 s) than building and walking the graph of
a whole cuda-samples checkout.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from portcheck.checks import METHOD_MARK, FunctionInfo

Node = tuple[str, str]  # (path, function name)


@dataclass
class CallGraph:
    kernels: set[Node] = field(default_factory=set)
    calls: dict[Node, set[Node]] = field(default_factory=dict)  # caller -> defined callees

    def reachable(self, start: Node) -> set[Node]:
        """Every function `start` can reach, itself included."""
        seen = {start}
        stack = [start]
        while stack:
            for callee in self.calls.get(stack.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        return seen


def build_call_graph(functions: Iterable[tuple[str, FunctionInfo]]) -> CallGraph:
    """The graph of (path, function) pairs."""
    graph = CallGraph()
    called: dict[Node, set[str]] = {}
    defined_in: dict[str, set[str]] = {}  # function name -> paths that define it
    for path, fn in functions:
        node = (path, fn.name)
        called.setdefault(node, set()).update(fn.calls)
        defined_in.setdefault(fn.name, set()).add(path)
        if fn.is_kernel:
            graph.kernels.add(node)
    # Calls to names the project does not define (library APIs) are not part of the graph.
    nearest: dict[tuple[str, str], list[Node]] = {}  # (caller's folder, name) -> definitions
    places: dict[str, dict[str, list[str]]] = {}  # name -> folder -> definitions beneath it
    for (path, name), names in called.items():
        callees: set[Node] = set()
        folder = posixpath.dirname(path)
        for called_name in names:
            method = called_name.startswith(METHOD_MARK)
            callee = called_name.removeprefix(METHOD_MARK)
            paths = defined_in.get(callee)
            if not paths:
                continue
            if path in paths:
                callees.add((path, callee))
                continue
            found = nearest.get((folder, called_name))
            if found is None:
                found = _nearest(folder, callee, paths, places, widen=not method)
                nearest[(folder, called_name)] = found
            callees.update(found)
        graph.calls[(path, name)] = callees
    return graph


def _folders(path: str) -> list[str]:
    """ "a/b/c.cu" -> ["", "a", "a/b"]: the folders containing a file, outermost first."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts) + 1)]


def _nearest(
    folder: str,
    name: str,
    paths: set[str],
    places: dict[str, dict[str, list[str]]],
    *,
    widen: bool = True,
) -> list[Node]:
    """The definitions of `name` closest to a caller in `folder`: those in the innermost
    folder around the caller that has any (the same sample or module first, then its
    parents). Each name's folders are indexed once, so this stays linear in the tree.
    Without `widen` (a method call such as `group.sync()`, whose class is unknown) only
    the caller's folder and those below it count: a same-named method of another
    module's class is not a guess worth making."""
    if len(paths) == 1 and widen:
        return [(next(iter(paths)), name)]
    index = places.get(name)
    if index is None:
        index = places[name] = {}
        for path in sorted(paths):
            for around in _folders(path):
                index.setdefault(around, []).append(path)
    arounds = reversed(_folders(f"{folder}/x" if folder else "x")) if widen else [folder]
    for around in arounds:
        found = index.get(around)
        if found:
            return [(path, name) for path in found]
    return []


def kernels_reaching(graph: CallGraph) -> dict[Node, frozenset[Node]]:
    """function -> the kernels whose execution can reach it (itself included)."""
    reach: dict[Node, set[Node]] = {}
    for kernel in graph.kernels:
        for target in graph.reachable(kernel):
            reach.setdefault(target, set()).add(kernel)
    return {node: frozenset(kernels) for node, kernels in reach.items()}
