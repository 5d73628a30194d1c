#!/usr/bin/env python3
"""Scan time of generated code: one long expression, or deeply nested calls.

    python benchmarks/bench_long_expr.py [--sizes 10000,20000,40000] [--repeat 3] [--markdown]

Generated code holds expressions no person writes: tens of thousands of terms in one
statement, calls nested tens of thousands deep. Each shape is generated at each size in
one .cu file beside an ordinary kernel, and scanned in this process (`portcheck.scan`,
no cache, one job, after a warm-up scan so start-up is not counted); the table shows
the median time of --repeat scans and its ratio to the size before. Linear is a ratio
of about 2 per doubling.

Shapes:
  sum      `a0 + a1 + ... + aN` (a left-deep tree N levels deep)
  stencil  `c0 * in[threadIdx.x + 0] + ...` (every term holds a CUDA name to classify)
  nested   `f(f(f(... __shfl_xor_sync(0xffffffff, x, 1) ...)))`, N calls deep

It is a measurement, not a test: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import portcheck  # noqa: E402

KERNEL = """#include <cuda_runtime.h>

__global__ void warpReduce(float *out, const float *in) {
    float v = in[threadIdx.x];
    v += __shfl_down_sync(0xffffffff, v, 16);
    out[threadIdx.x / 32] = v;
}
"""


def sum_terms(n: int) -> str:
    terms = " + ".join(f"a{i}" for i in range(n))
    return f"__device__ float total(const float *a) {{\n    return {terms};\n}}\n"


def stencil_terms(n: int) -> str:
    terms = " + ".join(f"c{i % 97} * in[threadIdx.x + {i}]" for i in range(n))
    return f"__global__ void stencil(float *out, const float *in) {{\n    out[0] = {terms};\n}}\n"


def nested_calls(n: int) -> str:
    body = "f(" * n + "__shfl_xor_sync(0xffffffff, x, 1)" + ")" * n
    return (
        "__device__ float f(float x) { return x * 0.5f; }\n"
        f"__device__ float nest(float x) {{\n    return {body};\n}}\n"
    )


SHAPES = {"sum": sum_terms, "stencil": stencil_terms, "nested": nested_calls}


def time_scan(folder: Path, repeat: int) -> tuple[float, int]:
    times = []
    findings = 0
    for _ in range(repeat):
        started = time.perf_counter()
        report = portcheck.scan(folder, cache=False, jobs=1, file_timeout=None)
        times.append(time.perf_counter() - started)
        findings = len(report.findings)
        assert not report.skipped, report.skipped
    return statistics.median(times), findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,20000,40000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    with tempfile.TemporaryDirectory(prefix="bench-long-expr-") as tmp:
        warm = Path(tmp) / "warm"
        warm.mkdir()
        (warm / "k.cu").write_text(KERNEL)
        portcheck.scan(warm, cache=False, jobs=1)  # rules loaded, queries compiled

        rows = []
        for shape in args.shapes.split(","):
            previous = None
            for size in sizes:
                folder = Path(tmp) / f"{shape}-{size}"
                folder.mkdir()
                source = KERNEL + SHAPES[shape](size)
                (folder / "generated.cu").write_text(source)
                seconds, findings = time_scan(folder, args.repeat)
                ratio = f"{seconds / previous:.2f}" if previous else "-"
                rows.append((shape, size, len(source), seconds, ratio, findings))
                previous = seconds
                if not args.markdown:
                    print(
                        f"{shape:8s} {size:>7,d} terms/levels {len(source) / 1024:8.0f} KiB"
                        f" {seconds:8.3f} s  x{ratio:>5s}  findings {findings}",
                        flush=True,
                    )
    if args.markdown:
        print("| shape | size | KiB | seconds (median) | ratio to previous | findings |")
        print("|---|---:|---:|---:|---:|---:|")
        for shape, size, length, seconds, ratio, findings in rows:
            kib = length / 1024
            print(f"| {shape} | {size:,} | {kib:.0f} | {seconds:.3f} | {ratio} | {findings} |")


if __name__ == "__main__":
    main()
