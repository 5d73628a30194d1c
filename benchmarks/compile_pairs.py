#!/usr/bin/env python3
"""Compile real programs that have a CUDA tree and a human-written HIP port side by side.

For every pair, three `portcheck compile` runs (all with `--offload-arch gfx90a`):

* the human HIP port, untranslated (`--engine none`): which units a person made build;
* the CUDA tree translated by portcheck's built-in engine (`--engine builtin`);
* the CUDA tree translated by hipify-perl (`--engine hipify-perl`, found on PATH).

Units are paired by path, with the words `hip` and `cuda` dropped from every path
component and `.cpp`/`.cu` taken as the same suffix (`nn_hip.cu` <-> `nn_cuda.cu`,
`bfs.hip.cu` <-> `bfs.cu`). The denominator is the paired units whose human port compiles
with the installed hipcc; each engine's share is how many of those it builds. Units
without a partner on the other side are listed, not counted.

Pair sets (`--set`):

* `hecbench`: zjin-lcf/HeCBench, `src/NAME-cuda` against `src/NAME-hip` for a seeded random
  sample of the benchmarks that have both (`--sample`, `--seed`); each side gets the `-std`,
  `-D` and `-I` of its own Makefile's `CFLAGS :=` line (relative folders resolved).
* `rodinia`: Rodinia 3.0 as ROCm/HIP-Examples carried it (`rodinia_3.0/hip/NAME`), against
  the CUDA tree beside it (`rodinia_3.0/cuda/NAME`) or, where HIP-Examples has none,
  yuhc/gpu-rodinia's `cuda/NAME` (`--rodinia-cuda`).

Usage (trees checked out under /tmp, never in this repository):

    PATH=/tmp/hipify-c/bin:$PATH HIP_PLATFORM=amd python benchmarks/compile_pairs.py \
        --set hecbench --root /tmp/t20/hecbench/src --sample 100 --seed 20 \
        --json /tmp/t20/pairs_hecbench.json -j 2
    ... --set rodinia --rodinia-hip /tmp/t20/hipex/rodinia_3.0/hip \
        --rodinia-cuda /tmp/t20/hipex/rodinia_3.0/cuda --rodinia-cuda /tmp/t20/rodinia-yuhc/cuda \
        --cuda-include /tmp/cuda-samples/Common --json /tmp/t20/pairs_rodinia.json -j 2
    python benchmarks/compile_pairs.py --summary /tmp/t20/pairs_hecbench.json --markdown

Each `portcheck compile` run goes through the command line of the portcheck found on
PYTHONPATH (the compile cache is used: `PORTCHECK_CACHE_DIR` picks its folder).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ENGINES = ("none", "builtin", "hipify-perl")
PLATFORM_WORD = re.compile(r"(?:^|(?<=[._-]))(?:hip|cuda)(?:[._-]|$)", re.IGNORECASE)
DEFINE_OK = re.compile(r"[A-Za-z_]\w*(?:=[\w.+-]*)?")


@dataclass
class Side:
    path: str
    std: str | None = None
    defines: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)


@dataclass
class Pair:
    name: str
    cuda: Side
    hip: Side
    runs: dict[str, dict[str, object]] = field(default_factory=dict)  # engine -> result


def unit_key(relpath: str) -> str:
    """The path a unit is paired by: `hip`/`cuda` words dropped, `.cpp` read as `.cu`."""
    parts = []
    for part in relpath.lower().split("/"):
        stem, dot, suffix = part.rpartition(".")
        if not dot:
            stem, suffix = part, ""
        stem = PLATFORM_WORD.sub("", stem) or "_"
        if suffix in ("cpp", "cc", "cxx"):
            suffix = "cu"
        parts.append(stem + ("." + suffix if suffix else ""))
    return "/".join(parts)


# -- pair sets -----------------------------------------------------------------------------


def makefile_flags(folder: Path) -> Side:
    """-std, -D and -I of the first `CFLAGS :=` (or `=`) assignment of folder/Makefile."""
    side = Side(str(folder))
    makefile = folder / "Makefile"
    if not makefile.is_file():
        return side
    text = makefile.read_text(errors="replace").replace("\\\n", " ")
    match = re.search(r"^\s*CFLAGS\s*:?=(.*)$", text, re.MULTILINE)
    if match is None:
        return side
    try:
        words = shlex.split(match.group(1), comments=True)
    except ValueError:
        words = match.group(1).split()
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word.startswith("-std="):
            side.std = word[5:]
        elif word.startswith("-D") and len(word) > 2:
            if DEFINE_OK.fullmatch(word[2:]):
                side.defines.append(word[2:])
        elif word.startswith("-I"):
            value = word[2:] or (words[index] if index < len(words) else "")
            if not word[2:]:
                index += 1
            if "$" in value:
                continue
            resolved = (folder / value).resolve()
            if resolved.is_dir():
                side.includes.append(str(resolved))
    return side


def hecbench_pairs(root: Path, sample: int, seed: int) -> list[Pair]:
    names = sorted(
        p.name[: -len("-cuda")]
        for p in root.iterdir()
        if p.name.endswith("-cuda") and (root / (p.name[: -len("-cuda")] + "-hip")).is_dir()
    )
    chosen = random.Random(seed).sample(names, min(sample, len(names))) if sample else names
    return [
        Pair(name, makefile_flags(root / f"{name}-cuda"), makefile_flags(root / f"{name}-hip"))
        for name in sorted(chosen)
    ]


def rodinia_pairs(hip_root: Path, cuda_roots: list[Path]) -> list[Pair]:
    pairs = []
    for folder in sorted(p for p in hip_root.iterdir() if p.is_dir()):
        cuda = next((r / folder.name for r in cuda_roots if (r / folder.name).is_dir()), None)
        if cuda is None:
            continue
        pairs.append(Pair(folder.name, Side(str(cuda)), Side(str(folder))))
    return pairs


# -- running ------------------------------------------------------------------------------


def compile_side(side: Side, engine: str, jobs: int, timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="compile-pairs-") as scratch:
        output = Path(scratch) / "out.json"
        command = [
            sys.executable,
            "-m",
            "portcheck",
            "compile",
            side.path,
            "--offload-arch",
            "gfx90a",
            "--engine",
            engine,
            "--format",
            "json",
            "-o",
            str(output),
            "-j",
            str(jobs),
            "--timeout",
            str(timeout),
        ]
        if side.std:
            command += ["--std", side.std]
        for define in side.defines:
            command += ["-D", define]
        for folder in side.includes:
            command += ["-I", folder]
        started = time.monotonic()
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout * 40 + 600,
            env={**os.environ, "HIP_PLATFORM": "amd"},
        )
        seconds = time.monotonic() - started
        if not output.is_file():
            return {"error": (done.stderr or done.stdout).strip()[-2000:], "seconds": seconds}
        report = json.loads(output.read_text())
    return {
        "seconds": round(seconds, 1),
        "hipcc": report["hipcc"],
        "results": [
            {
                "path": r["path"],
                "ok": r["ok"],
                "class": r["class"],
                "explanation": r["explanation"],
                "first_error": next(
                    (
                        f"{d.get('path') or r['path']}:{d['line']}: {d['message']}"
                        for d in r["diagnostics"]
                        if d["severity"] in ("error", "fatal error")
                    ),
                    "",
                ),
            }
            for r in report["results"]
        ],
        "skipped": report.get("skipped", []),
    }


def run_pairs(
    pairs: list[Pair],
    engines: list[str],
    jobs: int,
    timeout: float,
    save: Callable[[], None] = lambda: None,
) -> None:
    for number, pair in enumerate(pairs, start=1):
        for engine in engines:
            side = pair.hip if engine == "none" else pair.cuda
            print(f"[{number}/{len(pairs)}] {pair.name} {engine}", file=sys.stderr, flush=True)
            pair.runs[engine] = compile_side(side, engine, jobs, timeout)
        save()  # after every pair, so a long run can be summarised while it goes on


# -- summary -------------------------------------------------------------------------------


def paired_units(pair: Pair, engines: list[str]) -> dict[str, dict[str, dict[str, object]]]:
    """unit key -> engine -> result, for units every engine's run has."""
    by_engine: dict[str, dict[str, dict[str, object]]] = {}
    for engine in engines:
        run = pair.runs.get(engine, {})
        results = run.get("results", []) if isinstance(run, dict) else []
        by_engine[engine] = {unit_key(str(r["path"])): r for r in results}  # type: ignore[index]
    keys = set.intersection(*(set(v) for v in by_engine.values())) if by_engine else set()
    return {key: {e: by_engine[e][key] for e in engines} for key in sorted(keys)}


