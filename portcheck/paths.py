"""Showing file paths to people: any name a file system allows, printed safely."""

from __future__ import annotations

import os


def display_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """`path` as one printable line: bytes that are not UTF-8 shown as `\\xe9`, control and
    other non-printing characters escaped (`\\n`, `\\x1b`, `\\u202e`), so a file name can
    neither break a line nor forge terminal escapes or CI annotations (`::error::`).
    Printable text is kept as it is, so showing a name twice changes nothing (discovery
    already shows names this way; the formatters may pass them through again). A name
    really spelled `k\\xe9rnel.cu` therefore prints like the undecodable one."""
    try:
        raw = os.fsencode(path)
    except UnicodeEncodeError:  # a str with surrogates no file system produced
        text = os.fspath(path)
        raw = text.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]  # only str fails
    text = raw.decode("utf-8", "surrogateescape")
    if text.isprintable():
        return text  # the common case, at C speed
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if char in named:
        return named[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
