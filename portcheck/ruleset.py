"""The rule set: loading, validating and looking up rules/*.yaml.

Each family file maps CUDA names to their HIP equivalent and to a status on each
target, with the provenance of every fact. Files are validated once, at load:
an unknown key, a bad status, a duplicate name or a dangling source id is an
error that names the file, the entry and the key.

rules/sources.yaml (not a family) names the upstream snapshot every fact was read from
and the ROCm releases the HIP dates cover: `RuleSet.newest_rocm()` is the release whose
statuses the family files hold, `RuleSet.at_rocm(release)` the same rules as they stand in
an older release (see portcheck.rocm).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.resources.abc import Traversable
from itertools import chain
from pathlib import Path
from typing import Any

from portcheck.model import OPTIONAL_RULE_FIELDS, TARGETS, ApiRule, Status, Verdicts
from portcheck.resources import data_dir, usable_cache_dir, write_atomically
from portcheck.rocm import HipStatus, RocmRelease, hip_status, parse_rocm_version

SCHEMA = "portcheck.rules/1"
# Bump when validation or the cached form changes, so old caches are not reused.
LOADER_VERSION = "5"
KINDS = frozenset({"function", "type", "enum", "macro", "namespace", "header", "variable"})
FILE_KEYS = frozenset({"schema", "family", "title", "sources", "entries"})
ENTRY_REQUIRED = frozenset({"cuda", "kind", "hip", "status", "source"})
# since/deprecated/removed: CUDA versions; hip_*: ROCm releases, from HIP's own headers
ENTRY_OPTIONAL = frozenset({*OPTIONAL_RULE_FIELDS, "experimental", "origin"})
HIP_DATE_KEYS = ("hip_added", "hip_deprecated", "hip_removed")
SOURCE_KEYS = frozenset({"project", "ref", "path", "url", "note"})
INFERRED_PREFIX = "inferred:"
# Where each route's status came from (tools/build_rules.py): read off a source, derived
# by a named rule ("derived:type-use"), or the family's default.
ORIGINS = ("source", "derived", "default")
_DERIVED_RULE = re.compile(r"derived:[a-z][a-z0-9-]*")


def origin_kind(origin: str | None) -> str:
    """ "derived:type-use" -> "derived"; None (a file that does not record it) -> "unrecorded"."""
    return "unrecorded" if origin is None else origin.partition(":")[0]


def _valid_origin(value: object) -> bool:
    return value in ("source", "default") or (
        isinstance(value, str) and _DERIVED_RULE.fullmatch(value) is not None
    )


class RuleError(ValueError):
    """A rule file is malformed. The message names file, entry and key."""


class YamlSyntaxError(ValueError):
    """Text that is not valid YAML; the message is the parser's."""


CACHE_FORMAT = "portcheck.rules-cache/1"


def _cache_entry(source_digest: str, payload: object) -> bytes | None:
    """A cache file: a header line naming the digest of the source it was made from and
    the digest of the payload, then the payload as JSON (data only: reading it runs no
    code). None when JSON cannot hold the payload exactly (YAML dates, integer keys)."""
    try:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError):
        return None
    if json.loads(body) != payload:
        return None  # e.g. integer keys would come back as strings
    header = {
        "format": CACHE_FORMAT,
        "source": source_digest,
        "payload": hashlib.sha256(body).hexdigest(),
    }
    return json.dumps(header).encode("ascii") + b"\n" + body


def _read_cache_entry(path: Path, source_digest: str) -> Any:
    """The payload of a cache file made from this exact source, or None: missing,
    unreadable, made from another source, or damaged (its payload digest does not match)
    all mean "rebuild from the YAML", so a damaged cache can never change the rules."""
    try:
        data = path.read_bytes()
        head, _, body = data.partition(b"\n")
        header = json.loads(head)
        if (
            type(header) is not dict
            or header.get("format") != CACHE_FORMAT
            or header.get("source") != source_digest
            or header.get("payload") != hashlib.sha256(body).hexdigest()
        ):
            return None
        return json.loads(body)
    except (OSError, ValueError, RecursionError):
        return None


