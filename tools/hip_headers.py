"""What HIP's own headers declare, release by release (a source for tools/build_rules.py).

HIPIFY's tables say what hipify *translates*; HIP's headers say what HIP *provides*. A name
HIP declares under CUDA's spelling (make_half2, __hmax2) needs no translation, and HIPIFY's
tables may then list it as unsupported. This module reads the device headers straight out
of bare git repositories at ROCm release tags and lists the names declared in them:

* ROCm/clr ``hipamd/include/hip/amd_detail/`` (ROCm 5.6 and later),
* ROCm/hipamd ``include/hip/amd_detail/`` (ROCm 4.5 to 5.6, before clr),
* ROCm/HIP ``include/hip/*.h`` (the public headers that include the amd_detail ones).

The lexer is deliberately small: comments and ``#if 0`` groups are dropped, both arms of
every other conditional are read, function-like macros invoked at namespace scope are
expanded (amd_hip_vector_types.h declares make_float4 and friends that way), and only
namespace-scope declarations count: functions, variables, struct/class/union/enum names,
enumerators of unscoped enums, typedef and ``using`` aliases, and ``#define`` names not
``#undef``-ed again in the same file. Class members and names inside function bodies are
not declarations HIP exports under their own name, so they are skipped.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from dataclasses import dataclass, field

# Directories holding HIP's device headers in each repository, and whether to descend.
HEADER_DIRS = {
    "ROCm/clr": ("hipamd/include/hip/amd_detail/", True),
    "ROCm/hipamd": ("include/hip/amd_detail/", True),
    "ROCm/HIP": ("include/hip/", False),
}
HEADER_SUFFIXES = (".h", ".hpp")
# The oldest release read; names already declared there get no `hip_added`.
OLDEST_RELEASE = (5, 0)

_RELEASE_TAG = re.compile(r"rocm-(\d+)\.(\d+)\.(\d+)")


def release_version(tag: str) -> tuple[int, int, int] | None:
    match = _RELEASE_TAG.fullmatch(tag)
    return tuple(int(g) for g in match.groups()) if match else None  # type: ignore[return-value]


def select_releases(tags: set[str]) -> list[str]:
    """The first release of every minor version from OLDEST_RELEASE on, plus the newest
    release: enough to date an addition to a minor release without reading every patch."""
    versions = sorted(v for t in tags if (v := release_version(t)) and v[:2] >= OLDEST_RELEASE)
    if not versions:
        return []
    first_of_minor: dict[tuple[int, int], tuple[int, int, int]] = {}
    for version in versions:
        first_of_minor.setdefault(version[:2], version)
    chosen = sorted(set(first_of_minor.values()) | {versions[-1]})
    return ["rocm-{}.{}.{}".format(*v) for v in chosen]


# --------------------------------------------------------------------------- lexer

_COMMENT_OR_LITERAL = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S
)
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.']*|::|->|##|\"\"|\S")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DIRECTIVE = re.compile(r"#\s*(\w+)\s*(.*)")
_FALSE_CONDITION = re.compile(r"\(?\s*(0|false)\s*\)?")
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)", re.S)

# Conditional-compilation markers in the token stream (not valid C++ tokens).
IF, ELSE, ENDIF = "\0if", "\0else", "\0endif"

_MACRO_LIKE = re.compile(r"_*[A-Z][A-Z0-9_]*")  # DEPRECATED, __HIP_DEPRECATED_MSG
_TYPE_KEYWORDS = {"struct", "class", "union", "enum"}
# Identifiers followed by a parenthesised group that is not the declared name's parameter list.
_NOT_A_NAME = {
    "__attribute__",
    "__declspec",
    "alignas",
    "decltype",
    "noexcept",
    "throw",
    "sizeof",
    "alignof",
    "static_assert",
    "__launch_bounds__",
    "operator",
    "requires",
    "typeof",
}
_KEYWORDS = {
    "return",
    "if",
    "else",
    "while",
    "for",
    "do",
    "switch",
    "case",
    "default",
    "break",
    "continue",
    "goto",
    "new",
    "delete",
    "this",
    "true",
    "false",
    "nullptr",
    "const",
    "volatile",
    "static",
    "inline",
    "extern",
    "constexpr",
    "typename",
    "template",
    "using",
    "typedef",
    "namespace",
    "public",
    "private",
    "protected",
    "friend",
    "virtual",
    "final",
    "override",
    "auto",
    "void",
    "int",
    "float",
    "double",
    "char",
    "short",
    "long",
    "bool",
    "unsigned",
    "signed",
    "struct",
    "class",
    "union",
    "enum",
}


def _strip(text: str) -> str:
    """Join continued lines; drop comments (keeping line breaks); blank string literals."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        if found.startswith("/"):
            return "\n" * found.count("\n") or " "
        return '""'

    return _COMMENT_OR_LITERAL.sub(replace, text)


