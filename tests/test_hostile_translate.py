"""`portcheck translate` with hostile input (issue 15, "Safe with any input"): output that
overlaps the input, symlinks out of the tree, odd encodings and line endings, file names
that are not UTF-8 or carry control characters, and an output folder that cannot be
written. Each test runs the command as a user does and checks what the user would see:
the exit code, the one line on stderr, the bytes and links written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from conftest import REPO

KERNEL = b"""#include <cuda_runtime.h>

__global__ void reduce(float* x, int n) {
  float v = threadIdx.x < n ? x[threadIdx.x] : 0.0f;
  v += __shfl_down_sync(0xffffffff, v, 16);
  x[threadIdx.x] = v;
}

int main() {
  float* d = nullptr;
  cudaMalloc(&d, 256 * sizeof(float));
  cudaMemcpy(d, d, 256 * sizeof(float), cudaMemcpyDeviceToDevice);
  reduce<<<1, 256>>>(d, 256);
  cudaFree(d);
  return 0;
}
"""
# No #include: translation adds `#include <hip/hip_runtime.h>` as a line of its own.
HELPER = b"""// Device helpers shared by the kernels.
#pragma once
__device__ inline float twice(float v) { return 2.0f * v; }
inline void sync_all() { cudaDeviceSynchronize(); }
"""


def portcheck(
    *args: str | bytes | os.PathLike[str],
    cwd: Path = REPO,
    wrap: Sequence[str] = (),
    timeout: float = 120,
):
    """Run the CLI in a fresh process; output kept as bytes (a terminal sees bytes)."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": ""}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [*wrap, sys.executable, "-m", "portcheck", *map(os.fsencode, args)],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env=env,
    )


def one_line_error(done: subprocess.CompletedProcess[bytes]) -> str:
    """The refusal a user sees: exit 2, exactly one line on stderr, no traceback."""
    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 2, (done.returncode, stderr)
    assert "Traceback" not in stderr
    assert len(stderr.splitlines()) == 1 and stderr.endswith("\n"), stderr
    return stderr


def listing(root: Path) -> dict[bytes, bytes]:
    """Every entry under root (bytes names): file contents, link targets, folders."""
    found: dict[bytes, bytes] = {}
    for folder, dirnames, filenames in os.walk(os.fsencode(root)):
        for name in dirnames + filenames:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, os.fsencode(root))
            if os.path.islink(path):
                found[relative] = b"-> " + os.readlink(path)
            elif os.path.isdir(path):
                found[relative] = b"<dir>"
            else:
                found[relative] = Path(os.fsdecode(path)).read_bytes()
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small CUDA project: src/ with a kernel, include/ with a header, a CMakeLists.txt."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "src" / "reduce.cu").write_bytes(KERNEL)
    (root / "include" / "helpers.cuh").write_bytes(HELPER)
    (root / "CMakeLists.txt").write_bytes(b"project(reduce LANGUAGES CXX CUDA)\r\n")
    return root


# -- 1. the output never overlaps the input ----------------------------------------------


@pytest.mark.parametrize(
    "path, output",
    [
        ("repo/src", "repo"),  # PATH inside OUT: src/src/x.cu would land on PATH
        ("repo/src", "repo/src/.."),  # the same, spelled with ..
        ("repo/src", "up"),  # OUT is a symlink to a folder that holds PATH
        ("repo", "repo/include/../src/.."),  # the same folder, spelled round about
        ("repo/src/reduce.cu", "hardlink.cu"),  # file to itself through a hard link
        ("repo/src/reduce.cu", "repo/src/reduce.cu/x.hip"),  # OUT under the input file
        ("repo/src/reduce.cu", "repo/src/"),  # a file into the folder that holds it
    ],
)
def test_output_overlapping_the_input_is_refused_in_one_line_and_nothing_is_written(
    tmp_path, repo, path, output
):
    os.symlink(tmp_path, tmp_path / "up")
    os.link(repo / "src" / "reduce.cu", tmp_path / "hardlink.cu")
    before = listing(tmp_path)

    message = one_line_error(portcheck("translate", path, "-o", output, cwd=tmp_path))

    assert output.rstrip("/") in message  # the line names the output the user gave
    assert listing(tmp_path) == before  # nothing written, nothing created


def test_refusal_stays_one_line_when_the_names_hold_newlines(tmp_path):
    name = "k\n::error::forged.cu"
    (tmp_path / name).write_bytes(KERNEL)

    message = one_line_error(portcheck("translate", name, "-o", name, cwd=tmp_path))

    assert "k\\n::error::forged.cu" in message
    assert (tmp_path / name).read_bytes() == KERNEL


# -- 2. symlinks: never followed out of PATH; links inside PATH stay links ----------------


