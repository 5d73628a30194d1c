"""Dependency manifests: requirements files, pyproject.toml, setup.cfg, environment.yml
and setup.py's install_requires (read from its syntax tree by portcheck.python.code).

Each parser gives Requirements (name, the text as written, 1-based line) and the
package index URLs the manifest points at; nothing is installed or resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from portcheck.model import Language

# PEP 508: a name, then extras / version / marker / URL. Conda specs (`pytorch-cuda=12.1`,
# `nvidia::cuda-toolkit`) share the name shape after an optional `channel::`.
NAME = re.compile(r"^\s*(?:[\w.-]+::)?([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
EXTRAS = re.compile(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*\[([^\]]*)\]")
EGG = re.compile(r"#egg=([A-Za-z0-9._-]+)")
INDEX_OPTION = re.compile(
    r"^\s*(?:-i|--index-url|--extra-index-url|-f|--find-links)(?:\s*=\s*|\s+)(\S+)"
)
URL_IN_TEXT = re.compile(r"https?://[^\s'\"]+")


@dataclass
class Requirement:
    name: str
    spec: str
    line: int
    # Needed only to build the package ([build-system] requires, setup_requires): tooling
    # such as setuptools or wheel is not a GPU dependency and is left out unless known.
    build: bool = False


@dataclass
class Manifest:
    requirements: list[Requirement] = field(default_factory=list)
    indexes: list[tuple[str, int]] = field(default_factory=list)  # (url, line)
    errors: list[str] = field(default_factory=list)


def requirement(text: str, line: int) -> Requirement | None:
    text = text.strip()
    if not text:
        return None
    egg = EGG.search(text)
    if egg:
        return Requirement(egg.group(1), text, line)
    if "://" in text.split("@")[0] or text.startswith((".", "/")):
        return None  # a bare URL or a local path: no name to judge
    match = NAME.match(text)
    return Requirement(match.group(1), text, line) if match else None


def parse_requirements(text: str) -> Manifest:
    """requirements.txt / constraints.txt, pip's format: comments, `\\` continuations,
    options (`-r`, `--extra-index-url`, …) and requirement lines."""
    manifest = Manifest()
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        line = re.sub(r"(^|\s)#.*", "", raw)
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if not line.strip():
            continue
        index = INDEX_OPTION.match(line)
        if index:
            manifest.indexes.append((index.group(1), start))
            continue
        if line.lstrip().startswith("-e ") or line.lstrip().startswith("--editable"):
            found = requirement(line.split(None, 1)[1] if " " in line.strip() else "", start)
            if found:
                manifest.requirements.append(found)
            continue
        if line.lstrip().startswith("-"):
            continue  # -r other.txt (scanned on its own), -c, --hash, …
        found = requirement(line.split(" --")[0], start)
        if found:
            manifest.requirements.append(found)
    return manifest


# pip options whose next argument is a value, not a requirement.
PIP_VALUE_OPTIONS = frozenset(
    {
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--trusted-host",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "-C",
        "--config-settings",
        "--global-option",
        "--build-option",
        "--src",
        "--cache-dir",
        "--progress-bar",
        "--log",
        "--proxy",
        "--retries",
        "--timeout",
        "--exists-action",
        "--upgrade-strategy",
        "--only-binary",
        "--no-binary",
        "--report",
        "--python",
    }
)
PIP_INDEX_OPTIONS = frozenset({"-i", "--index-url", "--extra-index-url", "-f", "--find-links"})


def parse_pip_arguments(text: str, line: int) -> Manifest:
    """The arguments of one `pip install` command (a notebook's `!pip install …` line):
    requirements and package indexes, all at `line`."""
    import shlex

    manifest = Manifest()
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        words = text.split()
    pending: str | None = None  # an option waiting for its value
    for word in words:
        if pending is not None:
            if pending in PIP_INDEX_OPTIONS:
                manifest.indexes.append((word, line))
            elif pending in ("-e", "--editable"):
                found = requirement(word, line)
                if found:
                    manifest.requirements.append(found)
            pending = None
            continue
        if word.startswith("-"):
            option, has_value, value = word.partition("=")
            if option in PIP_INDEX_OPTIONS and has_value:
                manifest.indexes.append((value, line))
            elif option in PIP_INDEX_OPTIONS | PIP_VALUE_OPTIONS | {"-e", "--editable"}:
                pending = None if has_value else option
            continue
        if word in ("&&", ";", "|", ">", "2>&1") or "$" in word[:1]:
            break  # the rest is another command
        found = requirement(word, line)
        if found:
            manifest.requirements.append(found)
    return manifest


class _LineFinder:
    """Line numbers for values of a parsed document (TOML/INI/YAML give none): the first
    line at or after the previous hit that contains the text."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.position = 0

    def line_of(self, needle: str) -> int:
        for start in (self.position, 0):
            for i in range(start, len(self.lines)):
                if needle in self.lines[i]:
                    self.position = i
                    return i + 1
        return 1


def _add_all(manifest: Manifest, finder: _LineFinder, items: Any, build: bool = False) -> None:
    if not isinstance(items, list):
        return
    for item in items:
        if isinstance(item, str):
            found = requirement(item, finder.line_of(item.strip()))
            if found:
                found.build = build
                manifest.requirements.append(found)


def _table(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def parse_pyproject(text: str) -> Manifest:
    manifest = Manifest()
    import tomllib  # here: most scans read no TOML (~15 ms per worker process)

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        manifest.errors.append(f"not valid TOML: {exc}")
        return manifest
    finder = _LineFinder(text)
    project = _table(doc, "project")
    _add_all(manifest, finder, project.get("dependencies"))
    optional = project.get("optional-dependencies")
    if isinstance(optional, dict):
        for items in optional.values():
            _add_all(manifest, finder, items)
    groups = doc.get("dependency-groups")
    if isinstance(groups, dict):
        for items in groups.values():
            _add_all(manifest, finder, items)
    build = _table(doc, "build-system")
    _add_all(manifest, finder, build.get("requires"), build=True)
    poetry = _table(_table(doc, "tool"), "poetry")
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    poetry_groups = poetry.get("group")
    if isinstance(poetry_groups, dict):
        tables += [g.get("dependencies") for g in poetry_groups.values() if isinstance(g, dict)]
    for table in tables:
        if isinstance(table, dict):
            for name in table:
                if name.lower() != "python":
                    manifest.requirements.append(Requirement(name, name, finder.line_of(f"{name}")))
    # Package indexes (uv's [[tool.uv.index]], poetry's [[tool.poetry.source]], …): every URL
    # is offered; only those that point at a CUDA build index are reported.
    for match in URL_IN_TEXT.finditer(text):
        manifest.indexes.append((match.group(), text.count("\n", 0, match.start()) + 1))
    return manifest


def parse_setup_cfg(text: str) -> Manifest:
    manifest = Manifest()
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        manifest.errors.append(f"not a valid setup.cfg: {exc.message}")
        return manifest
    finder = _LineFinder(text)
    values: list[tuple[str, bool]] = []  # (requirements, needed only to build)
    if parser.has_option("options", "install_requires"):
        values.append((parser.get("options", "install_requires"), False))
    if parser.has_option("options", "setup_requires"):
        values.append((parser.get("options", "setup_requires"), True))
    if parser.has_section("options.extras_require"):
        values += [(v, False) for _, v in parser.items("options.extras_require")]
    for value, build in values:
        for item in value.replace(";", "\n;").splitlines():
            item = item.strip()
            if item and not item.startswith(";"):
                found = requirement(item, finder.line_of(item))
                if found:
                    found.build = build
                    manifest.requirements.append(found)
    return manifest


def parse_conda(text: str) -> Manifest:
    """environment.yml: conda specs, a nested `pip:` list, and channels."""
    manifest = Manifest()
    import yaml  # here: PyYAML costs ~60 ms to import, and few trees have conda files

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        manifest.errors.append(f"not valid YAML: {exc}")
        return manifest
    if not isinstance(doc, dict):
        manifest.errors.append("not a conda environment file (no `dependencies:` mapping)")
        return manifest
    finder = _LineFinder(text)
    for item in doc.get("dependencies") or []:
        if isinstance(item, str):
            found = requirement(item, finder.line_of(item.strip()))
            if found and found.name.lower() not in CONDA_META:
                manifest.requirements.append(found)
        elif isinstance(item, dict) and isinstance(item.get("pip"), list):
            for pip_item in item["pip"]:
                if not isinstance(pip_item, str):
                    continue
                index = INDEX_OPTION.match(pip_item)
                if index:
                    manifest.indexes.append((index.group(1), finder.line_of(pip_item.strip())))
                    continue
                found = requirement(pip_item, finder.line_of(pip_item.strip()))
                if found:
                    manifest.requirements.append(found)
    for channel in doc.get("channels") or []:
        if isinstance(channel, str):
            manifest.indexes.append((f"conda:{channel}", finder.line_of(channel)))
    return manifest


CONDA_META = {"python", "pip"}  # the environment's interpreter and installer, not libraries

PARSERS = {
    Language.REQUIREMENTS: parse_requirements,
    Language.PYPROJECT: parse_pyproject,
    Language.SETUP_CFG: parse_setup_cfg,
    Language.CONDA: parse_conda,
}


# `download.pytorch.org/whl/cu121`, `torch==2.3.1+cu121`, conda's `nvidia` channel.
CUDA_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(cu\d+)")
CUDA_LOCAL_VERSION = re.compile(r"\+(cu\d{2,3})\b")