@dataclass
class Macro:
    params: list[str] | None  # None: object-like
    body: str


@dataclass
class Preprocessed:
    tokens: list[str]
    macros: dict[str, Macro]  # defined in this file and not #undef-ed again


def preprocess(text: str) -> Preprocessed:
    """Tokens outside `#if 0` groups (with IF/ELSE/ENDIF markers for the other
    conditionals) and the macros the file defines."""
    tokens: list[str] = []
    macros: dict[str, Macro] = {}
    skipping = 0  # nesting depth inside an `#if 0` group
    groups: list[str] = []  # "live" (markers emitted) or "after-zero" (the #else of #if 0)
    for line in _strip(text).splitlines():
        stripped = line.strip()
        directive = _DIRECTIVE.match(stripped) if stripped.startswith("#") else None
        if directive is None:
            if not skipping:
                tokens.extend(_TOKEN.findall(line))
            continue
        name, rest = directive.group(1), directive.group(2).strip()
        if skipping:
            if name in ("if", "ifdef", "ifndef"):
                skipping += 1
            elif name == "endif":
                skipping -= 1
            elif name in ("else", "elif") and skipping == 1:
                skipping = 0
                if name == "elif":  # `#if 0 / #elif X`: X opens an ordinary conditional
                    groups.append("live")
                    tokens.append(IF)
                else:  # `#if 0 / #else`: the one live arm
                    groups.append("after-zero")
            continue
        if name in ("if", "ifdef", "ifndef"):
            if name == "if" and _FALSE_CONDITION.fullmatch(rest):
                skipping = 1
            else:
                groups.append("live")
                tokens.append(IF)
        elif name in ("else", "elif"):
            tokens.append(ELSE)
        elif name == "endif":
            if groups and groups.pop() == "live":
                tokens.append(ENDIF)
        elif name == "define":
            match = _DEFINE.match(rest)
            if match:
                params = match.group(3)
                macros[match.group(1)] = Macro(
                    params=None
                    if match.group(2) is None
                    else [p.strip() for p in params.split(",") if p.strip()],
                    body=match.group(4),
                )
        elif name == "undef":
            macros.pop(rest.split()[0] if rest else "", None)
    return Preprocessed(tokens=tokens, macros=macros)


def expand(macro: Macro, args: list[str]) -> list[str]:
    """The tokens of one invocation: parameters substituted, `#x` blanked, `a ## b` pasted."""
    params = macro.params or []
    values = dict(zip(params, args, strict=False))
    if params and params[-1] == "...":
        values["__VA_ARGS__"] = ", ".join(args[len(params) - 1 :])
    body = re.sub(r"(?<!#)#(?!#)\s*\w+", '""', macro.body)
    body = _IDENT.sub(lambda m: values.get(m.group(0), m.group(0)), body)
    body = re.sub(r"\s*##\s*", "", body)
    return _TOKEN.findall(body)


@dataclass
class Declaration:
    kind: str  # function, variable, type, enum, macro
    deprecated: bool = False


@dataclass
class _Scope:
    kind: str  # "ns", "class", "enum", "body"
    scoped_enum: bool = False
    outer_statement: list[str] = field(default_factory=list)


def _drop_template_heads(stmt: list[str]) -> list[str]:
    while stmt and stmt[0] == "template" and len(stmt) > 1 and stmt[1] == "<":
        depth, i = 0, 1
        for i in range(1, len(stmt)):
            depth += {"<": 1, ">": -1}.get(stmt[i], 0)
            if depth == 0:
                break
        stmt = stmt[i + 1 :]
    return stmt


def _top_level(stmt: list[str]) -> list[tuple[int, str]]:
    """(index, token) of the tokens outside any (), [] or <> group."""
    found, depth = [], 0
    for i, tok in enumerate(stmt):
        if tok in ("(", "[", "<"):
            depth += 1
            if depth == 1:
                found.append((i, tok))
        elif tok in (")", "]", ">"):
            depth = max(depth - 1, 0)
        elif depth == 0:
            found.append((i, tok))
    return found