def summarise(pairs: list[Pair], engines: list[str]) -> dict[str, object]:
    translated = [e for e in engines if e != "none"]
    denominator = 0
    built = Counter()
    built_pairs = Counter()
    classes: dict[str, Counter[str]] = {e: Counter() for e in translated}
    failures: dict[str, list[str]] = {e: [] for e in translated}
    human_failed = 0
    unpaired = 0
    pairs_counted = 0
    for pair in pairs:
        units = paired_units(pair, engines)
        unpaired += sum(
            len(run.get("results", [])) for run in pair.runs.values() if isinstance(run, dict)
        ) - len(units) * len(engines)
        good = {k: v for k, v in units.items() if v["none"]["ok"]}
        human_failed += len(units) - len(good)
        if not good:
            continue
        pairs_counted += 1
        denominator += len(good)
        for engine in translated:
            ok = [k for k, v in good.items() if v[engine]["ok"]]
            built[engine] += len(ok)
            built_pairs[engine] += len(ok) == len(good)
            for key, value in good.items():
                result = value[engine]
                if not result["ok"]:
                    classes[engine][str(result["class"])] += 1
                    failures[engine].append(f"{pair.name}/{key}: {result['first_error']}")
    return {
        "pairs": len(pairs),
        "pairs_with_a_building_human_port": pairs_counted,
        "units_human_port_builds": denominator,
        "units_human_port_fails": human_failed,
        "unpaired_results": unpaired,
        "built": dict(built),
        "pairs_fully_built": dict(built_pairs),
        "classes": {e: dict(c.most_common()) for e, c in classes.items()},
        "failures": failures,
    }


