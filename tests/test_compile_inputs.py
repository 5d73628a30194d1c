"""What each unit is compiled with, what is compiled at all, and when a result may be reused:
compile_commands.json and command-line flags, sources that are only #included, the cache's
header tracking, timeouts and interrupts (with a fake hipcc), and the rocm-version class.

Tests that run the real hipcc skip outside CI when it is missing (CI=true makes that a
failure, as in test_compile.py); the fake-hipcc tests run everywhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from portcheck.compile import (
    CompileError,
    compile_tree,
    find_toolchain,
    flags_from_command,
)

from conftest import REPO, run_portcheck


def _require_hipcc() -> None:
    try:
        find_toolchain()
    except CompileError:
        if os.environ.get("CI"):
            pytest.fail("hipcc is missing in CI: .ci/run must install it (apt-get install hipcc)")
        pytest.skip("hipcc not installed (apt-get install -y hipcc)")


@pytest.fixture
def hipcc(monkeypatch):
    monkeypatch.delenv("PORTCHECK_HIPCC", raising=False)
    _require_hipcc()
    return find_toolchain()


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(folder))
    return folder


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- flags from a compile database --------------------------------------------------------

SAXPY_FAST = """\
#include <cuda_runtime.h>

// Two kernel variants; CMake picks one with -DUSE_FAST=0/1 (option FAST_MATH).
#ifndef USE_FAST
#error "configure with CMake: USE_FAST selects the saxpy variant"
#endif

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
#if USE_FAST
    y[i] = fmaf(a, x[i], y[i]);
#else
    y[i] = a * x[i] + y[i];
