"""hipify-perl and hipify-clang as translation engines, run through a subprocess.

Neither is packaged for Debian; they are found on PATH or under $ROCM_PATH/bin
(default /opt/rocm/bin). A missing tool, a timeout or a failure is an EngineError
with a message a user can act on, never a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from portcheck.model import ENGINES
from portcheck.paths import display_path

__all__ = ["ENGINES", "EngineError", "find_tool", "run_hipify"]
TIMEOUT_SECONDS = 300


class EngineError(RuntimeError):
    pass


def find_tool(name: str) -> str | None:
    """Path of hipify-perl / hipify-clang: PATH first, then $ROCM_PATH/bin, /opt/rocm/bin."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            candidate = Path(root) / "bin" / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def run_hipify(engine: str, source: Path, timeout: float = TIMEOUT_SECONDS) -> bytes:
    """Translate one file with an external hipify tool; returns the HIP text."""
    tool = find_tool(engine)
    if tool is None:
        raise EngineError(
            f"{engine} was not found on PATH or in $ROCM_PATH/bin; install ROCm's HIPIFY "
            "or use --engine builtin"
        )
    with tempfile.TemporaryDirectory(prefix="portcheck-hipify-") as scratch:
        if engine == "hipify-perl":
            command = [tool, "-quiet-warnings", str(source)]
            output_file = None
        else:
            output_file = Path(scratch) / (source.name + ".hip")
            command = [
                tool,
                str(source),
                "-o",
                str(output_file),
                "--",
                "-x",
                "cuda",
                "--cuda-host-only",
                "-nocudalib",
            ]
        try:
            done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            shown = display_path(source)
            raise EngineError(f"{engine} took longer than {timeout:.0f} s on {shown}") from None
        except OSError as exc:
            raise EngineError(f"cannot run {tool}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            detail = message[-1] if message else f"exit code {done.returncode}"
            # Both may hold anything (a file name, the tool's output): one printable line.
            raise EngineError(f"{engine} failed on {display_path(source)}: {display_path(detail)}")
        if output_file is not None:
            try:
                return output_file.read_bytes()
            except OSError:
                raise EngineError(f"{engine} wrote no output for {display_path(source)}") from None
        return done.stdout
