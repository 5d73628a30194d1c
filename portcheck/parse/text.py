"""Turning file bytes into the UTF-8 text that the parsers and reports use."""

from __future__ import annotations

import bisect
import re

from portcheck.model import Span

UTF8_BOM = b"\xef\xbb\xbf"


def decode_source(data: bytes) -> tuple[bytes, str]:
    """Return (utf-8 bytes, name of the encoding the file was read with).

    Non-UTF-8 text is decoded leniently (Windows-1252, then Latin-1, which accepts
    any byte) and re-encoded, so it is still scanned and byte offsets stay valid.
    """
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
        encoding = "utf-8-sig"
    else:
        encoding = "utf-8"
    try:
        data.decode("utf-8")
        return data, encoding
    except UnicodeDecodeError:
        pass
    for fallback in ("cp1252", "latin-1"):
        try:
            return data.decode(fallback).encode("utf-8"), fallback
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte string")  # pragma: no cover


def count_lines(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


_NEWLINE = re.compile(b"\n")


class LineIndex:
    """Byte offset -> 1-based (line, character column)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts = [0, *(m.end() for m in _NEWLINE.finditer(data))]

    def position(self, offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[row]
        prefix = self.data[start:offset]
        column = len(prefix) if prefix.isascii() else len(prefix.decode("utf-8", "replace"))
        return row + 1, column + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(line, column, end_line, end_column, start, end)

    def line_bounds(self, line: int) -> tuple[int, int]:
        """Byte range of a 1-based line, without its newline (empty past the end)."""
        if not 1 <= line <= len(self.starts):
            return len(self.data), len(self.data)
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < len(self.starts) else len(self.data)
        return start, end