def test_symlinks_leading_out_of_the_tree_are_skipped_with_a_reason_and_never_read(tmp_path, repo):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "token.cu").write_bytes(KERNEL.replace(b"int main", b"int SECRET_MAIN"))
    (secrets / "id_rsa").write_bytes(b"SECRET KEY\n")
    os.symlink("../../secrets/token.cu", repo / "src" / "leak.cu")  # relative, file
    os.symlink(secrets / "id_rsa", repo / "id_rsa")  # absolute, not a source
    os.symlink("../secrets", repo / "vendor")  # a folder
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out)

    assert done.returncode == 0, done.stderr
    written = listing(out)
    assert not any(b"SECRET" in content for content in written.values())
    assert {b"src/leak.cu", b"id_rsa", b"vendor"}.isdisjoint(written)
    stderr = done.stderr.decode()
    for relpath in ("src/leak.cu", "id_rsa", "vendor"):
        line = next(line for line in stderr.splitlines() if line.startswith(relpath + ":"))
        assert "skipped" in line and "outside" in line, line
    assert "3 skipped" in stderr.splitlines()[-1]


def test_links_inside_the_tree_are_kept_as_relative_links(tmp_path, repo):
    os.symlink("reduce.cu", repo / "src" / "same.cu")  # file link, relative
    os.symlink(repo / "include", repo / "src" / "inc")  # folder link, absolute
    os.symlink(repo / "CMakeLists.txt", repo / "build.txt")  # file link, absolute
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out)

    assert done.returncode == 0, done.stderr
    assert os.readlink(out / "src" / "same.cu") == "reduce.cu"
    assert os.readlink(out / "src" / "inc") == "../include"
    assert os.readlink(out / "build.txt") == "CMakeLists.txt"
    assert b"hipMalloc(&d" in (out / "src" / "same.cu").read_bytes()  # through the link
    assert (out / "src" / "inc" / "helpers.cuh").read_bytes() == (
        out / "include" / "helpers.cuh"
    ).read_bytes()


def test_a_folder_alias_does_not_hide_the_real_folder(tmp_path, repo):
    os.symlink("src", repo / "alias")  # sorts before src: it used to be walked instead
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out)

    assert done.returncode == 0, done.stderr
    assert (out / "src").is_dir() and not (out / "src").is_symlink()
    assert b"hipMalloc(&d" in (out / "src" / "reduce.cu").read_bytes()
    assert os.readlink(out / "alias") == "src"
    assert "src/reduce.cu: " in done.stdout.decode()
    assert "alias/" not in done.stdout.decode() + done.stderr.decode()


def test_pipes_and_link_loops_neither_hang_nor_stop_translation(tmp_path, repo):
    os.mkfifo(repo / ".gitignore")  # opening it to read the patterns would block forever
    os.mkfifo(repo / "src" / "stream.cu")
    os.symlink("loop_b", repo / "loop_a")
    os.symlink("loop_a", repo / "loop_b")
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out, timeout=30)

    assert done.returncode == 0, done.stderr
    assert b"hipMalloc(&d" in (out / "src" / "reduce.cu").read_bytes()
    stderr = done.stderr.decode()
    assert ".gitignore: skipped: not a regular file" in stderr
    assert "src/stream.cu: skipped: not a regular file" in stderr
    assert "loop_a: skipped: symlink loop" in stderr and "loop_b: skipped: symlink loop" in stderr


# -- 3. every byte outside the rewritten spans is kept -----------------------------------


def _translated(tmp_path: Path, name: str, data: bytes) -> bytes:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "k.cu").write_bytes(data)
    done = portcheck("translate", folder / "k.cu", "-o", folder / "k.hip")
    assert done.returncode == 0, done.stderr
    return (folder / "k.hip").read_bytes()


@pytest.mark.parametrize("source", [KERNEL, HELPER], ids=["kernel", "helper"])
def test_encoding_bom_and_line_endings_are_kept_byte_for_byte(tmp_path, source):
    plain = _translated(tmp_path, "plain", source)
    assert plain != source and b"\r" not in plain

    latin = _translated(tmp_path, "latin", b"// Auteur : Ren\xe9 \xa9 2024\n" + source)
    assert latin == b"// Auteur : Ren\xe9 \xa9 2024\n" + plain  # not re-encoded to UTF-8

    assert _translated(tmp_path, "bom", b"\xef\xbb\xbf" + source) == b"\xef\xbb\xbf" + plain
    crlf = _translated(tmp_path, "crlf", source.replace(b"\n", b"\r\n"))
    assert crlf == plain.replace(b"\n", b"\r\n")
    bare = _translated(tmp_path, "bare", source.replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    assert bare == plain.replace(b"\n", b"\r\n").rstrip(b"\r\n")


def test_files_translation_leaves_alone_are_byte_identical(tmp_path, repo):
    untouched = b"// Utilitaire \xe9crit \xe0 la main\r\ninline int twice(int x) { return 2 * x; }"
    (repo / "include" / "plain.cuh").write_bytes(untouched)
    (repo / "notes.txt").write_bytes(b"caf\xe9\r\n\xff\xfe")
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out)

    assert done.returncode == 0, done.stderr
    assert (out / "include" / "plain.cuh").read_bytes() == untouched
    assert (out / "notes.txt").read_bytes() == b"caf\xe9\r\n\xff\xfe"
    assert (out / "CMakeLists.txt").read_bytes() == b"project(reduce LANGUAGES CXX CUDA)\r\n"


