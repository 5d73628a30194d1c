"""Jupyter notebooks (.ipynb): the code cells as one Python text to scan, and where each
cell sits in it.

A notebook's code cells are joined, in order, into the text portcheck scans as Python, so
imports made in one cell resolve names in the next, as in a running kernel. Each cell
keeps its lines; positions in the scanned text are turned back into a cell (1-based,
counting every cell, markdown too) and a line within it when the report is written
(`CellStart`, `Report.locate`).

IPython syntax is not Python: a line magic (`%time`), a shell line (`!nvidia-smi`,
`files = !ls`) and a cell magic's body (`%%bash`) are blanked in the scanned text (their
lines are kept, empty) and returned as `Magic`s: shell commands for the checks that look
for `nvidia-smi`, `pip install` lines for the dependency checks, and CUDA source a cell
writes to a `.cu` file (`%%writefile kernel.cu`) or compiles (`%%cuda`) for the CUDA scan.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from portcheck.model import CellStart

# `%%writefile [-a] name.cu` and the nvcc4jupyter magics compile their body as CUDA.
CUDA_CELL = re.compile(r"%%(?:writefile(?:\s+-a)?\s+\S+\.cuh?|cuda|cu|nvcc\w*)\b.*")
SHELL_CELL = re.compile(r"%%(?:bash|sh|script\s+(?:ba)?sh)\b")
SHELL_LINE = re.compile(r"^\s*(?:[\w.,\s]+=\s*)?!(?!=)(.*)$")
PIP_LINE = re.compile(r"^\s*[%!]?\s*(?:python3?\s+-m\s+)?(?:uv\s+)?pip3?\s+install\s+(.*)$")
LINE_MAGIC = re.compile(r"^\s*%")


@dataclass(frozen=True, slots=True)
class Magic:
    """IPython syntax in a cell: what it is, where (line of the scanned text, 1-based,
    and the byte offset of its text there) and its text."""

    kind: str  # "shell", "pip" (the arguments of a pip install) or "cuda" (a cell body)
    line: int
    text: str


@dataclass
class NotebookText:
    """A notebook read for scanning: its code cells as one text, where each cell starts,
    the IPython syntax taken out of it, and what could not be read."""

    text: str = ""
    cells: tuple[CellStart, ...] = ()
    magics: list[Magic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _cell_source(cell: dict[str, object]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _source_lines(raw: str, count: int) -> list[int]:
    """For each cell, the line of the .ipynb file where its source's first line is written
    (nbformat writes one source line per file line); 0 when the file's layout does not
    tell (as many `"source"` keys as cells are needed to pair them up)."""
    keys = [m.start() for m in re.finditer(r'"source"\s*:', raw)]
    if len(keys) != count:
        return [0] * count
    lines = []
    for start in keys:
        line = raw.count("\n", 0, start) + 1
        after = raw[start : start + 200]
        bracket = after.find("[")
        opens_list = bracket != -1 and after[:bracket].rstrip().endswith(":")
        if opens_list and after[bracket + 1 :].lstrip(" \t").startswith(("\n", "\r")):
            line += 1  # `"source": [` then one string per line
        lines.append(line)
    return lines


def read_notebook(data: bytes) -> NotebookText:
    """The notebook in `data` as text to scan; `errors` says why when it is not one."""
    result = NotebookText()
    raw = data.decode("utf-8", "replace")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        result.errors.append(f"not a notebook: {exc.__class__.__name__}")
        return result
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        # nbformat 3 keeps cells under worksheets; older formats are not read
        worksheets = doc.get("worksheets") if isinstance(doc, dict) else None
        if isinstance(worksheets, list) and worksheets and isinstance(worksheets[0], dict):
            cells = worksheets[0].get("cells")
    if not isinstance(cells, list):
        result.errors.append("not a notebook: no list of cells")
        return result
    raw_lines = _source_lines(raw, len(cells))
    pieces: list[str] = []
    starts: list[CellStart] = []
    line = 1
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = (
            _cell_source(cell) if "source" in cell else _cell_source({"source": cell.get("input")})
        )
        lines = source.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        kept = _take_out_magics(lines, line, result.magics)
        starts.append(CellStart(number, line, raw_lines[number - 1]))
        pieces.extend(kept)
        pieces.append("")  # a blank line between cells: a cell's last statement ends there
        line += len(kept) + 1
    result.text = "\n".join(pieces)
    result.cells = tuple(starts)
    return result


def _take_out_magics(lines: list[str], first: int, magics: list[Magic]) -> list[str]:
    """The cell's lines with IPython syntax blanked; what was taken out goes to `magics`."""
    if lines and lines[0].lstrip().startswith("%%"):
        header = lines[0].strip()
        body = "\n".join(lines[1:])
        if CUDA_CELL.fullmatch(header):
            magics.append(Magic("cuda", first + 1, body))
        elif SHELL_CELL.match(header):
            for offset, text in enumerate(lines[1:], 1):
                _shell(text, first + offset, magics)
        return [""] * len(lines)
    kept = []
    for offset, text in enumerate(lines):
        shell = SHELL_LINE.match(text)
        if shell is not None or LINE_MAGIC.match(text):
            _shell(text, first + offset, magics)
            kept.append("")
        else:
            kept.append(text)
    return kept


def _shell(text: str, line: int, magics: list[Magic]) -> None:
    pip = PIP_LINE.match(text)
    if pip is not None:
        magics.append(Magic("pip", line, pip.group(1)))
        return
    shell = SHELL_LINE.match(text)
    command = shell.group(1) if shell is not None else text.strip()
    if command.strip():
        magics.append(Magic("shell", line, command.strip()))
