"""The call graph: which kernels reach which functions.

Nodes are function names across the whole project (a helper defined in a header
and called from kernels in several files is one node); edges go from caller to
callee, and from a host function to each kernel it launches. A hazard inside a
device helper is then attributed to every kernel that reaches the helper.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from portcheck.checks import FunctionInfo

if TYPE_CHECKING:
    import networkx as nx


def build_call_graph(functions: Iterable[FunctionInfo]) -> nx.DiGraph:
    import networkx as nx  # imported when a scan needs it, not at start-up

    graph = nx.DiGraph()
    defined: dict[str, FunctionInfo] = {}
    for fn in functions:
        kernel = graph.nodes[fn.name].get("kernel", False) if fn.name in graph else False
        graph.add_node(fn.name, kernel=kernel or fn.is_kernel)
        defined.setdefault(fn.name, fn)
        for callee in fn.calls:
            graph.add_edge(fn.name, callee)
    # Calls to names the project does not define (library APIs) are not part of the graph.
    graph.remove_nodes_from([n for n in list(graph) if n not in defined])
    return graph


def kernels_reaching(graph: nx.DiGraph) -> dict[str, tuple[str, ...]]:
    """function name -> the kernels whose execution can reach it (itself included)."""
    import networkx as nx

    reach: dict[str, set[str]] = {}
    for name, data in graph.nodes(data=True):
        if not data.get("kernel"):
            continue
        for target in nx.descendants(graph, name) | {name}:
            reach.setdefault(target, set()).add(name)
    return {name: tuple(sorted(kernels)) for name, kernels in reach.items()}
