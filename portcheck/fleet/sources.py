"""The repositories of a fleet: reading LIST into entries, each a local folder or a git
URL with an optional ref, with a file name of its own.

Owns: what a LIST line may be (a path, `https://…`, `ssh://…`, `git://…`, `file://…` or
`user@host:path`, each URL with an optional `@REF`), the one-line reason a line cannot be
used (it is then a failed repository, not a reason to stop), and the name each entry's
report gets in the output folder (readable, unique, stable across runs of one LIST).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

GIT_SCHEMES = ("https", "http", "ssh", "git", "file")
SCP_LIKE = re.compile(r"^(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>[^/].*)$")
SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
# What `git check-ref-format` refuses, in short: a ref names a branch, tag or commit.
BAD_REF = re.compile(r"(^[-/.]|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|/$|\.lock$|//)")
NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._+@-]+")
FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
MAX_NAME = 96


class ListError(Exception):
    """LIST cannot be read at all (missing, a folder, unreadable). The message is one line."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of LIST. `kind` is "git", "local" or "invalid" (then `problem` says why);
    `location` is the URL (without the ref) or the absolute folder; `name` is the file
    name of its report (without .json)."""

    line: int
    text: str
    kind: str
    location: str
    ref: str | None = None
    name: str = ""
    problem: str = ""

    @property
    def source(self) -> str:
        """The entry as a user wrote it, for reports: the URL with its ref, or the path."""
        if self.kind == "invalid":
            return self.text
        if self.kind == "git" and self.ref:
            return f"{self.location}@{self.ref}"
        return self.location

    @property
    def pinned_commit(self) -> str | None:
        """The ref when it is a full commit id (no need to ask the remote)."""
        return self.ref if self.ref and FULL_COMMIT.match(self.ref) else None


def read_list(path: str | os.PathLike[str]) -> list[Entry]:
    """The entries of LIST, in order, each with a unique name; blank lines and `#`
    comments are skipped, a line named twice is kept once. Relative paths are read from
    LIST's folder. A line that cannot be used is an "invalid" entry with the reason;
    ListError when LIST itself cannot be read."""
    list_path = Path(path)
    try:
        data = list_path.read_bytes()
    except FileNotFoundError:
        raise ListError(f"{list_path}: no such file") from None
    except IsADirectoryError:
        raise ListError(f"{list_path}: is a folder, not a list of repositories") from None
    except OSError as exc:
        raise ListError(f"{list_path}: {exc.strerror or exc}") from None
    base = list_path.resolve().parent
    entries: list[Entry] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            entries.append(Entry(number, "", "invalid", "", problem="not UTF-8 text"))
            continue
        if not text or text.startswith("#"):
            continue
        entry = parse_line(number, text, base)
        key = entry.source if entry.kind != "invalid" else f"\0{number}"
        if key in seen:
            continue
        seen.add(key)
        entries.append(entry)
    return _named(entries)


def parse_line(number: int, text: str, base: Path) -> Entry:
    """One non-blank line: a git URL (with an optional @REF) or a local path."""
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return Entry(number, text, "invalid", "", problem="control character in the line")
    scheme = SCHEME.match(text)
    scp = SCP_LIKE.match(text)
    if scheme is None and scp is None:
        folder = Path(text).expanduser()
        folder = folder if folder.is_absolute() else base / folder
        return Entry(number, text, "local", os.path.normpath(folder))
    url, ref = split_ref(text, path_start=_path_start(text, scheme is not None))
    if scheme is not None:
        problem = _url_problem(url, scheme.group("scheme").lower())
    else:
        problem = "" if not url.startswith("-") else "a URL cannot start with '-'"
    if not problem and ref is not None and (not ref or BAD_REF.search(ref)):
        problem = f"not a branch, tag or commit: {ref!r}"
    if problem:
        return Entry(number, text, "invalid", url, ref, problem=problem)
    return Entry(number, text, "git", url, ref)


def _path_start(text: str, has_scheme: bool) -> int:
    """Where the repository path begins: after `scheme://host` or after `host:`."""
    if has_scheme:
        after = text.index("://") + 3
        slash = text.find("/", after)
        return len(text) if slash < 0 else slash
    return text.index(":") + 1


def split_ref(text: str, path_start: int) -> tuple[str, str | None]:
    """`URL@REF` -> (URL, REF): the last `@` inside the repository path starts the ref
    (an `@` before the path belongs to the user name)."""
    at = text.rfind("@", path_start)
    if at < 0:
        return text, None
    return text[:at], text[at + 1 :]


def _url_problem(url: str, scheme: str) -> str:
    if scheme not in GIT_SCHEMES:
        known = ", ".join(GIT_SCHEMES)
        return f"unsupported URL scheme {scheme!r} (git URLs: {known}, or user@host:path)"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if any(c.isspace() for c in url):
        return "a URL cannot contain spaces"
    if scheme == "file":
        return "" if parts.path not in ("", "/") else "file:// URL without a path"
    if not parts.hostname:
        return f"{scheme}:// URL without a host"
    if parts.path in ("", "/"):
        return "URL without a repository path"
    return ""


def _readable_name(entry: Entry) -> str:
    if entry.kind == "invalid":
        return f"line-{entry.line}"
    if entry.kind == "local":
        name = Path(entry.location).name or "root"
    else:
        path = urlsplit(entry.location).path if "://" in entry.location else entry.location
        path = path.split(":", 1)[-1] if "://" not in entry.location else path
        parts = [p for p in path.rstrip("/").split("/") if p]
        parts = [p.removesuffix(".git") for p in parts[-2:]] or ["repository"]
        name = "+".join(parts)
        if entry.ref:
            name += "@" + (entry.ref[:12] if FULL_COMMIT.match(entry.ref) else entry.ref)
    cleaned = NAME_CHARACTERS.sub("_", name).strip("._") or "repository"
    return cleaned[:MAX_NAME]


def _named(entries: list[Entry]) -> list[Entry]:
    """Give every entry a unique file name: readable, with a short hash of the line when
    two entries would share one (or a name is reserved: the portfolio's own files)."""
    readable = [_readable_name(e) for e in entries]
    counts: dict[str, int] = {}
    for name in readable:
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
    named = []
    for entry, name in zip(entries, readable, strict=True):
        if counts[name.lower()] > 1 or name.lower() == "portfolio":
            digest = hashlib.sha256(entry.text.encode("utf-8")).hexdigest()[:6]
            name = f"{name[: MAX_NAME - 7]}-{digest}"
        named.append(
            Entry(
                entry.line,
                entry.text,
                entry.kind,
                entry.location,
                entry.ref,
                name,
                entry.problem,
            )
        )
    return named
