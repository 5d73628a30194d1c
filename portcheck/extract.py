"""Find the CUDA constructs in one parsed source file, from its syntax tree.

Owns: which tokens are CUDA constructs (API names, types, enums, macros,
namespaces, headers, launches, inline asm) and where they are (byte offsets), which
functions are device code, which kernels a file defines and what each function calls.
It only extracts: `portcheck.filescan` parses, classifies and runs the checks.

How: a byte-level scan proposes candidate tokens (names the rule set knows, or
names shaped like CUDA APIs); the syntax tree then decides what each one is.
A candidate inside a comment or a string literal is dropped, as is one that is
only part of a longer name (`mycudaFree`) or a member of a user's namespace
(`mylib::cudaFree`). Only candidates cost Python work, which keeps this fast.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import NamedTuple

from tree_sitter import Node

from portcheck.checks import (
    METHOD_MARK,
    FunctionInfo,
    innermost_function,
    merged_ranges,
    nesting,
)
from portcheck.model import ApiRule, Status
from portcheck.parse.treesitter import NodePath, structure_query, token_locator
from portcheck.preproc import line_start_matches, mask_comments_and_strings, without_anchor
from portcheck.ruleset import RuleSet

# `#define NAME`: read lexically too, because multi-line macros with aligned
# backslashes are where the grammar most often gives up (an ERROR node).
MACRO_DEFINITION = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_DEFINE_FROM_HASH = without_anchor(MACRO_DEFINITION, rb"^[ \t]*")  # see line_start_matches

# Names shaped like CUDA APIs. A name of this shape that the rule set does not
# know is still reported (status unknown) unless the project defines it itself.
CUDA_SHAPE = re.compile(
    r"(?:cuda|cu)[A-Z]\w*"
    r"|CU[a-z]\w*|CU_[A-Z0-9_]+|CUDA_[A-Z0-9_]+|CUDART_[A-Z0-9_]+"
    r"|(?:cublasLt|cublas|cusparse|cusolver(?:Dn|Sp|Rf|Mg)?|curand|cufft|cudnn|nvrtc|nccl|nvtx)"
    r"[A-Z]\w*"
    # cuRAND's device API is snake_case (`curand_init`, `curand_uniform4`); the other
    # libraries' names never are: `nccl_comm_`, `cublas_handle` are a project's own.
    r"|curand_\w+"
    # NVIDIA libraries whose names are never snake_case: `npp_count` is not NPP's
    r"|(?:cupti|cutensor|nvjpeg|nvml|nvJitLink|nvPTXCompiler|nvvm|npp[is]?)[A-Z]\w*|Npp\w+"
    r"|(?:CUBLAS|CUBLASLT|CUSPARSE|CUSPARSELT|CUSOLVER|CURAND|CUFFT|CUDNN|CUTENSOR|CUPTI|NVRTC"
    r"|NCCL|NVTX|NVJPEG|NVML|NVJITLINK|NPP|CUFILE)_[A-Z0-9_]+"
    r"|__nv_\w+"  # reserved identifiers: NVIDIA's (__nv_bfloat16, __nv_fp8_e4m3, …)
)

CUDA_SHAPE_FIRST = "cCnN_"  # the first characters CUDA_SHAPE's alternatives can start with
# Candidates only (not CUDA-shaped for unknown-api): reserved names (`__float2half_rn`; not
# the qualifiers, which are never uses) and the libraries' upper-case constants
# (`CUBLASLT_MATMUL_TILE_128x200`, `CUB_ALIGN`).
BROAD_NAMES = re.compile(
    r"__(?!(?:global|device|host|shared|constant|forceinline|noinline|managed|restrict|align"
    r"|launch_bounds|LINE|FILE|func)__\b)\w+"
    r"|(?:CUBLAS|CUBLASLT|CUSPARSE|CUSPARSELT|CUSOLVER|CUSOLVERRF|CURAND|CUFFT|CUDNN|CUTENSOR"
    r"|CUPTI|NVRTC|NCCL|NVTX|NVJPEG|NVML|NVJITLINK|NPP|CUFILE|CUDA|CU|CUB|NVVM|NVCL)_\w+"
    # NVSHMEM's thousands of generated names (`nvshmemx_float_put_nbi_warp`): proposed here
    # rather than in the trie of known names; a project's own `nvshmem_rank` is not one
    r"|(?:nvshmem[ix]?|NVSHMEM[IX]?)_\w+"
)

# Qualifiers the grammar reads as keywords that HIP does not define: uses of a CUDA name
# (a kernel parameter `const __grid_constant__ Params p` does not compile with hipcc 5.2).
QUALIFIER_USES = frozenset({"__grid_constant__"})

CUDA_HEADER_SHAPE = re.compile(
    r"(?:cuda\w*|cudla|cu(?:blas|blasLt|rand|fft|sparse|solver\w*|dnn|tensor|Complex|_fp16|_bf16|_fp8)\w*"
    r"|nvrtc|nvToolsExt\w*|nvtx3/.*|nccl|cooperative_groups(?:/.*)?|thrust/.*|cub/.*|mma|"
    r"sm_\d+_\w+|device_(?:functions|launch_parameters|atomic_functions|types)|math_constants"
    r"|vector_types|driver_types|texture_fetch_functions|surface_functions|crt/.*)"
    r"(?:\.h|\.hpp|\.cuh)?"
)

# Guessed family for names the rule set does not know, checked in order.
FAMILY_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("cublasLt", "cublaslt"),
    ("CUBLASLT", "cublaslt"),
    ("cusparseLt", "cusparselt"),
    ("CUSPARSELT", "cusparselt"),
    ("cutensor", "cutensor"),
    ("CUTENSOR", "cutensor"),
    ("cuFile", "cufile"),
    ("CUfile", "cufile"),
    ("CU_FILE", "cufile"),
    ("CUFILE", "cufile"),
    ("nvjpeg", "nvjpeg"),
    ("NVJPEG", "nvjpeg"),
    ("nvml", "nvml"),
    ("NVML", "nvml"),
    ("npp", "npp"),
    ("Npp", "npp"),
    ("NPP", "npp"),
    ("__nv_", "device"),
    ("cublas", "cublas"),
    ("CUBLAS", "cublas"),
    ("cusparse", "cusparse"),
    ("CUSPARSE", "cusparse"),
    ("cusolver", "cusolver"),
    ("CUSOLVER", "cusolver"),
    ("curand", "curand"),
    ("CURAND", "curand"),
    ("cufft", "cufft"),
    ("CUFFT", "cufft"),
    ("cudnn", "cudnn"),
    ("CUDNN", "cudnn"),
    ("nvrtc", "nvrtc"),
    ("NVRTC", "nvrtc"),
    ("nccl", "nccl"),
    ("NCCL", "nccl"),
    ("nvtx", "nvtx"),
    ("NVTX", "nvtx"),
    ("cupti", "cupti"),
    ("CUpti", "cupti"),
    ("CUPTI", "cupti"),
    ("cuda", "runtime"),
    ("CUDART", "runtime"),
    ("CUDA_", "driver"),
    ("CU", "driver"),
    ("cu", "driver"),
)

STRING_LIKE = frozenset(
    {
        "comment",
        "string_literal",
        "string_content",
        "raw_string_literal",
        "raw_string_content",
        "raw_string_delimiter",
        "char_literal",
        "character",
        "escape_sequence",
        "system_lib_string",
        "concatenated_string",
        "user_defined_literal",
        "number_literal",
    }
)
NAME_NODES = frozenset({"identifier", "type_identifier", "namespace_identifier"})
DECLARATOR_PARENTS = frozenset(
    {
        "function_declarator",
        "init_declarator",
        "declaration",
        "parameter_declaration",
        "field_declaration",
        "pointer_declarator",
        "array_declarator",
        "reference_declarator",
        "type_definition",
    }
)
DEVICE_QUALIFIERS = frozenset({"__global__", "__device__"})
# Standard C names that CUDA also provides in device code: a CUDA use only there.
C_LIBRARY_NAMES = frozenset({"printf", "assert", "clock", "malloc", "free", "memcpy", "memset"})
LAUNCH_NAME = "<<<>>>"
ASM_NAME = "asm"
# An asm template written for AMD GPUs (GCN/CDNA/RDNA ISA), not PTX: `s_waitcnt`,
# `v_dot2_f32_f16`, `ds_read_b128`, `buffer_load_dword`, `global_load_dwordx4`.
AMD_ISA = re.compile(
    rb"\b(?:s|v|ds|buffer|global|flat|scratch|image|exp|tbuffer)_[a-z][a-z0-9_]*\b"
)
PTX = re.compile(
    rb"\b[a-z][a-z0-9]*(?:\.[a-z0-9_]+)+\b|%%?(?:laneid|warpid|smid|clock64|clock|"
    rb"globaltimer|tid|ntid|ctaid|nctaid|lanemask_\w+)\b|\.reg\b"
)
# An asm statement's head and its template's string literals; an operand's constraint.
ASM_TEMPLATE = re.compile(
    rb'\A(?:asm|__asm__|__asm)\b[\s\w]*\(\s*((?:"(?:\\.|[^"\\])*"\s*)+)(?=[:)])'
)
ASM_CONSTRAINT = re.compile(rb'"[=+&%]*([A-Za-z]+)"\s*\(')
NVPTX_ONLY_CONSTRAINTS = frozenset(b"lhfd")  # 64-, 16-bit, f32 and f64 registers


def nvptx_barrier_constraints(asm: bytes) -> list[str] | None:
    """For an asm statement with an empty template (`asm volatile("" : "+l"(x))`, a
    compiler barrier), the operand constraints only NVPTX has, which hipcc rejects
    ("invalid output constraint '+l'"); AMDGPU's are `v`, `s`, `r`, `a`. None when the
    template is not empty (or not spelled out)."""
    match = ASM_TEMPLATE.match(asm)
    if match is None or re.sub(rb'"|\s', b"", match.group(1)):
        return None
    return sorted(
        {
            chr(letter)
            for m in ASM_CONSTRAINT.finditer(asm, match.end())
            for letter in m.group(1)
            if letter in NVPTX_ONLY_CONSTRAINTS
        }
    )


# A name in a declaration's specifiers that looks like a macro (`DINLINE`, `CUTLASS_DEVICE`,
# `HOST_DEVICE`): the function is device code if the project defines it so.
MACRO_LIKE = re.compile(r"[A-Z_][A-Z0-9_]{2,}")  # not `T`, `N`: template parameters
DECLARATOR_TYPES = frozenset(
    {"function_declarator", "pointer_declarator", "reference_declarator", "qualified_identifier"}
)


# CUDA names that can only be declared at namespace scope (legacy texture and surface
# references: `texture<float, 2> tex;` beside the kernels), and the nodes of a body.
FILE_SCOPE_ONLY = frozenset({"texture", "surface"})
FUNCTION_NODES = frozenset({"function_definition", "lambda_expression"})
SCOPE_REACH = 64  # ancestors looked at (a generated expression may be thousands deep)


SCOPES = frozenset(
    {"namespace_definition", "class_specifier", "struct_specifier", "union_specifier"}
)


def _in_scope(fn: Node) -> bool:
    """Is this function defined inside a namespace or a class (a member or a namespace's
    function, not the global one of its name)?"""
    node = fn.parent
    while node is not None and node.type != "translation_unit":
        if node.type in SCOPES:
            return True
        node = node.parent
    return False


def _head_start(fn: Node) -> int:
    """Where the text that leads into `fn` begins: the end of what comes before it (a
    specifier macro blanked in the parsed view lies between)."""
    before = fn.prev_sibling
    if before is not None:
        return before.end_byte
    parent = fn.parent
    return parent.start_byte if parent is not None else 0


def function_extent(fn: Node) -> tuple[int, int]:
    """A function definition's bytes. Where the grammar recovered from an error in the body
    (a macro invoked with statements for an argument, `DISPATCH(T, auto x = f(); g(x);)`),
    the node can run on over the functions that follow it; the body then ends at the brace
    that closes its `{`, matched in the text (comments and literals masked)."""
    start, end = fn.start_byte, fn.end_byte
    if not fn.has_error:
        return start, end
    body = fn.child_by_field_name("body")
    if body is None or body.type != "compound_statement" or fn.text is None:
        return start, end
    code = mask_comments_and_strings(fn.text)
    depth = 0
    for i in range(body.start_byte - start, len(code)):
        byte = code[i]
        if byte == 0x7B:  # {
            depth += 1
        elif byte == 0x7D:  # }
            depth -= 1
            if depth == 0:
                return start, min(end, start + i + 1)
    return start, end


class Found(NamedTuple):
    """A name the extractor recognised: a known construct or a CUDA-shaped name."""

    name: str
    kind: str  # function, type, identifier, macro, namespace, header
    rule: ApiRule | None
    start: int  # byte offsets in the file
    end: int


@dataclass(slots=True)
class Extraction:
    """What the extractor found in one parsed file (the classify step makes uses of it)."""

    names: list[Found]
    definitions: set[str]  # CUDA-looking names the file defines itself
    # Where it defines a name the rule set knows as CUDA's (`__float2bfloat16_rn` written by
    # the project for its AMD build): (name, byte offset)
    api_definitions: list[tuple[str, int]]
    variables: set[str]  # names it declares as variables or parameters
    kernels: list[tuple[str, int, int]]  # (name, start, end) of each __global__ function
    functions: list[FunctionInfo]
    # CUDA functions HIP lacks that the file defines for a plain scalar (DRTK's
    # `math::saturate(float)`): in a HIP build its calls find the project's function
    replaced: set[str] = field(default_factory=set)


# The arithmetic types a CUDA math function takes (its float, double and integer overloads).
SCALAR_TYPES = frozenset({"float", "double", "int", "unsigned", "long", "short", "char"})


# `Type name(` / `Type name;` / `Type name =` in a macro body: `name` is declared there.
_DECLARED_AFTER = re.compile(rb"\b([A-Za-z_]\w*)[ \t]*[*&]*[ \t]+$")
_DECLARATION_END = (b"(", b";", b"=", b"{", b"[")
_NOT_A_TYPE = frozenset(
    {b"return", b"case", b"else", b"new", b"delete", b"throw", b"goto", b"sizeof", b"do"}
)


def _declared_in_body(data: bytes, body_start: int, start: int, end: int) -> bool:
    """Is the name at start..end, in a macro body beginning at `body_start`, declared there
    (a local of the expansion, after its type) rather than used?"""
    before = _DECLARED_AFTER.search(data, max(body_start, start - 128), start)
    if before is None or before.group(1) in _NOT_A_TYPE:
        return False
    return data[end : end + 16].lstrip().startswith(_DECLARATION_END)


@lru_cache(maxsize=8192)
def guess_family(name: str) -> str:
    for prefix, family in FAMILY_BY_PREFIX:
        if name.startswith(prefix):
            return family
    return "runtime"


_NEEDS_STRIPPING = re.compile(r"[<\s]")


def strip_template_args(text: str) -> str:
    """`cub::BlockReduce<float, 256>::TempStorage` -> `cub::BlockReduce::TempStorage`."""
    if _NEEDS_STRIPPING.search(text) is None:
        return text  # the common case
    text = re.sub(r"\s+", "", text)
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"<[^<>]*>", "", text)
    return text


def trie_pattern(words: Iterable[str]) -> str:
    """A regex alternation of `words` shaped as a trie, which Python's re engine
    matches far faster than a flat list of thousands of alternatives."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        ends = "" in node
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body

    return emit(trie)


