"""How a file name is shown to a person: every report format and message goes through
`display_path`, so a name cannot carry terminal escapes, forge a line of CI output
(`\\n::error::…`) or break the layout it is printed in."""

from __future__ import annotations

import os


def display_path(path: str | bytes | os.PathLike[str]) -> str:
    """`path` with every non-printable character and every undecodable byte written as
    an escape: `\\xNN` (or `\\uNNNN` for a non-printable character above U+00FF).
    Printable text, including non-ASCII letters, is kept as it is."""
    raw = os.fspath(path)
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    if text.isprintable():
        return text  # the common case, at C speed
    return "".join(_escape(char) for char in text)


def _escape(char: str) -> str:
    if char.isprintable():
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as surrogateescape keeps it
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