def _write_cache_entry(path: Path, source_digest: str, payload: object) -> None:
    entry = _cache_entry(source_digest, payload)
    if entry is None:
        return  # JSON cannot hold it exactly: parsed again next time
    with contextlib.suppress(OSError):  # the folder went away: parsed again next time
        write_atomically(path, entry, make_parents=True)


def load_yaml(text: str, *, cache: bool = True) -> Any:
    """Parse YAML (with libyaml when available). With `cache`, the parsed data is kept
    under the cache folder by a hash of the text, so the shipped hazard and Python rule
    files cost neither importing PyYAML nor parsing on every run (~0.05 s together).
    The data comes back only from an entry made from this exact text (see
    _read_cache_entry); the loaders validate it as they would fresh YAML."""
    path = None
    digest = ""
    if cache:
        digest = hashlib.sha256(text.encode()).hexdigest()
        folder = usable_cache_dir()
        if folder is not None:
            path = folder / f"yaml-{digest[:24]}.json"
            doc = _read_cache_entry(path, digest)
            if doc is not None:
                return doc
    import yaml

    try:
        doc = _load_events(text)
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc)) from None
    if path is not None:
        _write_cache_entry(path, digest, doc)
    return doc


_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{kind}" for kind in ("str", "null", "bool", "int", "float", "timestamp")
)


class _Unusual(Exception):
    """An anchor, an alias, a tag or a second document: PyYAML's own loader decides."""