MASKED_IN_MACRO = re.compile(
    rb"//.*|/\*.*?(?:\*/|$)|\"(?:\\.|[^\"\\])*(?:\"|$)|'(?:\\.|[^'\\])*(?:'|$)", re.DOTALL
)


def _masked_ranges(text: bytes) -> list[tuple[int, int]]:
    """Comment and string/char literal ranges inside a macro body (which the
    grammar leaves as raw text)."""
    return [match.span() for match in MASKED_IN_MACRO.finditer(text)]


# What precedes a declared name: a type's last word, `*`, `&` or a template's `>`.
TYPE_BEFORE = re.compile(rb"(\w+|[*&>])$")
# Words that end an expression's head, not a type (`return cudaGetLastError()`).
NOT_TYPES = frozenset(
    {b"return", b"else", b"do", b"case", b"throw", b"co_return", b"new", b"delete", b"sizeof"}
)


# A name given as a whole template argument: `<warpReduceSum>`, `<float, op::max>` (`max`),
# `<float, group_max<float>>` (`group_max`).
TEMPLATE_ARGUMENT_NAME = re.compile(rb"[<,]\s*(?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*)\s*(?=[,<>])")


def _template_parameters(listed: Node) -> tuple[set[str], set[str]]:
    """A template parameter list's type parameters (`typename T`) and its other parameters
    (`float (*op)(float)`, `int N`), by name."""
    types: set[str] = set()
    values: set[str] = set()
    for child in listed.named_children:
        if "type_parameter" in child.type:
            types.update(
                (c.text or b"").decode()
                for c in child.named_children
                if c.type == "type_identifier"
            )
        elif "parameter_declaration" in child.type:
            name = _declared_name(child)
            if name:
                values.add(name)
    return types, values


