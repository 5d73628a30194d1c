"""Turning file bytes into the UTF-8 text that the parsers and reports use."""

from __future__ import annotations

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
