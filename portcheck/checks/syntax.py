"""Small helpers shared by checks that look at the syntax tree."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from tree_sitter import Node, Query, QueryCursor

from portcheck.parse.treesitter import CUDA_LANGUAGE

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


@cache
def device_query() -> Query:
    """DEVICE_PATTERNS compiled, on first use (it takes about 35 ms)."""
    return Query(CUDA_LANGUAGE, DEVICE_PATTERNS)


def device_captures(root: Node | None, ranges: list[tuple[int, int]]) -> dict[str, list[Node]]:
    """DEVICE_PATTERNS' captures within the given byte ranges (device functions)."""
    found: dict[str, list[Node]] = {}
    if root is None or not ranges:  # host-only code: the query need not even be compiled
        return found
    query = device_query()
    for start, end in ranges:
        cursor = QueryCursor(query)
        cursor.set_byte_range(start, end)
        for name, nodes in cursor.captures(root).items():
            found.setdefault(name, []).extend(nodes)
    return found


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