def _declared_name(node: Node) -> str:
    """The name a parameter declaration declares (`op` in `float (*op)(float)`)."""
    stack = [node.child_by_field_name("declarator")]
    while stack:
        current = stack.pop()
        if current is None:
            continue
        if current.type == "identifier":
            return (current.text or b"").decode()
        stack.extend(reversed(current.named_children))
    return ""


def _lexical_kind(name: str, called: bool) -> str:
    """The kind of a name read from text, not from a syntax tree: called, a macro by its
    upper-case spelling, else an identifier."""
    return "function" if called else "macro" if name.isupper() else "identifier"


def _template_argument_names(text: bytes) -> set[str]:
    """Names that stand alone as template arguments of a call's callee, keywords and
    built-in types left out."""
    head = text[: text.rfind(b">") + 1]
    return {
        m.group(1).decode()
        for m in TEMPLATE_ARGUMENT_NAME.finditer(head)
        if m.group(1) not in BUILTIN_TYPE_WORDS
    }


BUILTIN_TYPE_WORDS = frozenset(
    b"bool char short int long float double void unsigned signed true false auto".split()
)


class Extractor:
    """Extracts uses with one rule set. Build once, call `scan_file` per file."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules

    # The lookup tables are built on first use: a re-scan served from the cache needs none.

    @cached_property
    def _name_tables(self) -> tuple[set[str], dict[str, set[bytes]], set[str]]:
        """Every name that can start a known construct: plain names and the first
        segment of qualified ones (`thrust` for `thrust::sort`), every prefix of a
        qualified name, and each namespace's direct children."""
        qualified_prefixes: set[str] = set()
        children: dict[str, set[bytes]] = {}
        starts: set[str] = set()
        for name, kind in self.rules.kinds():
            if kind == "header":
                continue
            parts = name.split("::")
            starts.add(parts[0])
            for i in range(1, len(parts) + 1):
                qualified_prefixes.add("::".join(parts[:i]))
                if i > 1:  # `nvcuda::wmma` -> after `using namespace nvcuda;`, `wmma` is a name
                    children.setdefault("::".join(parts[: i - 1]), set()).add(parts[i - 1].encode())
        return qualified_prefixes, children, starts

    @property
    def qualified_prefixes(self) -> set[str]:
        return self._name_tables[0]

    @property
    def children(self) -> dict[str, set[bytes]]:
        return self._name_tables[1]

    @cached_property
    def candidates(self) -> re.Pattern[bytes]:
        """One C-level regex proposes candidates: known first tokens, or CUDA-shaped
        names. Names that CUDA_SHAPE already matches need no place in the trie."""
        starts = self._name_tables[2]
        known = sorted(
            s
            for s in starts
            if s.isidentifier() and not CUDA_SHAPE.fullmatch(s) and not BROAD_NAMES.fullmatch(s)
        )
        # The lookahead on the first character lets the engine skip most positions
        # without entering the alternation: a quarter less time on cuda-samples. The
        # reserved names and the libraries' upper-case constants are proposed by two broad
        # patterns instead of a trie of 1,500 of them, which took 0.04 s to compile at each
        # start (the rules decide afterwards, as for every candidate).
        first = re.escape("".join(sorted({s[0] for s in known} | set(CUDA_SHAPE_FIRST) | {"C"})))
        return re.compile(
            # the broad patterns before CUDA_SHAPE, whose upper-case alternatives stop at a
            # lower-case letter (`CUDA_MEMCPY2D_` of `CUDA_MEMCPY2D_v1_st`)
            rf"\b(?=[{first}])(?:(?:{trie_pattern(known)})\b|{BROAD_NAMES.pattern}"
            rf"|(?:{CUDA_SHAPE.pattern}))".encode()
        )

    def prepare(self) -> None:
        """Build the lookup tables and compile the queries now (before worker processes
        fork, so they inherit them instead of each building its own)."""
        from portcheck.checks.syntax import device_query

        _ = self.candidates
        structure_query()
        device_query()

    # -- classification ---------------------------------------------------------------

    def _rule_for_qualified(self, name: str) -> tuple[str, ApiRule | None]:
        """Longest known prefix of `a::b::c`; the use is named after what matched."""
        parts = name.split("::")
        for i in range(len(parts), 0, -1):
            candidate = "::".join(parts[:i])
            rule = self.rules.lookup(candidate)
            if rule is not None:
                return candidate, rule
        return name, None

    # -- extraction ----------------------------------------------------------------------

    def extract(
        self,
        data: bytes,
        root: Node,
        captures: dict[str, list[Node]],
        may_be_device: Callable[[int], bool],
        sites: bool = False,
        as_text: Sequence[tuple[int, int]] = (),
    ) -> Extraction:
        """The CUDA names, includes, launches, PTX asm, kernels and functions of one parsed
        file. `may_be_device(offset)`: whether code there may run on the GPU (asm elsewhere
        is CPU assembly). `sites`: record where each function calls each name."""
        aliases, using_namespaces = self._namespace_context(root, data)
        found = Extraction([], set(), [], set(), [], [])
        add = found.names.append
        defined, api_defined = found.definitions.add, found.api_definitions
        lookup = self.rules.lookup

        def define(name: str, offset: int) -> None:
            defined(name)
            if lookup(name) is not None:
                api_defined.append((name, offset))

        self._scan_tokens(
            data,
            root,
            aliases,
            using_namespaces,
            lambda *use: add(Found(*use)),
            define,
            found.variables,
            as_text,
        )
        self._scan_structure(captures, lambda *use: add(Found(*use)), may_be_device, found.kernels)
        found.functions = self._functions(captures, aliases, sites)
        if found.api_definitions:
            found.replaced = self._replaced(captures, {n for n, _ in found.api_definitions})
        return found

    def _replaced(self, captures: dict[str, list[Node]], names: set[str]) -> set[str]:
        """The names of `names` HIP has no function for (unsupported) that a definition here
        takes a plain scalar first (`float saturate(float x)`), not calling itself: the
        project's own function, what a HIP build's calls of that name find. Not an overload
        for the project's types (`__shfl_up_sync(warp_mask_t, at::Half, …)`), beside which
        CUDA's own is still called."""
        found: set[str] = set()
        for fn in captures.get("function", ()):
            declarator = fn.child_by_field_name("declarator")
            while declarator is not None and declarator.type != "function_declarator":
                declarator = declarator.child_by_field_name("declarator")
            name_node = declarator.child_by_field_name("declarator") if declarator else None
            if name_node is None or declarator is None:
                continue
            name = strip_template_args((name_node.text or b"").decode()).split("::")[-1]
            rule = self.rules.lookup(name) if name in names else None
            if rule is None or rule.kind != "function" or rule.status.hip is not Status.UNSUPPORTED:
                continue
            parameters = declarator.child_by_field_name("parameters")
            first = (
                parameters.named_children[0] if parameters and parameters.named_children else None
            )
            kind = first.child_by_field_name("type") if first is not None else None
            if kind is None or (kind.text or b"").decode() not in SCALAR_TYPES:
                continue
            named = first.child_by_field_name("declarator") if first is not None else None
            if named is not None and named.type != "identifier":
                continue  # `float* p`, `float& x`: not the scalar CUDA's takes
            body = fn.child_by_field_name("body")
            if body is not None and re.search(
                rb"\b%s\s*\(" % re.escape(name.encode()), body.text or b""
            ):
                continue  # a wrapper of the name it defines
            found.add(name)
        return found

    @staticmethod
    def possible_device_ranges(
        captures: dict[str, list[Node]],
        hidden: Sequence[tuple[int, str]] = (),
    ) -> list[tuple[int, int, tuple[str, ...]]]:
        """Functions without a visible device qualifier whose declaration carries
        macro-like names: (start, end, those names). `hidden`: (offset, name) of specifier
        macros the parsed view left out (FileScanner._specifier_macros); one counts for
        the function or lambda whose head it begins or sits in."""
        hidden_at = sorted(hidden)
        offsets = [offset for offset, _ in hidden_at]

        def hidden_in(start: int, end: int) -> list[str]:
            i = bisect.bisect_left(offsets, start)
            names = []
            while i < len(offsets) and offsets[i] < end:
                names.append(hidden_at[i][1])
                i += 1
            return names

        found = []
        for fn in captures.get("function", ()):
            if any(child.type in DEVICE_QUALIFIERS for child in fn.children):
                continue
            names: list[str] = []
            if hidden_at:
                head_end = fn.end_byte
                for child in fn.children:
                    if child.type in DECLARATOR_TYPES or child.type == "compound_statement":
                        head_end = child.start_byte
                        break
                # the names just before the node (blanked to spaces in the view) belong to it
                names += hidden_in(_head_start(fn), head_end)
            for child in fn.children:
                if child.type in DECLARATOR_TYPES or child.type == "compound_statement":
                    break
                pieces = [child]
                while pieces:  # `DINLINE unsigned f()`: the macro sits inside a type node
                    piece = pieces.pop()
                    if piece.type in ("identifier", "type_identifier"):
                        word = (piece.text or b"").decode()
                        if MACRO_LIKE.fullmatch(word):
                            names.append(word)
                    elif piece.child_count and piece.end_byte - piece.start_byte < 200:
                        pieces.extend(piece.children)
            if names:
                found.append((*function_extent(fn), tuple(names)))
        for lam in captures.get("lambda", ()):
            # `[=] AMREX_GPU_DEVICE (int i) {...}`: the macro lands in an ERROR node.
            body = lam.child_by_field_name("body")
            limit = body.start_byte if body is not None else lam.end_byte
            names = hidden_in(lam.start_byte, limit) if hidden_at else []
            for child in lam.children:
                if child.start_byte >= limit:
                    break
                if (
                    child.type == "ERROR"
                    and child.text is not None
                    and b"__device__" not in child.text
                ):
                    names += [
                        w
                        for w in re.findall(r"[A-Z_][A-Z0-9_]*", child.text.decode())
                        if MACRO_LIKE.fullmatch(w)
                    ]
            if names:
                found.append((lam.start_byte, lam.end_byte, tuple(names)))
        found.sort()
        return found

    def _functions(
        self, captures: dict[str, list[Node]], aliases: dict[bytes, str], sites: bool = False
    ) -> list[FunctionInfo]:
        """Function definitions with the names they call, for the call graph. A call
        qualified by a library namespace (`cg::reduce`, `thrust::sort`, `std::max`) is
        not a call of the project's own function of that name."""
        functions: list[FunctionInfo] = []
        # A function template's parameters, by the function's start: `T(x)` with a type
        # parameter is a conversion, not a call; `op(x)` with a function parameter (`float
        # (*op)(float)`) calls what the file's call sites pass (`blockReduce<warpSum>`).
        type_parameters: dict[int, set[str]] = {}
        function_parameters: dict[int, set[str]] = {}
        for fn in captures.get("function", ()):
            parent = fn.parent
            if parent is not None and parent.type == "template_declaration":
                listed = parent.child_by_field_name("parameters")
                if listed is not None:
                    types, values = _template_parameters(listed)
                    type_parameters[function_extent(fn)[0]] = types
                    function_parameters[function_extent(fn)[0]] = values
            declarator = fn.child_by_field_name("declarator")
            while declarator is not None and declarator.type != "function_declarator":
                declarator = declarator.child_by_field_name("declarator")
            name_node = declarator.child_by_field_name("declarator") if declarator else None
            if name_node is None or not name_node.text:
                continue
            qualifiers = {child.type for child in fn.children}
            start, end = function_extent(fn)
            written = strip_template_args(name_node.text.decode())
            functions.append(
                FunctionInfo(
                    name=written.split("::")[-1],
                    start=start,
                    end=end,
                    is_kernel="__global__" in qualifiers,
                    is_device=bool(qualifiers & DEVICE_QUALIFIERS),
                    scoped="::" in written or _in_scope(fn),
                )
            )
        functions.sort(key=lambda f: f.start)
        if not functions:
            return functions
        starts = [f.start for f in functions]
        outer = nesting(functions)
        defined_here = {f.name for f in functions}
        through: dict[int, set[str]] = {}  # function -> its function parameters it calls
        passed: dict[str, set[str]] = {}  # template -> names its call sites pass it
        for callee in captures.get("callee", ()):
            i = innermost_function(functions, starts, outer, callee.start_byte)
            if i >= 0:
                parts = strip_template_args((callee.text or b"").decode()).split("::")
                scope = parts[0].strip()
                if len(parts) > 1 and (
                    scope == "std" or scope.encode() in aliases or scope in self.qualified_prefixes
                ):
                    continue
                # `obj.sync()`: a method, marked so the graph looks for it nearby only.
                method = callee.type == "field_identifier"
                start = functions[i].start
                if not method and parts[-1] in type_parameters.get(start, ()):
                    continue  # `T(0)`: a conversion to the template's type
                if not method and parts[-1] in function_parameters.get(start, ()):
                    through.setdefault(start, set()).add(parts[-1])
                    continue  # `warp_reduction(v)`: resolved from the call sites (below)
                functions[i].calls.add(f"{METHOD_MARK}{parts[-1]}" if method else parts[-1])
                if b"<" in (callee.text or b""):
                    passed.setdefault(parts[-1], set()).update(
                        _template_argument_names(callee.text or b"")
                    )
                if sites and not method:
                    functions[i].sites.append((parts[-1], callee.start_byte))
        for info in functions:
            called = through.get(info.start)
            if not called:
                continue
            # What the file's call sites pass, when each is a function of this file; else
            # the parameters stay unknown callees (another file's functions may be passed).
            given = passed.get(info.name, set())
            if given and given <= defined_here:
                info.calls.update(given)
            else:
                info.calls.update(called)
        return functions

    def device_ranges(self, captures: dict[str, list[Node]]) -> list[tuple[int, int]]:
        ranges = []
        for fn in captures.get("function", ()):
            if any(child.type in DEVICE_QUALIFIERS for child in fn.children):
                ranges.append(function_extent(fn))
        for lam in captures.get("lambda", ()):
            # `[=] __device__ (int i) {...}`: the grammar keeps the qualifier in an ERROR node.
            head = lam.child_by_field_name("body")
            limit = head.start_byte if head is not None else lam.end_byte
            for child in lam.children:
                if child.start_byte >= limit:
                    break
                if child.text is not None and b"__device__" in child.text:
                    ranges.append((lam.start_byte, lam.end_byte))
                    break
        # Merge nested ranges (a device lambda in a kernel) so that membership is one bisect.
        return merged_ranges(ranges)

    def _namespace_context(self, root: Node, data: bytes) -> tuple[dict[bytes, str], list[str]]:
        """`namespace cg = cooperative_groups;` aliases and `using namespace X;` for
        namespaces the rule set knows."""
        aliases: dict[bytes, str] = {}
        using: list[str] = []
        if b"namespace" not in data:
            return aliases, using
        for node in self._iter_namespace_nodes(root):
            if node.type == "namespace_alias_definition":
                names = [c for c in node.named_children]
                if len(names) == 2 and names[0].text and names[1].text:
                    target = strip_template_args(names[1].text.decode())
                    if target.split("::")[0] in self.qualified_prefixes:
                        aliases[names[0].text] = target
            elif node.type == "using_declaration" and any(
                c.type == "namespace" for c in node.children
            ):
                target_node = node.named_children[-1] if node.named_children else None
                if target_node is not None and target_node.text:
                    target = strip_template_args(target_node.text.decode())
                    if target in self.qualified_prefixes:
                        using.append(target)
        return aliases, using

    @staticmethod
    def _iter_namespace_nodes(root: Node) -> Iterable[Node]:
        """Alias and using-namespace declarations, at any depth (they may sit in a
        namespace or a function body)."""
        stack = [root]
        while stack:
            node = stack.pop()
            for child in node.children:
                if child.type in ("namespace_alias_definition", "using_declaration"):
                    yield child
                elif child.child_count and child.type in (
                    "translation_unit",
                    "namespace_definition",
                    "declaration_list",
                    "function_definition",
                    "compound_statement",
                    "preproc_if",
                    "preproc_ifdef",
                    "preproc_else",
                    "preproc_elif",
                    "linkage_specification",
                ):
                    stack.append(child)

    def _scan_tokens(
        self, data, root, aliases, using_namespaces, add, define, variables, as_text=()
    ) -> None:
        masked_cache: dict[int, tuple[bytes, list[tuple[int, int]]]] = {}
        macro_names = (
            {
                m.start(1): m.group(1).decode()
                for _, m in line_start_matches(_DEFINE_FROM_HASH, data)
            }
            if b"define" in data
            else {}
        )
        # Names made visible by an alias or `using namespace nvcuda;` (then `wmma::…`).
        local: set[bytes] = set(aliases)
        for namespace in using_namespaces:
            local |= self.children.get(namespace, set())
        matches: Iterable[re.Match[bytes]] = self.candidates.finditer(data)
        if local:  # names visible only in this file get a small regex of their own
            extra = re.compile(rb"\b(?:" + b"|".join(map(re.escape, sorted(local))) + rb")\b")
            merged = sorted([*matches, *extra.finditer(data)], key=lambda m: (m.start(), -m.end()))
            matches = [
                m for i, m in enumerate(merged) if i == 0 or m.span() != merged[i - 1].span()
            ]
        locator = token_locator(root)
        path = locator.path
        text_starts = [s for s, _ in as_text]
        masked = mask_comments_and_strings(data) if as_text else data
        for match in matches:
            token = match.group()
            start, end = match.span()
            if start in macro_names:
                define(macro_names[start], start)
                continue
            if end < len(data) and (data[end : end + 1].isalnum() or data[end : end + 1] == b"_"):
                continue  # a CUDA-shaped prefix of a longer name
            if as_text:
                i = bisect.bisect_right(text_starts, start) - 1
                if i >= 0 and start < as_text[i][1]:
                    # A branch the parsed view left out (another configuration's code in
                    # one statement): its names are read from the text, as a macro body's.
                    self._text_use(data, masked, token, start, end, add, define)
                    continue
            depth = locator.locate(start, end)
            node = path[depth]
            if node is None:
                continue
            kind = node.type
            if kind in STRING_LIKE:
                continue
            if kind == "preproc_arg":
                parent = path[depth - 1] if depth else None
                if self._token_in_macro_body(node, parent, start, masked_cache):
                    name = token.decode()
                    rule = self.rules.lookup(name)
                    if rule is None and _declared_in_body(data, node.start_byte, start, end):
                        define(name, start)  # `NvtxRange nvtx_range(__FUNCTION__)`: a local
                        continue
                    if name == ASM_NAME and not self._is_ptx(data[start : node.end_byte]):
                        continue  # `#define EIGEN_THROW asm("s_trap 0")`: AMD's ISA
                    if rule is not None or CUDA_SHAPE.fullmatch(name):
                        called = data[end : end + 64].lstrip().startswith(b"(")
                        kind = _lexical_kind(name, called)
                        add(name, kind, rule, start, end)
                continue
            if node.start_byte != start or node.end_byte != end:
                continue
            if kind == "field_identifier":
                if self._declares_member(path, depth):
                    define(token.decode(), start)  # `cudaExternalMemory_t cudaMem;` in a class
                continue
            if kind not in NAME_NODES:
                if kind in QUALIFIER_USES:  # a keyword to the grammar, a name HIP lacks
                    add(kind, "macro", self.rules.lookup(kind), start, end)
                continue
            self._classify_name_node(
                node, path, depth, token, aliases, using_namespaces, add, define, variables
            )

    def _text_use(self, data, masked, token, start, end, add, define) -> None:
        """A name in code read as text (a branch the parsed view left out): a call when
        `(` follows, the project's own when a type precedes it (`float saturate(`), not a
        CUDA name after `.`, `->` or another scope's `::` (`Device::cudaStream()`)."""
        if masked[start:end] != token:
            return  # in a comment or a string
        before = data[max(0, start - 64) : start].rstrip()
        if before.endswith((b".", b"->")):
            return
        if before.endswith(b"::"):
            scope = re.search(rb"(\w*)\s*::$", before)
            if scope is not None and scope.group(1):
                return
        name = token.decode()
        rule = self.rules.lookup(name)
        if rule is None and not CUDA_SHAPE.fullmatch(name):
            return
        called = data[end : end + 64].lstrip().startswith(b"(")
        declared = TYPE_BEFORE.search(before)
        if called and declared is not None and declared.group(1) not in NOT_TYPES:
            define(name, start)  # `inline __both__ float saturate(const float& f)`
            return
        add(name, _lexical_kind(name, called), rule, start, end)

    @staticmethod
    def _token_in_macro_body(
        node: Node,
        parent: Node | None,
        start: int,
        cache: dict[int, tuple[bytes, list[tuple[int, int]]]],
    ) -> bool:
        if parent is None or parent.type not in ("preproc_def", "preproc_function_def"):
            return False  # `#error`, `#pragma` text is not code
        known = cache.get(node.start_byte)  # the body's text and masks, once per body
        if known is None:
            body = node.text or b""
            known = cache[node.start_byte] = (body, _masked_ranges(body))
        text, ranges = known
        offset = start - node.start_byte
        # What precedes the token, within reach: the whole prefix per token of a long
        # macro body would cost body length x tokens.
        before = text[max(0, offset - 256) : offset].rstrip()
        if before.endswith((b".", b"->")):
            return False  # a member: `obj.cudaFree`
        if before.endswith(b"::"):
            scope = re.search(rb"(\w*)\s*::$", before)
            if scope is not None and scope.group(1):
                return False  # `std::printf`, `mylib::cudaFree` (CUDA scopes start their own token)
        i = bisect.bisect_right(ranges, (offset, 1 << 62)) - 1  # sorted, disjoint
        return not (i >= 0 and offset < ranges[i][1])

    def _classify_name_node(
        self, node, path, depth, token, aliases, using_namespaces, add, define, variables
    ) -> None:
        """`path[:depth]` are the node's ancestors (Node.parent would walk from the root)."""
        name = token.decode()
        parent = path[depth - 1] if depth else None
        grand = path[depth - 2] if depth > 1 else None
        ptype = parent.type if parent is not None else ""

        if parent is not None and self._misparsed_macro_call(node, path, depth):
            # `CHECK(cudaMemcpy(d, h, n, kind))` with no `;` before the next line: a call
            # written as a macro argument, which the grammar read as a declaration.
            add(name, "function", self.rules.lookup(name), node.start_byte, node.end_byte)
            return
        if parent is not None and self._is_definition(node, parent, ptype):
            define(name, node.start_byte)
            if ptype in DECLARATOR_PARENTS and ptype != "function_declarator":
                variables.add(name)
            return

        if (
            ptype in ("template_type", "template_function")
            and grand is not None
            and grand.type == "qualified_identifier"
            and grand.child_by_field_name("name") == parent
        ):
            scope = grand.child_by_field_name("scope")
            if scope is not None and scope.type != "::":
                # `Accelerator::cusparseSolverBackend<Scalar, 3>`: the last segment of a
                # qualified name (its scope's segment looks the whole name up)
                return
        if (
            parent is not None
            and ptype in ("qualified_identifier", "nested_namespace_specifier")
            # `DEVICE_INLINE __nv_bfloat16 to_bfloat16(float v)`: the grammar, misled by the
            # macro, reads `__nv_bfloat16 to_bfloat16` as a qualified name with no `::` in
            # it; the type is an ordinary use of its own name.
            and b"::" in (parent.text or b"")
        ):
            scope = parent.child_by_field_name("scope")
            if scope is None or scope.type == "::":
                pass  # `::cudaFree`: global scope, an ordinary use
            elif scope != node:
                return  # `mylib::cudaFree`, or an inner segment of a qualified CUDA name
            else:
                if (
                    grand is not None
                    and grand.type == "qualified_identifier"
                    and grand.child_by_field_name("name") == parent
                    and grand.child_by_field_name("scope") is not None  # `::cub::X` is global
                ):
                    return
                qualified = strip_template_args((parent.text or b"").decode())
                if token in aliases:
                    qualified = aliases[token] + qualified[len(name) :]
                elif name not in self.qualified_prefixes:
                    for namespace in using_namespaces:
                        if f"{namespace}::{name}" in self.qualified_prefixes:
                            qualified = f"{namespace}::{qualified}"
                            break
                matched, rule = self._rule_for_qualified(qualified)
                if rule is None and not CUDA_SHAPE.fullmatch(name):
                    return
                add(matched if rule else name, "namespace", rule, node.start_byte, node.end_byte)
                return

        if token in aliases:
            return  # the alias name itself; its target was counted where it was declared
        if name in FILE_SCOPE_ONLY and any(
            path[i] is not None and path[i].type in FUNCTION_NODES
            for i in range(depth - 1, max(-1, depth - 1 - SCOPE_REACH), -1)
        ):
            # `texture<vector<4, unorm<8>>, 1> tex(size);` in a member function: CUDA's
            # texture and surface references exist only at namespace scope, so a local or a
            # temporary of that name is the project's own class template (visionaray's)
            return
        rule = self.rules.lookup(name)
        if rule is None:
            if not CUDA_SHAPE.fullmatch(name):
                return
        elif rule.kind == "namespace" and ptype not in (
            "namespace_alias_definition",
            "using_declaration",
        ):
            return  # e.g. a variable that happens to be called `cub`
        kind = self._syntactic_kind(node, parent, grand, name)
        add(name, kind, rule, node.start_byte, node.end_byte)

    @staticmethod
    def _declares_member(path: NodePath, depth: int) -> bool:
        """Is this field name (path[depth]) being declared (a class or struct member), not
        accessed?"""
        depth -= 1
        parent = path[depth] if depth >= 0 else None
        while parent is not None and parent.type in (
            "pointer_declarator",
            "array_declarator",
            "reference_declarator",
            "init_declarator",
            "function_declarator",
        ):
            depth -= 1
            parent = path[depth] if depth >= 0 else None
        return parent is not None and parent.type in ("field_declaration", "function_definition")

    @staticmethod
    def _misparsed_macro_call(node: Node, path: NodePath, depth: int) -> bool:
        """Is this name the callee of a call passed to a statement macro whose `;` is
        missing? `CHECK(cudaFree(p))` followed by another statement is read as the
        block-scope declaration `CHECK (cudaFree(p));` of a function `cudaFree` with a
        parameter `p`: a declaration typed by a macro-like name, whose declarator is the
        function in parentheses, inside a function body. Real code does not declare
        functions that way."""
        parent = path[depth - 1]
        if (
            parent is None
            or parent.type != "function_declarator"
            or parent.child_by_field_name("declarator") != node
        ):
            return False
        level = depth - 2
        above = path[level] if level >= 0 else None
        if above is None or above.type != "parenthesized_declarator":
            return False  # the macro's own parentheses
        while above is not None and above.type in (
            "parenthesized_declarator",
            "pointer_declarator",
            "reference_declarator",
        ):
            level -= 1
            above = path[level] if level >= 0 else None
        if above is None or above.type != "declaration":
            return False
        written_type = above.child_by_field_name("type")
        if written_type is None or written_type.type != "type_identifier":
            return False
        if not MACRO_LIKE.fullmatch((written_type.text or b"").decode(errors="replace")):
            return False
        level -= 1
        while level >= 0 and (enclosing := path[level]) is not None:
            if enclosing.type == "compound_statement":
                return True  # inside a function body
            if enclosing.type in ("translation_unit", "declaration_list", "field_declaration_list"):
                return False
            level -= 1
        return False

    @staticmethod
    def _is_definition(node: Node, parent: Node, ptype: str) -> bool:
        """Is this name being declared here (a macro, function, variable, type or
        enumerator of the project's own) rather than used?"""
        # Macro names are recognised lexically (MACRO_DEFINITION): after an ERROR the
        # grammar sometimes takes a token of the macro body for the macro's name.
        if ptype in ("enumerator", "namespace_definition"):  # `namespace cuBQL {`
            return parent.child_by_field_name("name") == node
        if ptype == "nested_namespace_specifier":  # `namespace cuBQL::detail {`
            outer = parent.parent
            while outer is not None and outer.type == "nested_namespace_specifier":
                outer = outer.parent
            return outer is not None and outer.type == "namespace_definition"
        if ptype == "reference_declarator":  # `cudaExternalMemory_t &cudaMem`: no field name
            return parent.named_child_count == 1 and parent.named_children[0] == node
        if ptype in DECLARATOR_PARENTS:  # `cudaArray_t a, cudaTemp;` has several declarators
            return any(child == node for child in parent.children_by_field_name("declarator"))
        if ptype in ("struct_specifier", "class_specifier", "enum_specifier", "union_specifier"):
            return parent.child_by_field_name("body") is not None
        return False

    @staticmethod
    def _syntactic_kind(node: Node, parent: Node | None, grand: Node | None, name: str) -> str:
        if parent is not None and parent.type == "qualified_identifier":  # `::cudaFree(…)`
            node, parent = parent, grand
        if (
            parent is not None
            and parent.type == "call_expression"
            and parent.child_by_field_name("function") == node
        ):
            return "function"
        if node.type == "type_identifier":
            return "type"
        if name.isupper():
            return "macro"
        return "identifier"

    def _scan_structure(
        self,
        captures: dict[str, list[Node]],
        add: Callable[..., None],
        in_device: Callable[[int], bool],
        kernels: list[tuple[str, int, int]],
    ) -> None:
        for node in captures.get("include", ()):
            header = (node.text or b"").decode("utf-8", "replace").strip()[1:-1].strip()
            rule = self._header_rule(header)
            if rule is not None or CUDA_HEADER_SHAPE.fullmatch(header):
                add(header, "header", rule, node.start_byte, node.end_byte)
        launch_rule = self.rules.lookup(LAUNCH_NAME)
        for node in captures.get("launch", ()):
            add(LAUNCH_NAME, "function", launch_rule, node.start_byte, node.end_byte)
        asm_rule = self.rules.lookup(ASM_NAME)
        for node in captures.get("asm", ()):
            # Host asm is CPU assembly, and asm written in AMD's ISA is already ported.
            if in_device(node.start_byte) and self._is_ptx(node.text or b""):
                add(ASM_NAME, "function", asm_rule, node.start_byte, node.start_byte + 3)
        for fn in captures.get("function", ()):
            if any(child.type == "__global__" for child in fn.children):
                declarator = fn.child_by_field_name("declarator")
                while declarator is not None and declarator.type not in ("function_declarator",):
                    declarator = declarator.child_by_field_name("declarator")
                name_node = declarator.child_by_field_name("declarator") if declarator else None
                if name_node is not None and name_node.text:
                    kernels.append(
                        (name_node.text.decode(), name_node.start_byte, name_node.end_byte)
                    )

    @staticmethod
    def _is_ptx(asm: bytes) -> bool:
        """Is this asm statement's template PTX (not AMD GPU assembly)?"""
        if nvptx_barrier_constraints(asm) is not None:
            return False  # a compiler barrier: no PTX (its constraints: checks.device)
        templates = b" ".join(re.findall(rb'"((?:\\.|[^"\\])*)"', asm))
        if not templates.strip():
            return True  # built from macros: cannot tell, keep it
        return not AMD_ISA.search(templates) or PTX.search(AMD_ISA.sub(b" ", templates)) is not None

    def _header_rule(self, header: str) -> ApiRule | None:
        rule = self.rules.lookup(header)
        if rule is not None:
            return rule
        parts = header.split("/")
        for i in range(len(parts) - 1, 0, -1):
            rule = self.rules.lookup("/".join(parts[:i]) + "/")
            if rule is not None:
                return rule
        return None