#endif
  }
}
"""


def _cmake_project(root: Path) -> Path:
    source = _write(root / "src" / "saxpy.cu", SAXPY_FAST)
    build = root / "build"
    build.mkdir()
    command = (
        "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DUSE_FAST=1 "
        f"-I{root}/include -isystem /usr/local/cuda/include --expt-relaxed-constexpr "
        '"--generate-code=arch=compute_80,code=[compute_80,sm_80]" -Xcompiler=-fPIC -std=c++17 '
        f"-x cu -c {source} -o CMakeFiles/saxpy.dir/src/saxpy.cu.o"
    )
    (build / "compile_commands.json").write_text(
        json.dumps([{"directory": str(build), "command": command, "file": str(source)}])
    )
    return build


def test_a_unit_gets_its_macros_from_compile_commands_json(tmp_path, hipcc, cache):
    build = _cmake_project(tmp_path / "proj")
    # Found under PATH without being named ...
    (found,) = compile_tree(tmp_path / "proj", "gfx90a").results
    assert found.ok, found.diagnostics
    # ... or named with -p (the build folder or the file itself).
    (named,) = compile_tree(tmp_path / "proj", "gfx90a", build_dir=build, cache=False).results
    assert named.ok, named.diagnostics
    # Without the database the unit does not build: it needs -DUSE_FAST=1.
    (build / "compile_commands.json").rename(tmp_path / "elsewhere.json")
    (bare,) = compile_tree(tmp_path / "proj", "gfx90a").results
    assert not bare.ok
    assert any("USE_FAST selects" in d.message for d in bare.diagnostics)
    # The command line supplies it when there is no database.
    (given,) = compile_tree(tmp_path / "proj", "gfx90a", defines=["USE_FAST=1"]).results
    assert given.ok, given.diagnostics


def test_cli_takes_a_build_dir_and_defines(tmp_path, hipcc, cache):
    build = _cmake_project(tmp_path / "proj")
    moved = tmp_path / "out-of-tree-build"
    build.rename(moved)  # an out-of-tree build folder: not found under PATH
    args = ("compile", str(tmp_path / "proj"), "--offload-arch", "gfx90a", "--format", "json")
    without = run_portcheck(*args, timeout=600)
    assert without.returncode == 1, without.stderr
    with_p = run_portcheck(*args, "-p", str(moved), timeout=600)
    assert with_p.returncode == 0, with_p.stdout + with_p.stderr
    doc = json.loads(with_p.stdout)
    assert doc["schema"] == "portcheck.compile/1"
    assert [(r["path"], r["ok"]) for r in doc["results"]] == [("src/saxpy.cu", True)]
    with_d = run_portcheck(*args, "-D", "USE_FAST=1", "--no-cache", timeout=600)
    assert with_d.returncode == 0, with_d.stdout + with_d.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    bad_p = run_portcheck(*args, "-p", str(empty))
    assert bad_p.returncode == 2 and "no compile_commands.json" in bad_p.stderr
    assert "Traceback" not in bad_p.stderr


def test_only_the_flags_that_decide_meaning_are_kept_and_cuda_ones_translated(tmp_path):
    (tmp_path / "include").mkdir()
    arguments = [
        "/usr/local/cuda/bin/nvcc",
        "-DUSE_FAST=1,HAVE_CUB",  # nvcc takes comma-separated lists
        "-D__CUDA_NO_HALF_OPERATORS__",
        "--define-macro=NDEBUG",
        "-U",
        "LEGACY",
        "-Iinclude",
        "-I/usr/local/cuda-12.4/targets/x86_64-linux/include",
        "-isystem",
        "/usr/local/cuda/include",
        "--pre-include",
        "cuda_runtime.h",
        "--std",
        "c++20",
        "-O3",
        "-gencode",
        "arch=compute_90,code=sm_90",
        "-Xcompiler",
        "-fopenmp",
        "--use_fast_math",
        "-c",
        "k.cu",
    ]
    flags = flags_from_command(arguments, str(tmp_path), tmp_path)
    assert flags.std == "c++20"
    assert flags.defines == (
        "-DUSE_FAST=1",
        "-DHAVE_CUB",
        "-D__HIP_NO_HALF_OPERATORS__",
        "-DNDEBUG",
        "-ULEGACY",
    )
    assert flags.includes == (
        ("-I", str(tmp_path / "include")),
        ("-include", "hip/hip_runtime.h"),
    )


def test_std_from_the_command_line_and_the_cxx17_default(tmp_path, hipcc, cache):
    _write(
        tmp_path / "bins.cu",
        "#include <cuda_runtime.h>\n#include <optional>\n\n"
        "// Host-side helper: an empty histogram has no mode.\n"
        "std::optional<int> mode_bin(const int* counts, int n) {\n"
        "  if (n == 0) return std::nullopt;\n  int best = 0;\n"
        "  for (int i = 1; i < n; ++i) if (counts[i] > counts[best]) best = i;\n"
        "  return best;\n}\n\n"
        "__global__ void histogram(const int* keys, int* counts, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) atomicAdd(&counts[keys[i]], 1);\n}\n",
    )
    (default,) = compile_tree(tmp_path / "bins.cu", "gfx90a").results
    assert default.ok, default.diagnostics  # hipcc alone builds C++14
    (cxx17,) = compile_tree(tmp_path / "bins.cu", "gfx90a", std="c++17").results
    assert cxx17.ok and cxx17.cached  # same flags as the default
    (cxx14,) = compile_tree(tmp_path / "bins.cu", "gfx90a", std="c++14").results
    assert not cxx14.ok and not cxx14.cached
    assert any("optional" in d.message for d in cxx14.diagnostics)
    with pytest.raises(CompileError, match="not a C\\+\\+ standard"):
        compile_tree(tmp_path / "bins.cu", "gfx90a", std="c++17; rm -rf /")


# -- what is a unit -------------------------------------------------------------------------


def test_a_cu_file_that_is_included_is_not_compiled_alone(tmp_path, hipcc, cache):
    # tile_impl.cu relies on TILE from its includer, as header-only "implementation" .cu
    # files do; compiled alone it would fail.
    _write(
        tmp_path / "kernels" / "tile_impl.cu",
        "template <int T>\n__global__ void transpose_tile(const float* in, float* out, int n) {\n"
        "  __shared__ float tile[TILE][TILE + 1];\n"
        "  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;\n"
        "  if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];\n"
        "  __syncthreads();\n"
        "  if (x < n && y < n) out[x * n + y] = tile[threadIdx.y][threadIdx.x];\n}\n",
    )
    _write(
        tmp_path / "transpose.cu",
        "#include <cuda_runtime.h>\n#define TILE 32\n"
        '#include "kernels/tile_impl.cu"\n\n'
        "void transpose(const float* in, float* out, int n, cudaStream_t s) {\n"
        "  dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);\n"
        "  transpose_tile<TILE><<<grid, block, 0, s>>>(in, out, n);\n}\n",
    )
    report = compile_tree(tmp_path, "gfx90a")
    assert [(r.path, r.ok) for r in report.results] == [("transpose.cu", True)], [
        r.diagnostics for r in report.results
    ]
    skipped = {s.path: s.reason for s in report.skipped}
    assert skipped == {"kernels/tile_impl.cu": "included by transpose.cu: compiled as part of it"}
    from portcheck.report.compile import render_compile

    assert "kernels/tile_impl.cu: included by transpose.cu" in render_compile(report)


# -- the cache --------------------------------------------------------------------------


def test_a_header_edit_invalidates_the_cached_result(tmp_path, hipcc, cache):
    header = tmp_path / "include" / "launch_config.cuh"
    _write(header, "#pragma once\nconstexpr int kBlock = 256;\n")
    _write(
        tmp_path / "src" / "scale.cu",
        '#include <cuda_runtime.h>\n#include "launch_config.cuh"\n\n'
        "__global__ void scale(float* x, float a, int n) {\n"
        "  int i = blockIdx.x * kBlock + threadIdx.x;\n  if (i < n) x[i] *= a;\n}\n",
    )
    (first,) = compile_tree(tmp_path, "gfx90a").results
    (again,) = compile_tree(tmp_path, "gfx90a").results
    assert first.ok and not first.cached and again.ok and again.cached
    entries = list((cache / "compile").glob("*.json"))
    entry = json.loads(entries[0].read_text())  # JSON, not pickle: reading it runs no code
    assert any(path.endswith("include/launch_config.cuh") for path, _ in entry["inputs"])
    # The unit is unchanged; only the header it reads is edited.
    _write(
        tmp_path / "include" / "launch_config.cuh",
        "#pragma once\nconstexpr int kBlock = BLOCK_SIZE_FROM_CMAKE;\n",
    )
    (edited,) = compile_tree(tmp_path, "gfx90a").results
    assert not edited.cached and not edited.ok
    assert any("BLOCK_SIZE_FROM_CMAKE" in d.message for d in edited.diagnostics)


def test_a_header_outside_the_tree_is_tracked_too(tmp_path, hipcc, cache):
    vendor = _write(tmp_path / "vendor" / "tuning.h", "#pragma once\n#define UNROLL 4\n")
    _write(
        tmp_path / "proj" / "dot.cu",
        '#include <cuda_runtime.h>\n#include "tuning.h"\n\n'
        "__global__ void dot(const float* a, const float* b, float* out, int n) {\n"
        "  float acc = 0.f;\n#pragma unroll UNROLL\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += a[i] * b[i];\n"
        "  atomicAdd(out, acc);\n}\n",
    )
    args = (tmp_path / "proj", "gfx90a")
    (first,) = compile_tree(*args, include_dirs=[vendor.parent]).results
    assert first.ok, first.diagnostics
    vendor.write_text("#pragma once\n#define UNROLL UNROLL_FACTOR\n")
    (edited,) = compile_tree(*args, include_dirs=[vendor.parent]).results
    assert not edited.cached and not edited.ok


def test_damaged_cache_entries_are_misses_and_no_cache_writes_nothing(tmp_path, hipcc, cache):
    source = tmp_path / "saxpy.cu"
    source.write_text((REPO / "tests" / "fixtures" / "compile" / "saxpy.cu").read_text())
    (first,) = compile_tree(source, "gfx90a").results
    assert first.ok and not first.cached
    (entry,) = (cache / "compile").glob("*.json")
    for damage in (b"\x80\x04garbage", b'{"format": "portcheck.compile-cache/0"}', b"[]"):
        entry.write_bytes(damage)
        (again,) = compile_tree(source, "gfx90a").results
        assert again.ok and not again.cached
    for entry in (cache / "compile").glob("*.json"):
        entry.unlink()
    (uncached,) = compile_tree(source, "gfx90a", cache=False).results
    assert uncached.ok and not uncached.cached
    assert list((cache / "compile").glob("*.json")) == []


# -- timeouts and interrupts (a fake hipcc that hangs in a child process) ---------------------

FAKE_HIPCC = """\
#!/bin/sh
# Stands in for hipcc: answers --version, otherwise starts a long child (as hipcc starts
# clang) and waits for it.
if [ "$1" = "--version" ]; then
  echo "HIP version: 5.2.21153-0"
  echo "clang version 15.0.6"
  exit 0