# -- 4. file names that are not UTF-8 or hold control characters -------------------------


def test_a_file_name_that_is_not_utf8_is_translated_under_the_same_name(tmp_path, repo):
    src = os.fsencode(repo / "src")
    for name in (b"k\xe9rnel.cu", b"k\\xe9rnel.cu"):
        with open(os.path.join(src, name), "wb") as fh:
            fh.write(KERNEL)
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out)

    assert done.returncode == 0, done.stderr
    with open(os.path.join(os.fsencode(out), b"src", b"k\xe9rnel.cu"), "rb") as fh:
        assert b"hipMalloc(&d" in fh.read()
    assert b"src/k\\xe9rnel.cu: " in done.stdout
    assert b"\xe9" not in done.stdout + done.stderr

    as_json = portcheck("translate", repo, "-o", out, "--format", "json")
    paths = {f["path"] for f in json.loads(as_json.stdout)["files"]}
    assert os.fsdecode(b"src/k\xe9rnel.cu") in paths  # the real name, JSON-escaped


def test_control_characters_in_names_are_printed_escaped(tmp_path, repo):
    forged = b"x.cu\n::error file=main.cu::forged\x1b[2K.cu"
    with open(os.path.join(os.fsencode(repo / "src"), forged), "wb") as fh:
        fh.write(KERNEL)
    out = tmp_path / "out"

    done = portcheck("translate", repo, "-o", out)

    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    assert b"\x1b" not in printed
    assert not any(line.startswith(b"::") for line in printed.splitlines())
    assert b"x.cu\\n::error file=main.cu::forged\\x1b[2K.cu" in done.stdout
    with open(os.path.join(os.fsencode(out / "src"), forged), "rb") as fh:
        assert b"hipMalloc(&d" in fh.read()


# -- 5. an output that cannot be written: one line, exit 2, no traceback ------------------


def test_a_file_in_the_way_of_an_output_folder(tmp_path, repo):
    out = tmp_path / "out"
    out.mkdir()
    (out / "src").write_bytes(b"not a folder\n")

    message = one_line_error(portcheck("translate", repo, "-o", out))

    assert "out/src" in message and "not a folder" in message


def test_an_output_folder_that_is_a_file(tmp_path, repo):
    (tmp_path / "out").write_bytes(b"a file\n")

    message = one_line_error(portcheck("translate", repo, "-o", tmp_path / "out"))

    assert str(tmp_path / "out") in message and "not a folder" in message


def test_an_output_link_cannot_lead_new_folders_outside(tmp_path, repo):
    (repo / "lib" / "cuda").mkdir(parents=True)
    (repo / "lib" / "cuda" / "scan.cu").write_bytes(KERNEL)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(elsewhere, out / "lib")  # planted: out/lib/cuda would be made in elsewhere

    message = one_line_error(portcheck("translate", repo, "-o", out))

    assert "leads outside" in message
    assert list(elsewhere.iterdir()) == []


def _private_mount_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /tmp"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


private_mount = pytest.mark.skipif(
    not _private_mount_works(), reason="needs `unshare -rm` to mount a private tmpfs"
)


def _under_private_tmpfs(folder: Path, options: str) -> list[str]:
    """A command prefix: run in a mount namespace where `folder` is a fresh tmpfs."""
    script = 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && exec "$@"'
    return ["unshare", "-rm", "sh", "-c", script, "sh", options, str(folder)]


@private_mount
def test_a_read_only_output_folder(tmp_path, repo):
    out = tmp_path / "out"
    out.mkdir()

    done = portcheck("translate", repo, "-o", out, wrap=_under_private_tmpfs(out, "ro"))

    message = one_line_error(done)
    assert str(out) in message and "Read-only file system" in message


@private_mount
def test_running_out_of_space(tmp_path, repo):
    (repo / "src" / "big.cu").write_bytes(KERNEL + b"// padding\n" * 20000)
    out = tmp_path / "out"
    out.mkdir()

    done = portcheck("translate", repo, "-o", out, wrap=_under_private_tmpfs(out, "size=64k"))

    message = one_line_error(done)
    assert str(out / "src") in message and "No space left on device" in message
