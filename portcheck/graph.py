"""The call graph: which kernels reach which functions.

A node is a function definition: (path of its file, name). A call from a function
to a name resolves to the definition of that name in the caller's own file when there
is one (a `static __device__` helper, or one that several samples each define for
themselves), and otherwise to every definition of the name elsewhere in the project (a
helper in a header). Edges go from caller to callee, and from a host function to each
kernel it launches. A hazard inside a device helper is then attributed to every kernel
that reaches the helper.

Resolving names by file matters for size as well as precision: with names alone, a
helper name that recurs in many files joins them into one node, and every finding in
any of them was attributed to every kernel of all of them, a cost that grew with the
square of the tree.

A plain adjacency map: the graph needs only "what can this kernel reach", and
importing a graph library cost more (~0.2 s) than building and walking the graph of
a whole cuda-samples checkout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from portcheck.checks import FunctionInfo

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
    for (path, name), names in called.items():
        callees: set[Node] = set()
        for callee in names:
            paths = defined_in.get(callee)
            if not paths:
                continue
            if path in paths:
                callees.add((path, callee))
            else:
                callees.update((other, callee) for other in paths)
        graph.calls[(path, name)] = callees
    return graph


def kernels_reaching(graph: CallGraph) -> dict[Node, frozenset[Node]]:
    """function -> the kernels whose execution can reach it (itself included)."""
    reach: dict[Node, set[Node]] = {}
    for kernel in graph.kernels:
        for target in graph.reachable(kernel):
            reach.setdefault(target, set()).add(kernel)
    return {node: frozenset(kernels) for node, kernels in reach.items()}
