"""The libclang front end: what a compiler knows that a syntax tree does not.

Owns: parsing one CUDA/C++ file with libclang (the PyPI `libclang` wheel) as CUDA,
without a CUDA install (`-nocudainc -nocudalib`, portcheck's shim header of CUDA builtins,
no system headers: a missing include is left out and clang recovers), with the project's
own include folders so its headers are read; and reading back, for that file:

- the functions it defines, with the execution space clang resolved after macro expansion
  (`DINLINE`, `CUTLASS_DEVICE`, `HOST_DEVICE` are attributes by then) and the functions
  each one calls, including the call operators of functors passed to a template;
- the integer constants it defines, evaluated (`sizeof(unsigned) * 8` is 32);
- the places where a name refers to a declaration of the project's own (a local `j0`),
  which are therefore not uses of a CUDA API of that name.

tree-sitter stays the fast front end and the fallback: these facts refine its own, and a
file clang cannot read at all keeps tree-sitter's. Nothing here runs the code it reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from portcheck.checks import FunctionInfo
from portcheck.preproc import ConstantDef

SHIM_NAME = "__portcheck_cuda_shim.h"
VIRTUAL_ROOT = "/__portcheck__"
BASE_ARGS = (
    "-x",
    "cuda",
    "-nocudainc",
    "-nocudalib",
    "--cuda-host-only",
    "-nostdinc",
    "-nostdinc++",
    "-std=c++17",
    "-ferror-limit=0",
    "-Wno-everything",
    "-fno-spell-checking",
    "-D__CUDACC__",
    "-D__NVCC__",
)
FUNCTION_KINDS = frozenset(
    {"FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "CONVERSION_FUNCTION"}
)
DECLARATION_KINDS = frozenset({"VAR_DECL", "PARM_DECL", "FIELD_DECL"})
INTEGER_TYPES = re.compile(r"\b(?:int|unsigned|long|short|char|size_t|u?int\d+_t|bool)\b")


@dataclass
class ClangFacts:
    """What libclang found in one file (byte offsets into the text it was given)."""

    ok: bool
    reason: str = ""
    functions: list[FunctionInfo] = field(default_factory=list)
    device_ranges: list[tuple[int, int]] = field(default_factory=list)
    constants: list[ConstantDef] = field(default_factory=list)
    own_references: set[int] = field(default_factory=set)  # offsets of names of the project's
    headers: list[str] = field(default_factory=list)  # project files it read besides this one


@cache
def _index() -> Any | None:
    """A libclang index, or None when libclang cannot be loaded here."""
    try:
        from clang import cindex

        return cindex.Index.create()
    except Exception:  # the wheel is missing, or its shared library does not load
        return None


def available() -> bool:
    return _index() is not None


@cache
def _shim() -> str:
    return (Path(__file__).parent / "cuda_shim.h").read_text("utf-8")


def include_dirs_for(root: str, relpath: str) -> list[str]:
    """The folders a file's project includes are searched in: its own folder and those
    above it up to the root, and each `include` folder on that way."""
    folder = os.path.dirname(os.path.join(root, relpath))
    found: list[str] = []
    root = os.path.abspath(root)
    current = os.path.abspath(folder)
    while True:
        found.append(current)
        include = os.path.join(current, "include")
        if os.path.isdir(include):
            found.append(include)
        if current == root or not current.startswith(root + os.sep):
            break
        current = os.path.dirname(current)
    return found


def analyze(
    path: str,
    data: bytes,
    include_dirs: Sequence[str] = (),
    defines: Sequence[str] = (),
    interesting: Callable[[str], bool] | None = None,
) -> ClangFacts:
    """Parse `data` (the text of the file at `path`) and read its facts."""
    index = _index()
    if index is None:
        return ClangFacts(False, "libclang is not available")
    from clang import cindex

    shim = f"{VIRTUAL_ROOT}/{SHIM_NAME}"
    main = os.path.abspath(path)
    text = data.decode("utf-8", "replace")
    args = [*BASE_ARGS, "-include", shim]
    args += [f"-I{d}" for d in include_dirs]
    args += [f"-D{d}" for d in defines]
    # An include clang cannot find is a fatal error, after which it stops resolving names;
    # the headers the project does not have (the C++ library, CUDA's) are given as empty.
    args += ["-idirafter", EMPTY_HEADERS]
    unsaved = [(main, text), (shim, _shim())]
    unsaved += [
        (f"{EMPTY_HEADERS}/{name}", "") for name in _missing_includes(main, text, include_dirs)
    ]
    try:
        unit = index.parse(
            main,
            args=args,
            unsaved_files=unsaved,
            options=cindex.TranslationUnit.PARSE_INCOMPLETE,
        )
    except cindex.TranslationUnitLoadError as exc:
        return ClangFacts(False, f"libclang could not parse it: {exc}")
    facts = ClangFacts(True)
    project_roots = tuple(os.path.abspath(d) for d in include_dirs)
    _read_unit(unit.cursor, main, project_roots, facts, interesting)
    facts.headers = sorted(
        {
            inclusion.include.name
            for inclusion in unit.get_includes()
            if inclusion.include is not None
            and not inclusion.include.name.startswith(VIRTUAL_ROOT)
            and inclusion.include.name != main
        }
    )
    return facts


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)
EMPTY_HEADERS = f"{VIRTUAL_ROOT}/absent"
MAX_HEADERS_READ = 200


def _missing_includes(main: str, text: str, include_dirs: Sequence[str]) -> set[str]:
    """Names included by the file or the project headers it reaches that none of the
    include folders holds."""
    missing: set[str] = set()
    seen: set[str] = {main}
    queue = [(main, text)]
    while queue and len(seen) < MAX_HEADERS_READ:
        path, source = queue.pop()
        here = os.path.dirname(path)
        for name in INCLUDE.findall(source):
            if ".." in name.split("/") and not name.startswith(".."):
                continue
            found = next(
                (
                    candidate
                    for folder in (here, *include_dirs)
                    if os.path.isfile(candidate := os.path.normpath(os.path.join(folder, name)))
                ),
                None,
            )
            if found is None:
                if not name.startswith(("/", "..")):
                    missing.add(name)
            elif found not in seen:
                seen.add(found)
                try:
                    with open(found, "rb") as handle:
                        queue.append((found, handle.read(1 << 20).decode("utf-8", "replace")))
                except OSError:
                    pass
    return missing


def _in_file(cursor: Any, main: str) -> bool:
    location = cursor.location
    return location.file is not None and location.file.name == main


def _is_project(cursor: Any, roots: tuple[str, ...], main: str) -> bool:
    location = cursor.location
    if location.file is None:
        return False
    name = location.file.name
    return name == main or (not name.startswith(VIRTUAL_ROOT) and name.startswith(roots))


def _read_unit(
    root: Any,
    main: str,
    roots: tuple[str, ...],
    facts: ClangFacts,
    interesting: Callable[[str], bool] | None = None,
) -> None:
    """One walk over the file's part of the tree (libclang's cursors are costly to visit:
    each node once). `interesting` limits the own-declaration lookups to the names the
    extractor might take for CUDA uses."""
    functions: dict[int, FunctionInfo] = {}
    handed: list[tuple[FunctionInfo, str, str]] = []  # (caller, callee, functor's operator)
    stack: list[tuple[Any, FunctionInfo | None]] = [
        (c, None) for c in root.get_children() if _in_file(c, main)
    ]
    while stack:
        cursor, current = stack.pop()
        kind = _kind(cursor)
        if kind in FUNCTION_KINDS and cursor.is_definition():
            info = _function(cursor, main)
            if info is not None:
                functions[info.start] = info
                current = info
                if info.is_device:
                    facts.device_ranges.append((info.start, info.end))
        elif kind == "VAR_DECL":
            constant = _constant(cursor)
            if constant is not None:
                facts.constants.append(constant)
        elif kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR"):
            if interesting is None or interesting(cursor.spelling):
                referenced = cursor.referenced
                if (
                    referenced is not None
                    and _kind(referenced) in DECLARATION_KINDS
                    and _is_project(referenced, roots, main)
                    and not _function_pointer(referenced)
                ):
                    facts.own_references.add(cursor.location.offset)
        elif current is not None and kind in ("CALL_EXPR", "CUDA_KERNEL_CALL_EXPR"):
            _call(cursor, current, main, roots, handed)
        if kind in NO_FACTS_BELOW:
            continue  # a literal or a reference: what lies under it holds none of the above
        stack.extend((child, current) for child in cursor.get_children())
    # A functor handed to a template (`apply<<<g, b>>>(Square{}, p)`) is called by that
    # template: the edge goes from the callee, when this file defines it, else the caller.
    for caller, callee, operator in handed:
        targets = [f for f in functions.values() if f.name == callee]
        for target in targets or [caller]:
            target.calls.add(operator)
    facts.functions = sorted(functions.values(), key=lambda f: f.start)
    facts.device_ranges.sort()


# Cursor kinds whose children (if any) hold no function, constant, call or reference the
# walk reads: literals, and references (a `DECL_REF_EXPR`'s children are its template
# arguments' type references). Not visiting them saves a third of the libclang walk's
# `get_children` calls, each a round trip through ctypes.
NO_FACTS_BELOW = frozenset(
    {
        "INTEGER_LITERAL",
        "FLOATING_LITERAL",
        "IMAGINARY_LITERAL",
        "STRING_LITERAL",
        "CHARACTER_LITERAL",
        "CXX_BOOL_LITERAL_EXPR",
        "CXX_NULL_PTR_LITERAL_EXPR",
        "TYPE_REF",
        "TEMPLATE_REF",
        "NAMESPACE_REF",
        "MEMBER_REF",
        "LABEL_REF",
        "OVERLOADED_DECL_REF",
        "VARIABLE_REF",
        "DECL_REF_EXPR",
    }
)


def _function_pointer(declaration: Any) -> bool:
    """A variable holding a function pointer (`extern tcuModuleLoadDataEx *cuModuleLoadDataEx;`
    of a driver API loaded with dlopen): a call through it, under the API's name, is still
    that API."""
    try:
        pointee = declaration.type.get_canonical().get_pointee()
        return str(pointee.kind.name) in ("FUNCTIONPROTO", "FUNCTIONNOPROTO")
    except Exception:  # a type kind newer than this binding knows
        return False


def _function(cursor: Any, main: str) -> FunctionInfo | None:
    extent = cursor.extent
    if extent.start.file is None or extent.start.file.name != main:
        return None
    attributes = {_kind(c) for c in cursor.get_children()}
    return FunctionInfo(
        name=cursor.spelling,
        start=extent.start.offset,
        end=extent.end.offset,
        is_kernel="CUDAGLOBAL_ATTR" in attributes,
        is_device=bool(attributes & {"CUDAGLOBAL_ATTR", "CUDADEVICE_ATTR"}),
    )


def _call(
    node: Any,
    info: FunctionInfo,
    main: str,
    roots: tuple[str, ...],
    handed: list[tuple[FunctionInfo, str, str]],
) -> None:
    callee = node.referenced
    own = (
        callee is not None and _kind(callee) in FUNCTION_KINDS and _is_project(callee, roots, main)
    )
    if own:
        info.calls.add(callee.spelling)
    for argument in node.get_arguments():
        target = _functor_call_operator(argument)
        if target:
            handed.append((info, callee.spelling if own else "", target))


def _kind(cursor: Any) -> str:
    try:
        return str(cursor.kind.name)
    except ValueError:  # a kind newer than this binding knows
        return ""


def _functor_call_operator(argument: Any) -> str | None:
    """`apply<<<g, b>>>(Square{}, p)`: a functor handed to a template is called there."""
    try:
        declaration = argument.type.get_canonical().get_declaration()
    except Exception:
        return None
    if declaration is None or declaration.kind.name not in ("STRUCT_DECL", "CLASS_DECL"):
        return None
    for member in declaration.get_children():
        if member.kind.name == "CXX_METHOD" and member.spelling == "operator()":
            return "operator()"
    return None


@cache
def _evaluation_api() -> Any | None:
    """libclang's constant evaluator, which the Python binding does not declare: its
    signatures set here (without them ctypes would truncate the result pointer)."""
    import ctypes

    try:
        from clang import cindex

        lib = cindex.conf.lib
        signatures = {
            "clang_Cursor_Evaluate": ([cindex.Cursor], ctypes.c_void_p),
            "clang_EvalResult_getKind": ([ctypes.c_void_p], ctypes.c_int),
            "clang_EvalResult_isUnsignedInt": ([ctypes.c_void_p], ctypes.c_uint),
            "clang_EvalResult_getAsUnsigned": ([ctypes.c_void_p], ctypes.c_ulonglong),
            "clang_EvalResult_getAsLongLong": ([ctypes.c_void_p], ctypes.c_longlong),
            "clang_EvalResult_dispose": ([ctypes.c_void_p], None),
        }
        for name, (argtypes, restype) in signatures.items():
            function = getattr(lib, name)
            function.argtypes = argtypes
            function.restype = restype
        return lib
    except Exception:
        return None


def _constant(cursor: Any) -> ConstantDef | None:
    """A const integer variable with a value clang can compute."""
    type_ = cursor.type
    if not type_.is_const_qualified() or not INTEGER_TYPES.search(type_.spelling):
        return None
    lib = _evaluation_api()
    if lib is None:
        return None
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        if lib.clang_EvalResult_getKind(result) != 1:  # CXEval_Int
            return None
        if lib.clang_EvalResult_isUnsignedInt(result):
            value = lib.clang_EvalResult_getAsUnsigned(result)
        else:
            value = lib.clang_EvalResult_getAsLongLong(result)
    finally:
        lib.clang_EvalResult_dispose(result)
    location = cursor.location
    return ConstantDef(cursor.spelling, str(value), location.offset, location.line, location.column)
