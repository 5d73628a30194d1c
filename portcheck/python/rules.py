"""The Python knowledge base: rules/python/{packages,apis}.yaml.

Both hold PyRules (a status per Python route, a note and the public source of the fact).
Every file is validated on load: unknown keys, bad statuses, duplicates and entries
without a source are errors that name the file and entry. The Python hazards (ids PY…)
are in the one hazard catalogue, rules/hazards.yaml (portcheck.checks.spec).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from portcheck.checks.spec import catalogue_digest
from portcheck.model import ROUTES, PyRule, RouteVerdicts, Status
from portcheck.resources import data_dir
from portcheck.ruleset import YamlSyntaxError, load_yaml

RULES_SCHEMA = "portcheck.python-rules/1"
RULE_KEYS = frozenset({"name", "match", "status", "note", "source", "replacement"})


class PythonRuleError(ValueError):
    """A file under rules/python is malformed; the message names the file and entry."""


def _verdicts(raw: Any, where: str) -> RouteVerdicts:
    if not isinstance(raw, dict) or set(raw) != {str(r) for r in ROUTES}:
        raise PythonRuleError(f"{where}: status needs exactly {[str(r) for r in ROUTES]}")
    try:
        return RouteVerdicts(**{str(r): Status(raw[str(r)]) for r in ROUTES})
    except ValueError as exc:
        raise PythonRuleError(f"{where}: {exc}") from None


def _load(name: str, schema: str) -> list[Any]:
    try:
        text = data_dir("rules").joinpath("python", name).read_text("utf-8")
        doc = load_yaml(text)
    except (OSError, YamlSyntaxError) as exc:
        raise PythonRuleError(f"python/{name}: cannot read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise PythonRuleError(f"python/{name}: expected schema {schema}")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise PythonRuleError(f"python/{name}: `entries` must be a list")
    return entries


def parse_rules(entries: list[Any], kind: str, file: str) -> list[PyRule]:
    rules: list[PyRule] = []
    seen: set[tuple[str, str]] = set()
    for index, raw in enumerate(entries):
        where = f"python/{file}: entry {index}"
        if not isinstance(raw, dict):
            raise PythonRuleError(f"{where}: must be a mapping")
        where += f" ({raw.get('name')})"
        unknown = set(raw) - RULE_KEYS
        missing = {"name", "status", "note", "source"} - set(raw)
        if unknown or missing:
            raise PythonRuleError(f"{where}: unknown {sorted(unknown)} / missing {sorted(missing)}")
        match = str(raw.get("match", "exact"))
        if match not in ("exact", "prefix"):
            raise PythonRuleError(f"{where}: match must be exact or prefix")
        name = str(raw["name"])
        if kind == "package":
            name = normalise_package(name)  # keeps a trailing `-` of a prefix (`nvidia-`)
        if (name, match) in seen:
            raise PythonRuleError(f"{where}: duplicate name")
        seen.add((name, match))
        if not str(raw["source"]).strip():
            raise PythonRuleError(f"{where}: empty source")
        rules.append(
            PyRule(
                name=name,
                kind=kind,
                match=match,
                status=_verdicts(raw["status"], where),
                note=" ".join(str(raw["note"]).split()),
                source=str(raw["source"]),
                replacement=str(raw["replacement"]) if raw.get("replacement") else None,
            )
        )
    return rules


def normalise_package(name: str) -> str:
    """PEP 503: `Cupy_CUDA12x` -> `cupy-cuda12x`."""
    out = []
    previous_separator = False
    for char in name.strip().lower():
        if char in "-_.":
            if not previous_separator:
                out.append("-")
            previous_separator = True
        else:
            out.append(char)
            previous_separator = False
    return "".join(out)


class PythonRules:
    """Package and API rules with their lookups."""

    def __init__(self, packages: list[PyRule], apis: list[PyRule]) -> None:
        self.packages = {r.name: r for r in packages if r.match == "exact"}
        self.package_prefixes = sorted(
            (r for r in packages if r.match == "prefix"), key=lambda r: -len(r.name)
        )
        self.apis = {r.name: r for r in apis}
        self.api_roots = {r.name.split(".")[0] for r in apis}

    def package(self, name: str) -> PyRule | None:
        """Exact name first, then the longest prefix rule (`nvidia-` for `nvidia-cublas-cu12`)."""
        key = normalise_package(name)
        rule = self.packages.get(key)
        if rule is not None:
            return rule
        for prefix in self.package_prefixes:
            if key.startswith(prefix.name):
                return prefix
        return None

    def api(self, dotted: str) -> PyRule | None:
        """The rule of the longest known prefix of a dotted name."""
        parts = dotted.split(".")
        if parts[0] not in self.api_roots:
            return None
        for end in range(len(parts), 0, -1):
            rule = self.apis.get(".".join(parts[:end]))
            if rule is not None:
                return rule
        return None


@lru_cache(maxsize=1)
def python_rules_digest() -> str:
    """A hash of the shipped Python rule files and of the hazard catalogue, which holds
    the Python hazards (part of the scan cache's key)."""
    digest = hashlib.sha256()
    for name in ("packages.yaml", "apis.yaml"):
        digest.update(data_dir("rules").joinpath("python", name).read_bytes())
    digest.update(catalogue_digest().encode())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def python_rules() -> PythonRules:
    """The shipped Python rules, validated once per process."""
    return PythonRules(
        parse_rules(_load("packages.yaml", RULES_SCHEMA), "package", "packages.yaml"),
        parse_rules(_load("apis.yaml", RULES_SCHEMA), "api", "apis.yaml"),
    )