def _load_events(text: str) -> Any:
    """YAML's safe load, built from libyaml's parse events. PyYAML's loader resolves and
    constructs each of the rule files' 700,000 nodes through Python methods (about 5 s on
    a machine's first run); the events cost a sixth of that, and each distinct plain
    scalar is resolved once, by PyYAML's own resolver and constructor, so the result is
    the safe loader's. A document with anchors, aliases, tags or several documents is
    left to PyYAML's loader."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _from_events(yaml.parse(text, Loader=loader))
    except (_Unusual, TypeError):  # TypeError: a collection as a key, which PyYAML reports
        return yaml.load(text, Loader=loader)


def _from_events(events: Iterator[Any]) -> Any:
    import yaml

    resolver = yaml.resolver.Resolver()
    constructor = yaml.constructor.SafeConstructor()
    plain: dict[str, Any] = {}  # a plain scalar's text -> its value

    def scalar(value: str) -> Any:
        if value not in plain:
            tag = resolver.resolve(yaml.ScalarNode, value, (True, False))
            if tag not in _PLAIN_TAGS:
                raise _Unusual  # `<<` (a merge key) or `=`
            node = yaml.ScalarNode(tag, value)
            plain[value] = (
                value if tag == "tag:yaml.org,2002:str" else constructor.construct_object(node)
            )
        return plain[value]

    stack: list[Any] = []  # open collections; a mapping's pending key rides beside it
    keys: list[Any] = []
    documents = 0
    result: Any = None
    mark = object()  # "no key yet" in keys

    def add(value: Any) -> None:
        nonlocal result
        if not stack:
            result = value
        elif type(stack[-1]) is list:
            stack[-1].append(value)
        elif keys[-1] is mark:
            keys[-1] = value
        else:
            stack[-1][keys[-1]] = value
            keys[-1] = mark

    for event in events:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            if event.anchor is not None or (event.tag not in (None, "!")):
                raise _Unusual
            add(scalar(event.value) if event.implicit[0] else event.value)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            if event.anchor is not None or (event.tag is not None and not event.implicit):
                raise _Unusual
            stack.append({} if kind is yaml.MappingStartEvent else [])
            keys.append(mark)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            done = stack.pop()
            keys.pop()
            add(done)
        elif kind is yaml.AliasEvent:
            raise _Unusual
        elif kind is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _Unusual
    return result


SOURCES_FILE = "sources.yaml"  # in rules/, beside the families: not a family itself
SOURCES_SCHEMA = "portcheck.sources/1"
SNAPSHOT_KEYS = frozenset({"project", "commit", "date", "via", "tags"})


@dataclass(frozen=True)
class Sources:
    """rules/sources.yaml: the upstream snapshots the rule set was built from (project,
    commit, commit date; `via` a fork that carried the commit, `tags` the release tags
    read) and the ROCm releases its HIP dates cover."""

    snapshots: tuple[Mapping[str, str], ...] = ()
    oldest: RocmRelease | None = None
    newest: RocmRelease | None = None

    def to_payload(self) -> dict[str, object]:
        return {
            "snapshots": [dict(s) for s in self.snapshots],
            "oldest": None if self.oldest is None else str(self.oldest),
            "newest": None if self.newest is None else str(self.newest),
        }


def parse_sources(text: str, where: str = SOURCES_FILE) -> Sources:
    """Validate rules/sources.yaml (errors name the file and the key)."""
    try:
        doc = load_yaml(text, cache=False)
    except YamlSyntaxError as exc:
        raise _fail(where, f"not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SOURCES_SCHEMA:
        raise _fail(where, f"key 'schema': expected {SOURCES_SCHEMA!r}")
    unknown = set(doc) - {"schema", "snapshots", "rocm"}
    if unknown:
        raise _fail(where, f"unknown top-level key(s) {sorted(unknown)}")
    snapshots = []
    for index, raw in enumerate(doc.get("snapshots") or []):
        at = f"{where}: snapshots[{index}]"
        if not isinstance(raw, dict) or not {"project", "commit"} <= set(raw):
            raise _fail(at, "needs at least 'project' and 'commit'")
        if set(raw) - SNAPSHOT_KEYS:
            raise _fail(at, f"unknown key(s) {sorted(set(raw) - SNAPSHOT_KEYS)}")
        snapshots.append({k: str(v) for k, v in raw.items()})
    rocm = doc.get("rocm") or {}
    if not isinstance(rocm, dict):
        raise _fail(where, "key 'rocm': must be a mapping")
    releases: dict[str, RocmRelease | None] = {}
    for key in ("oldest", "newest"):
        value = rocm.get(key)
        try:
            releases[key] = None if value is None else parse_rocm_version(str(value))
        except ValueError as exc:
            raise _fail(where, f"key 'rocm.{key}': {exc}") from None
    return Sources(tuple(snapshots), releases["oldest"], releases["newest"])


def _sources_from_payload(payload: object) -> Sources | None:
    """The Sources a cache stored (None: not the shape to_payload writes)."""
    if type(payload) is not dict or set(payload) != {"snapshots", "oldest", "newest"}:
        return None
    snapshots = payload["snapshots"]
    if type(snapshots) is not list or any(
        type(s) is not dict or not set(map(type, s.values())) <= {str} for s in snapshots
    ):
        return None
    try:
        oldest, newest = (
            None if payload[k] is None else parse_rocm_version(str(payload[k]))
            for k in ("oldest", "newest")
        )
    except ValueError:
        return None
    return Sources(tuple(snapshots), oldest, newest)


@dataclass(frozen=True)
class RuleSet:
    """All rules, indexed by CUDA name for one dictionary lookup per use."""

    rules: Mapping[str, ApiRule]
    titles: Mapping[str, str]
    digest: str = ""  # hash of the rule files' bytes: keys caches of results derived from them
    sources: Sources = field(default_factory=lambda: Sources())
    release: RocmRelease | None = None  # set on a view made by at_rocm()
    _statuses: dict[tuple[str, RocmRelease], HipStatus] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def lookup(self, name: str) -> ApiRule | None:
        return self.rules.get(name)

    def kinds(self) -> Iterator[tuple[str, str]]:
        """(CUDA name, kind) of every rule, without building the rules themselves."""
        if isinstance(self.rules, RuleTable | ReleaseRules):
            return self.rules.kinds()
        return ((rule.cuda, rule.kind) for rule in self.rules.values())

    # ---- ROCm releases

    def newest_rocm(self) -> RocmRelease | None:
        """The newest ROCm release the rule set knows (the default for --rocm): the one
        whose HIP statuses the family files hold. From rules/sources.yaml, else the newest
        HIP date any rule carries; None when no rule is dated."""
        if self.sources.newest is not None:
            return self.sources.newest
        dates = [
            parse_rocm_version(value)
            for rule in self.rules.values()
            for key in HIP_DATE_KEYS
            if (value := getattr(rule, key))
        ]
        return max(dates, default=None)

    def oldest_rocm(self) -> RocmRelease | None:
        """The oldest release the HIP dates tell apart (HIP's headers were read from it
        on); a name already in it carries no hip_added. None when unknown."""
        return self.sources.oldest

    def rocm_release(self, text: str) -> RocmRelease:
        """A user's `--rocm` value, parsed and checked against what the rule set knows:
        ValueError for a malformed version or one older than oldest_rocm() (no dates
        tell those releases apart). A release newer than newest_rocm() is accepted and
        answered as newest_rocm() (see rocm_caveat)."""
        release = parse_rocm_version(text)
        oldest = self.oldest_rocm()
        if oldest is not None and release < oldest:
            raise ValueError(
                f"ROCm {release} is older than the oldest release portcheck's rule set "
                f"tells apart ({oldest}); choose {oldest} or later"
            )
        return release

    def rocm_caveat(self, release: RocmRelease) -> str | None:
        """A sentence for the user when `release` is newer than the rule set's sources."""
        newest = self.newest_rocm()
        if newest is not None and release > newest:
            return (
                f"portcheck's rule set knows HIP up to ROCm {newest}; APIs added after it "
                f"are not known, so ROCm {release} is answered as {newest}"
            )
        return None

    def hip_status(self, rule: ApiRule, release: RocmRelease) -> HipStatus:
        """`rule`'s HIP status in `release` (portcheck.rocm.hip_status), computed once per
        (rule, release)."""
        key = (rule.cuda, release)
        found = self._statuses.get(key)
        if found is None:
            found = self._statuses[key] = hip_status(rule, release)
        return found

    def at_rocm(self, release: RocmRelease | str) -> RuleSet:
        """These rules as they stand in ROCm `release`: the same lookups, each rule's
        status.hip replaced by its status in that release (with the reason first in its
        notes when it differs). Rules are adjusted once each, the first time they are
        looked up, so classification stays one dictionary lookup per use. The newest
        release (or a newer one) gives this rule set itself; other releases get their own
        digest, so caches of scan results never mix releases."""
        if isinstance(release, str):
            release = self.rocm_release(release)
        if self.release is not None:
            raise ValueError("at_rocm() is for the rule set as loaded, not for a view of it")
        newest = self.newest_rocm()
        if newest is None or release >= newest:
            return self
        digest = hashlib.sha256(f"{self.digest}\0rocm-{release}".encode()).hexdigest()
        view = ReleaseRules(self, release)
        return RuleSet(view, self.titles, digest, self.sources, release)

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
        """The `portcheck rules stats` document: the contract keys (total, families,
        entries_without_full_status), where each route's statuses came from (`origins`:
        per route, how many were read off a source, derived by a rule, or the family
        default; `derivations`: per route, how many each rule derived) and the sources."""
        incomplete = 0
        origins: dict[str, Counter[str]] = {str(t): Counter() for t in TARGETS}
        derivations: dict[str, Counter[str]] = {str(t): Counter() for t in TARGETS}
        for rule in self.rules.values():
            if any(rule.status[t] is Status.UNKNOWN for t in TARGETS):
                incomplete += 1
            for target in origins:
                origin = rule.origin.get(target) if rule.origin else None
                kind = origin_kind(origin)
                origins[target][kind] += 1
                if kind == "derived" and origin is not None:
                    derivations[target][origin.partition(":")[2]] += 1
        newest, oldest = self.newest_rocm(), self.oldest_rocm()
        return {
            "total": len(self.rules),
            "families": self.families,
            "entries_without_full_status": incomplete,
            "origins": {
                target: {kind: counts[kind] for kind in (*ORIGINS, "unrecorded") if counts[kind]}
                for target, counts in origins.items()
            },
            "derivations": {
                target: dict(sorted(counts.items())) for target, counts in derivations.items()
            },
            "sources": {
                "snapshots": [dict(s) for s in self.sources.snapshots],
                "rocm": {
                    "oldest": None if oldest is None else str(oldest),
                    "newest": None if newest is None else str(newest),
                },
            },
        }


