#!/usr/bin/env python3
"""Summarise `portcheck compile` runs over NVIDIA's cuda-samples, one run per engine.

Each input is the JSON written by

    portcheck compile /tmp/cuda-samples --offload-arch gfx90a -I /tmp/cuda-samples/Common \
        --engine ENGINE --format json -o /tmp/cs_ENGINE.json

(schema ``portcheck.compile/1``). Only results whose path ends in the chosen suffix
(``.cu`` by default) are counted; ``portcheck compile`` also builds .cpp/.c units.
For each engine the script prints:

* files, how many compiled, the share, and the failures by portcheck's class;
* where the first error sits (the unit itself, a shared helper header under
  ``Common/``, another project header, or a system/ROCm header);
* the most common first-error messages, normalised so that quoted names become
  ``'…'`` (the most frequent quoted names are listed next to each message);

and then the files that build with one engine and not with the other.

Usage:

    python benchmarks/compile_samples.py                      # the two default files
    python benchmarks/compile_samples.py --run builtin=/tmp/cs_builtin.json \
        --run hipify-perl=/tmp/cs_hipify-perl.json --top 15 --markdown

Nothing is compiled here; the script only reads the JSON files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DEFAULT_RUNS = ("builtin=/tmp/cs_builtin.json", "hipify-perl=/tmp/cs_hipify-perl.json")
CLASSES = ("untranslated-cuda", "missing-library", "port-problem", "other", "unsupported-target")
QUOTED = re.compile(r"'([^']*)'")
NUMBER = re.compile(r"\b\d+\b")


@dataclass
class Failure:
    path: str
    failure_class: str
    message: str  # the first error, as clang printed it
    where: str  # unit / Common header / project header / system header
    location: str  # file:line of the first error


@dataclass
class Run:
    engine: str
    files: list[str]
    ok: set[str]
    failures: dict[str, Failure]


def normalise(message: str) -> str:
    """Quoted names and bare numbers become placeholders so that like errors group."""
    return NUMBER.sub("N", QUOTED.sub("'…'", message))


def _where(diagnostic_path: str, unit: str) -> str:
    if diagnostic_path == unit:
        return "unit"
    if diagnostic_path.startswith("/"):
        # An absolute path is outside the translated tree: ROCm or the C++ library, or
        # (not mapped back) a file of the scratch tree.
        return "Common header" if "/Common/" in diagnostic_path else "system header"
    if diagnostic_path.startswith("Common/"):
        return "Common header"
    return "project header"


def load(engine: str, path: Path, suffix: str) -> Run:
    data = json.loads(path.read_text())
    if data.get("schema") != "portcheck.compile/1":
        sys.exit(f"{path}: not a portcheck compile report")
    run = Run(engine, [], set(), {})
    for result in data["results"]:
        if not result["path"].endswith(suffix):
            continue
        run.files.append(result["path"])
        if result["ok"]:
            run.ok.add(result["path"])
            continue
        errors = [d for d in result["diagnostics"] if d["severity"] in ("error", "fatal error")]
        first = errors[0] if errors else {"message": result["explanation"], "path": "", "line": 0}
        run.failures[result["path"]] = Failure(
            result["path"],
            result["class"] or "other",
            first["message"],
            _where(first["path"], result["path"]),
            f"{first['path']}:{first['line']}",
        )
    return run


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def print_table(runs: list[Run], markdown: bool) -> None:
    header = ["engine", "files", "build", "share", *CLASSES]
    rows = []
    for run in runs:
        classes = Counter(f.failure_class for f in run.failures.values())
        rows.append(
            [
                run.engine,
                str(len(run.files)),
                str(len(run.ok)),
                share(len(run.ok), len(run.files)),
                *(str(classes.get(c, 0)) for c in CLASSES),
            ]
        )
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 1))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def print_engine(run: Run, top: int) -> None:
    print(f"\n== {run.engine}: first errors of {len(run.failures)} failing files ==")
    where = Counter(f.where for f in run.failures.values())
    print("first error in: " + ", ".join(f"{k} {v}" for k, v in where.most_common()))
    groups: dict[str, list[Failure]] = {}
    for failure in run.failures.values():
        groups.setdefault(normalise(failure.message), []).append(failure)
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    for rank, (message, members) in enumerate(ranked[:top], 1):
        names = Counter(n for f in members for n in QUOTED.findall(f.message))
        classes = Counter(f.failure_class for f in members)
        print(f"{rank:2}. {len(members):3} × {message}")
        if names:
            print("       names: " + ", ".join(f"{n} ({c})" for n, c in names.most_common(5)))
        print("       class: " + ", ".join(f"{c} {k}" for c, k in classes.most_common()))
        print(f"       e.g.   {members[0].path} (first error at {members[0].location})")
    if len(ranked) > top:
        rest = sum(len(m) for _, m in ranked[top:])
        print(f"    … {len(ranked) - top} more messages, {rest} files")


def print_differences(runs: list[Run]) -> None:
    for run in runs:
        for other in runs:
            if other is run:
                continue
            only = sorted(run.ok & set(other.files) - other.ok)
            print(f"\n== build with {run.engine}, fail with {other.engine}: {len(only)} ==")
            for path in only:
                failure = other.failures[path]
                print(
                    f"  {path}\n      {other.engine}: [{failure.failure_class}] "
                    f"{failure.location}: {failure.message}"
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--run",
        action="append",
        metavar="ENGINE=FILE",
        help=f"an engine name and its JSON report (repeatable; default: {' '.join(DEFAULT_RUNS)})",
    )
    parser.add_argument("--suffix", default=".cu", help="count only paths ending in this")
    parser.add_argument("--top", type=int, default=15, help="first-error messages to list")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    runs = []
    for spec in args.run or DEFAULT_RUNS:
        engine, _, file = spec.partition("=")
        if not file:
            parser.error(f"--run expects ENGINE=FILE, got {spec!r}")
        runs.append(load(engine, Path(file), args.suffix))
    print(f"{args.suffix} files per engine")
    print_table(runs, args.markdown)
    for run in runs:
        print_engine(run, args.top)
    if len(runs) > 1:
        print_differences(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
