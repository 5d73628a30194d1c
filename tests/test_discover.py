"""Discovery: what is read, what is skipped and why, and that odd trees never crash a scan."""

from __future__ import annotations

import os
import shutil

import portcheck

from conftest import SCAN_FIXTURES


def _copy(name, dest):
    shutil.copy(SCAN_FIXTURES / name, dest / name)


def test_binary_latin1_and_empty_files(tmp_path):
    for name in ("binary.cu", "latin1.cu", "empty.cu"):
        _copy(name, tmp_path)
    report = portcheck.scan(tmp_path)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("binary.cu", "binary file (contains NUL bytes)")
    ]
    files = {f.path: f for f in report.files}
    assert files["latin1.cu"].encoding == "cp1252"
    assert files["latin1.cu"].uses == 4
    assert files["empty.cu"].lines == 0 and files["empty.cu"].uses == 0


def test_gitignore_nested_gitignore_and_exclude(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.gen.cu\n")
    for folder in ("src", "build", "third_party/cutlass", "src/legacy"):
        (tmp_path / folder).mkdir(parents=True)
    kernel = (SCAN_FIXTURES / "latin1.cu").read_bytes()
    for rel in (
        "src/a.cu",
        "src/b.gen.cu",
        "build/c.cu",
        "third_party/cutlass/d.cu",
        "src/legacy/e.cu",
        "src/legacy/keep.gen.cu",
    ):
        (tmp_path / rel).write_bytes(kernel)
    # A deeper .gitignore can re-include what a shallower one ignored, as in git.
    (tmp_path / "src/legacy/.gitignore").write_text("!keep.gen.cu\ne.cu\n")
    report = portcheck.scan(tmp_path, exclude=["third_party/"])
    assert sorted(f.path for f in report.files) == ["src/a.cu", "src/legacy/keep.gen.cu"]


def test_symlink_loop_and_outside_link_do_not_crash(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    _copy("latin1.cu", root / "src")
    os.symlink("..", root / "src" / "loop")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _copy("reduction.cu", outside)
    os.symlink(outside, root / "external")
    os.symlink(root / "missing.cu", root / "dangling.cu")
    report = portcheck.scan(root)
    assert [f.path for f in report.files] == ["src/latin1.cu"]
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["external"] == "symlink to a directory outside the scanned tree"
    assert reasons["dangling.cu"] == "broken symlink"
    assert "symlink loop" in reasons["src/loop"]


def test_unlistable_directory_is_skipped_with_a_reason(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    _copy("latin1.cu", tmp_path)
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = portcheck.scan(tmp_path)
    assert [f.path for f in report.files] == ["latin1.cu"]
    assert ("locked", "cannot list directory: Permission denied") in {
        (s.path, s.reason) for s in report.skipped
    }


def test_oversized_file_is_skipped(tmp_path):
    big = tmp_path / "generated_kernels.cu"
    big.write_text("__global__ void k() {}\n" * 200)
    report = portcheck.scan(tmp_path, max_file_bytes=1024)
    assert report.files == ()
    assert report.skipped[0].path == "generated_kernels.cu"
    assert report.skipped[0].reason.startswith("larger than")


def test_build_files_are_discovered(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(x LANGUAGES CXX CUDA)\n")
    (tmp_path / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    report = portcheck.scan(tmp_path)
    assert {(f.path, str(f.language)) for f in report.files} == {
        ("CMakeLists.txt", "cmake"),
        ("setup.py", "python"),
    }
