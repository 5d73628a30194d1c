"""Calls whose arguments change on the way to HIP, not only their name.

Owns the table of argument edits and turning one call into byte-span edits. The facts are
those of HIPIFY's transforming matchers (ROCm/HIPIFY 014177bc, src/HipifyAction.cpp):

* a kernel handed to the runtime as a function is `const void*` in HIP: wrapped in
  `reinterpret_cast<const void*>(…)` (`hipFuncGetAttributes(&a, reinterpret_cast<const
  void*>(k))`);
* a `__device__`/`__constant__` symbol is passed through `HIP_SYMBOL(…)`, HIP's documented
  spelling for a symbol argument;
* `cudaMallocHost(p, n)` is `hipHostMalloc(p, n, hipHostMallocDefault)`: HIP's flags have
  no default for a `void**`;
* `cuOccupancyMaxPotentialBlockSize[WithFlags]` has no block-size-to-shared-memory callback
  in HIP: the argument goes when it is a null pointer (HIPIFY drops any; portcheck keeps a
  real callback, whose loss would change the answer, and the build says so);
* `cudaGetDriverEntryPoint(sym, &fn, flags, &status)` is `hipGetProcAddress(sym, &fn,
  VERSION, flags, &status)`, VERSION the HIP release written as major*100+minor;
* CUDA's default arguments HIP lacks are written out: `flags` of `cudaStreamWaitEvent` and
  `cudaMalloc3DArray` (`__dv(0)` in CUDA's cuda_runtime_api.h; no default in ROCm 5.2's
  hip_runtime_api.h). HIPIFY leaves these, and the build fails.

Every edit is made on the spans of the call's own top-level arguments (the parser found the
call; `_call_arguments` splits its parentheses), so an argument that is itself a call or a
macro argument is handled the same way, and an edit already made is never made twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

CAST = "reinterpret_cast<const void*>"
SYMBOL = "HIP_SYMBOL"
NULL_POINTER = re.compile(rb"\s*(?:0|NULL|nullptr|\(\s*\w+\s*\*?\s*\)\s*0)\s*")


@dataclass(frozen=True)
class ArgumentEdit:
    kind: str  # "cast", "symbol", "append", "insert", "drop-null"
    index: int  # the argument it applies to (append: the count of arguments it needs)
    text: str = ""  # what "append"/"insert" adds ("{version}": the release as major*100+minor)


ARGUMENT_EDITS: dict[str, tuple[ArgumentEdit, ...]] = {
    "cudaFuncSetCacheConfig": (ArgumentEdit("cast", 0),),
    "cudaFuncSetSharedMemConfig": (ArgumentEdit("cast", 0),),
    "cudaFuncGetAttributes": (ArgumentEdit("cast", 1),),
    "cudaFuncSetAttribute": (ArgumentEdit("cast", 0),),
    "cudaLaunchKernel": (ArgumentEdit("cast", 0),),
    "cudaLaunchCooperativeKernel": (ArgumentEdit("cast", 0),),
    "cudaMallocHost": (ArgumentEdit("append", 2, "hipHostMallocDefault"),),
    "cudaMemcpyToSymbol": (ArgumentEdit("symbol", 0),),
    "cudaMemcpyToSymbolAsync": (ArgumentEdit("symbol", 0),),
    "cudaGetSymbolSize": (ArgumentEdit("symbol", 1),),
    "cudaGetSymbolAddress": (ArgumentEdit("symbol", 1),),
    "cudaMemcpyFromSymbol": (ArgumentEdit("symbol", 1),),
    "cudaMemcpyFromSymbolAsync": (ArgumentEdit("symbol", 1),),
    "cudaGraphAddMemcpyNodeToSymbol": (ArgumentEdit("symbol", 4),),
    "cudaGraphAddMemcpyNodeFromSymbol": (ArgumentEdit("symbol", 5),),
    "cudaGraphMemcpyNodeSetParamsToSymbol": (ArgumentEdit("symbol", 1),),
    "cudaGraphMemcpyNodeSetParamsFromSymbol": (ArgumentEdit("symbol", 2),),
    "cudaGraphExecMemcpyNodeSetParamsToSymbol": (ArgumentEdit("symbol", 2),),
    "cudaGraphExecMemcpyNodeSetParamsFromSymbol": (ArgumentEdit("symbol", 3),),
    "cudaGetTextureReference": (ArgumentEdit("symbol", 1),),
    "cuOccupancyMaxPotentialBlockSize": (ArgumentEdit("drop-null", 3),),
    "cuOccupancyMaxPotentialBlockSizeWithFlags": (ArgumentEdit("drop-null", 3),),
    "cudaGetDriverEntryPoint": (ArgumentEdit("insert", 2, "{version}"),),
    # CUDA declares `unsigned int flags __dv(0)`; HIP's have no default (ROCm 5.2 headers).
    "cudaStreamWaitEvent": (ArgumentEdit("append", 2, "0"),),
    "cudaMalloc3DArray": (ArgumentEdit("append", 3, "0"),),
}

Spans = list[tuple[int, int]]
Edit = tuple[int, int, str]


def _trimmed(data: bytes, start: int, end: int) -> tuple[int, int]:
    while start < end and data[start : start + 1].isspace():
        start += 1
    while end > start and data[end - 1 : end].isspace():
        end -= 1
    return start, end


def argument_edits(
    name: str,
    data: bytes,
    arguments: Spans,
    version: int,
) -> list[Edit]:
    """The edits that make the arguments of this call to `name` HIP's (`arguments`: the
    spans of its top-level arguments; `version`: the HIP release as major*100+minor)."""
    edits: list[Edit] = []
    for edit in ARGUMENT_EDITS.get(name, ()):
        make = _MAKERS[edit.kind]
        edits += make(edit, data, arguments, version)
    return edits


def _wrap(prefix: str) -> Callable[[ArgumentEdit, bytes, Spans, int], list[Edit]]:
    def make(edit: ArgumentEdit, data: bytes, arguments: Spans, version: int) -> list[Edit]:
        if edit.index >= len(arguments):
            return []
        start, end = _trimmed(data, *arguments[edit.index])
        written = data[start:end]
        if start == end or written.startswith((prefix.encode(), b'"')):
            return []  # already wrapped, or an old-style symbol name in a string
        if prefix == CAST and re.match(rb"\(\s*(?:const\s+)?void\s*\*\s*\)", written):
            return []  # cast by the project already
        return [(start, start, prefix + "("), (end, end, ")")]

    return make


def _append(edit: ArgumentEdit, data: bytes, arguments: Spans, version: int) -> list[Edit]:
    if len(arguments) != edit.index:
        return []
    _, end = _trimmed(data, *arguments[-1])
    return [(end, end, ", " + edit.text)]


def _insert(edit: ArgumentEdit, data: bytes, arguments: Spans, version: int) -> list[Edit]:
    if edit.index >= len(arguments):
        return []
    start, _ = _trimmed(data, *arguments[edit.index])
    return [(start, start, edit.text.format(version=version) + ", ")]


def _drop_null(edit: ArgumentEdit, data: bytes, arguments: Spans, version: int) -> list[Edit]:
    if edit.index >= len(arguments) or edit.index == 0:
        return []
    start, end = arguments[edit.index]
    if not NULL_POINTER.fullmatch(data[start:end]):
        return []
    # The argument and the comma before it.
    return [(arguments[edit.index - 1][1], end, "")]


_MAKERS: dict[str, Callable[[ArgumentEdit, bytes, Spans, int], list[Edit]]] = {
    "cast": _wrap(CAST),
    "symbol": _wrap(SYMBOL),
    "append": _append,
    "insert": _insert,
    "drop-null": _drop_null,
}
