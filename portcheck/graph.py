"""The call graph: which kernels reach which functions.

Nodes are function names across the whole project (a helper defined in a header
and called from kernels in several files is one node); edges go from caller to
callee, and from a host function to each kernel it launches. A hazard inside a
device helper is then attributed to every kernel that reaches the helper.

A plain adjacency map: the graph needs only "what can this kernel reach", and
importing a graph library cost more (~0.2 s) than building and walking the graph of
a whole cuda-samples checkout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from portcheck.checks import FunctionInfo


@dataclass
class CallGraph:
    kernels: set[str] = field(default_factory=set)
    calls: dict[str, set[str]] = field(default_factory=dict)  # caller -> defined callees

    def reachable(self, start: str) -> set[str]:
        """Every function `start` can reach, itself included."""
        seen = {start}
        stack = [start]
        while stack:
            for callee in self.calls.get(stack.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        return seen


def build_call_graph(functions: Iterable[FunctionInfo]) -> CallGraph:
    graph = CallGraph()
    calls: dict[str, set[str]] = {}
    for fn in functions:
        calls.setdefault(fn.name, set()).update(fn.calls)
        if fn.is_kernel:
            graph.kernels.add(fn.name)
    # Calls to names the project does not define (library APIs) are not part of the graph.
    graph.calls = {name: callees & calls.keys() for name, callees in calls.items()}
    return graph


def kernels_reaching(graph: CallGraph) -> dict[str, tuple[str, ...]]:
    """function name -> the kernels whose execution can reach it (itself included)."""
    reach: dict[str, set[str]] = {}
    for kernel in graph.kernels:
        for target in graph.reachable(kernel):
            reach.setdefault(target, set()).add(kernel)
    return {name: tuple(sorted(kernels)) for name, kernels in reach.items()}
