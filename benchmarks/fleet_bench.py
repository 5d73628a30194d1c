"""Benchmark `portcheck fleet` on real public CUDA repositories: repositories per minute
with 1 and with 2 local Dask workers, wall and CPU time.

The repositories come from bare git mirrors (OWNER+NAME/repo under --mirrors). Mirrors
may lack a few large blobs, which makes `git clone` of them fail; so each is first
rebuilt once into a local git repository of its HEAD tree (every blob the mirror has;
missing ones are left out and counted), under --sources. The fleet then clones those
shallowly through file:// URLs, as it would clone a remote.

    python benchmarks/fleet_bench.py --workers 1 2 [--repos NAME ...] [--markdown]

Each run uses a fresh output folder, --redo and --no-cache, so nothing is reused.
CPU time is that of the fleet process and all its children (the local cluster's worker
processes and every scan they ran), read with getrusage after it exits.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIRRORS = Path("/work/.mirror")
SOURCES = Path(tempfile.gettempdir()) / "portcheck-fleet-bench-sources"
# Public CUDA projects of many shapes: samples, kernels libraries, ML extensions, HPC.
REPOS = (
    "NVIDIA+cuda-samples",
    "ggml-org+ggml",
    "ggerganov+whisper.cpp",
    "microsoft+DeepSpeed",
    "bitsandbytes-foundation+bitsandbytes",
    "AMReX-Codes+amrex",
    "Dao-AILab+flash-attention",
    "Dao-AILab+causal-conv1d",
    "HazyResearch+ThunderKittens",
    "NVIDIA+apex",
    "NVIDIA+cuCollections",
    "NVIDIA+gdrcopy",
    "NVIDIA+jitify",
    "NVIDIA+nccl",
    "NVIDIA+nvbench",
    "NVlabs+tiny-cuda-nn",
    "alicevision+popsift",
    "deepseek-ai+DeepGEMM",
    "deepseek-ai+FlashMLA",
    "dmlc+xgboost",
    "facebookresearch+faiss",
    "facebookresearch+xformers",
    "graphdeco-inria+diff-gaussian-rasterization",
    "karpathy+llm.c",
    "mit-han-lab+torchsparse",
    "moderngpu+moderngpu",
    "rapidsai+rmm",
    "siboehm+SGEMM_CUDA",
    "state-spaces+mamba",
    "thu-ml+SageAttention",
    "tspeterkim+flash-attention-minimal",
    "xmrig+xmrig-cuda",
    "yuhc+gpu-rodinia",
    "cupy+cupy",
    "ginkgo-project+ginkgo",
    "gpu-mode+lectures",
)
GIT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@e",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@e",
}


def git(*args: str, cwd: Path | None = None, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=data,
        capture_output=True,
        check=True,
        timeout=600,
        env={**os.environ, **GIT},
    ).stdout


def rebuild(name: str, sources: Path) -> tuple[Path, int, int]:
    """A local repository of the mirror's HEAD tree: (folder, files, blobs missing)."""
    mirror = MIRRORS / name / "repo"
    target = sources / name
    stamp = target / ".git" / "portcheck-bench-done"
    if stamp.is_file():
        files, missing = map(int, stamp.read_text().split())
        return target, files, missing
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    listing = git(f"--git-dir={mirror}", "ls-tree", "-r", "-z", "HEAD").split(b"\0")
    entries = []
    for record in filter(None, listing):
        meta, path = record.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode, sha, path))
    batch = subprocess.Popen(
        ["git", f"--git-dir={mirror}", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert batch.stdin is not None and batch.stdout is not None
    files = missing = 0
    for mode, sha, path in entries:
        batch.stdin.write(sha + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if header[-1] == b"missing":
            missing += 1
            continue
        body = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)
        file = target / os.fsdecode(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":
            os.symlink(os.fsdecode(body), file)
        else:
            file.write_bytes(body)
            if mode == b"100755":
                file.chmod(0o755)
        files += 1
    batch.stdin.close()
    batch.wait(timeout=60)
    git("init", "-q", cwd=target)
    git("add", "-A", "-f", cwd=target)
    git("commit", "-q", "--no-verify", "-m", f"{name} HEAD tree", cwd=target)
    stamp.write_text(f"{files} {missing}\n")
    return target, files, missing


def run_fleet(
    list_file: Path, workers: int, output: Path, extra: list[str], fresh: bool = True
) -> dict[str, object]:
    """One `portcheck fleet` run; `fresh`: a new output folder, --redo and --no-cache."""
    if fresh and output.exists():
        shutil.rmtree(output)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    command = [
        sys.executable,
        "-m",
        "portcheck",
        "fleet",
        str(list_file),
        "-o",
        str(output),
        "--workers",
        str(workers),
        *(["--redo", "--no-cache"] if fresh else []),
        *extra,
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=6 * 3600)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    portfolio = json.loads((output / "portfolio.json").read_text())
    totals = portfolio["totals"]
    rows = portfolio["repositories"]
    return {
        "workers": workers,
        "exit": finished.returncode,
        "repositories": totals["repositories"],
        "ok": totals["ok"],
        "failed": totals["failed"],
        "reused": totals["reused"],
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "per_minute": round(totals["repositories"] / (wall / 60), 2),
        # Summed over repositories (they overlap when there is more than one worker):
        "fetch_seconds": round(sum(r.get("fetch_seconds", 0.0) for r in rows), 1),
        "scan_seconds": round(sum(r.get("scan_seconds", 0.0) for r in rows), 1),
        "task_cpu_seconds": portfolio["run"]["task_cpu_seconds"],
        "portfolio": portfolio,
        "command": " ".join(command),
        "stderr_tail": finished.stderr.strip().splitlines()[-3:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repos", nargs="*", default=list(REPOS))
    parser.add_argument("--sources", type=Path, default=SOURCES)
    parser.add_argument("--output", type=Path, default=Path(tempfile.gettempdir()) / "fleet-bench")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--prepare-only", action="store_true", help="only rebuild the sources")
    parser.add_argument(
        "--resume", action="store_true", help="then run the last one again: nothing changed"
    )
    parser.add_argument("extra", nargs="*", help="more `portcheck fleet` options (after --)")
    args = parser.parse_args()
    lines = []
    print(f"rebuilding {len(args.repos)} repositories under {args.sources}", file=sys.stderr)
    for name in args.repos:
        if not (MIRRORS / name / "repo").is_dir():
            print(f"  {name}: no mirror, skipped", file=sys.stderr)
            continue
        folder, files, missing = rebuild(name, args.sources)
        print(f"  {name}: {files} files ({missing} blobs missing)", file=sys.stderr)
        lines.append(f"file://{folder}")
    args.output.mkdir(parents=True, exist_ok=True)
    list_file = args.output / "repos.txt"
    list_file.write_text("\n".join(lines) + "\n")
    results = []
    for workers in [] if args.prepare_only else args.workers:
        result = run_fleet(list_file, workers, args.output / f"w{workers}", args.extra)
        results.append(result)
        print(
            f"workers={workers}: {result['repositories']} repos ({result['failed']} failed) in "
            f"{result['wall_seconds']} s wall, {result['cpu_seconds']} s CPU: "
            f"{result['per_minute']} repos/min",
            file=sys.stderr,
        )
    if args.resume and results:
        last = int(results[-1]["workers"])
        again = run_fleet(list_file, last, args.output / f"w{last}", args.extra, fresh=False)
        again["workers"] = f"{last} (resume)"
        results.append(again)
    if args.markdown:
        print(
            "| workers | repositories | failed | reused | wall s | CPU s (all processes) "
            "| repos/min | Σ fetch s | Σ scan s | scan+git CPU s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in results:
            print(
                f"| {r['workers']} | {r['repositories']} | {r['failed']} | {r['reused']} "
                f"| {r['wall_seconds']} | {r['cpu_seconds']} | {r['per_minute']} "
                f"| {r['fetch_seconds']} | {r['scan_seconds']} | {r['task_cpu_seconds']} |"
            )
        timed = {r["workers"]: r["wall_seconds"] for r in results}
        if 1 in timed and 2 in timed:
            print(f"\nspeed-up 1 -> 2 workers: {timed[1] / timed[2]:.2f}x (wall)")
    json.dump(
        [{k: v for k, v in r.items() if k != "portfolio"} for r in results], sys.stderr, indent=1
    )


if __name__ == "__main__":
    main()
