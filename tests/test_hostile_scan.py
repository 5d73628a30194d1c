"""Scanning is safe with any input: hostile trees, planted or damaged caches, odd `-o`
targets, unusable cache folders and bad options. Each test asserts what a user notices:
the exit code, one line on stderr, no file a planted payload would create, the bytes
of the output, a device or pipe that stays what it was."""

from __future__ import annotations

import json
import os
import pickle
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_portcheck

REDUCE_CU = """\
#include <cuda_runtime.h>
#include <cstdio>

// Sum of a block, one warp at a time.
__global__ void block_sum(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (threadIdx.x % 32 == 0)
        atomicAdd(out, v);
}

int main() {
    const int n = 1 << 20;
    float *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(float));
    cudaMalloc(&d_out, sizeof(float));
    cudaMemset(d_out, 0, sizeof(float));
    block_sum<<<(n + 255) / 256, 256>>>(d_in, d_out, n);
    cudaDeviceSynchronize();
    cudaFree(d_in);
    cudaFree(d_out);
    printf("done\\n");
    return 0;
}
"""

# A kernel the parser cannot fully read: an expression is missing and a brace is stray.
BROKEN_CU = """\
#include <cuda_runtime.h>

__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * ;
    }}
}

void launch(float* x, int n) {
    scale<<<(n + 127) / 128, 128>>>(x, 2.0f, n);
    cudaDeviceSynchronize();
}
"""


def run(*args, cache_dir: Path | None = None, env: dict[str, str] | None = None):
    environment = dict(os.environ if env is None else env)
    if cache_dir is not None:
        environment["PORTCHECK_CACHE_DIR"] = str(cache_dir)
    return run_portcheck(*args, env=environment)


def project(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"src/reduce.cu": REDUCE_CU}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def stable(document: str) -> dict:
    """A JSON report without what differs between two runs of the same tree (timing)."""
    doc = json.loads(document)
    doc["summary"].pop("seconds", None)
    return doc


def stderr_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


# ------------------------------------------------------------------ caches (bullet 1)


