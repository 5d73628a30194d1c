"""ROCm releases: reading a user's version string, and a rule's HIP status in one release.

Owns: `RocmRelease` (a parsed, comparable ROCm version), `parse_rocm_version` (what `--rocm`
accepts) and `hip_status` (the HIP verdict of one rule in one release, with the reason).
No I/O: the rule set (ruleset.py) says which releases it knows and memoises the statuses.

The rule set dates every HIP equivalent with the ROCm release that added, deprecated and
removed it (`ApiRule.hip_added` / `hip_deprecated` / `hip_removed`, built by
tools/build_rules.py from HIPIFY's tables and checked against HIP's headers at release
tags). An entry's `status.hip` is its status in the newest release the rule set knows; in
an older release:

* added after it -> `unsupported`, "added in ROCm 6.2";
* removed at or before it -> `unsupported`, "removed in ROCm 7.0";
* otherwise the entry's own status; an entry whose newest status is `unsupported` only
  because its HIP equivalent was removed later is `supported` (`partial` if HIPIFY marks
  it experimental) while it still exists;
* deprecated at or before it -> unchanged status with the note "deprecated in ROCm 5.0":
  a deprecated API still builds and runs (with a compiler warning), which is what
  `supported` means; `partial` is kept for code that needs changes or behaves differently.

A release given without a patch level ("6.2") means its first release (6.2.0): an API
added in 6.2.1 is reported as not in "6.2".
"""

from __future__ import annotations

import re
from typing import NamedTuple

from portcheck.model import ApiRule, Status

_VERSION = re.compile(r"(?:rocm[- ]?)?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?", re.IGNORECASE)


class RocmRelease(NamedTuple):
    """A ROCm release, ordered by (major, minor, patch). Shown as "6.2" or "6.2.1"."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}"
        return f"{text}.{self.patch}" if self.patch else text


def parse_rocm_version(text: str) -> RocmRelease:
    """`"6.2"`, `"6.2.1"`, `"7.0"` (also `"rocm-6.2.0"`) -> RocmRelease; anything else is
    a ValueError whose message says what was expected."""
    match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"invalid ROCm version {text!r}: expected MAJOR.MINOR or MAJOR.MINOR.PATCH, "
            "e.g. 6.2 or 6.2.1"
        )
    major, minor, patch = match.groups()
    return RocmRelease(int(major), int(minor), int(patch or 0))


class HipStatus(NamedTuple):
    """A rule's HIP status in one release, and why it differs from the plain verdict."""

    status: Status
    message: str | None = None


def _release(value: str | None) -> RocmRelease | None:
    return None if value is None else parse_rocm_version(value)


def hip_status(rule: ApiRule, release: RocmRelease) -> HipStatus:
    """The HIP status of `rule` in ROCm `release` (see the module docstring)."""
    status = rule.status.hip
    if rule.hip is None:
        return HipStatus(status)
    added = _release(rule.hip_added)
    if added is not None and release < added:
        return HipStatus(Status.UNSUPPORTED, f"added in ROCm {added}")
    removed = _release(rule.hip_removed)
    if removed is not None:
        if release >= removed:
            return HipStatus(Status.UNSUPPORTED, f"removed in ROCm {removed}")
        if status is Status.UNSUPPORTED:
            status = Status.PARTIAL if rule.experimental else Status.SUPPORTED
    notes = []
    deprecated = _release(rule.hip_deprecated)
    if deprecated is not None and release >= deprecated:
        notes.append(f"deprecated in ROCm {deprecated}")
    if removed is not None:
        notes.append(f"removed in ROCm {removed}")
    if rule.experimental:
        notes.append("experimental in HIP")
    return HipStatus(status, "; ".join(notes) or None)
