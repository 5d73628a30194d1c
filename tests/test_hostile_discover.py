"""Scanning a hostile tree: odd names, FIFOs and devices, bad patterns, directory links,
huge generated expressions. Whatever the tree holds, the scan ends, says what it skipped
and why, and still reports the findings of the ordinary files around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

import portcheck

from conftest import REPO

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names and FIFOs")

SHUFFLE = b"""#include <cuda_runtime.h>

__global__ void warpReduce(float *out, const float *in) {
    float v = in[threadIdx.x];
    v += __shfl_down_sync(0xffffffff, v, 16);
    out[blockIdx.x] = v;
}
"""
ALLOCATE = b"""#include <cuda_runtime.h>

__global__ void scale(float *x, int n) {
    int lane = threadIdx.x % 32;
    float right = __shfl_down(x[lane], 1);
    if (lane < n) x[lane] = 2.0f * right;
}

void launch(int n) {
    float *d;
    cudaMalloc(&d, n * sizeof(float));
    scale<<<1, 32>>>(d, n);
    cudaFree(d);
}
"""


def scan_cli(*args, timeout=60):
    """`portcheck scan ...` in a fresh process, output as bytes (what reaches a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "portcheck", "scan", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        timeout=timeout,
    )


def scan_json(*args, timeout=60):
    result = scan_cli(*args, "--format", "json", timeout=timeout)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return json.loads(result.stdout)


def slugs_by_path(report):
    return {(f["slug"], f["path"]) for f in report["findings"]}


# -- names ----------------------------------------------------------------------------------


def test_name_that_is_not_utf8_is_scanned_and_shown_escaped_in_every_format(tmp_path):
    os.makedirs(os.fsencode(tmp_path / "src"))
    with open(os.fsencode(tmp_path / "src") + b"/k\xe9rnel.cu", "wb") as fh:
        fh.write(ALLOCATE)
    (tmp_path / "src" / "reduce.cu").write_bytes(SHUFFLE)

    report = scan_json(tmp_path, "--no-cache")
    assert {f["path"] for f in report["files"]} == {"src/k\\xe9rnel.cu", "src/reduce.cu"}
    assert slugs_by_path(report) >= {
        ("warp-size-assumption", "src/k\\xe9rnel.cu"),
        ("lane-mask-width", "src/reduce.cu"),
    }
    assert {"cudaMalloc", "cudaFree"} <= {
        u["name"] for u in report["usages"] if u["path"] == "src/k\\xe9rnel.cu"
    }
    for fmt in ("text", "markdown", "sarif", "html"):
        result = scan_cli(tmp_path, "--format", fmt)
        assert result.returncode == 0, (fmt, result.stderr.decode(errors="replace"))
        out = result.stdout.decode("utf-8")  # valid UTF-8: no raw byte of the name leaked
        if fmt == "sarif":
            run = json.loads(out)["runs"][0]
            out = " ".join(
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in run["results"]
            )
        assert "k\\xe9rnel.cu" in out, fmt


def test_control_characters_in_a_name_never_reach_the_terminal_raw(tmp_path):
    (tmp_path / "evil\x1b[2J\nFAKE: all clear.cu").write_bytes(ALLOCATE)
    (tmp_path / "reduce.cu").write_bytes(SHUFFLE)

    for fmt in ("text", "json", "markdown", "sarif"):
        result = scan_cli(tmp_path, "--format", fmt, "--no-cache")
        assert result.returncode == 0, fmt
        assert b"\x1b[2J" not in result.stdout, fmt
        assert b"\nFAKE: all clear" not in result.stdout, fmt
    report = scan_json(tmp_path, "--no-cache")
    assert "evil\\x1b[2J\\nFAKE: all clear.cu" in {f["path"] for f in report["files"]}
    assert ("lane-mask-width", "reduce.cu") in slugs_by_path(report)


# -- FIFOs, devices, links to files outside ---------------------------------------------------


def test_fifo_named_gitignore_or_kernel_does_not_hang_the_scan(tmp_path):
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "src").mkdir()
    os.mkfifo(tmp_path / "src" / "kernel.cu")
    (tmp_path / "src" / "reduce.cu").write_bytes(SHUFFLE)

    report = scan_json(tmp_path, "--no-cache", timeout=60)  # before: blocked on the FIFO
    assert [f["path"] for f in report["files"]] == ["src/reduce.cu"]
    assert ("lane-mask-width", "src/reduce.cu") in slugs_by_path(report)
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons[".gitignore"] == "not a regular file (a named pipe); not used as .gitignore"
    assert reasons["src/kernel.cu"] == "not a regular file (a named pipe)"