class _CreatesMarker:
    """Unpickling this calls open(marker, "w"): the file appears if anything unpickles it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_planted_payloads_in_every_cache_do_not_run_and_do_not_change_the_result(tmp_path):
    tree = project(tmp_path / "proj")
    cache = tmp_path / "cache"
    clean = run("scan", str(tree), "--format", "json", "--no-cache", cache_dir=cache)
    assert clean.returncode == 0, clean.stderr
    first = run("scan", str(tree), "--format", "json", cache_dir=cache)
    assert first.returncode == 0, first.stderr

    marker = tmp_path / "PWNED"
    bomb = pickle.dumps(_CreatesMarker(marker))
    database = cache / "scan-cache.sqlite"
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM scans").fetchone()[0] > 0
        db.execute("UPDATE scans SET value = ?", (bomb,))
        db.execute("UPDATE reports SET value = ?", (bomb,))
    # The rule caches: a same-length edit that a reader which does not check would take
    # for a valid status ("partial" -> "unknown": a silent change of every such verdict).
    tampered = 0
    for path in cache.iterdir():
        if path.name.startswith(("rules-", "yaml-")):
            data = path.read_bytes()
            path.write_bytes(data.replace(b"partial", b"unknown"))
            tampered += data.count(b"partial")
    assert tampered

    again = run("scan", str(tree), "--format", "json", cache_dir=cache)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert not marker.exists()
    assert stable(again.stdout) == stable(clean.stdout)


def _rewrite_cached_json(database: Path, change) -> int:
    """Apply `change(document)` to every JSON document stored in the scan cache."""
    changed = 0
    with sqlite3.connect(database) as db:
        for table, key in (("scans", "key"), ("reports", "slot")):
            for name, value in db.execute(f"SELECT {key}, value FROM {table}").fetchall():
                document = json.loads(value)
                change(document)
                db.execute(
                    f"UPDATE {table} SET value = ? WHERE {key} = ?",
                    (json.dumps(document).encode(), name),
                )
                changed += 1
    return changed


def _wrong_shapes(document: dict) -> None:
    """Valid JSON of the right kind, wrong inside: what formatters index would break."""
    for finding in document.get("findings", []):
        finding[1] = "no-such-hazard"  # a slug the catalogue does not know
        finding[4] = ["7", 1, 1, 1, 0, 0]  # a line that is text
    if "scores" in document:
        document["scores"] = {"hip": "100"}
    document["uses"]["strings"] = [None, 3]


def test_wrong_shape_cache_entries_are_misses_not_crashes(tmp_path):
    tree = project(tmp_path / "proj")
    cache = tmp_path / "cache"
    clean = run("scan", str(tree), "--format", "json", "--no-cache", cache_dir=cache)
    assert run("scan", str(tree), "--format", "json", cache_dir=cache).returncode == 0
    assert _rewrite_cached_json(cache / "scan-cache.sqlite", _wrong_shapes) >= 2
    for fmt in ("json", "text", "markdown", "sarif"):
        again = run("scan", str(tree), "--format", fmt, cache_dir=cache)
        assert again.returncode == 0, again.stderr
        assert "Traceback" not in again.stderr
    final = run("scan", str(tree), "--format", "json", cache_dir=cache)
    assert stable(final.stdout) == stable(clean.stdout)


def test_stamp_rows_of_the_wrong_type_are_not_trusted(tmp_path):
    tree = project(tmp_path / "proj")
    cache = tmp_path / "cache"
    clean = run("scan", str(tree), "--format", "json", "--no-cache", cache_dir=cache)
    assert run("scan", str(tree), "--format", "json", cache_dir=cache).returncode == 0
    with sqlite3.connect(cache / "scan-cache.sqlite") as db:
        db.execute("UPDATE files SET recorded = 'later'")  # text where a time belongs
        db.execute("UPDATE scans SET value = 123456789")  # a number, not a stored result
        db.execute("DELETE FROM reports")
    again = run("scan", str(tree), "--format", "json", cache_dir=cache)
    assert again.returncode == 0, again.stderr
    assert stable(again.stdout) == stable(clean.stdout)


# ------------------------------------------------------------------ cache folder (bullet 2)


@pytest.mark.parametrize("variable", ["PORTCHECK_CACHE_DIR", "HOME"])
def test_an_unusable_cache_folder_means_no_cache_said_once(tmp_path, variable):
    tree = project(tmp_path / "proj")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    env = {
        k: v for k, v in os.environ.items() if k not in ("PORTCHECK_CACHE_DIR", "XDG_CACHE_HOME")
    }
    env[variable] = str(blocker / "cache")
    clean = run("scan", str(tree), "--format", "json", "--no-cache")
    for _ in range(2):
        result = run("scan", str(tree), "--format", "json", env=env)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        lines = stderr_lines(result)
        assert len([line for line in lines if "cache" in line]) == 1, lines
        assert "unusable" in lines[0] and "without a cache" in lines[0]
        assert stable(result.stdout) == stable(clean.stdout)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_home_means_no_cache_said_once(tmp_path):
    tree = project(tmp_path / "proj")
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    env = {
        k: v for k, v in os.environ.items() if k not in ("PORTCHECK_CACHE_DIR", "XDG_CACHE_HOME")
    }
    env["HOME"] = str(home)
    try:
        result = run("scan", str(tree), "--format", "json", env=env)
    finally:
        home.chmod(0o755)
    assert result.returncode == 0, result.stderr
    assert len([line for line in stderr_lines(result) if "unusable" in line]) == 1


# ------------------------------------------------------------------ -o targets (bullet 3)


def test_output_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    tree = project(tmp_path / "proj")
    target = tmp_path / "reports" / "audit.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    result = run("scan", str(tree), "--format", "json", "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["schema"] == "portcheck.report/1"


def test_output_into_a_fifo_writes_through_it(tmp_path):
    tree = project(tmp_path / "proj")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = tmp_path / "received.json"
    with received.open("wb") as sink:
        reader = subprocess.Popen(["cat", str(fifo)], stdout=sink)
        try:
            result = run("scan", str(tree), "--format", "json", "-o", str(fifo))
            reader.wait(timeout=30)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.wait()
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(received.read_text())["schema"] == "portcheck.report/1"


def _null_device(path: Path) -> Path:
    """A character device like /dev/null, made in tmp_path, so the test never risks the
    machine's own /dev/null (the old writer replaced the device with a regular file)."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    return path


