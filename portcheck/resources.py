"""Where portcheck's files are: the data it ships (rules/, templates/), its cache folder,
and the one function that writes files (reports and caches) safely.

In an installed wheel the data lives inside the package (portcheck/rules); in a
source checkout it lives at the top level (rules/). Both are read through
importlib.resources so that a non-editable install behaves like the checkout.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import BinaryIO


def data_dir(name: str) -> Traversable:
    """The shipped data folder `name` ("rules" or "templates")."""
    packaged = resources.files("portcheck").joinpath(name)
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"portcheck data folder {name!r} is missing from this installation")


def cache_dir() -> Path:
    """Where portcheck keeps caches: $PORTCHECK_CACHE_DIR, else $XDG_CACHE_HOME/portcheck,
    else ~/.cache/portcheck. Read at each call, so tests can point it elsewhere."""
    explicit = os.environ.get("PORTCHECK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "portcheck"


_cache_problems: dict[Path, str] = {}  # folder -> why it cannot be used
_cache_checked: set[Path] = set()


def usable_cache_dir() -> Path | None:
    """The cache folder, created if needed, or None when it cannot be used (a read-only
    home, a path under a regular file, …): portcheck then runs without a cache, and
    `cache_problem()` says why. Checked once per folder per process."""
    folder = cache_dir()
    if folder in _cache_problems:
        return None
    if folder in _cache_checked:
        return folder
    probe = folder / f".probe-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as exc:
        _cache_problems[folder] = exc.strerror or str(exc)
        return None
    _cache_checked.add(folder)
    return folder


def cache_problem() -> str | None:
    """One line saying why the cache folder could not be used, if it could not."""
    folder = cache_dir()
    problem = _cache_problems.get(folder)
    if problem is None:
        return None
    from portcheck.paths import display_path

    return (
        f"cache folder {display_path(str(folder))} is unusable ({problem}); running without a cache"
    )


def write_atomically(
    path: str | os.PathLike[str],
    content: bytes | str | Iterable[str],
    *,
    make_parents: bool = False,
) -> None:
    """Write `content` to `path` the way shell redirection would, without a reader ever
    seeing half of it. The one writer of the package (reports, caches).

    - A symlink is followed to its target (`-o link` writes where the link points).
    - A device, FIFO or socket is opened and written in place: `-o /dev/null` stays a
      character device, `-o /dev/stdout` and a named pipe work.
    - A regular file (or a new one) is replaced atomically: a temporary file in the same
      folder, then os.replace. An existing file keeps its permission bits; a new one gets
      0666 less the umask, as `>` would give it.

    `content` is bytes, text (written as UTF-8), or an iterable of text pieces (a streamed
    report). With `make_parents` the folder is created (caches); otherwise a missing folder
    is an error, as for the shell. OSError goes to the caller, naming the path."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if info is not None and not stat.S_ISREG(info.st_mode):
        with open(target, "wb") as fh:  # a device or pipe: write through it, never replace it
            _write_content(fh, content)
        return
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
    replace_file(target, lambda fh: _write_content(fh, content), mode)


def replace_file(target: Path, fill: Callable[[BinaryIO], object], mode: int) -> None:
    """Make `target` a regular file holding what `fill` writes, with permission bits `mode`,
    atomically: a temporary file in the same folder, then os.replace (a link or file at
    `target` is replaced, never written through). The temporary file is removed if anything
    fails. Callers decide what `target` may be (write_atomically, the translator's output)."""
    import tempfile  # not at import: a cached scan that writes nothing should not pay for it

    # The name is cut short so that one near the 255-byte limit leaves room for the rest.
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:48]}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
        os.chmod(tmp, mode)  # mkstemp creates 0600
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_content(fh: BinaryIO, content: bytes | str | Iterable[str]) -> None:
    if isinstance(content, bytes):
        fh.write(content)
    elif isinstance(content, str):
        fh.write(content.encode("utf-8"))
    else:
        for piece in content:
            fh.write(piece.encode("utf-8"))


def _umask() -> int:
    # The only portable way to read the umask is to set it; done once per process.
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None
