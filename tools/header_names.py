#!/usr/bin/env python3
"""List the public names a C header (or a Rust bindgen file) declares, by kind.

Used to fill the `names:` lists of the curated family files in tools/families/ from the
vendors' own headers, so that no name there is made up: NVIDIA's library headers (NPP,
nvJPEG, cuFile, cuSPARSELt, from the NVIDIA wheels on PyPI that ship them), NVML's names
(from ZLUDA's bindgen of nvml.h) and the HIP/ROCm headers that answer them (hipSPARSELt,
hipFile). Each family file names the header, package and version it was read from.

    python tools/header_names.py --prefix 'npp|Npp|NPP_' HEADER... > names.yaml
    python tools/header_names.py --prefix 'cuFile|CU_FILE_' --xmacro CUFILE_OP cufile.h

`--xmacro NAME`: the header declares enumerators through an X-macro list
(`CUFILE_OP(0, CU_FILE_SUCCESS, cufile success)`): its second arguments are enumerators.

Prints YAML: {function: [...], type: [...], enum: [...], macro: [...]} with each name
once, sorted. A name counts when it is declared: a function prototype, a typedef, a
struct/enum/union tag, an enumerator, or a `#define`; names only mentioned in comments
or in other declarations' parameter lists are left out. Only the standard library and
PyYAML are used.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRINGS = re.compile(r'"(?:\\.|[^"\\])*"')


def c_names(text: str, prefix: re.Pattern[str], xmacro: str | None = None) -> dict[str, set[str]]:
    """Declared names of a C header whose name fits `prefix` (a regex matched at the
    name's start)."""
    text = STRINGS.sub('""', COMMENTS.sub(" ", text))
    found: dict[str, set[str]] = {k: set() for k in ("function", "type", "enum", "macro")}

    def keep(name: str) -> bool:
        return prefix.match(name) is not None

    for name in re.findall(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", text, re.M):
        if keep(name):
            found["macro"].add(name)
    code = re.sub(r"^[ \t]*#.*(?:\\\n.*)*", " ", text, flags=re.M)  # directives out
    # A prototype: the name, `(`, and at top level (not a parameter: a `(` or `,` before).
    for match in re.finditer(r"([A-Za-z_]\w*)\s*\(", code):
        name = match.group(1)
        before = code[: match.start()].rstrip()
        if keep(name) and not before.endswith(("(", ",", "=", "return")):
            found["function"].add(name)
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        for name in re.findall(r"(?:^|,)\s*([A-Za-z_]\w*)", body):
            if keep(name):
                found["enum"].add(name)
    for name in re.findall(r"\b(?:struct|enum|union)\s+([A-Za-z_]\w*)", code):
        if keep(name):
            found["type"].add(name)
    for name in re.findall(r"\}\s*([A-Za-z_]\w*)\s*;", code):  # typedef struct {...} Name;
        if keep(name):
            found["type"].add(name)
    for statement in re.findall(r"\btypedef\b([^;{}]*);", code):  # typedef a b *Name;
        pointer = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", statement)
        name = pointer.group(1) if pointer else statement.split()[-1].lstrip("*")
        if keep(name):
            found["type"].add(name)
    if xmacro:
        for name in re.findall(rf"\b{re.escape(xmacro)}\([^,()]+,\s*([A-Za-z_]\w*)", text):
            if keep(name):
                found["enum"].add(name)
    found["function"] -= found["type"] | found["macro"]  # `struct X (` never; macros win
    return found


def rust_names(text: str, prefix: re.Pattern[str]) -> dict[str, set[str]]:
    """The same from a bindgen Rust file: `fn`, `pub type`/`struct`/`union`, `pub const`."""
    found: dict[str, set[str]] = {k: set() for k in ("function", "type", "enum", "macro")}
    for kind, pattern in (
        ("function", r"\bfn\s+([A-Za-z_]\w*)\s*\("),
        ("type", r"\bpub\s+(?:type|struct|union|enum)\s+([A-Za-z_]\w*)"),
        ("enum", r"\bpub\s+const\s+([A-Za-z_]\w*)\s*:"),
    ):
        for name in re.findall(pattern, text):
            if prefix.match(name):
                found[kind].add(name)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", required=True, help="regex the names must start with")
    parser.add_argument("--xmacro", help="an X-macro whose second arguments are enumerators")
    parser.add_argument("files", nargs="+", help="headers (.h) or bindgen files (.rs)")
    args = parser.parse_args(argv)
    prefix = re.compile(args.prefix)
    merged: dict[str, set[str]] = {}
    for file in args.files:
        text = Path(file).read_text("utf-8", "replace")
        if file.endswith(".rs"):
            names = rust_names(text, prefix)
        else:
            names = c_names(text, prefix, args.xmacro)
        for kind, found in names.items():
            merged.setdefault(kind, set()).update(found)
    claimed: set[str] = set()
    document = {}
    for kind in ("function", "type", "enum", "macro"):  # one kind per name, first wins
        names = sorted(merged.get(kind, set()) - claimed)
        claimed.update(names)
        if names:
            document[kind] = names
    yaml.safe_dump(document, sys.stdout, default_flow_style=False, width=100)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