def _function_name(stmt: list[str]) -> str | None:
    """The name of a function declared by `stmt` (tokens up to its `{` or `;`): the
    identifier before the first top-level `(` that is not an attribute or macro call,
    after at least one other token (a return type or qualifier)."""
    for i, tok in _top_level(stmt):
        if tok == "=":
            return None  # a variable initialised by a call
        if tok != "(" or i == 0:
            continue
        name = stmt[i - 1]
        if name in _NOT_A_NAME or _MACRO_LIKE.fullmatch(name):
            continue  # __attribute__((...)), DEPRECATED("..."), __HIP_...(...)
        if not _IDENT.fullmatch(name) or name in _KEYWORDS or i == 1:
            return None
        return name
    return None


def _type_head(stmt: list[str]) -> tuple[str, str | None, bool] | None:
    """For a statement whose top level starts with struct/class/union/enum (after
    typedef/template): (keyword, name or None, scoped enum?)."""
    top = [tok for _i, tok in _top_level(stmt)]
    if top and top[0] == "typedef":
        top = top[1:]
    while top and top[0] in ("static", "inline", "const", "volatile", "extern"):
        top = top[1:]
    if not top or top[0] not in _TYPE_KEYWORDS:
        return None
    keyword, scoped = top[0], False
    names: list[str] = []
    for prev, tok in itertools.pairwise(top):
        if tok == "(" and (prev in _NOT_A_NAME or _MACRO_LIKE.fullmatch(prev)):
            continue  # struct __attribute__((aligned(2))) name
        if tok in (":", "{", "=", "("):
            break
        if tok in ("class", "struct") and keyword == "enum":
            scoped = True
            continue
        if _IDENT.fullmatch(tok) and tok not in _NOT_A_NAME and tok not in ("final", "alignas"):
            names.append(tok)
    return keyword, (names[-1] if names else None), scoped


def declared_names(pre: Preprocessed, macros: dict[str, Macro]) -> dict[str, Declaration]:
    """Names declared at namespace scope by one preprocessed header. `macros` are the
    function-like macros of the whole release (a header invokes those of another)."""
    found: dict[str, Declaration] = {name: Declaration("macro") for name in pre.macros}
    tokens = list(pre.tokens)
    scopes = [_Scope("ns")]
    stmt: list[str] = []
    snapshots: list[tuple[list[_Scope], list[str]]] = []
    expansions = 0
    enum_expect_name = False

    def record(name: str | None, kind: str, deprecated: bool = False) -> None:
        if name and _IDENT.fullmatch(name) and name not in _KEYWORDS:
            found.setdefault(name, Declaration(kind, deprecated))

    def in_namespace() -> bool:
        return scopes[-1].kind == "ns"

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == IF:
            snapshots.append(
                (
                    [_Scope(s.kind, s.scoped_enum, list(s.outer_statement)) for s in scopes],
                    list(stmt),
                )
            )
            continue
        if tok == ELSE:
            if snapshots:
                saved_scopes, saved_stmt = snapshots[-1]
                scopes = [
                    _Scope(s.kind, s.scoped_enum, list(s.outer_statement)) for s in saved_scopes
                ]
                stmt = list(saved_stmt)
            continue
        if tok == ENDIF:
            if snapshots:
                snapshots.pop()
            continue
        scope = scopes[-1]
        if scope.kind == "body":
            if tok == "{":
                scopes.append(_Scope("body"))
            elif tok == "}":
                scopes.pop()
                if len(scopes) == 0:
                    scopes = [_Scope("ns")]
                if scopes[-1].kind != "body":
                    stmt = []
            continue
        if scope.kind == "enum":
            if tok == "}":
                scopes.pop()
                stmt = [*scope.outer_statement, "{}"]
            elif tok == ",":
                enum_expect_name = True
            elif enum_expect_name and _IDENT.fullmatch(tok):
                if not scope.scoped_enum and len(scopes) >= 2 and scopes[-2].kind == "ns":
                    record(tok, "enum")
                enum_expect_name = False
            continue
        # namespace or class scope
        if (
            in_namespace()
            and not stmt
            and tok in macros
            and macros[tok].params is not None
            and i < len(tokens)
            and tokens[i] == "("
            and expansions < 20000
        ):
            args, depth, j, current = [], 0, i, []
            while j < len(tokens):
                t = tokens[j]
                j += 1
                if t == "(":
                    depth += 1
                    if depth == 1:
                        continue
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        break
                elif t == "," and depth == 1:
                    args.append(" ".join(current))
                    current = []
                    continue
                current.append(t)
            args.append(" ".join(current))
            tokens[i - 1 : j] = expand(macros[tok], args)
            i -= 1
            expansions += 1
            continue
        if tok == ";":
            if in_namespace():
                _statement(_drop_template_heads(stmt), record)
            stmt = []
        elif tok == "{":
            head = _drop_template_heads(stmt)
            top = [t for _i, t in _top_level(head)]
            type_head = _type_head(head)
            if "namespace" in top or (top[:1] == ["extern"] and top[1:2] == ['""']):
                scopes.append(_Scope("ns"))
                stmt = []
            elif type_head is not None:
                keyword, name, scoped = type_head
                if in_namespace():
                    record(name, "type")
                kind = "enum" if keyword == "enum" else "class"
                scopes.append(_Scope(kind, scoped, stmt))
                enum_expect_name = True
                stmt = []
            else:
                name = _function_name(head)
                if in_namespace() and name:
                    record(name, "function", _deprecated(head))
                if "=" in top or not name:
                    scopes.append(_Scope("body"))
                    stmt = []  # an initialiser or unknown block: skipped whole
                else:
                    scopes.append(_Scope("body"))
                    stmt = []
        elif tok == "}":
            if len(scopes) > 1:
                closed = scopes.pop()
                stmt = [*closed.outer_statement, "{}"] if closed.kind == "class" else []
            else:
                stmt = []
        else:
            stmt.append(tok)
    return found


