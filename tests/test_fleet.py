"""`portcheck fleet`: many repositories at once on Dask, as a user runs it.

Generated repositories in tmp: a git repository with CUDA that needs work (cloned through
a file:// URL at a tag), a plain folder whose CUDA already has an AMD branch, a URL that
does not exist and a line that is no URL at all. The fleets run on a local cluster of 2
worker processes: the command's own, or one started here and named with --scheduler.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from portcheck.fleet.sources import read_list

from conftest import FIXTURES, REPO

FLEET_FIXTURES = FIXTURES / "fleet"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Fleet Test",
    "GIT_AUTHOR_EMAIL": "fleet@example.com",
    "GIT_COMMITTER_NAME": "Fleet Test",
    "GIT_COMMITTER_EMAIL": "fleet@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, **GIT_IDENTITY},
    ).stdout.strip()


def fleet(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "portcheck", "fleet", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def make_git_repository(folder: Path) -> Path:
    shutil.copytree(FLEET_FIXTURES / "reduce", folder)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "block-wide sum")
    git(folder, "tag", "v1")
    return folder


def make_big_tree(folder: Path, files: int) -> Path:
    """A tree whose scan takes seconds: many kernels files (each its own text)."""
    text = (FLEET_FIXTURES / "reduce" / "src" / "reduce.cu").read_text()
    for index in range(files):
        part = folder / f"part{index // 50}"
        part.mkdir(parents=True, exist_ok=True)
        renamed = text.replace("blockSum", f"blockSum{index}").replace("warpSum", f"warpSum{index}")
        (part / f"reduce{index}.cu").write_text(renamed)
    return folder


@pytest.fixture(scope="module")
def repositories(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("fleet-sources")
    kernels = make_git_repository(base / "kernels")
    # A local folder (not a git checkout) whose name needs escaping in HTML.
    plain = base / "saxpy <b> & co"
    shutil.copytree(FLEET_FIXTURES / "saxpy", plain)
    listing = base / "repos.txt"
    listing.write_text(
        "# the fleet under test\n"
        f"file://{kernels}@v1\n"
        "\n"
        f"{plain.name}\n"  # relative: read from LIST's folder
        f"file://{base}/missing.git\n"
        "ftp://example.com/old.git\n"
    )
    return {"base": base, "kernels": kernels, "plain": plain, "list": listing}


@pytest.fixture(scope="module")
def first_run(repositories, tmp_path_factory):
    """The fleet's own local cluster of 2 workers, as a user starts it."""
    output = tmp_path_factory.mktemp("fleet-out")
    result = fleet(repositories["list"], "-o", output, "--workers", "2", "-j", "1")
    return result, output