class ReleaseRules(Mapping[str, ApiRule]):
    """The rules of a RuleSet as they stand in an older ROCm release (RuleSet.at_rocm):
    a rule whose HIP status there differs from its newest one is a copy with that status
    and the reason ("HIP in ROCm 5.7: added in ROCm 6.2") first in its notes; the others
    are the very same objects. Each rule is adjusted on its first lookup."""

    __slots__ = ("_adjusted", "_base", "_release")

    def __init__(self, base: RuleSet, release: RocmRelease) -> None:
        self._base = base
        self._release = release
        self._adjusted: dict[str, ApiRule] = {}

    def get(  # type: ignore[override]  # Mapping.get's overloads; this is a rule or None
        self, name: str, default: ApiRule | None = None
    ) -> ApiRule | None:
        rule = self._adjusted.get(name)
        if rule is None:
            original = self._base.rules.get(name)
            if original is None:
                return default
            rule = self._adjusted[name] = self._adjust(original)
        return rule

    def _adjust(self, rule: ApiRule) -> ApiRule:
        found = self._base.hip_status(rule, self._release)
        if found.status is rule.status.hip:
            return rule
        reason = f"HIP in ROCm {self._release}: {found.message}" if found.message else None
        notes = " | ".join(text for text in (reason, rule.notes) if text) or None
        status = replace(rule.status, hip=found.status)
        return replace(rule, status=status, notes=notes)

    def __getitem__(self, name: str) -> ApiRule:
        rule = self.get(name)
        if rule is None:
            raise KeyError(name)
        return rule

    def __contains__(self, name: object) -> bool:
        return name in self._base.rules

    def __iter__(self) -> Iterator[str]:
        return iter(self._base.rules)

    def __len__(self) -> int:
        return len(self._base.rules)

    def kinds(self) -> Iterator[tuple[str, str]]:
        return self._base.kinds()


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

    for key in HIP_DATE_KEYS:
        if raw.get(key) is not None:
            try:
                parse_rocm_version(str(raw[key]))
            except ValueError as exc:
                raise _fail(at, f"key {key!r}: {exc}") from None
    experimental = raw.get("experimental", False)
    if not isinstance(experimental, bool):
        raise _fail(at, "key 'experimental': must be true or false")
    origin = raw.get("origin")
    if origin is not None:
        if not isinstance(origin, dict) or set(origin) != {str(t) for t in TARGETS}:
            raise _fail(at, "key 'origin': must give exactly hip, zluda and scale")
        for target, value in origin.items():
            if not _valid_origin(value):
                raise _fail(
                    at,
                    f"key 'origin.{target}': {value!r} is not 'source', 'default' or "
                    "'derived:<rule>'",
                )

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
        experimental=experimental,
        origin=None if origin is None else {str(t): str(v) for t, v in origin.items()},
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


