"""The tree-sitter-cuda front end."""

from __future__ import annotations

import threading
from functools import cache

import tree_sitter_cuda
from tree_sitter import Language, Parser, Query, Tree

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
