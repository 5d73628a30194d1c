"""What a scan is configured by, as one value checked once.

Owns: `ScanOptions` (targets, excludes, ignored hazards, jobs, cache, front end, file size
and time limits) and `ScanError`, the one-line message for a setting that cannot be used.
Everything downstream (the per-file scanner, the runner, the cache keys) reads the options
from here instead of taking loose keyword lists.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from portcheck.checks import resolve_ignores
from portcheck.config import ConfigError, load_project_config
from portcheck.discover import MAX_FILE_BYTES, BadPattern, check_excludes
from portcheck.gpus import UnknownGpuError, require_gpu
from portcheck.model import TARGETS, Target
from portcheck.ruleset import default_rules
from portcheck.target import TargetProfile

FRONT_ENDS = ("auto", "deep", "tree-sitter")
ANY_TARGET = TargetProfile()  # the newest ROCm, any AMD GPU
DEFAULT_FILE_TIMEOUT = 60.0


class ScanError(Exception):
    """The scan cannot start (missing path, bad option). The message is for the user."""


def parse_targets(targets: str | Sequence[str] | None) -> tuple[Target, ...]:
    """`"hip,zluda"` or `["hip"]` -> targets; raises ScanError naming a bad one."""
    if targets is None:
        return TARGETS
    names = targets.split(",") if isinstance(targets, str) else list(targets)
    chosen: list[Target] = []
    for name in (n.strip().lower() for n in names):
        if not name:
            continue
        try:
            target = Target(name)
        except ValueError:
            valid = ", ".join(t.value for t in TARGETS)
            raise ScanError(f"unknown target {name!r} (choose from {valid})") from None
        if target not in chosen:
            chosen.append(target)
    if not chosen:
        raise ScanError("no target given")
    return tuple(chosen)


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """A scan's settings, validated. Build it with `ScanOptions.of(...)` from what a user
    typed (names, globs, ids), or directly from values already checked.

    `front_end`: "auto" runs libclang where it pays, "deep" on every source file,
    "tree-sitter" never. `file_timeout`: seconds per file (None: no limit); a file over it
    is skipped with the reason "timeout"."""

    targets: tuple[Target, ...] = TARGETS
    exclude: tuple[str, ...] = ()
    ignore: frozenset[str] = frozenset()  # hazard slugs not to check
    jobs: int | None = None  # worker processes; None: one per CPU
    cache: bool = True
    front_end: str = "auto"
    max_file_bytes: int = MAX_FILE_BYTES
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT
    target: TargetProfile = ANY_TARGET  # the ROCm release and GPU judged for
    excerpts: bool = True  # read the source around each finding (only HTML shows it)

    @classmethod
    def of(
        cls,
        *,
        targets: str | Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        ignore: Sequence[str] = (),
        jobs: int | None = None,
        cache: bool = True,
        front_end: str = "auto",
        max_file_bytes: int = MAX_FILE_BYTES,
        file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
        rocm: str | None = None,
        gpu: str | None = None,
        excerpts: bool = True,
    ) -> ScanOptions:
        """Options from user input; raises ScanError with one line naming what is wrong."""
        try:
            ignored = resolve_ignores(ignore)
        except ValueError as exc:
            raise ScanError(str(exc)) from None
        try:
            check_excludes(exclude)
        except BadPattern as exc:
            raise ScanError(str(exc)) from None
        if front_end not in FRONT_ENDS:
            choices = ", ".join(FRONT_ENDS)
            raise ScanError(f"unknown front end {front_end!r} (choose from {choices})")
        return cls(
            targets=parse_targets(targets),
            exclude=tuple(exclude),
            ignore=ignored,
            jobs=jobs,
            cache=cache,
            front_end=front_end,
            max_file_bytes=max_file_bytes,
            file_timeout=file_timeout or None,
            target=target_profile(rocm, gpu),
            excerpts=excerpts,
        )

    @classmethod
    def for_project(
        cls,
        path: str | os.PathLike[str],
        *,
        targets: str | Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        ignore: Sequence[str] = (),
        rocm: str | None = None,
        gpu: str | None = None,
        **settings: Any,
    ) -> ScanOptions:
        """Options for scanning the project at `path`: what the caller gives, over the
        project's own defaults (`.portcheck.toml` or `[tool.portcheck]`, see
        portcheck.config), over portcheck's. Excludes and ignores add up; targets given
        replace the project's. Raises ScanError naming a bad setting and where it is."""
        try:
            config = load_project_config(path)
        except ConfigError as exc:
            raise ScanError(str(exc)) from None
        try:
            return cls.of(
                targets=targets if targets is not None else config.targets,
                exclude=(*config.exclude, *exclude),
                ignore=(*config.ignore, *ignore),
                rocm=rocm if rocm is not None else config.rocm,
                gpu=gpu if gpu is not None else config.gpu,
                **settings,
            )
        except ScanError as exc:
            if config.source:
                raise ScanError(f"{exc} (settings from {config.source} included)") from None
            raise


def target_profile(rocm: str | None, gpu: str | None) -> TargetProfile:
    """The target a user named (`--rocm 6.2 --gpu mi300x`); ScanError for an unknown GPU or
    a release that is not a version number."""
    profile = None
    if gpu is not None:
        try:
            profile = require_gpu(gpu)
        except UnknownGpuError as exc:
            raise ScanError(str(exc)) from None
    return TargetProfile(rocm=parse_rocm(rocm), gpu=profile)


def parse_rocm(version: str | None) -> str | None:
    """`"6.2"`, `"6.2.1"` -> the release, checked against what the rule set tells apart;
    None stays None (the newest the rule set knows)."""
    if version is None:
        return None
    try:
        return str(default_rules().rocm_release(version.strip()))
    except ValueError as exc:
        raise ScanError(f"--rocm {version!r}: {exc}") from None
