"""The rule set: loading, validating and looking up rules/*.yaml.

Each family file maps CUDA names to their HIP equivalent and to a status on each
target, with the provenance of every fact. Files are validated once, at load:
an unknown key, a bad status, a duplicate name or a dangling source id is an
error that names the file, the entry and the key.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from portcheck.model import TARGETS, ApiRule, Status, Verdicts
from portcheck.resources import cache_dir, data_dir, write_bytes_atomically

SCHEMA = "portcheck.rules/1"
# Bump when validation or the cached form changes, so old caches are not reused.
LOADER_VERSION = "3"
KINDS = frozenset({"function", "type", "enum", "macro", "namespace", "header", "variable"})
FILE_KEYS = frozenset({"schema", "family", "title", "sources", "entries"})
ENTRY_REQUIRED = frozenset({"cuda", "kind", "hip", "status", "source"})
# since/deprecated/removed: CUDA versions; hip_*: ROCm releases, from HIP's own headers
ENTRY_OPTIONAL = frozenset(
    {"since", "deprecated", "removed", "notes", "hip_added", "hip_deprecated", "hip_removed"}
)
SOURCE_KEYS = frozenset({"project", "ref", "path", "url", "note"})
INFERRED_PREFIX = "inferred:"


class RuleError(ValueError):
    """A rule file is malformed. The message names file, entry and key."""


class YamlSyntaxError(ValueError):
    """Text that is not valid YAML; the message is the parser's."""


# marshal's format belongs to one Python version: caches written with it name the version.
_MARSHAL_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}m{marshal.version}"


def load_yaml(text: str, *, cache: bool = True) -> Any:
    """Parse YAML (with libyaml when available). With `cache`, the parsed data is kept
    under the cache folder by a hash of the text, so the shipped hazard and Python rule
    files cost neither importing PyYAML nor parsing on every run (~0.05 s together)."""
    path = None
    if cache:
        digest = hashlib.sha256(text.encode()).hexdigest()[:24]
        path = cache_dir() / f"yaml-{digest}-{_MARSHAL_TAG}.bin"
        try:
            return marshal.loads(path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            pass  # not cached yet, or damaged: parse
    import yaml

    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc)) from None
    if path is not None:
        # A read-only cache folder, or data marshal cannot hold (YAML dates): not cached.
        with contextlib.suppress(OSError, ValueError):
            write_bytes_atomically(path, marshal.dumps(doc))
    return doc


@dataclass(frozen=True)
class RuleSet:
    """All rules, indexed by CUDA name for one dictionary lookup per use."""

    rules: Mapping[str, ApiRule]
    titles: Mapping[str, str]
    digest: str = ""  # hash of the rule files' bytes: keys caches of results derived from them

    def lookup(self, name: str) -> ApiRule | None:
        return self.rules.get(name)

    def kinds(self) -> Iterator[tuple[str, str]]:
        """(CUDA name, kind) of every rule, without building the rules themselves."""
        if isinstance(self.rules, RuleTable):
            return self.rules.kinds()
        return ((rule.cuda, rule.kind) for rule in self.rules.values())

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[ApiRule]:
        return iter(self.rules.values())

    @property
    def families(self) -> dict[str, int]:
        return dict(sorted(Counter(rule.family for rule in self.rules.values()).items()))

    def search(self, text: str, family: str | None = None) -> list[ApiRule]:
        """Rules whose CUDA or HIP name contains `text` (case-insensitive): exact
        matches first, then names that start with it, then the rest; shorter first."""
        needle = text.lower()
        hits: list[tuple[int, int, str, ApiRule]] = []
        for rule in self.rules.values():
            if family is not None and rule.family != family:
                continue
            names = [rule.cuda.lower(), (rule.hip or "").lower()]
            if not any(needle in name for name in names):
                continue
            rank = 0 if needle in names else 1 if any(n.startswith(needle) for n in names) else 2
            hits.append((rank, len(rule.cuda), rule.cuda, rule))
        return [hit[-1] for hit in sorted(hits, key=lambda h: h[:3])]

    def stats(self) -> dict[str, object]:
        """The `portcheck rules stats` document."""
        incomplete = sum(
            1
            for rule in self.rules.values()
            if any(rule.status[t] is Status.UNKNOWN for t in TARGETS)
        )
        return {
            "total": len(self.rules),
            "families": self.families,
            "entries_without_full_status": incomplete,
        }


def _fail(where: str, message: str) -> RuleError:
    return RuleError(f"{where}: {message}")


def _describe_source(source_id: str, sources: Mapping[str, Mapping[str, str]]) -> str:
    src = sources[source_id]
    ref = src.get("ref", "")
    text = f"{src['project']}@{ref[:12]}" if ref else src["project"]
    if src.get("path"):
        text += f" {src['path']}"
    if src.get("note"):
        text += f" ({src['note']})"
    return text


