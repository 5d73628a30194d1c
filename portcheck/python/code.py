"""Python sources and dependency manifests -> Python uses, dependencies and findings.

Python code is parsed with tree-sitter-python. Imports give an alias table
(`import torch as th`, `from numba import cuda`), and every dotted name whose head is
an imported module is resolved (`th.cuda.is_available` -> `torch.cuda.is_available`)
and judged by the longest known prefix in rules/python/apis.yaml. Names in comments
and strings are never uses. On top of the names:

- CUDA code that Python builds or compiles is scanned as CUDA: the .cu sources a
  `CUDAExtension`/`cpp_extension.load` names are listed (they are scanned as files of
  the tree), and CuPy `RawKernel`/`RawModule` and `load_inline` source strings are run
  through the CUDA file scanner, with positions mapped back into the .py file;
- `numba.cuda` kernels are kernels of the report;
- the sites the hazard checks ask about (attribute chains, calls, strings, decorators,
  requirements, package indexes, the CUDA the file builds) are collected in a
  PythonContext, and the checks registered over Python code (portcheck.checks.python:
  the PY… hazards of rules/hazards.yaml, and warp-width assumptions in numba.cuda
  kernels) report through it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import tree_sitter_python
from tree_sitter import Language as TSLanguage
from tree_sitter import Node, Parser

from portcheck.checks import (
    Context,
    FunctionInfo,
    HazardSpec,
    line_fingerprint,
    run_registered,
    suppressed,
    suppressions_in,
)
from portcheck.model import (
    Dependency,
    Extension,
    Finding,
    Kernel,
    Language,
    PyFinding,
    PyRule,
    PyUse,
    RouteVerdicts,
    Span,
    Status,
)
from portcheck.parse.text import LineIndex
from portcheck.python import deps
from portcheck.python.notebooks import Magic, read_notebook
from portcheck.python.rules import PythonRules, normalise_package, python_rules

if TYPE_CHECKING:
    from portcheck.filescan import FileScan

    # Scans CUDA source (a kernel string handed to load_inline) as if it were a .cu file.
    ScanCuda = Callable[[str, Language, bytes], FileScan]

PYTHON_LANGUAGE = TSLanguage(tree_sitter_python.language())
_parser: Parser | None = None

CPP_EXTENSION = "torch.utils.cpp_extension"
EXTENSION_BUILDERS = {f"{CPP_EXTENSION}.{n}" for n in ("CUDAExtension", "load")}
INLINE_BUILDER = f"{CPP_EXTENSION}.load_inline"
KERNEL_STRINGS = {
    f"cupy.{n}": n for n in ("RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel")
}
NUMBA_KERNEL_DECORATORS = {"numba.cuda.jit"}
# A Triton kernel: `@triton.jit` (under `@triton.autotune`/`@triton.heuristics` or not).
TRITON_KERNEL_DECORATORS = {"triton.jit"}
TRITON_LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "waves_per_eu"})
# Where the CUDA source sits in each CuPy constructor: (position, keyword).
KERNEL_SOURCE_ARGUMENT = {"ElementwiseKernel": (2, "operation"), "ReductionKernel": (3, "map_expr")}
DEVICE_STRING = re.compile(rb"cuda(?::\d+)?")
ROCM_FORK = re.compile(r"github\.com[/:]ROCm/", re.IGNORECASE)
CUDA_SOURCE_SUFFIXES = (".cu", ".cuh")
# An identifier under these is not a use of what it names: chains are judged whole
# (`attribute`), and parameters, imports and keyword names only bind or label.
NOT_A_USE_PARENTS = frozenset(
    {
        "attribute",
        "aliased_import",
        "dotted_name",
        "parameters",
        "default_parameter",
        "typed_parameter",
        "typed_default_parameter",
        "global_statement",
        "nonlocal_statement",
    }
)
DEFINING_PARENTS = frozenset(
    {"function_definition", "class_definition", "assignment", "keyword_argument"}
)


def _parse(data: bytes) -> Node:
    global _parser
    if _parser is None:
        _parser = Parser(PYTHON_LANGUAGE)
    return _parser.parse(data).root_node


def walk(root: Node) -> Iterator[Node]:
    cursor = root.walk()
    while True:
        node = cursor.node
        if node is None:  # typed Optional; a cursor made from a node always points at one
            return
        yield node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


@dataclass
class PythonContext:
    """What a check over Python code sees of one Python file or manifest — the sites the
    scan found, each with the dotted name its head resolves to through the imports — and
    where it reports."""

    path: str
    language: Language
    data: bytes
    lines: LineIndex
    # Outermost attribute chains outside imports (`th.version.cuda`), with their dotted
    # name, or None when the head is not imported (`props.compute_capability`).
    attributes: list[tuple[Node, str | None]] = field(default_factory=list)
    calls: list[tuple[Node, str]] = field(default_factory=list)  # calls of imported names
    decorators: list[tuple[Node, str]] = field(default_factory=list)  # decorators, likewise
    string_literals: list[tuple[Node, bytes]] = field(default_factory=list)  # with content
    # CUDA the file builds or compiles at run time (CUDAExtension, load, load_inline, CuPy
    # kernels), at the call that does it.
    builds: list[tuple[Node, Extension]] = field(default_factory=list)
    numba_kernels: list[tuple[Node, FunctionInfo]] = field(default_factory=list)
    triton_kernels: list[tuple[Node, str]] = field(default_factory=list)  # @triton.jit defs
    # `num_warps=`/`num_stages=` keyword arguments of Triton kernel launches.
    launch_options: list[Node] = field(default_factory=list)
    # Dependency manifests, and setup.py's install_requires: each requirement with its
    # package rule, and each package index or conda channel with its line.
    requirements: list[tuple[deps.Requirement, PyRule | None]] = field(default_factory=list)
    indexes: list[tuple[str, int]] = field(default_factory=list)
    # Shell commands a notebook runs (`!nvidia-smi`, a `%%bash` cell): (line, command).
    shell_commands: list[tuple[int, str]] = field(default_factory=list)
    root: Node | None = None  # the file's syntax tree (Python code only)
    findings: list[PyFinding] = field(default_factory=list)  # the Python hazards found
    cuda_findings: list[Finding] = field(default_factory=list)  # CUDA hazards (numba kernels)
    _current: HazardSpec | None = None  # the hazard being checked (set by the framework)

    def report(
        self,
        start: int,
        end: int,
        message: str,
        fix: str = "",
        targets: RouteVerdicts | None = None,
    ) -> None:
        """Report the current check's (Python) hazard at start..end; once per line and
        message."""
        spec = self._current
        assert spec is not None, "report() called outside a registered check"
        span = self.lines.span(start, end)
        if any(
            f.slug == spec.slug and f.span.line == span.line and f.message == message
            for f in self.findings
        ):
            return
        self.findings.append(
            PyFinding(
                id=spec.id,
                slug=spec.slug,
                severity=spec.severity,
                path=self.path,
                span=span,
                message=message,
                targets=targets or spec.python_targets,
                help_url=spec.help_url,
                fix=fix or spec.fix,
                fingerprint=line_fingerprint(spec.slug, self.path, self.data, start),
            )
        )

    def kernel_context(self, kernel: FunctionInfo) -> Context:
        """A CUDA check context over one numba.cuda kernel, for the current (CUDA) hazard:
        its findings are CUDA findings, attributed to the kernel."""
        ctx = Context(
            self.path,
            Language.PYTHON,
            self.data,
            None,
            [],
            self.lines.span,
            lambda _: True,
            functions=[kernel],
        )
        ctx._current = self._current
        return ctx


class PythonScan:
    """The state of scanning one Python file or manifest."""

    def __init__(self, result: FileScan, data: bytes, scan_cuda: ScanCuda) -> None:
        self.scan_cuda = scan_cuda
        self.rules: PythonRules = python_rules()
        self.result = result
        self.path = result.path
        self.data = data
        self.lines = LineIndex(data)
        self.aliases: dict[str, str] = {}  # local name -> dotted module or object
        self.strings: dict[str, Node] = {}  # NAME = "..." assignments, for kernel sources
        self.lists: dict[str, Node] = {}  # NAME = [...] assignments, for install_requires
        self.context = PythonContext(self.path, result.language, data, self.lines)

    def use(self, name: str, node: Node) -> None:
        rule = self.rules.api(name)
        if rule is not None:
            span = self.lines.span(node.start_byte, node.end_byte)
            self.result.py_uses.append(PyUse(name, self.path, span, rule))

    # -- manifests ----------------------------------------------------------------------

    def manifest(self, manifest: deps.Manifest) -> None:
        if manifest.errors:
            self.result.parse_errors += len(manifest.errors)
        for requirement in manifest.requirements:
            self.requirement(requirement)
        for url, line in manifest.indexes:
            self.index(url, line)

    def requirement(self, requirement: deps.Requirement) -> None:
        rule = self.rules.package(requirement.name)
        if rule is None and requirement.build:
            return  # build tooling (setuptools, wheel, ninja): not a GPU dependency
        if rule is not None:
            rule = self.rules.judged(rule, requirement.spec)
            if ROCM_FORK.search(requirement.spec) and rule.status.rocm is Status.UNSUPPORTED:
                # `flash-attn @ git+https://github.com/ROCm/flash-attention`: AMD's own port
                rule = replace(
                    rule,
                    status=replace(rule.status, rocm=Status.PARTIAL),
                    note=f"installed from AMD's ROCm fork (github.com/ROCm) | {rule.note}",
                )
        dependency = Dependency(
            name=normalise_package(requirement.name),
            spec=requirement.spec,
            path=self.path,
            line=requirement.line,
            manifest=self.result.language,
            rule=rule,
        )
        self.result.dependencies.append(dependency)
        self.context.requirements.append((requirement, rule))

    def index(self, url: str, line: int) -> None:
        self.context.indexes.append((url, line))

    # -- notebooks ----------------------------------------------------------------------

    def magics(self, magics: list[Magic]) -> None:
        """A notebook's IPython lines: `pip install` arguments are requirements (and
        indexes), shell commands go to the checks, CUDA cell bodies to the CUDA scan."""
        for magic in magics:
            if magic.kind == "pip":
                manifest = deps.parse_pip_arguments(magic.text, magic.line)
                for requirement in manifest.requirements:
                    self.requirement(requirement)
                for url, line in manifest.indexes:
                    self.index(url, line)
            elif magic.kind == "shell":
                self.context.shell_commands.append((magic.line, magic.text))
            elif magic.kind == "cuda":
                start, _ = self.lines.line_bounds(magic.line)
                inner = self.scan_cuda(self.path, Language.CUDA, magic.text.encode("utf-8"))
                self._merge_cuda(inner, magic.line - 1, 0, start)
                self._builds_at(
                    magic.line,
                    Extension(
                        "cell", self.path, magic.line, scanned_lines=magic.text.count("\n") + 1
                    ),
                )

    # -- Python code --------------------------------------------------------------------

    def code(self) -> None:
        root = self.context.root = _parse(self.data)
        nodes = list(walk(root))
        self.result.parse_errors += sum(1 for n in nodes if n.type == "ERROR")
        for node in nodes:
            if node.type in ("import_statement", "import_from_statement"):
                self._import(node)
            elif node.type == "assignment":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and left.type == "identifier" and right is not None:
                    if right.type in ("string", "concatenated_string"):
                        self.strings[_text(left)] = right
                    elif right.type == "list":
                        self.lists[_text(left)] = right
        for node in nodes:
            kind = node.type
            if kind == "attribute":
                self._attribute(node)
            elif kind == "identifier":
                self._identifier(node)
            elif kind == "call":
                self._call(node)
            elif kind == "string":
                self._string(node)
            elif kind == "decorated_definition":
                self._decorated(node)
        if self.result.language is Language.PYTHON and PurePosixPath(self.path).name == "setup.py":
            self._setup_call(nodes)

    def resolve(self, node: Node) -> str | None:
        """The dotted name of an identifier/attribute chain with its head imported."""
        parts: list[str] = []
        current: Node | None = node
        while current is not None and current.type == "attribute":
            parts.append(_text(current.child_by_field_name("attribute")))
            current = current.child_by_field_name("object")
        if current is None or current.type != "identifier":
            return None
        head = self.aliases.get(_text(current))
        if head is None:
            return None
        return ".".join([head, *reversed(parts)])

    def _import(self, node: Node) -> None:
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "dotted_name":  # `import torch.cuda` binds `torch`
                    name = _text(child)
                    self.aliases[name.split(".")[0]] = name.split(".")[0]
                    self.use(name, child)
                elif child.type == "aliased_import":
                    name = _text(child.child_by_field_name("name"))
                    self.aliases[_text(child.child_by_field_name("alias"))] = name
                    self.use(name, child)
            return
        module_node = node.child_by_field_name("module_name")
        module = _text(module_node)
        if module.startswith("."):
            return  # a relative import: the project's own code
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                name = _text(child.child_by_field_name("name"))
                local = _text(child.child_by_field_name("alias"))
            else:
                name = local = _text(child)
            self.aliases[local] = f"{module}.{name}"
            self.use(f"{module}.{name}", child)

    def _attribute(self, node: Node) -> None:
        parent = node.parent
        if (
            parent is not None
            and parent.type == "attribute"
            and parent.child_by_field_name("object") == node
        ):
            return  # an inner link of a longer chain
        if _inside_import(node):
            return
        name = self.resolve(node)
        self.context.attributes.append((node, name))
        if name is not None:
            self.use(name, node)

    def _identifier(self, node: Node) -> None:
        """A name imported from a module, used bare (`CUDAExtension(...)`, `@jit`)."""
        parent = node.parent
        if parent is None or parent.type in NOT_A_USE_PARENTS or _inside_import(node):
            return
        if parent.type in DEFINING_PARENTS and (
            parent.child_by_field_name("name") == node or parent.child_by_field_name("left") == node
        ):
            return
        name = self.aliases.get(_text(node))
        if name is not None and "." in name:
            self.use(name, node)

    def _call(self, node: Node) -> None:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if function is None:
            return
        name = self.resolve(function) if function.type in ("attribute", "identifier") else None
        if name is None:
            if (
                function.type == "attribute"
                and _text(function.child_by_field_name("attribute")) == "cuda"
            ):
                self.use("torch.Tensor.cuda", function)  # `model.cuda()`, `x.cuda(0)`
            elif function.type == "subscript" and arguments is not None:
                self._launch(arguments)  # `kernel[grid](x, y, num_warps=8)`
            return
        self.context.calls.append((node, name))
        if name in EXTENSION_BUILDERS:
            self._extension(node, name, arguments)
        elif name == INLINE_BUILDER:
            source = self._argument(arguments, 2, "cuda_sources")
            self._compiled_source(node, "load_inline", source)
        elif name in KERNEL_STRINGS:
            kind = KERNEL_STRINGS[name]
            source = self._argument(arguments, *KERNEL_SOURCE_ARGUMENT.get(kind, (0, "code")))
            self._compiled_source(node, kind, source)

    def _string(self, node: Node) -> None:
        content = _string_content(node)
        if content is None:
            return
        start, end = content
        text = self.data[start:end]
        self.context.string_literals.append((node, text))
        if DEVICE_STRING.fullmatch(text):
            self.use('torch.device("cuda")', node)

    def _decorated(self, node: Node) -> None:
        for decorator in (c for c in node.children if c.type == "decorator"):
            expression = decorator.named_children[0] if decorator.named_children else None
            if expression is not None and expression.type == "call":
                expression = expression.child_by_field_name("function")
            name = self.resolve(expression) if expression is not None else None
            if name is None:
                continue
            self.context.decorators.append((decorator, name))
            definition = node.child_by_field_name("definition")
            if definition is None:
                continue
            if name in NUMBA_KERNEL_DECORATORS:
                self._numba_kernel(definition)
            elif name in TRITON_KERNEL_DECORATORS and not any(
                d is definition for d, _ in self.context.triton_kernels
            ):
                self._triton_kernel(definition)

    def _launch(self, arguments: Node) -> None:
        """The launch options of a Triton kernel launch (`kernel[grid](…, num_warps=8)`)."""
        for child in arguments.named_children:
            named = _text(child.child_by_field_name("name"))
            if child.type == "keyword_argument" and named in TRITON_LAUNCH_OPTIONS:
                self.context.launch_options.append(child)

    def _triton_kernel(self, definition: Node) -> None:
        """A `@triton.jit` function: a GPU kernel written in Python, listed in the Python
        section (its findings are Python findings, judged on the Python routes)."""
        name = _text(definition.child_by_field_name("name"))
        span = self.lines.span(definition.start_byte, definition.end_byte)
        self.result.py_kernels.append(Kernel(name, self.path, span))
        self.context.triton_kernels.append((definition, name))

    # -- CUDA inside Python ---------------------------------------------------------------

    def _argument(self, arguments: Node | None, position: int, keyword: str) -> Node | None:
        if arguments is None:
            return None
        positional = 0
        for child in arguments.named_children:
            if child.type == "keyword_argument":
                if _text(child.child_by_field_name("name")) == keyword:
                    return child.child_by_field_name("value")
            elif child.type not in ("comment", "list_splat", "dictionary_splat"):
                if positional == position:
                    return child
                positional += 1
        return None

    def _extension(self, node: Node, name: str, arguments: Node | None) -> None:
        kind = name.rsplit(".", 1)[1]
        sources_node = self._argument(arguments, 1, "sources")
        if sources_node is not None and sources_node.type == "identifier":
            sources_node = self.lists.get(_text(sources_node), sources_node)
        named = []
        if sources_node is not None and sources_node.type in ("list", "tuple"):
            for item in sources_node.named_children:
                content = _string_content(item) if item.type == "string" else None
                if content is not None:
                    named.append(self.data[content[0] : content[1]].decode("utf-8", "replace"))
        base = PurePosixPath(self.path).parent
        sources = tuple(_normalise(str(base / s)) for s in named)
        line = self.lines.span(node.start_byte, node.end_byte).line
        self._builds(node, Extension(kind, self.path, line, sources=sources))

    def _builds(self, node: Node, extension: Extension) -> None:
        self.result.extensions.append(extension)
        self.context.builds.append((node, extension))

    def _builds_at(self, line: int, extension: Extension) -> None:
        """CUDA a notebook cell compiles (`%%cuda`, `%%writefile k.cu`): listed, not a call."""
        self.result.extensions.append(extension)

    def _compiled_source(self, node: Node, kind: str, source: Node | None) -> None:
        """CUDA source handed to a compiler at run time (`load_inline`, CuPy kernels):
        scanned as CUDA and listed."""
        scanned = self._scan_cuda_strings(source)
        line = self.lines.span(node.start_byte, node.end_byte).line
        self._builds(node, Extension(kind, self.path, line, scanned_lines=scanned))

    def _scan_cuda_strings(self, node: Node | None) -> int:
        """Scan the CUDA source in a string argument (or the string a name is bound to,
        or each string of a list); returns the number of lines scanned."""
        if node is None:
            return 0
        if node.type == "identifier":
            bound = self.strings.get(_text(node)) or self.lists.get(_text(node))
            if bound is None:
                return 0
            node = bound
        if node.type in ("list", "tuple", "concatenated_string"):
            return sum(self._scan_cuda_strings(child) for child in node.named_children)
        if node.type != "string":
            return 0
        content = _string_content(node)
        if content is None:
            return 0
        start, end = content
        source = self.data[start:end]
        inner = self.scan_cuda(self.path, Language.CUDA, source)
        line, column = self.lines.position(start)
        self._merge_cuda(inner, line - 1, column - 1, start)
        return source.count(b"\n") + 1

    def _merge_cuda(self, inner: FileScan, lines: int, columns: int, offset: int) -> None:
        def move(span: Span) -> Span:
            return Span(
                span.line + lines,
                span.column + (columns if span.line == 1 else 0),
                span.end_line + lines,
                span.end_column + (columns if span.end_line == 1 else 0),
                span.start_byte + offset,
                span.end_byte + offset,
            )

        self.result.uses.extend(u._replace(span=move(u.span)) for u in inner.uses)
        self.result.findings.extend(replace(f, span=move(f.span)) for f in inner.findings)
        self.result.kernels.extend(replace(k, span=move(k.span)) for k in inner.kernels)
        self.result.definitions |= inner.definitions
        for fn in inner.functions:
            fn.start += offset
            fn.end += offset
            self.result.functions.append(fn)

    def _numba_kernel(self, definition: Node) -> None:
        """A numba.cuda kernel is a kernel of the report (the checks look into its body)."""
        name = _text(definition.child_by_field_name("name"))
        start, end = definition.start_byte, definition.end_byte
        self.result.kernels.append(Kernel(name, self.path, self.lines.span(start, end)))
        kernel = FunctionInfo(name, start, end, is_kernel=True, is_device=True)
        self.result.functions.append(kernel)
        self.context.numba_kernels.append((definition, kernel))

    # -- setup.py -------------------------------------------------------------------------

    def _setup_call(self, nodes: list[Node]) -> None:
        for node in nodes:
            if node.type != "call":
                continue
            function = node.child_by_field_name("function")
            if _text(function).split(".")[-1] != "setup":
                continue
            arguments = node.child_by_field_name("arguments")
            for keyword in ("install_requires", "setup_requires", "extras_require"):
                value = self._argument(arguments, 99, keyword)
                if value is not None and value.type == "identifier":
                    value = self.lists.get(_text(value), value)
                for string in _strings_in(value):
                    content = _string_content(string)
                    if content is None:
                        continue
                    text = self.data[content[0] : content[1]].decode("utf-8", "replace")
                    found = deps.requirement(text, self.lines.span(*content).line)
                    if found:
                        found.build = keyword == "setup_requires"
                        self.requirement(found)


def _strings_in(node: Node | None) -> Iterator[Node]:
    if node is None:
        return
    if node.type == "string":
        yield node
    elif node.type in ("list", "tuple"):
        for child in node.named_children:
            yield from _strings_in(child)
    elif node.type == "dictionary":
        for pair in node.named_children:
            yield from _strings_in(pair.child_by_field_name("value"))


def _string_content(node: Node) -> tuple[int, int] | None:
    """Byte range of a plain string literal's content (None for f-strings)."""
    start = next((c for c in node.children if c.type == "string_start"), None)
    end = next((c for c in node.children if c.type == "string_end"), None)
    if start is None or end is None:
        return None
    if "f" in _text(start).lower().rstrip("'\""):
        return None  # interpolated: the text is not known statically
    return start.end_byte, end.start_byte


