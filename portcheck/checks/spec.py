"""The hazard catalogue (rules/hazards.yaml): one entry per hazard, CUDA and Python alike.

A hazard's `language` says what code it is about, and so which routes its verdicts are
given for: a CUDA hazard (ids PC…) is judged on the targets HIP, ZLUDA and SCALE and its
findings are the report's findings; a Python hazard (ids PY…) is judged on the Python
routes, PyTorch on ROCm and DirectML, and its findings are the Python section's. The two
route sets are different questions, so a spec keeps the verdict type of its own
(`Verdicts` or `RouteVerdicts`) rather than forcing one into the other. Everything else —
id, slug, severity, help, example, instead, fix — is the same for both, validated once,
at load, with errors that name the entry and key.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from portcheck.model import (
    ROUTES,
    TARGETS,
    Language,
    RouteVerdicts,
    Severity,
    Status,
    Verdicts,
)
from portcheck.resources import data_dir
from portcheck.ruleset import YamlSyntaxError, load_yaml

CATALOGUE_FILE = "hazards.yaml"
CATALOGUE_SCHEMA = "portcheck.hazards/1"
HELP_PAGES = "docs/rules"  # where the generated help pages live in a checkout
# Where the help pages are published, if anywhere: an absolute http(s) address of the folder
# that holds docs/rules/<slug>.md (e.g. the repository's docs/rules folder on a code host).
# A report links a hazard's help only to an address that works from anywhere; without one it
# carries the help text itself and names `portcheck explain ID`.
HELP_BASE_URL_ENV = "PORTCHECK_HELP_BASE_URL"
ABSOLUTE_URL = re.compile(r"https?://[^\s/?#]+\.[^\s/?#]+(?:/[^\s?#]*)?")


def help_base_url() -> str:
    """The published help pages' folder (PORTCHECK_HELP_BASE_URL), or "" when it is unset or
    not an absolute http(s) address."""
    value = os.environ.get(HELP_BASE_URL_ENV, "").strip().rstrip("/")
    return value if ABSOLUTE_URL.fullmatch(value) else ""


REQUIRED_KEYS = frozenset(
    {
        "id",
        "slug",
        "severity",
        "since",
        "summary",
        "targets",
        "target_notes",
        "why",
        "example",
        "instead",
        "fix",
    }
)
OPTIONAL_KEYS = frozenset({"language", "example_file", "source", "not_applicable"})

# The routes each kind of hazard is judged on, and the id each kind's hazards carry.
ROUTES_OF: dict[Language, tuple[str, ...]] = {
    Language.CUDA: tuple(str(t) for t in TARGETS),
    Language.PYTHON: tuple(str(r) for r in ROUTES),
}
ID_PATTERN = {Language.CUDA: re.compile(r"PC\d{3}"), Language.PYTHON: re.compile(r"PY\d{3}")}
DEFAULT_EXAMPLE_FILE = {Language.CUDA: "example.cu", Language.PYTHON: "example.py"}
ROUTE_TITLE = {
    "hip": "HIP",
    "zluda": "ZLUDA",
    "scale": "SCALE",
    "rocm": "PyTorch on ROCm",
    "directml": "DirectML",
}


class CatalogueError(ValueError):
    """rules/hazards.yaml is malformed; the message names the entry and key."""


@dataclass(frozen=True, slots=True)
class HazardSpec:
    """One hazard: what it is, its verdict per route, and its help page's content."""

    id: str
    slug: str
    language: Language  # CUDA or PYTHON: the code it is about, and so its routes
    severity: Severity
    since: str
    summary: str
    targets: Verdicts | RouteVerdicts  # the verdict for code that has the hazard
    target_notes: Mapping[str, str]  # route -> why that verdict
    why: str
    example: str  # must produce the hazard (a test runs it) ...
    instead: str  # ... and this must not
    fix: str
    example_file: str  # the file name the example is scanned as
    source: str = ""  # where the facts behind the verdicts come from, when not obvious
    # Routes that cannot serve a project with this hazard at all (route -> why): a Python
    # route gets no score then (a CUDA extension on DirectML), only the reason.
    not_applicable: Mapping[str, str] = field(default_factory=dict)

    def blocks(self, route: str) -> str | None:
        """Why `route` cannot serve a project that has this hazard, or None."""
        return self.not_applicable.get(route)

    @property
    def help_url(self) -> str:
        """The help page's absolute address, or "" when the pages are not published."""
        base = help_base_url()
        return f"{base}/{self.slug}.md" if base else ""

    @property
    def help_command(self) -> str:
        """The command that prints the help page, wherever portcheck is installed."""
        return f"portcheck explain {self.id}"

    @property
    def help(self) -> str:
        """Where to read more: the page's address when published, else the command."""
        return self.help_url or self.help_command

    @property
    def routes(self) -> tuple[str, ...]:
        """The routes its verdicts are for, in report order."""
        return ROUTES_OF[self.language]

    @property
    def cuda_targets(self) -> Verdicts:
        """A CUDA hazard's verdicts on HIP, ZLUDA and SCALE."""
        if not isinstance(self.targets, Verdicts):
            raise TypeError(f"{self.slug} is a Python hazard: it has no CUDA target verdicts")
        return self.targets

    @property
    def python_targets(self) -> RouteVerdicts:
        """A Python hazard's verdicts on the Python routes."""
        if not isinstance(self.targets, RouteVerdicts):
            raise TypeError(f"{self.slug} is a CUDA hazard: it has no Python route verdicts")
        return self.targets