def test_links_to_devices_and_files_outside_the_tree_are_never_read(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    outside = tmp_path / "elsewhere.cu"
    outside.write_bytes(SHUFFLE)
    os.symlink("/dev/zero", root / ".gitignore")
    os.symlink("/dev/zero", root / "zero.cu")
    os.symlink(outside, root / "borrowed.cu")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "cutlass.cu").write_bytes(SHUFFLE)
    os.symlink(tmp_path / "vendor", root / "vendor")
    (root / "main.cu").write_bytes(ALLOCATE)
    (root / "sub").mkdir()
    (tmp_path / "patterns").write_text("*.cu\n")
    os.symlink(tmp_path / "patterns", root / "sub" / ".gitignore")
    (root / "sub" / "kept.cu").write_bytes(SHUFFLE)

    report = scan_json(root, "--no-cache")
    assert [f["path"] for f in report["files"]] == ["main.cu", "sub/kept.cu"]
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons["sub/.gitignore"].startswith("symlink to a file outside the scanned tree")
    assert reasons["borrowed.cu"] == "symlink to a file outside the scanned tree"
    assert reasons["zero.cu"] == "symlink to a file outside the scanned tree"
    assert reasons["vendor"] == "symlink to a directory outside the scanned tree"
    assert reasons[".gitignore"].startswith("symlink to a file outside the scanned tree")
    assert ("warp-size-assumption", "main.cu") in slugs_by_path(report)


def test_fifo_given_as_the_path_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "kernels.cu")
    result = scan_cli(tmp_path / "kernels.cu", "--format", "json", "--no-cache", timeout=30)
    assert result.returncode == 2  # bad input: one line, exit 2 (DESIGN, Interfaces)
    message = result.stderr.decode().strip().splitlines()
    assert len(message) == 1 and "FIFO" in message[0], message


def test_source_replaced_by_a_fifo_after_discovery_is_skipped_not_waited_on(tmp_path):
    from portcheck.discover import discover, read_candidate

    (tmp_path / "kernel.cu").write_bytes(ALLOCATE)
    [candidate] = list(discover(tmp_path))
    (tmp_path / "kernel.cu").unlink()
    fifo = tmp_path / "kernel.cu"
    os.mkfifo(fifo)
    done = threading.Event()

    def writer_after(seconds: float) -> None:
        # If the reader blocks in open() (as it did), a writer lets it go after `seconds`,
        # so a regression fails this test instead of hanging the suite.
        if done.wait(seconds):
            return
        while not done.is_set():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader yet
                time.sleep(0.05)

    threading.Thread(target=writer_after, args=(3,), daemon=True).start()
    started = time.monotonic()
    try:
        skipped = read_candidate(candidate)
    finally:
        done.set()
    assert time.monotonic() - started < 3
    assert skipped.reason == "not a regular file (a named pipe)"


# -- patterns -------------------------------------------------------------------------------


def test_bad_exclude_glob_is_a_usage_error(tmp_path):
    (tmp_path / "kernel.cu").write_bytes(ALLOCATE)
    result = scan_cli(tmp_path, "--exclude", "[z-a].cu")
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "bad --exclude pattern '[z-a].cu'" in lines[0]
    with pytest.raises(portcheck.ScanError, match="bad --exclude pattern"):
        portcheck.scan(tmp_path, exclude=["[z-a].cu"], cache=False)


def test_bad_gitignore_line_is_ignored_with_a_warning_and_the_rest_applies(tmp_path):
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / ".gitignore").write_text("generated/\n[z-a]\n*.gen.cu\n")
    (tmp_path / "third_party" / "generated").mkdir()
    (tmp_path / "third_party" / "generated" / "big.cu").write_bytes(ALLOCATE)
    (tmp_path / "third_party" / "tables.gen.cu").write_bytes(ALLOCATE)
    (tmp_path / "third_party" / "lib.cu").write_bytes(SHUFFLE)
    (tmp_path / "main.cu").write_bytes(ALLOCATE)

    report = portcheck.scan(tmp_path, cache=False)
    assert sorted(f.path for f in report.files) == ["main.cu", "third_party/lib.cu"]
    [warning] = [s for s in report.skipped if s.path == "third_party/.gitignore"]
    assert warning.reason.startswith("line 2: bad pattern '[z-a]' ignored")
    assert {(f.slug, f.path) for f in report.findings} >= {
        ("warp-size-assumption", "main.cu"),
        ("lane-mask-width", "third_party/lib.cu"),
    }


# -- directory links ------------------------------------------------------------------------


