"""File names as people may safely read them.

A name on disk is bytes: it may not be UTF-8 (Python then carries each undecodable
byte as a lone surrogate, PEP 383) and may hold control characters (a newline, an
escape sequence) that would rewrite a terminal or forge lines in a CI log.
"""

from __future__ import annotations

import os

_SURROGATE_BYTES = range(0xDC80, 0xDD00)  # where os.fsdecode puts an undecodable byte


def display_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """`path` as printable text: an undecodable byte as `\\xNN`, a control or other
    non-printable character as `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`; the rest unchanged."""
    path = os.fspath(path)
    text = path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path
    if text.isprintable():
        return text  # the usual case
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if code in _SURROGATE_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