HAZARD_CATALOGUE = "hazards.yaml"
GPU_TABLE = "gpus.yaml"  # read by portcheck/gpus.py
# Files that live in rules/ too but are not API families.
NOT_FAMILIES = frozenset({HAZARD_CATALOGUE, GPU_TABLE, SOURCES_FILE})


def _rule_files(folder: Traversable | Path) -> Iterable[Traversable | Path]:
    return sorted(
        (
            f
            for f in folder.iterdir()
            if f.name.endswith(".yaml") and f.name not in NOT_FAMILIES and f.is_file()
        ),
        key=lambda f: f.name,
    )


_STATUS_BY_VALUE = {status.value: status for status in Status}
_OPTIONAL = OPTIONAL_RULE_FIELDS
# RuleTable._build unpacks the optional fields in this order
assert _OPTIONAL == (
    "since",
    "deprecated",
    "removed",
    "notes",
    "hip_added",
    "hip_deprecated",
    "hip_removed",
)

# A rule as the cache stores it: family, kind, hip, the three statuses, the three
# sources, the three origins (None when not recorded), the optional fields, then
# "experimental" or None (see _row).
Row = tuple[str | None, ...]
EXPERIMENTAL = "experimental"


def _row(rule: ApiRule) -> Row:
    return (
        rule.family,
        rule.kind,
        rule.hip,
        *(rule.status[t].value for t in TARGETS),
        *(rule.source.get(str(t)) for t in TARGETS),
        *(rule.origin.get(str(t)) if rule.origin else None for t in TARGETS),
        *(getattr(rule, key) for key in _OPTIONAL),
        EXPERIMENTAL if rule.experimental else None,
    )