def test_output_to_a_character_device_leaves_it_a_device(tmp_path):
    tree = project(tmp_path / "proj")
    device = _null_device(tmp_path / "null")
    link = tmp_path / "to-null"
    link.symlink_to(device)
    for where in (device, link):
        result = run("scan", str(tree), "--format", "sarif", "-o", str(where))
        assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert link.is_symlink()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_replacing_a_report_keeps_its_permissions(tmp_path):
    tree = project(tmp_path / "proj")
    out = tmp_path / "report.md"
    out.write_text("previous\n")
    out.chmod(0o640)
    result = run("scan", str(tree), "--format", "markdown", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert out.read_text().startswith("## portcheck")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []


def test_one_atomic_writer_in_the_package():
    """Temporary-file-and-rename lives in resources.write_atomically only (translate/ and
    compile.py are being rewritten elsewhere and are not counted)."""
    offenders = []
    for path in (REPO / "portcheck").rglob("*.py"):
        relative = path.relative_to(REPO / "portcheck").as_posix()
        if relative in ("resources.py", "compile.py") or relative.startswith("translate/"):
            continue
        text = path.read_text()
        for pattern in ("mkstemp(", "os.replace(", "NamedTemporaryFile("):
            if pattern in text:
                offenders.append(f"{relative}: {pattern}")
    assert offenders == []


# ------------------------------------------------------------------ errors (bullet 4)


def _one_line_error(result, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = stderr_lines(result)
    assert len(lines) == 1, lines
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize("where", ["missing/report.json", "a-file/report.json", "."])
def test_an_output_the_system_refuses_is_one_line_and_debug_shows_the_traceback(tmp_path, where):
    tree = project(tmp_path / "proj")
    (tmp_path / "a-file").write_text("x\n")
    out = tmp_path / where
    result = run("scan", str(tree), "-o", str(out))
    _one_line_error(result, str(out.parent if where == "." else out).rstrip("/."))
    debug = run("--debug", "scan", str(tree), "-o", str(tmp_path / "missing" / "r.json"))
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_scanning_a_fifo_is_refused_in_one_line(tmp_path):
    fifo = tmp_path / "kernel.cu"
    os.mkfifo(fifo)
    _one_line_error(run("scan", str(fifo)), str(fifo), "FIFO")


def test_a_missing_path_is_one_line(tmp_path):
    _one_line_error(run("scan", str(tmp_path / "nowhere")), "nowhere", "does not exist")


# ------------------------------------------------------------------ -j (bullet 5)


def test_jobs_above_the_cpu_count_are_capped_with_a_warning(tmp_path):
    tree = project(tmp_path / "proj")
    result = run("scan", str(tree), "--format", "json", "-j", "4096")
    assert result.returncode == 0, result.stderr
    (warning,) = [line for line in stderr_lines(result) if "-j" in line]
    assert "4096" in warning and "CPU" in warning


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_zero_or_negative_is_a_usage_error(tmp_path, jobs):
    tree = project(tmp_path / "proj")
    _one_line_error(run("scan", str(tree), "-j", jobs), jobs)


# ------------------------------------------------------------------ honest summaries (bullet 6)


def test_files_with_parse_errors_are_listed_in_every_format(tmp_path):
    tree = project(tmp_path / "proj", {"src/reduce.cu": REDUCE_CU, "src/broken.cu": BROKEN_CU})
    doc = json.loads(run("scan", str(tree), "--format", "json").stdout)
    broken = [f for f in doc["files"] if f["parse_errors"]]
    assert [f["path"] for f in broken] == ["src/broken.cu"]
    assert doc["summary"]["files_with_parse_errors"] == 1

    text = run("scan", str(tree), "--format", "text").stdout
    assert re.search(r"Parse errors in 1 file", text) and "src/broken.cu" in text
    markdown = run("scan", str(tree), "--format", "markdown").stdout
    assert "Parse errors in 1 file" in markdown and "`src/broken.cu`" in markdown
    html = run("scan", str(tree), "--format", "html").stdout
    assert "1 file(s) with parse errors" in html
    assert re.search(r"parse-errors.*src/broken\.cu", html, re.S)
    sarif = json.loads(run("scan", str(tree), "--format", "sarif").stdout)
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"] for n in notes for loc in n["locations"]
    ]
    assert uris == ["src/broken.cu"]


def test_nothing_to_score_is_null_said_and_fails_fail_under(tmp_path):
    tree = project(tmp_path / "plain", {"src/main.cpp": "int main() { return 0; }\n"})
    doc = json.loads(run("scan", str(tree), "--format", "json").stdout)
    assert doc["summary"]["scores"] == {"hip": None, "zluda": None, "scale": None}
    text = run("scan", str(tree)).stdout
    assert "Nothing to score" in text
    markdown = run("scan", str(tree), "--format", "markdown").stdout
    assert "Nothing to score" in markdown
    html = run("scan", str(tree), "--format", "html").stdout
    assert "Nothing to score" in html
    gate = run("scan", str(tree), "--format", "json", "--fail-under", "10")
    assert gate.returncode == 1
    assert "nothing to score" in gate.stderr and "Traceback" not in gate.stderr


# ------------------------------------------------------------------ file names (bullet 7)


def test_display_path_escapes_what_cannot_be_shown():
    from portcheck.paths import display_path

    assert display_path("src/kernels/reduce.cu") == "src/kernels/reduce.cu"
    assert display_path("sümme/ядро.cu") == "sümme/ядро.cu"
    assert display_path("a\x1b[31mred.cu") == "a\\x1b[31mred.cu"
    assert display_path("x\n::error::forged.cu") == "x\\n::error::forged.cu"
    assert display_path(b"bad\xff\xfe.cu") == "bad\\xff\\xfe.cu"
    assert display_path("bad\udcff.cu") == "bad\\xff.cu"  # os.fsdecode of an undecodable byte


def test_markdown_keeps_backticks_and_pipes_in_file_names_inside_their_code_span(tmp_path):
    from markdown_it import MarkdownIt

    name = "odd`name|with pipes.cu"
    tree = project(tmp_path / "proj", {name: REDUCE_CU})
    result = run("scan", str(tree), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    html = MarkdownIt("commonmark").enable("table").render(result.stdout)
    assert re.search(r"<code>odd`name\|with pipes\.cu:\d+</code>", html), html


@pytest.mark.skipif(sys.platform != "linux", reason="file names with control characters")
def test_control_characters_in_file_names_reach_no_output_raw(tmp_path):
    name = "x\n::error file=ci.yml::forged\x1b[2J.cu"
    tree = project(tmp_path / "proj", {name: REDUCE_CU, "src/broken.cu": BROKEN_CU})
    for fmt in ("text", "markdown", "html", "sarif", "json"):
        result = run("scan", str(tree), "--format", fmt)
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "\x1b" not in out, fmt
        assert not any(line.lstrip().startswith("::error") for line in out.splitlines()), fmt
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", out), fmt
    text = run("scan", str(tree)).stdout
    assert "x\\n::error file=ci.yml::forged\\x1b[2J.cu" in text
    doc = json.loads(run("scan", str(tree), "--format", "json").stdout)
    # JSON shows the name as every format does (discovery escapes it once, for all).
    assert "x\\n::error file=ci.yml::forged\\x1b[2J.cu" in {f["path"] for f in doc["files"]}