def print_summary(summary: dict[str, object], markdown: bool) -> None:
    denominator = int(summary["units_human_port_builds"])  # type: ignore[call-overload]
    built = summary["built"]
    assert isinstance(built, dict)
    print(
        f"pairs: {summary['pairs']} ({summary['pairs_with_a_building_human_port']} with a "
        f"human port that builds); paired units the human port builds: {denominator}; "
        f"paired units it does not build: {summary['units_human_port_fails']}"
    )
    rows = [("engine", "units built", "share", "programs fully built", "failure classes")]
    for engine, count in built.items():
        share = f"{100.0 * count / denominator:.1f} %" if denominator else "-"
        classes = summary["classes"][engine]  # type: ignore[index]
        text = ", ".join(f"{k} {v}" for k, v in classes.items())
        full = summary["pairs_fully_built"][engine]  # type: ignore[index]
        rows.append((engine, f"{count} / {denominator}", share, str(full), text))
    if markdown:
        print("| " + " | ".join(rows[0]) + " |")
        print("|---|---:|---:|---:|---|")
        for row in rows[1:]:
            print("| " + " | ".join(row) + " |")
    else:
        for row in rows:
            print("  ".join(row))
    for engine, lines in summary["failures"].items():  # type: ignore[union-attr]
        print(f"\n{engine}: units the human port builds and {engine} does not ({len(lines)})")
        for line in lines:
            print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("hecbench", "rodinia"))
    parser.add_argument("--root", type=Path, help="HeCBench's src/ folder")
    parser.add_argument("--sample", type=int, default=100, help="HeCBench: benchmarks (0: all)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--rodinia-hip", type=Path, help="HIP-Examples' rodinia_3.0/hip")
    parser.add_argument(
        "--rodinia-cuda", type=Path, action="append", default=[], help="CUDA trees, in order"
    )
    parser.add_argument(
        "--cuda-include",
        type=Path,
        action="append",
        default=[],
        help="an -I folder for every CUDA side (Rodinia's Makefiles: the CUDA SDK's common/inc)",
    )
    parser.add_argument("--engine", action="append", choices=ENGINES)
    parser.add_argument("--only", help="only pairs whose name contains this")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, help="write every pair's runs here")
    parser.add_argument("--summary", type=Path, help="summarise a JSON written before")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    engines = args.engine or list(ENGINES)
    if "none" not in engines:
        engines.insert(0, "none")
    if args.summary:
        document = json.loads(args.summary.read_text())
        pairs = [
            Pair(p["name"], Side(**p["cuda"]), Side(**p["hip"]), p["runs"])
            for p in document["pairs"]
        ]
        engines = document["engines"]
    else:
        if args.set == "hecbench":
            if args.root is None:
                parser.error("--set hecbench needs --root")
            pairs = hecbench_pairs(args.root, args.sample, args.seed)
        elif args.set == "rodinia":
            if args.rodinia_hip is None or not args.rodinia_cuda:
                parser.error("--set rodinia needs --rodinia-hip and --rodinia-cuda")
            pairs = rodinia_pairs(args.rodinia_hip, args.rodinia_cuda)
        else:
            parser.error("give --set or --summary")
        if args.only:
            pairs = [p for p in pairs if args.only in p.name]
        for pair in pairs:
            pair.cuda.includes += [str(folder.resolve()) for folder in args.cuda_include]

        def save() -> None:
            if args.json:
                done = [p for p in pairs if p.runs]
                document = {
                    "schema": "portcheck.compile_pairs/1",
                    "set": args.set,
                    "engines": engines,
                    "pairs": [asdict(p) for p in done],
                }
                args.json.write_text(json.dumps(document, indent=1) + "\n")

        run_pairs(pairs, engines, args.jobs, args.timeout, save)
    print_summary(summarise(pairs, engines), args.markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