class RuleTable(Mapping[str, ApiRule]):
    """The rules by CUDA name, read from the cache as packed rows (indices into a table of
    strings, -1 for none); each ApiRule is built the first time it is looked up. A scan
    touches a few hundred of the ~9,500 names, and building them all took longer (~0.1 s)
    than the rest of a cached re-scan's start-up."""

    __slots__ = ("_built", "_cells", "_index", "_strings", "_verdicts")

    def __init__(self, strings: list[str], cells: array) -> None:
        self._strings = strings
        self._cells = cells  # ROW_WIDTH per rule: the name, then a Row
        self._index = dict(
            zip(
                map(strings.__getitem__, cells[0::ROW_WIDTH]),
                range(0, len(cells), ROW_WIDTH),
                strict=True,
            )
        )
        self._built: dict[str, ApiRule] = {}
        self._verdicts: dict[tuple[str | None, ...], Verdicts] = {}

    def get(  # type: ignore[override]  # Mapping.get's overloads; this is a rule or None
        self, name: str, default: ApiRule | None = None
    ) -> ApiRule | None:
        rule = self._built.get(name)
        if rule is None:
            start = self._index.get(name)
            if start is None:
                return default
            rule = self._built[name] = self._build(name, self._row(start))
        return rule

    def __getitem__(self, name: str) -> ApiRule:
        rule = self.get(name)
        if rule is None:
            raise KeyError(name)
        return rule

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def kinds(self) -> Iterator[tuple[str, str]]:
        strings, cells = self._strings, self._cells
        return ((name, strings[cells[start + 2]]) for name, start in self._index.items())

    def _row(self, start: int) -> Row:
        strings = self._strings
        return tuple(
            None if cell < 0 else strings[cell]
            for cell in self._cells[start + 1 : start + ROW_WIDTH]
        )

    def _build(self, name: str, row: Row) -> ApiRule:
        family, kind, hip, *rest = row
        statuses, sources, origins, optional = rest[0:3], rest[3:6], rest[6:9], rest[9:-1]
        key = tuple(statuses)
        verdict = self._verdicts.get(key)
        if verdict is None:  # a few dozen distinct combinations: share them
            verdict = self._verdicts[key] = Verdicts(*(_STATUS_BY_VALUE[str(v)] for v in key))
        since, deprecated, removed, notes, hip_added, hip_deprecated, hip_removed = optional
        return ApiRule(
            name,
            str(family),
            str(kind),
            hip,
            verdict,
            {str(t): str(src) for t, src in zip(TARGETS, sources, strict=True)},
            since=since,
            deprecated=deprecated,
            removed=removed,
            notes=notes,
            hip_added=hip_added,
            hip_deprecated=hip_deprecated,
            hip_removed=hip_removed,
            experimental=rest[-1] == EXPERIMENTAL,
            origin=(
                None
                if origins[0] is None
                else {str(t): str(o) for t, o in zip(TARGETS, origins, strict=True)}
            ),
        )


ROW_WIDTH = 1 + 3 + 3 * len(TARGETS) + len(_OPTIONAL) + 1  # the name, then a Row
_ORIGIN_COLUMNS = range(1 + 3 + 2 * len(TARGETS), 1 + 3 + 3 * len(TARGETS))
_STATUS_VALUES = frozenset(_STATUS_BY_VALUE)