fi
sleep 60 &
echo $! >> "$FAKE_HIPCC_CHILDREN"
wait
"""


@pytest.fixture
def hanging_hipcc(tmp_path, monkeypatch) -> Path:
    script = tmp_path / "fake-rocm" / "bin" / "hipcc"
    _write(script, FAKE_HIPCC).chmod(0o755)
    children = tmp_path / "children.txt"
    monkeypatch.setenv("PORTCHECK_HIPCC", str(script))
    monkeypatch.setenv("FAKE_HIPCC_CHILDREN", str(children))
    _write(
        tmp_path / "src" / "k.cu",
        "__global__ void fill(int* x, int v) { x[threadIdx.x] = v; }\n",
    )
    return children


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


def _children(record: Path) -> list[int]:
    return [int(line) for line in record.read_text().split()] if record.exists() else []


def _none_alive(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_alive(pid) for pid in pids)


def test_a_timeout_kills_hipcc_with_its_children_and_is_not_cached(tmp_path, hanging_hipcc, cache):
    started = time.monotonic()
    (result,) = compile_tree(tmp_path / "src", "gfx90a", timeout=1.0).results
    assert time.monotonic() - started < 30
    assert not result.ok and result.failure_class == "timeout" and not result.code_failure
    assert "1 s" in result.explanation
    (child,) = _children(hanging_hipcc)
    assert _none_alive([child]), f"sleep {child} survived the timeout"
    assert not list((cache / "compile").rglob("*.json"))  # no compile result kept
    (again,) = compile_tree(tmp_path / "src", "gfx90a", timeout=1.0).results
    assert again.failure_class == "timeout" and not again.cached
    assert len(_children(hanging_hipcc)) == 2  # it ran again


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_leaves_no_hipcc_behind_and_exits_cleanly(
    tmp_path, hanging_hipcc, cache, signum
):
    command = [sys.executable, "-m", "portcheck", "compile", str(tmp_path / "src")]
    process = subprocess.Popen(
        [*command, "--offload-arch", "gfx90a,gfx1030", "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    deadline = time.monotonic() + 60
    while len(_children(hanging_hipcc)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    children = _children(hanging_hipcc)
    assert children, "the fake hipcc never started"
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        "portcheck: interrupted; hipcc stopped, nothing half-built was cached"
    ]
    assert _none_alive(children), "a hipcc child survived the interrupt"
    assert not list((cache / "compile").rglob("*.json"))  # no compile result kept


def test_jobs_above_the_cpu_count_are_capped_with_a_warning(tmp_path, hanging_hipcc, cache):
    run = run_portcheck(
        "compile",
        str(tmp_path / "src"),
        "--offload-arch",
        "gfx90a",
        "-j",
        "4096",
        "--timeout",
        "0.5",
    )
    assert run.returncode == 1  # the unit timed out
    assert "warning: -j 4096 is more than the" in run.stderr
    assert "hipcc timed out" in run.stdout


# -- failures that are the toolchain's, not the code's ---------------------------------------


WARP_REDUCE = """\
#include <cuda_runtime.h>