def _mapping(raw: Any, key: str, routes: tuple[str, ...], where: str) -> dict[str, str]:
    value = raw.get(key)
    if not isinstance(value, dict) or set(map(str, value)) != set(routes):
        keys = sorted(map(str, value)) if isinstance(value, dict) else value
        raise CatalogueError(f"{where}: key {key!r} needs exactly {list(routes)}, has {keys}")
    return {str(k): str(v) for k, v in value.items()}


def parse_entry(raw: Any, index: int, file: str = CATALOGUE_FILE) -> HazardSpec:
    """One catalogue entry, validated."""
    where = f"{file}: entry {index}"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: must be a mapping")
    where += f" ({raw.get('slug')})"
    unknown = set(raw) - REQUIRED_KEYS - OPTIONAL_KEYS
    missing = REQUIRED_KEYS - set(raw)
    if unknown or missing:
        raise CatalogueError(f"{where}: unknown {sorted(unknown)} / missing {sorted(missing)} keys")
    try:
        language = Language(str(raw.get("language", "cuda")))
        if language not in ROUTES_OF:
            raise ValueError(language)
    except ValueError:
        raise CatalogueError(
            f"{where}: key 'language' must be one of {[str(k) for k in ROUTES_OF]}"
        ) from None
    hazard_id = str(raw["id"])
    if not ID_PATTERN[language].fullmatch(hazard_id):
        raise CatalogueError(
            f"{where}: key 'id': {hazard_id!r} is not a {language} hazard id "
            f"({ID_PATTERN[language].pattern})"
        )
    try:
        severity = Severity[str(raw["severity"]).upper()]
    except KeyError:
        raise CatalogueError(f"{where}: key 'severity': bad value {raw['severity']!r}") from None
    routes = ROUTES_OF[language]
    try:
        statuses = {r: Status(v) for r, v in _mapping(raw, "targets", routes, where).items()}
    except ValueError as exc:
        raise CatalogueError(f"{where}: key 'targets': {exc}") from None
    targets: Verdicts | RouteVerdicts = (
        Verdicts(**statuses) if language is Language.CUDA else RouteVerdicts(**statuses)
    )
    return HazardSpec(
        id=hazard_id,
        slug=str(raw["slug"]),
        language=language,
        severity=severity,
        since=str(raw["since"]),
        summary=str(raw["summary"]),
        targets=targets,
        target_notes=_mapping(raw, "target_notes", routes, where),
        why=str(raw["why"]).strip(),
        example=str(raw["example"]),
        instead=str(raw["instead"]),
        fix=str(raw["fix"]),
        example_file=str(raw.get("example_file", DEFAULT_EXAMPLE_FILE[language])),
        source=str(raw.get("source", "")).strip(),
        not_applicable=_not_applicable(raw, routes, where),
    )


