#!/usr/bin/env python3
"""Scan-speed benchmark: lines/s, wall time and peak memory of `portcheck scan`.

    python benchmarks/bench_scan.py [TREE ...] [--generate-lines 1000000] [--jobs N]
                                    [--hipify-perl] [--repeat 3] [--generated-repeat 1]
                                    [--markdown]

For each real TREE, and for generated trees of N/4 and N lines, it runs the CLI in a
fresh process (cold: --no-cache; then warm: from the cache) and reports wall time,
lines/s, CPU time and the peak resident memory of the largest process. With
--hipify-perl it also times hipify-perl translating the same source files, many per
process (the tool must be on PATH or in $ROCM_PATH/bin), alternating with portcheck's
runs so that both tools see the same machine. Real trees are measured --repeat times:
the table shows medians, and the lines under it every run and the speed-up of each
pair of runs. The generated tree is built from the CUDA files shipped
in tests/fixtures and examples/, with kernels and functions renamed per copy so that
no two files are identical.

It is a measurement, not a test: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_DIRS = [
    ROOT / "tests" / "fixtures" / "scan",
    ROOT / "tests" / "fixtures" / "hazards",
    ROOT / "tests" / "fixtures" / "translate",
    ROOT / "examples" / "heatflow",
]
SOURCE_SUFFIXES = {".cu", ".cuh", ".cpp", ".h", ".hpp", ".cc", ".c"}


def seed_files() -> list[tuple[str, str]]:
    seeds = []
    for folder in SEED_DIRS:
        for path in sorted(folder.rglob("*")):
            if path.suffix in {".cu", ".cuh", ".cpp"} and path.is_file():
                text = path.read_bytes().decode("utf-8", "replace")
                if "\x00" not in text and text.strip():
                    seeds.append((path.name, text))
    return seeds


def generate_tree(target: Path, lines: int) -> int:
    """Write about `lines` lines of CUDA under target; returns the exact count."""
    seeds = seed_files()
    written = 0
    copy = 0
    while written < lines:
        for name, text in seeds:
            suffix = f"_{copy}"
            # Rename the project's own functions so copies differ (as a real tree would).
            renamed = re.sub(
                r"\b(__global__\s+void\s+|__device__\s+\w+\s+)(\w+)",
                lambda m, suffix=suffix: f"{m.group(1)}{m.group(2)}{suffix}",
                text,
            )
            out = target / f"module{copy // 50:03d}" / f"c{copy}_{name}"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(renamed)
            written += renamed.count("\n")
            copy += 1
            if written >= lines:
                break
    return written


def count_lines(tree: Path) -> int:
    total = 0
    for path in tree.rglob("*"):
        if path.suffix.lower() in SOURCE_SUFFIXES and path.is_file():
            total += path.read_bytes().count(b"\n")
    return total


class Run:
    """One measured command: wall seconds, CPU seconds (user + system, the process and
    the children it waited for) and the peak RSS (KiB) of the largest process."""

    def __init__(self, wall: float, cpu: float, rss: int) -> None:
        self.wall, self.cpu, self.rss = wall, cpu, rss


def run_measured(command: list[str], env: dict[str, str], check: bool = True) -> Run:
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if check and os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(command[:6])} failed:\n{stderr}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def scan_command(tree: Path, jobs: int | None, cache: bool) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "portcheck",
        "scan",
        str(tree),
        "--format",
        "json",
        "-o",
        os.devnull,
    ]
    if jobs:
        command += ["-j", str(jobs)]
    if not cache:
        command.append("--no-cache")
    return command


def hipify_perl_commands(tree: Path) -> list[list[str]] | None:
    """hipify-perl translating the tree's C/C++/CUDA sources to stdout, in as few processes
    as the command line allows (it takes many files per run; one run per file costs 3 times
    more in perl start-up). None when hipify-perl is not installed."""
    sys.path.insert(0, str(ROOT))
    from portcheck.translate.hipify import find_tool

    tool = find_tool("hipify-perl")
    if tool is None:
        return None
    files = sorted(
        str(p) for p in tree.rglob("*") if p.suffix.lower() in SOURCE_SUFFIXES and p.is_file()
    )
    return [
        [tool, "-quiet-warnings", *files[start : start + 500]]
        for start in range(0, len(files), 500)
    ]


def time_hipify_perl(commands: list[list[str]], env: dict[str, str]) -> Run:
    runs = [run_measured(command, env, check=False) for command in commands]
    return Run(sum(r.wall for r in runs), sum(r.cpu for r in runs), max(r.rss for r in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", type=Path, help="real CUDA trees to scan")
    parser.add_argument(
        "--generate-lines",
        type=int,
        default=1_000_000,
        help="size of the largest generated tree (0: none)",
    )
    parser.add_argument("--jobs", type=int, default=None, help="portcheck -j (default: cores)")
    parser.add_argument(
        "--hipify-perl",
        action="store_true",
        help="also time hipify-perl translating the real trees",
    )
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per real tree; the median is shown"
    )
    parser.add_argument(
        "--generated-repeat",
        type=int,
        default=1,
        help="runs per generated tree (the scaling figure compares their medians)",
    )
    args = parser.parse_args()

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # Byte-compile portcheck first, as installing a wheel does: otherwise a checkout run with
    # PYTHONDONTWRITEBYTECODE compiles every module again on each start.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "portcheck")], check=True)
    with tempfile.TemporaryDirectory(prefix="portcheck-bench-") as scratch:
        env["PORTCHECK_CACHE_DIR"] = str(Path(scratch) / "cache")
        trees: list[tuple[str, Path, int]] = [(t.name, t, count_lines(t)) for t in args.trees]
        if args.generate_lines:
            for fraction in (4, 1):
                size = args.generate_lines // fraction
                folder = Path(scratch) / f"generated-{size}"
                trees.append((f"generated {size:,}", folder, generate_tree(folder, size)))
        # Warm the rule cache once so every measurement starts equal. That first load reads
        # the rule files' YAML, as a machine's (or a CI runner's) first run does: timed too.
        first_load = run_measured([sys.executable, "-m", "portcheck", "rules", "stats"], env)
        settled_load = run_measured([sys.executable, "-m", "portcheck", "rules", "stats"], env)
        rows = []
        for name, tree, lines in trees:
            real = tree in args.trees
            repeat = max(1, args.repeat if real else args.generated_repeat)
            hipify = hipify_perl_commands(tree) if args.hipify_perl and real else None
            colds, warms, perls = [], [], []
            # Runs of both tools alternate, so that both see the same machine.
            for _ in range(repeat):
                colds.append(run_measured(scan_command(tree, args.jobs, cache=False), env))
                shutil.rmtree(Path(scratch) / "cache", ignore_errors=True)
                run_measured(scan_command(tree, args.jobs, cache=True), env)  # fill the cache
                warms.append(run_measured(scan_command(tree, args.jobs, cache=True), env))
                if hipify is not None:
                    perls.append(time_hipify_perl(hipify, env))
            rows.append((name, lines, colds, warms, perls))
        shutil.rmtree(Path(scratch) / "cache", ignore_errors=True)

    header = (
        "tree",
        "lines",
        "cold s",
        "cold CPU s",
        "lines/s",
        "warm s",
        "peak MiB",
        "hipify-perl s",
        "hipify-perl CPU s",
        "speed-up",
    )
    table = []
    summary = []
    for name, lines, colds, warms, perls in rows:
        cold = statistics.median(r.wall for r in colds)
        cpu = statistics.median(r.cpu for r in colds)
        memory = statistics.median(r.rss for r in colds)
        warm = statistics.median(r.wall for r in warms)
        perl = statistics.median(r.wall for r in perls) if perls else None
        perl_cpu = statistics.median(r.cpu for r in perls) if perls else None
        table.append(
            (
                name,
                f"{lines:,}",
                f"{cold:.2f}",
                f"{cpu:.2f}",
                f"{lines / cold:,.0f}",
                f"{warm:.2f}",
                f"{memory / 1024:.0f}",
                "—" if perl is None else f"{perl:.1f}",
                "—" if perl_cpu is None else f"{perl_cpu:.1f}",
                "—" if perl is None else f"{perl / cold:.1f}×",
            )
        )
        if perls:
            # Each run of portcheck against the hipify-perl run beside it.
            ratios = sorted(p.wall / c.wall for p, c in zip(perls, colds, strict=True))
            summary.append(
                f"{name}: speed-up per pair of runs {', '.join(f'{r:.1f}×' for r in ratios)}; "
                f"cold runs {', '.join(f'{c.wall:.2f}' for c in colds)} s; "
                f"warm runs {', '.join(f'{w.wall:.2f}' for w in warms)} s"
            )
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(str(x)) for x in column) for column in zip(header, *table, strict=False)]
        for row in (header, *table):
            print("  ".join(str(x).rjust(w) for x, w in zip(row, widths, strict=False)))
    for line in summary:
        print(line)
    print(
        f"rule set: {first_load.wall:.2f} s on a machine's first run (YAML read and validated, "
        f"then cached), {settled_load.wall:.2f} s from the cache (`portcheck rules stats`)"
    )
    generated = [r for r in rows if r[0].startswith("generated")]
    if len(generated) == 2:
        (_, small_lines, small_runs, *_), (_, big_lines, big_runs, *_) = generated
        small = statistics.median(r.wall for r in small_runs)
        big = statistics.median(r.wall for r in big_runs)
        print(
            f"\nscaling: {big_lines / small_lines:.1f}× the code took {big / small:.2f}× the time"
        )


if __name__ == "__main__":
    main()