def test_directory_link_walked_first_does_not_hide_the_real_folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "reduce.cu").write_bytes(SHUFFLE)
    os.symlink("src", tmp_path / "alias")  # sorts before src: it used to be walked instead
    os.symlink("..", tmp_path / "src" / "up")

    report = portcheck.scan(tmp_path, cache=False)
    assert [f.path for f in report.files] == ["src/reduce.cu"]
    assert [(f.slug, f.path) for f in report.findings] == [("lane-mask-width", "src/reduce.cu")]
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["alias"] == "symlink to a directory in the tree, scanned as src"
    assert reasons["src/up"] == "symlink loop (to an enclosing directory)"


# -- time -----------------------------------------------------------------------------------


def long_expression(terms: int) -> bytes:
    """A generated stencil: one expression of `terms` terms, each reading threadIdx."""
    body = " + ".join(f"c{i % 97} * in[threadIdx.x + {i}]" for i in range(terms))
    return (
        SHUFFLE
        + b"\n__global__ void stencil(float *out, const float *in) {\n    out[threadIdx.x] = "
        + body.encode()
        + b";\n}\n"
    )


def nested_calls(depth: int) -> bytes:
    """A device function of `depth` nested calls with a shuffle at the bottom."""
    inner = "__shfl_xor_sync(0xffffffff, x, 1)"
    body = "f(" * depth + inner + ")" * depth
    return (
        b"__device__ float f(float x) { return x * 0.5f; }\n"
        + f"__device__ float nest(float x) {{\n    return {body};\n}}\n".encode()
        + ALLOCATE
    )


def test_forty_thousand_term_expression_scans_within_the_default_budget(tmp_path):
    (tmp_path / "stencil.cu").write_bytes(long_expression(40_000))
    started = time.monotonic()
    # Before: 20,000 terms took 7 minutes; the subprocess limit is the default budget.
    report = scan_json(tmp_path, "--no-cache", "-j", "1", timeout=60)
    assert time.monotonic() - started < 60
    assert report["skipped"] == []
    [summary] = report["files"]
    assert summary["uses"] >= 40_000  # every threadIdx, none lost
    assert {(f["slug"], f["line"]) for f in report["findings"]} == {("lane-mask-width", 5)}


def test_forty_thousand_nested_calls_keep_their_findings(tmp_path):
    (tmp_path / "nest.cu").write_bytes(nested_calls(40_000))
    report = portcheck.scan(tmp_path, cache=False, jobs=1)
    # Before: a query over a tree this deep lost the innermost calls (and took seconds).
    assert {(f.slug, f.span.line) for f in report.findings} == {
        ("lane-mask-width", 3),
        ("warp-size-assumption", 8),
    }


def test_thousands_of_broken_conditionals_scan_within_the_default_budget(tmp_path):
    """Each of 4,000 `#if` / `#else` pairs holds a line the grammar cannot read: the views
    tried for conditionals that meet syntax errors must not cost groups x errors (before:
    over a minute, and the file skipped as a timeout)."""
    text = "".join(
        f"#if defined(WIDE_{i})\nint pick{i}(int x) {{ return x @ 1; }}\n"
        f"#else\nint pick{i}(long x) {{ return x @ 2; }}\n#endif\n"
        for i in range(4000)
    )
    (tmp_path / "generated.cu").write_text(text + SHUFFLE.decode())
    report = scan_json(tmp_path, "--no-cache", "-j", "1", timeout=60)
    assert report["skipped"] == []
    [summary] = report["files"]
    assert summary["parse_errors"] > 0
    assert "lane-mask-width" in {f["slug"] for f in report["findings"]}


def test_file_over_its_budget_is_skipped_and_the_scan_goes_on(tmp_path):
    (tmp_path / "stencil.cu").write_bytes(long_expression(40_000))
    for i in range(17):  # enough files for a pool of workers
        (tmp_path / f"k{i:02d}.cu").write_bytes(SHUFFLE.replace(b"warpReduce", f"r{i}".encode()))

    for jobs in ("1", "2"):
        report = scan_json(tmp_path, "--file-timeout", "0.5", "-j", jobs)
        assert report["skipped"] == [{"path": "stencil.cu", "reason": "timeout"}], jobs
        assert len(report["files"]) == 17
        assert ("lane-mask-width", "k16.cu") in slugs_by_path(report)
    # A timed-out result is not remembered: with time enough, the file is scanned.
    report = scan_json(tmp_path, "-j", "1")
    assert report["skipped"] == []
    assert "stencil.cu" in {f["path"] for f in report["files"]}