def _not_applicable(raw: Any, routes: tuple[str, ...], where: str) -> dict[str, str]:
    value = raw.get("not_applicable", {})
    if not isinstance(value, dict) or not set(map(str, value)) <= set(routes):
        raise CatalogueError(
            f"{where}: key 'not_applicable' maps some of {list(routes)} to reasons"
        )
    return {str(route): " ".join(str(why).split()) for route, why in value.items()}


def parse_catalogue(doc: Any, file: str = CATALOGUE_FILE) -> dict[str, HazardSpec]:
    """The catalogue document -> specs by slug. Slugs and ids are unique across CUDA and
    Python hazards (they share `--ignore`, suppressions and docs/rules/), and a retired id
    is never reused."""
    if not isinstance(doc, dict) or doc.get("schema") != CATALOGUE_SCHEMA:
        raise CatalogueError(f"{file}: expected schema {CATALOGUE_SCHEMA}")
    unknown = set(doc) - {"schema", "retired", "hazards"}
    if unknown:
        raise CatalogueError(f"{file}: unknown top-level keys {sorted(unknown)}")
    entries = doc.get("hazards") or []
    if not isinstance(entries, list):
        raise CatalogueError(f"{file}: key 'hazards' must be a list")
    by_slug: dict[str, HazardSpec] = {}
    ids: set[str] = set(doc.get("retired") or [])
    for index, raw in enumerate(entries):
        spec = parse_entry(raw, index, file)
        if spec.slug in by_slug or spec.id in ids:
            raise CatalogueError(
                f"{file}: entry {index}: duplicate or retired slug or id ({spec.slug}, {spec.id})"
            )
        by_slug[spec.slug] = spec
        ids.add(spec.id)
    return by_slug


def _catalogue_text() -> str:
    return data_dir("rules").joinpath(CATALOGUE_FILE).read_text("utf-8")


@lru_cache(maxsize=1)
def catalogue() -> dict[str, HazardSpec]:
    """Every hazard, CUDA and Python, by slug; validated once per process."""
    try:
        doc = load_yaml(_catalogue_text())
    except YamlSyntaxError as exc:
        raise CatalogueError(f"{CATALOGUE_FILE}: not valid YAML: {exc}") from None
    return parse_catalogue(doc)


def hazards_of(language: Language) -> dict[str, HazardSpec]:
    """The catalogue's CUDA or Python hazards, by slug."""
    return {slug: spec for slug, spec in catalogue().items() if spec.language is language}


def catalogue_digest() -> str:
    """A hash of the shipped catalogue (what a finding's id, severity and verdicts come from)
    and of where its help is published (a finding's help_url)."""
    return _catalogue_digest(help_base_url())


@lru_cache(maxsize=4)
def _catalogue_digest(help_base: str) -> str:
    return hashlib.sha256(f"{help_base}\0{_catalogue_text()}".encode()).hexdigest()


def find_spec(key: str) -> HazardSpec | None:
    """A hazard by id (`PC005`, any case) or slug (`launch-bounds`); None if none."""
    specs = catalogue()
    wanted = key.strip()
    if wanted in specs:
        return specs[wanted]
    return next((s for s in specs.values() if s.id.lower() == wanted.lower()), None)


def resolve_ignores(values: Iterable[str]) -> frozenset[str]:
    """`--ignore` values (ids like PC001 or PY001, or slugs) -> slugs; raises ValueError
    on unknown."""
    specs = catalogue()
    by_id = {spec.id.lower(): slug for slug, spec in specs.items()}
    slugs = set()
    for value in values:
        for item in (v.strip() for v in value.split(",")):
            if not item:
                continue
            if item in specs:
                slugs.add(item)
            elif item.lower() in by_id:
                slugs.add(by_id[item.lower()])
            else:
                raise ValueError(
                    f"unknown hazard {item!r} (use an id such as PC001 or PY001, or a slug)"
                )
    return frozenset(slugs)