def _deprecated(stmt: list[str]) -> bool:
    return any("deprecated" in tok.lower() for tok in stmt if _IDENT.fullmatch(tok))


def _statement(stmt: list[str], record) -> None:  # type: ignore[no-untyped-def]
    """Record what one namespace-scope statement ending in `;` declares."""
    if not stmt:
        return
    top = [t for _i, t in _top_level(stmt)]
    if stmt[0] == "typedef":
        pointer = re.search(r"\( \* (\w+) \)", " ".join(stmt))
        if pointer:
            record(pointer.group(1), "type")
            return
        idents = [t for t in top if _IDENT.fullmatch(t)]
        if idents:
            record(idents[-1], "type")
        return
    if stmt[0] == "using":
        if len(stmt) >= 3 and stmt[2] == "=":
            record(stmt[1], "type")
        return
    if stmt[0] in ("static_assert", "namespace", "friend"):
        return
    type_head = _type_head(stmt)
    if type_head is not None and "{}" not in top:
        record(type_head[1], "type")  # forward declaration
        return
    if "(" in top:
        name = _function_name(stmt)
        text = " ".join(stmt)
        if name and not re.search(r"=\s*delete\b", text):
            record(name, "function", _deprecated(stmt))
        return
    # a variable: the last identifier before `=` / `[` / the end
    idents = []
    for tok in top:
        if tok in ("=", "["):
            break
        if _IDENT.fullmatch(tok):
            idents.append(tok)
    if len(idents) >= 2:
        record(idents[-1], "variable")


# --------------------------------------------------------------------------- releases


