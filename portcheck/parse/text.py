"""Turning file bytes into the UTF-8 text that the parsers and reports use."""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add

from portcheck.model import Span

UTF8_BOM = b"\xef\xbb\xbf"
LONG_LINE = 1024  # bytes before a position beyond which columns come from a per-line table
MULTIBYTE = re.compile(rb"[\xc0-\xff][\x80-\xbf]*")  # one UTF-8 character of 2-4 bytes


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


class LineIndex:
    """Byte offset -> 1-based (line, character column)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        # Line start offsets, computed in C: the lengths of the lines plus their newlines.
        lengths = map(len, data.split(b"\n")[:-1])
        self.starts = [0, *accumulate(map(add, lengths, repeat(1)))]
        self._ascii = data.isascii()  # then a column is a byte difference
        self._wide: dict[int, tuple[list[int], list[int]]] = {}  # see _long_line_column

    def position(self, offset: int) -> tuple[int, int]:
        row = bisect_right(self.starts, offset) - 1
        start = self.starts[row]
        if self._ascii:
            return row + 1, offset - start + 1
        if offset - start > LONG_LINE:
            return row + 1, self._long_line_column(row, offset) + 1
        prefix = self.data[start:offset]
        column = len(prefix) if prefix.isascii() else len(prefix.decode("utf-8", "replace"))
        return row + 1, column + 1

    def _long_line_column(self, row: int, offset: int) -> int:
        """Column (0-based, in characters) on a long line: decoding the prefix for every
        token of a generated one-line expression would cost line length x tokens, so each
        long line's multi-byte characters are found once."""
        table = self._wide.get(row)
        if table is None:
            start = self.starts[row]
            end = self.starts[row + 1] if row + 1 < len(self.starts) else len(self.data)
            positions, extra, total = [], [], 0
            for match in MULTIBYTE.finditer(self.data, start, end):
                total += match.end() - match.start() - 1
                positions.append(match.start())
                extra.append(total)
            table = self._wide[row] = (positions, extra)
        positions, extra = table
        i = bisect_right(positions, offset - 1) - 1  # characters that start before offset
        return offset - self.starts[row] - (extra[i] if i >= 0 else 0)

    def span(self, start: int, end: int) -> Span:
        starts = self.starts
        row = bisect_right(starts, start) - 1
        if self._ascii and (row + 1 == len(starts) or end < starts[row + 1]):
            # The usual case, a token on one line of an ASCII file: one bisect, no slicing.
            line_start = starts[row]
            return Span(row + 1, start - line_start + 1, row + 1, end - line_start + 1, start, end)
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
