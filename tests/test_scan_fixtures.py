"""Every CUDA use in the fixture files is found, on the right line, and nothing else is."""

from __future__ import annotations

import json
import os
import time
from collections import Counter

import pytest

import portcheck

from conftest import SCAN_FIXTURES, expected_uses

MARKED = sorted(
    p.name for p in SCAN_FIXTURES.iterdir() if "expect-use:" in p.read_bytes().decode("latin-1")
)


@pytest.mark.parametrize("name", MARKED)
def test_uses_match_markers_exactly(name):
    path = SCAN_FIXTURES / name
    report = portcheck.scan(path)
    found = Counter((u.name, u.span.line) for u in report.uses)
    expected = expected_uses(path)
    assert found == expected, (
        f"missing: {sorted((expected - found).elements())}\n"
        f"unexpected: {sorted((found - expected).elements())}"
    )


def test_fixture_set_covers_the_cases_the_scanner_must_handle():
    assert {
        "reduction.cu",
        "cublas_gemm.cu",
        "driver_api.cpp",
        "library_headers.cu",
        "decoys.cu",
        "latin1.cu",
        "macro_heavy.cu",
    } <= set(MARKED)


def test_columns_are_one_based_characters():
    report = portcheck.scan(SCAN_FIXTURES / "reduction.cu")
    malloc = next(u for u in report.uses if u.name == "cudaMalloc")
    assert (malloc.span.line, malloc.span.column) == (39, 3)
    assert malloc.span.end_column == 3 + len("cudaMalloc")
    # Latin-1 text before a name on the same line counts characters, not bytes.
    latin = portcheck.scan(SCAN_FIXTURES / "latin1.cu")
    sync = next(u for u in latin.uses if u.name == "cudaDeviceSynchronize")
    assert sync.span.column == len("  k<<<1, 32>>>(x); ") + 1


def test_device_code_is_told_apart_from_host_code():
    report = portcheck.scan(SCAN_FIXTURES / "reduction.cu")
    by_name = {u.name: u for u in report.uses}
    assert by_name["__shfl_down_sync"].in_device_code
    assert by_name["atomicAdd"].in_device_code
    assert not by_name["cudaMalloc"].in_device_code
    assert not by_name["<<<>>>"].in_device_code


def test_uses_are_classified_with_the_hip_name_and_three_statuses():
    report = portcheck.scan(SCAN_FIXTURES / "cublas_gemm.cu")
    by_name = {u.name: u for u in report.uses}
    assert by_name["cublasSgemm"].hip == "hipblasSgemm"
    assert by_name["cublasSgemm"].family == "cublas"
    assert by_name["cublasHandle_t"].hip == "hipblasHandle_t"
    assert by_name["cudaStream_t"].hip == "hipStream_t"
    for use in report.uses:
        assert use.rule is not None, f"{use.name} should be in the rule set"
        assert set(use.status.to_dict()) == {"hip", "zluda", "scale"}


def test_driver_api_cpp_is_discovered_in_a_tree_and_classified(tmp_path):
    (tmp_path / "driver_api.cpp").write_bytes((SCAN_FIXTURES / "driver_api.cpp").read_bytes())
    (tmp_path / "plain.cpp").write_bytes((SCAN_FIXTURES / "plain.cpp").read_bytes())
    report = portcheck.scan(tmp_path)
    assert [f.path for f in report.files] == ["driver_api.cpp"]
    by_name = {u.name: u for u in report.uses}
    assert by_name["cuModuleLoadData"].family == "driver"
    assert by_name["cuLaunchKernel"].hip == "hipModuleLaunchKernel"
    assert by_name["CUdeviceptr"].hip == "hipDeviceptr_t"


def test_project_macro_with_cuda_like_name_is_not_a_cuda_use():
    report = portcheck.scan(SCAN_FIXTURES / "cublas_gemm.cu")
    assert "CUBLAS_CHECK" not in {u.name for u in report.uses}


def test_kernels_are_listed_with_their_lines():
    report = portcheck.scan(SCAN_FIXTURES / "reduction.cu")
    assert [(k.name, k.span.line) for k in report.kernels] == [("reduceSum", 16)]


def test_macro_heavy_file_degrades_gracefully():
    report = portcheck.scan(SCAN_FIXTURES / "macro_heavy.cu")
    (summary,) = report.files
    assert summary.parse_errors > 0
    # Uses after the unparseable line are still found (also checked by the markers).
    assert ("cudaDeviceReset", 23) in {(u.name, u.span.line) for u in report.uses}


def test_project_header_with_a_cuda_like_name_is_not_a_cuda_header(tmp_path):
    (tmp_path / "cuda_helpers.h").write_text("#pragma once\n#include <cuda_runtime.h>\n")
    (tmp_path / "main.cu").write_text('#include "cuda_helpers.h"\n#include <cuda_gl_interop.h>\n')
    report = portcheck.scan(tmp_path)
    headers = {(u.path, u.name) for u in report.uses if u.kind == "header"}
    assert ("main.cu", "cuda_helpers.h") not in headers
    assert ("cuda_helpers.h", "cuda_runtime.h") in headers
    assert ("main.cu", "cuda_gl_interop.h") in headers  # a real CUDA header, even if unknown