def git(path: str, *args: str) -> str:
    """The output of `git -C path ARGS`; RuntimeError with git's message on failure."""
    result = subprocess.run(["git", "-C", path, *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {path}: {result.stderr}")
    return result.stdout


class TaggedRepo:
    """Read-only access to one git repository at any of its tags."""

    def __init__(self, path: str, project: str):
        self.path = path
        self.project = project
        self.tags = set(self._git("tag", "-l", "rocm-*").split())
        self._commits: dict[str, str] = {}

    def _git(self, *args: str) -> str:
        return git(self.path, *args)

    def snapshot(self) -> dict[str, str]:
        """The snapshot this mirror holds: its HEAD commit and that commit's date."""
        head = self._git("rev-parse", "HEAD").strip()
        date = self._git("show", "-s", "--format=%cI", head).strip()
        return {"project": self.project, "commit": head, "date": date}

    def commit(self, tag: str) -> str:
        if tag not in self._commits:
            self._commits[tag] = self._git("rev-parse", f"{tag}^{{commit}}").strip()
        return self._commits[tag]

    def headers(self, tag: str) -> list[str]:
        directory, recursive = HEADER_DIRS[self.project]
        listing = self._git("ls-tree", "-r", "--name-only", tag, "--", directory).splitlines()
        return sorted(
            path
            for path in listing
            if path.endswith(HEADER_SUFFIXES)
            and (recursive or "/" not in path[len(directory) :])
            and "nvidia_detail" not in path
        )

    def show(self, tag: str, path: str) -> str:
        return self._git("show", f"{tag}:{path}")


@dataclass(frozen=True)
class Where:
    """One header of one release that declares a name."""

    project: str
    commit: str
    path: str
    tag: str
    kind: str
    deprecated: bool


@dataclass
class Release:
    tag: str
    version: str  # "6.2.0"
    repos: dict[str, str]  # project -> commit read
    declared: dict[str, list[Where]]  # name -> every header declaring it, amd_detail first


def read_release(tag: str, repos: list[TaggedRepo]) -> Release:
    """Every name declared by the headers of the repositories that have `tag`; the
    amd_detail headers come first, so a name is attributed to where it is defined."""
    parsed: list[tuple[TaggedRepo, str, Preprocessed]] = []
    for repo in repos:
        if tag in repo.tags:
            for path in repo.headers(tag):
                parsed.append((repo, path, preprocess(repo.show(tag, path))))
    macros: dict[str, Macro] = {}
    for _repo, _path, pre in parsed:
        for name, macro in pre.macros.items():
            if macro.params is not None:
                macros.setdefault(name, macro)
    declared: dict[str, list[Where]] = {}
    for repo, path, pre in parsed:
        for name, decl in declared_names(pre, macros).items():
            declared.setdefault(name, []).append(
                Where(repo.project, repo.commit(tag), path, tag, decl.kind, decl.deprecated)
            )
    version = ".".join(str(n) for n in release_version(tag) or ())
    return Release(
        tag=tag,
        version=version,
        repos={r.project: r.commit(tag) for r in repos if tag in r.tags},
        declared=declared,
    )


@dataclass
class History:
    """What the releases read say about one spelling."""

    newest: list[Where]  # its declarations in the newest release ([] if gone)
    last: list[Where]  # its declarations in the last release that had any
    added: str | None  # first release declaring it, unless that is the oldest release read
    removed: str | None  # first release without it after the last one with it
    deprecated: str | None  # first release marking it deprecated


@dataclass
class HipHeaders:
    releases: list[Release]  # oldest first

    def history(self, name: str) -> History | None:
        present = [(r, r.declared.get(name)) for r in self.releases]
        seen = [(r, w) for r, w in present if w is not None]
        if not seen:
            return None
        first_release = seen[0][0]
        last_release, last = seen[-1]
        newest_release = self.releases[-1]
        after = self.releases[self.releases.index(last_release) + 1 :]
        deprecated = next(
            (r.version for r, ws in seen if ws and all(w.deprecated for w in ws)), None
        )
        return History(
            newest=last if last_release is newest_release else [],
            last=last,
            added=None if first_release is self.releases[0] else first_release.version,
            removed=after[0].version if after else None,
            deprecated=deprecated,
        )

    def describe(self) -> str:
        """The releases and commits read, for the rule files' `from:` line."""
        parts = []
        for release in self.releases:
            repos = "+".join(f"{p}@{c[:12]}" for p, c in release.repos.items())
            parts.append(f"{release.tag} ({repos})")
        return "HIP headers at " + ", ".join(parts)


def load_hip_headers(repos: list[TaggedRepo]) -> HipHeaders:
    """Read the releases chosen from the tags of the amd_detail repositories (clr, hipamd);
    ROCm/HIP's public headers are read at the same tags when it has them."""
    detail = [r for r in repos if r.project != "ROCm/HIP"]
    tags = set().union(*(r.tags for r in detail)) if detail else set()
    releases = []
    for tag in select_releases(tags):
        # clr took over from hipamd at 5.6; read one amd_detail copy per release
        owner = next(r for r in detail if tag in r.tags)
        readers = [owner] + [r for r in repos if r.project == "ROCm/HIP"]
        releases.append(read_release(tag, readers))
    return HipHeaders(releases=releases)