def _cache_path(digest: str) -> Path | None:
    folder = usable_cache_dir()
    return None if folder is None else folder / f"rules-{digest[:24]}.json"


def _read_cache(path: Path, digest: str) -> RuleSet | None:
    """The validated rule set cached from rule files with this digest, or None (then the
    YAML is validated again). Beyond the digests, the rows are checked for shape, so even
    a forged entry cannot put a value the rules never hold into a report."""
    payload = _read_cache_entry(path, digest)
    if type(payload) is not dict or set(payload) != {"strings", "cells", "titles", "sources"}:
        return None
    sources = _sources_from_payload(payload["sources"])
    if sources is None:
        return None
    strings, titles = payload["strings"], payload["titles"]
    if type(strings) is not list or not set(map(type, strings)) <= {str}:
        return None
    if type(titles) is not dict or not set(map(type, titles.values())) <= {str}:
        return None
    try:
        cells = array("i", base64.b64decode(payload["cells"], validate=True))
    except (TypeError, ValueError):
        return None
    distinct = set(cells)  # one pass over the cells; the bounds from the few distinct
    if len(cells) % ROW_WIDTH or (
        distinct and (min(distinct) < -1 or max(distinct) >= len(strings))
    ):
        return None
    names, families, kinds = (cells[i::ROW_WIDTH] for i in range(3))
    if cells and min(min(names), min(families), min(kinds)) < 0:
        return None  # every rule has a name, a family and a kind
    if len(set(names)) != len(names):
        return None  # and each name is there once
    statuses = set(chain.from_iterable(cells[i::ROW_WIDTH] for i in range(4, 4 + len(TARGETS))))
    if -1 in statuses or not {strings[i] for i in statuses} <= _STATUS_VALUES:
        return None
    if not {strings[i] for i in set(kinds)} <= KINDS:
        return None
    origins = set(chain.from_iterable(cells[i::ROW_WIDTH] for i in _ORIGIN_COLUMNS))
    if not all(_valid_origin(strings[i]) for i in origins if i >= 0):
        return None
    return RuleSet(rules=RuleTable(strings, cells), titles=titles, sources=sources)


def _write_cache(path: Path, digest: str, ruleset: RuleSet) -> None:
    index: dict[str, int] = {}
    cells = array("i")
    for name, rule in ruleset.rules.items():
        for value in (name, *_row(rule)):
            cells.append(-1 if value is None else index.setdefault(value, len(index)))
    payload = {
        "strings": list(index),
        "cells": base64.b64encode(cells.tobytes()).decode("ascii"),
        "titles": dict(ruleset.titles),
        "sources": ruleset.sources.to_payload(),
    }
    _write_cache_entry(path, digest, payload)


def load_rules(folder: Traversable | Path | None = None, use_cache: bool = True) -> RuleSet:
    """Load and validate every family file in `folder` (default: the shipped rules/).

    Parsing and validating thousands of YAML entries takes about a second, so the
    validated result is cached (JSON) under ~/.cache/portcheck (or
    $PORTCHECK_CACHE_DIR), keyed by a hash of the files' bytes and the loader version:
    an edited rule file is always re-validated, and so is a damaged cache.
    """
    folder = data_dir("rules") if folder is None else folder
    files = [(file.name, file.read_bytes()) for file in _rule_files(folder)]
    sources_file = folder / SOURCES_FILE
    sources_text = sources_file.read_bytes() if sources_file.is_file() else b""
    digest = hashlib.sha256(LOADER_VERSION.encode())
    for name, content in [*files, (SOURCES_FILE, sources_text)]:
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    hexdigest = digest.hexdigest()
    cache_path = _cache_path(hexdigest) if use_cache else None
    if cache_path is not None:
        cached = _read_cache(cache_path, hexdigest)
        if cached is not None:
            return replace(cached, digest=hexdigest)
    sources = parse_sources(sources_text.decode("utf-8")) if sources_text else Sources()
    ruleset = replace(_validate_files(files), digest=hexdigest, sources=sources)
    if cache_path is not None:
        _write_cache(cache_path, hexdigest, ruleset)
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
