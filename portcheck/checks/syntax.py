"""Small helpers shared by checks that look at the syntax tree."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from functools import cache

from tree_sitter import Node, Query, QueryCursor

from portcheck.parse.treesitter import CUDA_LANGUAGE, too_deep_for_queries, walk_nodes

_QUERIES: dict[str, Query] = {}

# Everything the device-code checks look at, captured in one pass.
DEVICE_PATTERNS = """
    (binary_expression) @binary
    (declaration) @declaration
    (for_statement) @for
    (call_expression) @call
    (init_declarator) @init
    (launch_bounds) @bounds
    (if_statement) @if
    """
DEVICE_TYPES = {
    "binary_expression": "binary",
    "declaration": "declaration",
    "for_statement": "for",
    "call_expression": "call",
    "init_declarator": "init",
    "launch_bounds": "bounds",
    "if_statement": "if",
}


@cache
def device_query() -> Query:
    """DEVICE_PATTERNS compiled, on first use (it takes about 35 ms)."""
    return Query(CUDA_LANGUAGE, DEVICE_PATTERNS)


def device_captures(root: Node | None, ranges: list[tuple[int, int]]) -> dict[str, list[Node]]:
    """DEVICE_PATTERNS' captures within the given byte ranges (device functions)."""
    found: dict[str, list[Node]] = {}
    if root is None or not ranges:  # host-only code: the query need not even be compiled
        return found
    if too_deep_for_queries(root):
        return _device_walk(root, ranges)
    query = device_query()
    for start, end in ranges:
        cursor = QueryCursor(query)
        cursor.set_byte_range(start, end)
        for name, nodes in cursor.captures(root).items():
            found.setdefault(name, []).extend(nodes)
    # In document order: the captures of several patterns come pattern by pattern, and a
    # check that reports once per line must keep the same one from run to run.
    for nodes in found.values():
        nodes.sort(key=lambda n: (n.start_byte, n.end_byte))
    return found


def _device_walk(root: Node, ranges: list[tuple[int, int]]) -> dict[str, list[Node]]:
    """device_captures by one walk, for a tree too deep for queries: the nodes of
    DEVICE_TYPES that overlap a range (sorted, merged), as a query limited to it gives."""
    found: dict[str, list[Node]] = {}
    starts = [start for start, _ in ranges]
    for node in walk_nodes(root):
        name = DEVICE_TYPES.get(node.type)
        if name is None:
            continue
        i = bisect_right(starts, node.end_byte - 1) - 1  # the last range starting inside
        if i >= 0 and ranges[i][1] > node.start_byte:
            found.setdefault(name, []).append(node)
    return found


PREPROC_CONDITIONS = "[(preproc_if condition: (_) @c) (preproc_elif condition: (_) @c)]"


def preproc_conditions(root: Node) -> list[Node]:
    """The conditions of `#if` and `#elif` directives."""
    if not too_deep_for_queries(root):
        return captures(root, PREPROC_CONDITIONS, "c")
    conditions = []
    for node in walk_nodes(root):
        if node.type in ("preproc_if", "preproc_elif"):
            condition = node.child_by_field_name("condition")
            if condition is not None:
                conditions.append(condition)
    return conditions


def captures(root: Node, pattern: str, name: str) -> list[Node]:
    """Nodes captured as @name by a (cached) tree-sitter query."""
    query = _QUERIES.get(pattern)
    if query is None:
        query = _QUERIES[pattern] = Query(CUDA_LANGUAGE, pattern)
    return QueryCursor(query).captures(root).get(name, [])


def text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def integer_value(node: Node | None) -> int | None:
    """The value of an integer literal node (`32`, `0x1F`, `31u`), else None."""
    if node is None or node.type != "number_literal":
        return None
    literal = text(node).lower().rstrip("ul")
    try:
        return int(literal, 0)
    except ValueError:
        return None


def descendants(node: Node, type_name: str) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == type_name:
            yield current
        stack.extend(current.children)


def call_name(call: Node) -> str:
    function = call.child_by_field_name("function")
    return text(function).split("::")[-1].strip() if function is not None else ""


def call_arguments(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return list(args.named_children) if args is not None else []