def test_parallel_and_cached_scans_equal_a_serial_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    for copy in range(3):  # enough files for the process pool to start
        for source in SCAN_FIXTURES.iterdir():
            target = tree / f"part{copy}" / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())

    def document(**options):
        doc = json.loads(portcheck.scan(tree, **options).to_json())
        doc["summary"].pop("seconds")
        return doc

    serial = document(jobs=1, cache=False)
    assert serial["summary"]["files_scanned"] >= 16
    assert document(jobs=2, cache=False) == serial
    assert document(jobs=2, cache=True) == serial  # fills the cache
    assert document(jobs=2, cache=True) == serial  # served from it

    # Cached and fresh files interleaved: edit every other file of one part.
    edited = sorted((tree / "part1").iterdir())[::2]
    for path in edited:
        path.write_bytes(path.read_bytes() + b"\n__global__ void added(int *p) { p[0] = 1; }\n")
    mixed = document(jobs=2, cache=True)
    assert mixed == document(jobs=1, cache=False)
    assert mixed["summary"]["lines"] > serial["summary"]["lines"]  # the edits were seen


def test_an_unchanged_tree_is_answered_without_scanning_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    for source in SCAN_FIXTURES.iterdir():
        (tree / "src").mkdir(parents=True, exist_ok=True)
        (tree / "src" / source.name).write_bytes(source.read_bytes())
    # A PyTorch extension whose second source is generated at build time (and whose
    # suffix discovery does not read): only the memo's own check can see it appear.
    (tree / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "ext = CUDAExtension('ops', sources=['src/reduction.cu', 'src/ops_gen.inc'])\n"
    )

    def document(**options):
        doc = json.loads(portcheck.scan(tree, **options).to_json())
        doc["summary"].pop("seconds")
        return doc

    first = document(cache=True, jobs=1)
    assert first == document(cache=False, jobs=1)

    from portcheck.filescan import FileScanner

    def no_scanning(*args, **kwargs):
        raise AssertionError("a file was scanned although nothing changed")

    with monkeypatch.context() as patched:
        patched.setattr(FileScanner, "scan", no_scanning)
        assert document(cache=True, jobs=1) == first
        # The same tree named another way is answered too, with the root as given.
        patched.chdir(tmp_path)
        assert portcheck.scan("tree", jobs=1).root == "tree"

    # An edit is seen: the remembered report is not used.
    main = tree / "src" / "reduction.cu"
    main.write_bytes(main.read_bytes() + b"\n__global__ void added(int *p) { p[0] = 1; }\n")
    edited = document(cache=True, jobs=1)
    assert edited["summary"]["lines"] == first["summary"]["lines"] + 2
    assert edited == document(cache=False, jobs=1)

    # The generated source appears: no file key changes, but the extension's report does.
    (extension,) = edited["python"]["extensions"]
    assert extension["missing"] == ["src/ops_gen.inc"]
    (tree / "src" / "ops_gen.inc").write_text("// generated\n")
    (extension,) = document(cache=True, jobs=1)["python"]["extensions"]
    assert extension["missing"] == []


def test_a_rescan_reads_only_the_files_whose_stamp_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    tree.mkdir()
    for source in SCAN_FIXTURES.iterdir():
        (tree / source.name).write_bytes(source.read_bytes())
    # Files written a moment ago are read again on the next scan (their timestamps could
    # hide an edit made in the same tick); these were written "a minute ago".
    past = time.time() - 60
    for path in tree.iterdir():
        os.utime(path, (past, past))

    def document():
        doc = json.loads(portcheck.scan(tree, jobs=1).to_json())
        doc["summary"].pop("seconds")
        return doc

    first = document()
    from portcheck import cache, runner

    opened: list[str] = []
    real_read = cache.read_candidate

    def counting_read(candidate, **options):
        opened.append(candidate.relpath)
        return real_read(candidate, **options)

    monkeypatch.setattr(cache, "read_candidate", counting_read)
    monkeypatch.setattr(runner, "read_candidate", counting_read)
    assert document() == first
    assert opened == []  # nothing changed: no file was even opened

    # Same size, same modification time, different bytes: the change time still differs.
    reduction = tree / "reduction.cu"
    text = reduction.read_bytes()
    reduction.write_bytes(text.replace(b"cudaMalloc(", b"cudaFree  (", 1))
    os.utime(reduction, (past, past))
    edited = document()
    assert opened == ["reduction.cu"]
    names = Counter(u["name"] for u in edited["usages"] if u["path"] == "reduction.cu")
    before = Counter(u["name"] for u in first["usages"] if u["path"] == "reduction.cu")
    assert names["cudaMalloc"] == before["cudaMalloc"] - 1
    assert names["cudaFree"] == before["cudaFree"] + 1