__inline__ __device__ float warp_sum(float v) {
  const unsigned long long lanes = __activemask();
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(lanes, v, offset);
  return v;
}

__global__ void row_sums(const float* m, float* sums, int cols) {
  float v = 0.f;
  for (int c = threadIdx.x; c < cols; c += warpSize) v += m[blockIdx.x * cols + c];
  v = warp_sum(v);
  if (threadIdx.x == 0) sums[blockIdx.x] = v;
}
"""


def test_warp_sync_code_is_written_for_the_installed_rocm_and_builds(tmp_path, hipcc, cache):
    """Without --rocm the translation is for the installed hipcc's release: before ROCm
    6.2 the `_sync` builtins become the mask-less ones and `__activemask()` becomes
    `__ballot(1)`, so the reduction builds with ROCm 5.2's hipcc."""
    if hipcc.rocm is None or hipcc.rocm >= (6, 2):
        pytest.skip(f"this hipcc ({hipcc.version}) has the warp-sync intrinsics")
    _write(tmp_path / "rows.cu", WARP_REDUCE)
    (result,) = compile_tree(tmp_path, "gfx90a").results
    assert result.ok, (result.explanation, result.diagnostics)
    run = run_portcheck("compile", str(tmp_path), "--offload-arch", "gfx90a", timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def test_warp_sync_intrinsics_missing_from_rocm_5_2_are_a_rocm_version_failure(
    tmp_path, hipcc, cache
):
    """A team that targets ROCm 6.2 gets code written for 6.2; the installed 5.2 cannot
    build it, and that is the toolchain's age, not the code."""
    if hipcc.rocm is None or hipcc.rocm >= (6, 2):
        pytest.skip(f"this hipcc ({hipcc.version}) has the warp-sync intrinsics")
    _write(tmp_path / "rows.cu", WARP_REDUCE)
    (result,) = compile_tree(tmp_path, "gfx90a", rocm="6.2").results
    assert not result.ok and result.failure_class == "rocm-version", result.explanation
    assert "__shfl_down_sync needs ROCm 6.2" in result.explanation
    assert "__activemask needs ROCm 6.2" in result.explanation
    assert not result.code_failure
    # One more error that is the code's own makes it a code failure again.
    typo = WARP_REDUCE.replace("sums[blockIdx.x] = v;", "sum[blockIdx.x] = v;")
    _write(tmp_path / "rows.cu", typo)
    (mixed,) = compile_tree(tmp_path, "gfx90a", rocm="6.2").results
    assert mixed.code_failure and mixed.failure_class != "rocm-version"
    assert "also: " in mixed.explanation and "__shfl_down_sync needs ROCm 6.2" in mixed.explanation


def test_hip_bf16_header_is_a_rocm_version_failure(tmp_path, hipcc, cache):
    """For ROCm 5.2 the type and header are written `hip_bfloat16` and
    hip/hip_bfloat16.h (what that release has); cuda_bf16.h's conversion functions came
    with hip_bf16.h in 5.7, so a call to one is the toolchain's age. Targeting 6.2, the
    header itself is what 5.2 lacks."""
    if hipcc.rocm is None or hipcc.rocm >= (5, 7):
        pytest.skip(f"this hipcc ({hipcc.version}) has hip/hip_bf16.h")
    _write(
        tmp_path / "cast.cu",
        "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n\n"
        "__global__ void to_bf16(const float* in, __nv_bfloat16* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = __float2bfloat16(in[i]);\n}\n",
    )
    (result,) = compile_tree(tmp_path, "gfx90a").results
    assert result.failure_class == "rocm-version", (result.explanation, result.diagnostics)
    assert "__float2bfloat16 needs ROCm 5.7" in result.explanation
    (newer,) = compile_tree(tmp_path, "gfx90a", rocm="6.2").results
    assert newer.failure_class == "rocm-version", (newer.explanation, newer.diagnostics)
    assert "hip/hip_bf16.h needs ROCm 5.7" in newer.explanation


def test_scan_compile_fails_only_for_failures_in_the_code(tmp_path, hipcc, cache):
    _write(tmp_path / "rows" / "rows.cu", WARP_REDUCE)
    args = ("--compile", "--offload-arch", "gfx90a", "--format", "json", "--rocm", "6.2")
    toolchain_only = run_portcheck("scan", str(tmp_path / "rows"), *args, timeout=600)
    assert toolchain_only.returncode == 0, toolchain_only.stderr
    (entry,) = json.loads(toolchain_only.stdout)["compile"]
    assert entry["class"] == "rocm-version"
    compiled = run_portcheck(
        "compile", str(tmp_path / "rows"), "--offload-arch", "gfx90a", "--rocm", "6.2"
    )
    assert compiled.returncode == 1  # compile still says something did not build
    _write(tmp_path / "rows" / "bad.cu", "__global__ void k(float* x) { x[0] = no_such_scale; }\n")
    code = run_portcheck("scan", str(tmp_path / "rows"), *args, timeout=600)
    assert code.returncode == 1
    assert "failed for a reason in the code (first: bad.cu [gfx90a], other)" in code.stderr


def test_cuda_headers_in_an_include_folder_outside_the_tree_are_translated(tmp_path, hipcc, cache):
    """`-I ../shared` names the team's helpers kept beside the project (cuda-samples'
    Common/): their CUDA is translated into the scratch tree like the project's own, the
    originals are untouched, and an error in them names the original file."""
    shared = _write(
        tmp_path / "shared" / "check.cuh",
        "#pragma once\n#include <cstdio>\n#include <cuda_runtime.h>\n"
        "#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) "
        'std::printf("%s\\n", cudaGetErrorString(e)); } while (0)\n',
    )
    before = shared.read_bytes()
    _write(
        tmp_path / "app" / "scale.cu",
        '#include "check.cuh"\n'
        "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"
        "void run(float* d) { scale<<<1, 64>>>(d, 2.f); CHECK(cudaDeviceSynchronize()); }\n",
    )
    (result,) = compile_tree(tmp_path / "app", "gfx90a", include_dirs=[tmp_path / "shared"]).results
    assert result.ok, (result.explanation, result.diagnostics)
    assert shared.read_bytes() == before
    _write(shared, before.decode() + "inline void broken() { undefined_helper(); }\n")
    (failed,) = compile_tree(tmp_path / "app", "gfx90a", include_dirs=[tmp_path / "shared"]).results
    assert not failed.ok and failed.diagnostics[0].path == str(shared.resolve())
    assert failed.diagnostics[0].line == 5
    assert failed.diagnostics[0].source_line == ""  # named, but not quoted: not the project's