def _inside_import(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in ("import_statement", "import_from_statement"):
            return True
        if parent.type in ("module", "block", "expression_statement"):
            return False
        parent = parent.parent
    return False


def _normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == ".." and parts and parts[-1] != "..":
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def scan_python(result: FileScan, data: bytes, ignore: frozenset[str], scan_cuda: ScanCuda) -> None:
    """Fill `result` (a Python file, notebook or manifest) with what portcheck.python finds;
    CUDA source embedded in it is scanned with `scan_cuda`. `ignore`: hazard slugs not to
    check."""
    magics: list[Magic] = []
    if result.language is Language.NOTEBOOK:
        notebook = read_notebook(data)
        data = notebook.text.encode("utf-8")
        result.cells = notebook.cells
        result.lines = len(notebook.text.splitlines())
        result.parse_errors += len(notebook.errors)
        magics = notebook.magics
    scan = PythonScan(result, data, scan_cuda)
    parser = deps.PARSERS.get(result.language)
    if parser is not None:
        scan.manifest(parser(data.decode("utf-8", "replace")))
    else:
        scan.code()
        scan.magics(magics)
    run_registered(scan.context, Language.PYTHON, ignore)
    marks = suppressions_in(data)
    result.py_findings = [f for f in scan.context.findings if not suppressed(f, marks)]
    found = [*result.findings, *scan.context.cuda_findings]
    result.findings = [f for f in found if not suppressed(f, marks)]
    result.py_findings.sort(key=lambda f: (f.span.start_byte, f.id))
    result.uses.sort(key=lambda u: (u.span.start_byte, u.name))
