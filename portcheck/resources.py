"""Locate the data that ships with portcheck (rules/, templates/).

In an installed wheel the data lives inside the package (portcheck/rules); in a
source checkout it lives at the top level (rules/). Both are read through
importlib.resources so that a non-editable install behaves like the checkout.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


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
    import os

    explicit = os.environ.get("PORTCHECK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "portcheck"


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write a cache file via a temporary file beside it, so a concurrent reader never sees
    half of it; creates the folder. OSError goes to the caller (a read-only cache is
    usually fine to ignore there)."""
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
