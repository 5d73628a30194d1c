"""A project's own defaults for portcheck: `[tool.portcheck]` in its pyproject.toml, or
a `.portcheck.toml` at its top.

Owns: finding and reading that table for a scanned folder and checking it. The command
line wins over it; it wins over portcheck's defaults. Keys:

    rocm = "6.2"                 # the ROCm release the team builds with
    gpu = "gfx942"               # or a product alias: "mi300x", "rx7900xtx"
    targets = ["hip", "scale"]   # or "hip,scale"
    exclude = ["third_party/"]   # added to --exclude
    ignore = ["PC005"]           # added to --ignore

A key it does not know, a value of the wrong type, or a `.portcheck.toml` that does not parse
is an error naming the file and the key (the user meant something by it); a pyproject.toml
that does not parse has no settings here (the scan reports it as a broken manifest). Only
the scanned folder's own files are read: a single file given as PATH has no defaults.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

CONFIG_FILE = ".portcheck.toml"
PYPROJECT = "pyproject.toml"
MAX_CONFIG_BYTES = 1024 * 1024


class ConfigError(ValueError):
    """The project's portcheck settings cannot be used; the message names file and key."""


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """What a project's settings say; None or () where they say nothing."""

    source: str = ""  # the file they came from ("" when there was none)
    rocm: str | None = None
    gpu: str | None = None
    targets: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def load_project_config(path: str | os.PathLike[str]) -> ProjectConfig:
    """The settings of the project at `path` (a folder): `.portcheck.toml` if it has one,
    else `[tool.portcheck]` in its pyproject.toml, else none."""
    folder = Path(path)
    if not folder.is_dir():
        return ProjectConfig()
    own = folder / CONFIG_FILE
    if _regular_file(own):
        return _check(_read(own), CONFIG_FILE)
    pyproject = folder / PYPROJECT
    if _regular_file(pyproject):
        try:
            document = _read(pyproject)
        except ConfigError:
            # A broken pyproject.toml is the project's problem, not a portcheck setting: the
            # scan reads it as a manifest and says what is wrong with it there.
            return ProjectConfig()
        tool = document.get("tool", {})
        table = tool.get("portcheck") if isinstance(tool, dict) else None
        if table is None:
            return ProjectConfig()
        if not isinstance(table, dict):
            raise ConfigError(f"{PYPROJECT}: [tool.portcheck] must be a table")
        return _check(table, f"{PYPROJECT} [tool.portcheck]")
    return ProjectConfig()


def _regular_file(path: Path) -> bool:
    # A link could lead out of the project, a FIFO would block: only the project's own file.
    return path.is_file() and not path.is_symlink()


def _read(path: Path) -> dict[str, object]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path.name}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path.name}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path.name}: not valid TOML ({exc})") from None


_KEYS = ("rocm", "gpu", "targets", "exclude", "ignore")


def _check(table: dict[str, object], where: str) -> ProjectConfig:
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        known = ", ".join(_KEYS)
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {known})")
    rocm = table.get("rocm")
    if isinstance(rocm, (int, float)) and not isinstance(rocm, bool):
        rocm = str(rocm)  # `rocm = 6.2` is what people write
    return ProjectConfig(
        source=where,
        rocm=_text(rocm, where, "rocm"),
        gpu=_text(table.get("gpu"), where, "gpu"),
        targets=_names(table["targets"], where, "targets") if "targets" in table else None,
        exclude=_names(table.get("exclude", ()), where, "exclude"),
        ignore=_names(table.get("ignore", ()), where, "ignore"),
    )


def _text(value: object, where: str, key: str) -> str | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return value.strip() if isinstance(value, str) else None
    raise ConfigError(f"{where}: {key} must be a non-empty string")


def _names(value: object, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: {key} must be a string or a list of strings")
