"""The tree-sitter-cuda front end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import cache
from typing import Protocol

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree, TreeCursor

CUDA_LANGUAGE = Language(tree_sitter_cuda.language())

# Structural constructs found by one query run in C rather than a Python tree walk.
STRUCTURE_PATTERNS = """
    (preproc_include path: (_) @include)
    (kernel_call_syntax) @launch
    (gnu_asm_expression) @asm
    (function_definition) @function
    (lambda_expression) @lambda
    (ERROR) @error
    (call_expression function: [(identifier) (qualified_identifier) (template_function)] @callee)
    (call_expression function: (field_expression field: (field_identifier) @callee))
    """


@cache
def structure_query() -> Query:
    """STRUCTURE_PATTERNS compiled (about 40 ms, so only when a file is parsed: a scan
    answered from the cache never pays it)."""
    return Query(CUDA_LANGUAGE, STRUCTURE_PATTERNS)


_local = threading.local()


def parse_cuda(data: bytes) -> Tree:
    """Parse UTF-8 CUDA/C++ source. Never raises on malformed code."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(CUDA_LANGUAGE)
    return parser.parse(data)


def _here(cursor: TreeCursor) -> Node:
    node = cursor.node
    assert node is not None  # a cursor made from a node is always on one
    return node


class TokenLocator:
    """The smallest node around each of a series of byte ranges, with its ancestors, in
    time linear in the tree when the ranges come in increasing order.

    `Node.descendant_for_byte_range` and `Node.parent` each walk down from the root, so
    calling them once per token costs depth x tokens: on one generated expression of
    20,000 terms (a tree 40,000 deep) that was minutes. One TreeCursor moving forward,
    with the path of nodes from the root to it, gives the same node and its parents.
    """

    def __init__(self, root: Node) -> None:
        self._cursor = root.walk()
        self.path: list[Node] = [root]  # root .. the cursor's node; see locate()

    def locate(self, start: int, end: int) -> int:
        """Index in `path` of the smallest node spanning start..end (as
        `root.descendant_for_byte_range(start, end)` gives it); the entries before it
        are its ancestors. Valid until the next call."""
        cursor, path = self._cursor, self.path
        # Up (or right, to a later sibling) until the node at the end spans the range.
        while len(path) > 1:
            top = path[-1]
            if top.start_byte <= start and end <= top.end_byte:
                break
            if top.end_byte <= start and cursor.goto_next_sibling():
                path[-1] = _here(cursor)
                continue
            cursor.goto_parent()
            path.pop()
        # Down, through the child that spans the range, while there is one.
        while cursor.goto_first_child():
            node = _here(cursor)
            while node.end_byte <= start and cursor.goto_next_sibling():
                node = _here(cursor)
            path.append(node)
            if not (node.start_byte <= start and end <= node.end_byte):
                # No child spans it: the answer is the parent. The cursor stays on this
                # child so that the next range carries on from here, not from the first child.
                return len(path) - 2
        return len(path) - 1


class NodePath(Protocol):
    """A node and its ancestors by index (TokenLocator.path, or _Ancestors)."""

    def __getitem__(self, index: int, /) -> Node | None: ...


class _Ancestors:
    """The ancestors of one node, looked up only as far as they are asked for: item
    `SHALLOW_DEPTH - k` is the node's k-th ancestor (the node itself for k = 0), None
    above the root. It stands in for TokenLocator.path on trees of ordinary depth."""

    def __init__(self) -> None:
        self.chain: list[Node | None] = []

    def __getitem__(self, index: int) -> Node | None:
        k = SHALLOW_DEPTH - index
        chain = self.chain
        while len(chain) <= k:
            last = chain[-1]
            chain.append(last.parent if last is not None else None)
        return chain[k]


SHALLOW_DEPTH = 1 << 20  # the "depth" ShallowLocator reports: far above any k asked for


class ShallowLocator:
    """TokenLocator's interface for trees of ordinary depth, where tree-sitter's own
    lookup (one C call) is cheaper than moving a cursor in Python, and most tokens need
    no ancestor at all (comments, strings, parts of longer names)."""

    def __init__(self, root: Node) -> None:
        self._root = root
        self.path = _Ancestors()

    def locate(self, start: int, end: int) -> int:
        node = self._root.descendant_for_byte_range(start, end)
        self.path.chain = [node]
        return SHALLOW_DEPTH


def token_locator(root: Node) -> TokenLocator | ShallowLocator:
    """A cursor-walking locator for very deep trees (linear time there), tree-sitter's
    lookup for the rest (faster)."""
    return TokenLocator(root) if deeper_than(root, SHALLOW_LIMIT) else ShallowLocator(root)


SHALLOW_LIMIT = 400  # deeper than this, Node.parent's walk from the root costs too much

# tree-sitter's query cursor keeps node depths in 16 bits: on a deeper tree (40,000
# nested calls) a query loses captures and slows down quadratically. Such trees are
# walked in Python instead (QueryWalker), which is slower per node but linear.
QUERY_DEPTH_LIMIT = 60_000


def deeper_than(root: Node, limit: int = QUERY_DEPTH_LIMIT) -> bool:
    """Whether any node lies more than `limit` levels below `root`. A subtree cannot be
    deeper than its node count (known in O(1)), so only the few big subtrees on the way
    down are opened: constant time on ordinary files, linear on pathological ones."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth + node.descendant_count <= limit:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in node.children)
    return False


_last_probe: list[tuple[Node, bool]] = []  # (root, deep): one per file, asked thrice


def too_deep_for_queries(root: Node) -> bool:
    """deeper_than(root), remembered for the last tree asked about."""
    if _last_probe and _last_probe[0][0] == root:
        return _last_probe[0][1]
    deep = deeper_than(root)
    _last_probe[:] = [(root, deep)]
    return deep


def walk_nodes(root: Node) -> Iterator[Node]:
    """Every node under `root` (itself included), in document (pre-)order, without
    recursion."""
    cursor = root.walk()
    while True:
        yield _here(cursor)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


SIMPLE_STRUCTURE = {
    "kernel_call_syntax": "launch",
    "gnu_asm_expression": "asm",
    "function_definition": "function",
    "lambda_expression": "lambda",
    "ERROR": "error",
}
CALLEE_TYPES = frozenset({"identifier", "qualified_identifier", "template_function"})


def structure_captures(root: Node) -> dict[str, list[Node]]:
    """STRUCTURE_PATTERNS' captures: by the query, or on a tree too deep for it by a walk
    that captures the same nodes."""
    if not too_deep_for_queries(root):
        return QueryCursor(structure_query()).captures(root)
    found: dict[str, list[Node]] = {}
    for node in walk_nodes(root):
        kind = node.type
        if kind in SIMPLE_STRUCTURE:
            found.setdefault(SIMPLE_STRUCTURE[kind], []).append(node)
        elif kind == "preproc_include":
            path = node.child_by_field_name("path")
            if path is not None:
                found.setdefault("include", []).append(path)
        elif kind == "call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "field_expression":
                function = function.child_by_field_name("field")
                if function is not None and function.type != "field_identifier":
                    function = None
            elif function is not None and function.type not in CALLEE_TYPES:
                function = None
            if function is not None:
                found.setdefault("callee", []).append(function)
    return found