@pytest.fixture(scope="module")
def cluster():
    """A local Dask cluster of 2 worker processes, for the runs that name --scheduler."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as local:
        yield local.scheduler_address


def portfolio(output: Path) -> dict:
    return json.loads((output / "portfolio.json").read_text())


def by_source(document: dict) -> dict[str, dict]:
    return {row["source"]: row for row in document["repositories"]}


def test_list_lines_become_named_entries(tmp_path):
    listing = tmp_path / "repos.txt"
    listing.write_bytes(
        b"https://github.com/NVIDIA/cuda-samples.git@v12.4\n"
        b"git@github.com:ggml-org/ggml.git\n"
        b"https://gitlab.example.com/team/ggml@feature/rocm\n"
        b"# a comment\n"
        b"projects/solver\n"
        b"https://github.com/NVIDIA/cuda-samples.git@v12.4\n"  # the same again: kept once
        b"ftp://example.com/x.git\n"
        b"https://github.com/a/b@bad..ref\n"
        b"\xff\xfe\n"
    )
    entries = read_list(listing)
    assert [(e.kind, e.location, e.ref) for e in entries] == [
        ("git", "https://github.com/NVIDIA/cuda-samples.git", "v12.4"),
        ("git", "git@github.com:ggml-org/ggml.git", None),
        ("git", "https://gitlab.example.com/team/ggml", "feature/rocm"),
        ("local", str(tmp_path / "projects" / "solver"), None),
        ("invalid", "ftp://example.com/x.git", None),
        ("invalid", "https://github.com/a/b", "bad..ref"),
        ("invalid", "", None),
    ]
    names = [e.name for e in entries]
    assert names[:4] == ["NVIDIA+cuda-samples@v12.4", "ggml-org+ggml", names[2], "solver"]
    assert names[2].startswith("team+ggml@feature_rocm")
    assert len(set(names)) == len(names)
    assert "unsupported URL scheme 'ftp'" in entries[4].problem
    assert entries[6].problem == "not UTF-8 text"


def test_usage_errors_are_one_line_and_exit_2(tmp_path):
    missing = fleet(tmp_path / "nope.txt", "-o", tmp_path / "out")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [f"Error: {tmp_path / 'nope.txt'}: no such file"]
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing yet\n\n")
    result = fleet(empty, "-o", tmp_path / "out")
    assert result.returncode == 2 and "names no repository" in result.stderr
    assert "Traceback" not in result.stderr
    arch = fleet(empty, "-o", tmp_path / "out", "--offload-arch", "gfx90a")
    assert arch.returncode == 2 and "--offload-arch goes with --compile" in arch.stderr
    scheduler = fleet(empty, "-o", tmp_path / "out", "--scheduler", "nonsense://x")
    assert scheduler.returncode == 2
    assert "not a Dask scheduler address" in scheduler.stderr.strip().splitlines()[-1]
    bad_target = fleet(empty, "-o", tmp_path / "out", "--targets", "cuda")
    assert bad_target.returncode == 2 and "unknown target 'cuda'" in bad_target.stderr


def test_a_list_whose_every_line_fails_still_writes_the_portfolio(tmp_path):
    listing = tmp_path / "repos.txt"
    listing.write_text("ftp://example.com/a.git\nhttps://example.com/b@-oops\n")
    result = fleet(listing, "-o", tmp_path / "out")
    assert result.returncode == 1, result.stderr
    document = portfolio(tmp_path / "out")
    reasons = {f["source"]: f["reason"] for f in document["failed"]}
    assert "unsupported URL scheme 'ftp'" in reasons["ftp://example.com/a.git"]
    assert "not a branch, tag or commit" in reasons["https://example.com/b@-oops"]
    assert document["totals"] == {**document["totals"], "repositories": 2, "failed": 2, "ok": 0}
    assert (tmp_path / "out" / "portfolio.html").is_file()


def test_each_repository_gets_its_report(first_run, repositories):
    result, output = first_run
    assert result.returncode == 1, result.stderr  # two lines fail; the others go on
    document = by_source(portfolio(output))
    kernels = document[f"file://{repositories['kernels']}@v1"]
    plain = document[str(repositories["plain"])]
    for row in (kernels, plain):
        assert row["status"] == "ok" and row["this_run"] == "scanned"
        report = json.loads((output / row["report"]).read_text())
        assert report["schema"] == "portcheck.report/1"
        assert report["summary"]["scores"] == row["scores"]
    reduce_report = json.loads((output / kernels["report"]).read_text())
    assert {f["slug"] for f in reduce_report["findings"]} >= {
        "warp-size-assumption",
        "lane-mask-width",
        "managed-memory",
    }
    assert kernels["commit"] == git(repositories["kernels"], "rev-parse", "v1")
    # The clone is the fleet's; the local folder is scanned in place and left as it was.
    assert not (repositories["plain"] / ".git").exists()


def test_portfolio_ranks_by_readiness_then_effort(first_run, repositories):
    _, output = first_run
    document = portfolio(output)
    rows = document["repositories"]
    assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1))
    ok = [row for row in rows if row["status"] == "ok"]
    assert [row["source"] for row in ok] == [
        str(repositories["plain"]),  # all its CUDA already has an AMD branch: 100
        f"file://{repositories['kernels']}@v1",
    ]
    for row in ok:
        best = max(s for s in row["scores"].values() if s is not None)
        assert row["readiness"] == best == row["scores"][row["route"]]
        assert row["effort_hours"] == row["effort"][row["route"]]
    assert rows[-2:] == [row for row in rows if row["status"] == "failed"]
    with io.StringIO((output / "portfolio.csv").read_text()) as text:
        table = list(csv.DictReader(text))
    assert [r["name"] for r in table] == [row["name"] for row in rows]
    assert table[0]["readiness"] == str(ok[0]["readiness"])


def test_portfolio_names_failures_with_their_reason(first_run, repositories):
    _, output = first_run
    failed = {f["source"]: f["reason"] for f in portfolio(output)["failed"]}
    missing = failed[f"file://{repositories['base']}/missing.git"]
    assert missing.startswith("git ls-remote failed: fatal:")
    assert "does not appear to be a git repository" in missing
    assert failed["ftp://example.com/old.git"].startswith("LIST line 6: unsupported URL scheme")


def test_blockers_are_the_costliest_across_the_fleet(first_run, repositories):
    _, output = first_run
    document = portfolio(output)
    kernels = by_source(document)[f"file://{repositories['kernels']}@v1"]
    report = json.loads((output / kernels["report"]).read_text())
    blockers = {b["name"]: b for b in document["blockers"]}
    for slug in ("warp-size-assumption", "lane-mask-width", "managed-memory"):
        blocker = blockers[slug]
        assert blocker["kind"] == "hazard"
        assert blocker["repositories"] == [kernels["name"]]
        assert blocker["occurrences"] == sum(1 for f in report["findings"] if f["slug"] == slug)
        assert blocker["hours"] > 0
    hours = [b["hours"] for b in document["blockers"]]
    assert hours == sorted(hours, reverse=True)
    # Nothing in the saxpy folder is in the way: its one AMD branch covers it.
    assert all(
        document["repositories"][0]["name"] not in b["repositories"] for b in blockers.values()
    )


def test_portfolio_lists_repositories_that_already_have_amd_paths(first_run, repositories):
    _, output = first_run
    document = portfolio(output)
    plain = by_source(document)[str(repositories["plain"])]
    assert document["amd_paths"] == [
        {"name": plain["name"], "amd_paths": 1, "guards": ["#if defined(__HIP_PLATFORM_AMD__)"]}
    ]


def test_portfolio_html_is_self_contained_and_escaped(first_run, repositories):
    _, output = first_run
    page = (output / "portfolio.html").read_text()
    assert "saxpy <b>" not in page
    assert "saxpy &lt;b&gt; &amp; co" in page
    for tag in ("<link", "<img", "<script src", "@import"):
        assert tag not in page
    document = portfolio(output)
    for row in document["repositories"]:
        assert f'data-name="{row["name"]}"' in page
    assert 'id="blockers-table"' in page and "does not appear to be a git repository" in page


def test_second_run_redoes_only_what_changed(first_run, repositories, cluster, tmp_path):
    _, output = first_run
    before = {
        p.name: p.stat().st_mtime_ns for p in output.glob("*.json") if p.name != "portfolio.json"
    }
    # --no-cache changes no result: it does not make a repository look changed.
    again = fleet(
        repositories["list"], "-o", output, "--scheduler", cluster, "-j", "1", "--no-cache"
    )
    assert again.returncode == 1, again.stderr
    rows = by_source(portfolio(output))
    kernels_source = f"file://{repositories['kernels']}@v1"
    assert rows[kernels_source]["this_run"] == "reused"
    assert rows[str(repositories["plain"])]["this_run"] == "reused"
    after = {
        p.name: p.stat().st_mtime_ns for p in output.glob("*.json") if p.name != "portfolio.json"
    }
    assert after == before  # nothing rewritten
    assert "0 scanned, 2 unchanged, 2 failed" in again.stderr

    # A new commit under the tag: that repository, and only it, is scanned again.
    kernels = repositories["kernels"]
    source = kernels / "src" / "scale.cu"
    source.write_text(
        source.read_text() + "\nvoid prefetch(float* p, size_t n) {\n"
        "    cudaMemPrefetchAsync(p, n, 0);\n}\n"
    )
    git(kernels, "commit", "-q", "-am", "prefetch")
    git(kernels, "tag", "-f", "v1")
    third = fleet(repositories["list"], "-o", output, "--scheduler", cluster, "-j", "1")
    assert third.returncode == 1, third.stderr
    rows = by_source(portfolio(output))
    assert rows[kernels_source]["this_run"] == "scanned"
    assert rows[kernels_source]["commit"] == git(kernels, "rev-parse", "HEAD")
    assert rows[str(repositories["plain"])]["this_run"] == "reused"
    report = json.loads((output / rows[kernels_source]["report"]).read_text())
    assert any(u["name"] == "cudaMemPrefetchAsync" for u in report["usages"])


def test_a_repository_over_its_time_limit_is_killed_and_recorded(cluster, tmp_path):
    # Far more than any machine scans in half a second with one job (80 files once finished
    # in time on a fast CI machine); the kill comes at 0.5 s, so the size costs nothing.
    big = make_big_tree(tmp_path / "big", 2000)
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{big}\n")
    result = fleet(
        listing,
        "-o",
        tmp_path / "out",
        "--scheduler",
        cluster,
        "--repo-timeout",
        "0.5",
        "--no-cache",
        "-j",
        "1",
    )
    assert result.returncode == 1, result.stderr
    (failure,) = portfolio(tmp_path / "out")["failed"]
    assert failure["reason"] == "scan timed out after 0.5 s (killed with its children)"
    assert not (tmp_path / "out" / "big.json").exists()
    assert _processes_mentioning(str(big)) == []


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command:
            found.append(f"{entry.name}: {command[:200]}")
    return found


def _session_members(session: int) -> list[str]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == session:
            members.append(entry.name)
    return members


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_an_interrupt_leaves_nothing_running(tmp_path):
    big = make_big_tree(tmp_path / "bigtree", 2000)  # still scanning at Ctrl-C
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{big}\n")
    output = tmp_path / "out"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portcheck",
            "fleet",
            str(listing),
            "-o",
            str(output),
            "--workers",
            "2",
            "--no-cache",
            "-j",
            "1",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 120
        while not any("scan" in p for p in _processes_mentioning(str(big))):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the scan never started"
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr
    time.sleep(0.5)
    assert _processes_mentioning(str(big)) == []  # the scan and its workers
    assert _session_members(process.pid) == []  # the Dask workers and nanny
    (row,) = portfolio(output)["repositories"]
    assert row["this_run"] == "interrupted"
    assert not (output / ".fleet" / "records" / f"{row['name']}.json").exists()  # redone next time


def test_units_are_split_into_at_most_one_group_per_worker():
    from portcheck.fleet.run import _groups

    units = [f"src/k{i}.cu" for i in range(10)]
    assert _groups(units, 2) == [tuple(units[:5]), tuple(units[5:])]
    assert _groups(units[:3], 8) == [tuple(units[:2]), tuple(units[2:3])]
    assert _groups(units[:1], 8) == [tuple(units[:1])]
    assert [len(g) for g in _groups(units, 64)] == [2, 2, 2, 2, 2]  # two units at least
    assert sorted(u for g in _groups(units, 3) for u in g) == units


def _hipcc_or_skip() -> None:
    from portcheck.compile import CompileError, find_toolchain

    try:
        find_toolchain()
    except CompileError:
        if os.environ.get("CI"):
            pytest.fail("hipcc is missing in CI: .ci/run must install it (apt-get install hipcc)")
        pytest.skip("hipcc not installed (apt-get install -y hipcc)")


def test_compile_units_fan_out_and_land_in_the_report(cluster, tmp_path):
    _hipcc_or_skip()
    tree = tmp_path / "units"
    (tree / "src").mkdir(parents=True)
    text = (FLEET_FIXTURES / "reduce" / "src" / "scale.cu").read_text()
    for index in range(4):  # two groups of two on two workers
        renamed = text.replace("scale", f"scale{index}").replace("scaleOnDevice", f"run{index}")
        (tree / "src" / f"scale{index}.cu").write_text(renamed)
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{tree}\n")
    output = tmp_path / "out"
    result = fleet(
        listing,
        "-o",
        output,
        "--scheduler",
        cluster,
        "-j",
        "1",
        "--compile",
        "--offload-arch",
        "gfx90a",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((output / "units.json").read_text())
    assert [(c["path"], c["arch"], c["ok"]) for c in report["compile"]] == [
        (f"src/scale{i}.cu", "gfx90a", True) for i in range(4)
    ]
    assert report["hipcc"]["path"]
    (row,) = portfolio(output)["repositories"]
    assert row["compile"] == {
        "units": 4,
        "results": 4,
        "built": 4,
        "failed": 0,
        "code_failures": 0,
        "problems": [],
        "groups": 2,
    }