def _parse_sources(raw: Any, where: str) -> dict[str, dict[str, str]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(where, "'sources' must be a mapping of id -> {project, ref, path}")
    sources: dict[str, dict[str, str]] = {}
    for source_id, body in raw.items():
        at = f"{where}: sources.{source_id}"
        if not isinstance(body, dict) or "project" not in body:
            raise _fail(at, "needs at least a 'project' key")
        unknown = set(body) - SOURCE_KEYS
        if unknown:
            raise _fail(at, f"unknown key(s) {sorted(unknown)}")
        sources[str(source_id)] = {k: str(v) for k, v in body.items()}
    return sources


def _parse_entry(
    raw: Any, index: int, family: str, sources: Mapping[str, Mapping[str, str]], where: str
) -> ApiRule:
    if not isinstance(raw, dict):
        raise _fail(f"{where}: entry {index}", "must be a mapping")
    name = raw.get("cuda")
    at = f"{where}: entry {index} (cuda={name!r})"
    if not isinstance(name, str) or not name:
        raise _fail(at, "key 'cuda': must be a non-empty string")
    unknown = set(raw) - ENTRY_REQUIRED - ENTRY_OPTIONAL
    if unknown:
        raise _fail(at, f"unknown key(s) {sorted(unknown)}")
    missing = ENTRY_REQUIRED - set(raw)
    if missing:
        raise _fail(at, f"missing key(s) {sorted(missing)}")
    if raw["kind"] not in KINDS:
        raise _fail(at, f"key 'kind': {raw['kind']!r} is not one of {sorted(KINDS)}")
    hip = raw["hip"]
    if hip is not None and not isinstance(hip, str):
        raise _fail(at, "key 'hip': must be a string or null")

    status = raw["status"]
    if not isinstance(status, dict) or set(status) != {str(t) for t in TARGETS}:
        raise _fail(at, "key 'status': must give exactly hip, zluda and scale")
    values = {}
    for target, value in status.items():
        try:
            values[target] = Status(value)
        except ValueError:
            allowed = ", ".join(s.value for s in Status)
            raise _fail(at, f"key 'status.{target}': {value!r} is not one of {allowed}") from None

    source = raw["source"]
    if not isinstance(source, dict) or set(source) != {str(t) for t in TARGETS}:
        raise _fail(at, "key 'source': must give exactly hip, zluda and scale")
    described = {}
    for target, ref in source.items():
        ref = str(ref)
        if ref.startswith(INFERRED_PREFIX):
            described[target] = ref
        elif ref in sources:
            described[target] = _describe_source(ref, sources)
        else:
            raise _fail(
                at,
                f"key 'source.{target}': {ref!r} is neither a source id of this "
                f"file ({', '.join(sorted(sources)) or 'none declared'}) nor 'inferred: …'",
            )

    def optional(key: str) -> str | None:
        value = raw.get(key)
        return None if value is None else str(value)

    return ApiRule(
        cuda=name,
        family=family,
        kind=raw["kind"],
        hip=hip,
        status=Verdicts(**values),
        source=described,
        since=optional("since"),
        deprecated=optional("deprecated"),
        removed=optional("removed"),
        notes=optional("notes"),
        hip_added=optional("hip_added"),
        hip_deprecated=optional("hip_deprecated"),
        hip_removed=optional("hip_removed"),
    )


def parse_rule_file(text: str, where: str, stem: str) -> tuple[str, str, list[ApiRule]]:
    """Validate one family file; returns (family, title, rules)."""
    try:
        doc = load_yaml(text, cache=False)  # the validated rule set has its own cache
    except YamlSyntaxError as exc:
        raise _fail(where, f"not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise _fail(where, "must be a mapping with schema, family, sources and entries")
    unknown = set(doc) - FILE_KEYS
    if unknown:
        raise _fail(where, f"unknown top-level key(s) {sorted(unknown)}")
    if doc.get("schema") != SCHEMA:
        raise _fail(where, f"key 'schema': expected {SCHEMA!r}, got {doc.get('schema')!r}")
    family = doc.get("family")
    if family != stem:
        raise _fail(where, f"key 'family': {family!r} must match the file name {stem!r}")
    sources = _parse_sources(doc.get("sources"), where)
    entries = doc.get("entries") or []
    if not isinstance(entries, list):
        raise _fail(where, "key 'entries': must be a list")
    rules = [_parse_entry(raw, i, family, sources, where) for i, raw in enumerate(entries)]
    return family, str(doc.get("title") or family), rules


HAZARD_CATALOGUE = "hazards.yaml"  # lives in rules/ too, but is not an API family


def _rule_files(folder: Traversable | Path) -> Iterable[Traversable | Path]:
    return sorted(
        (
            f
            for f in folder.iterdir()
            if f.name.endswith(".yaml") and f.name != HAZARD_CATALOGUE and f.is_file()
        ),
        key=lambda f: f.name,
    )


_STATUS_BY_VALUE = {status.value: status for status in Status}
_OPTIONAL = (
    "since",
    "deprecated",
    "removed",
    "notes",
    "hip_added",
    "hip_deprecated",
    "hip_removed",
)

# A rule as the cache stores it: family, kind, hip, the three statuses, the three
# sources, then the optional fields (see _row).
Row = tuple[str | None, ...]


def _row(rule: ApiRule) -> Row:
    return (
        rule.family,
        rule.kind,
        rule.hip,
        *(rule.status[t].value for t in TARGETS),
        *(rule.source.get(str(t)) for t in TARGETS),
        *(getattr(rule, key) for key in _OPTIONAL),
    )


class RuleTable(Mapping[str, ApiRule]):
    """The rules by CUDA name, read from the cache as compact rows; each ApiRule is built
    the first time it is looked up. A scan touches a few hundred of the ~9,500 names, and
    building them all took longer (~0.1 s) than the rest of a cached re-scan's start-up."""

    __slots__ = ("_built", "_rows", "_verdicts")

    def __init__(self, rows: dict[str, Row]) -> None:
        self._rows = rows
        self._built: dict[str, ApiRule] = {}
        self._verdicts: dict[tuple[str | None, ...], Verdicts] = {}

    def get(self, name: str, default: ApiRule | None = None) -> ApiRule | None:  # type: ignore[override]
        rule = self._built.get(name)
        if rule is None:
            row = self._rows.get(name)
            if row is None:
                return default
            rule = self._built[name] = self._build(name, row)
        return rule

    def __getitem__(self, name: str) -> ApiRule:
        rule = self.get(name)
        if rule is None:
            raise KeyError(name)
        return rule

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def kinds(self) -> Iterator[tuple[str, str]]:
        return ((name, str(row[1])) for name, row in self._rows.items())

    def _build(self, name: str, row: Row) -> ApiRule:
        family, kind, hip, *rest = row
        statuses, sources, optional = rest[0:3], rest[3:6], rest[6:]
        key = tuple(statuses)
        verdict = self._verdicts.get(key)
        if verdict is None:  # a few dozen distinct combinations: share them
            verdict = self._verdicts[key] = Verdicts(*(_STATUS_BY_VALUE[str(v)] for v in key))
        return ApiRule(
            name,
            str(family),
            str(kind),
            hip,
            verdict,
            {str(t): str(src) for t, src in zip(TARGETS, sources, strict=True)},
            *optional,
        )


def _cache_path(digest: str) -> Path:
    return cache_dir() / f"rules-{digest[:24]}-{_MARSHAL_TAG}.bin"


def _read_cache(path: Path) -> RuleSet | None:
    try:
        rows, titles = marshal.loads(path.read_bytes())
        if not isinstance(rows, dict) or not isinstance(titles, dict):
            return None
        return RuleSet(rules=RuleTable(rows), titles=titles)
    except (OSError, ValueError, EOFError, TypeError):
        return None  # missing or damaged: rebuild from the YAML


def _write_cache(path: Path, ruleset: RuleSet) -> None:
    # The same provenance text recurs on thousands of rules: store each string once.
    strings: dict[str, str] = {}
    rows = {
        name: tuple(strings.setdefault(v, v) if isinstance(v, str) else v for v in _row(rule))
        for name, rule in ruleset.rules.items()
    }
    with contextlib.suppress(OSError):  # a read-only home: the next run parses the YAML again
        write_bytes_atomically(path, marshal.dumps((rows, dict(ruleset.titles))))


def load_rules(folder: Traversable | Path | None = None, use_cache: bool = True) -> RuleSet:
    """Load and validate every family file in `folder` (default: the shipped rules/).

    Parsing and validating thousands of YAML entries takes about a second, so the
    validated result is cached (marshal) under ~/.cache/portcheck (or
    $PORTCHECK_CACHE_DIR), keyed by a hash of the files' bytes and the loader version:
    an edited rule file is always re-validated.
    """
    folder = data_dir("rules") if folder is None else folder
    files = [(file.name, file.read_bytes()) for file in _rule_files(folder)]
    digest = hashlib.sha256(LOADER_VERSION.encode())
    for name, content in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    cache_path = _cache_path(digest.hexdigest())
    if use_cache:
        cached = _read_cache(cache_path)
        if cached is not None:
            return replace(cached, digest=digest.hexdigest())
    ruleset = replace(_validate_files(files), digest=digest.hexdigest())
    if use_cache:
        _write_cache(cache_path, ruleset)
    return ruleset


def _validate_files(files: list[tuple[str, bytes]]) -> RuleSet:
    rules: dict[str, ApiRule] = {}
    origin: dict[str, str] = {}
    titles: dict[str, str] = {}
    for name, content in files:
        stem = name.removesuffix(".yaml")
        family, title, parsed = parse_rule_file(content.decode("utf-8"), name, stem)
        titles[family] = title
        for rule in parsed:
            if rule.cuda in rules:
                raise RuleError(
                    f"{name}: duplicate name {rule.cuda!r} (already defined in {origin[rule.cuda]})"
                )
            rules[rule.cuda] = rule
            origin[rule.cuda] = name
    return RuleSet(rules=rules, titles=titles)


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The shipped rule set, loaded once per process."""
    return load_rules()
