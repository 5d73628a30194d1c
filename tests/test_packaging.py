"""A non-editable install must carry rules/ and templates/ inside the package."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import REPO


def test_wheel_ships_the_rules_and_loads_them(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("portcheck-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    assert "portcheck/rules/runtime.yaml" in names
    assert "portcheck/rules/headers.yaml" in names
    assert "portcheck/rules/hazards.yaml" in names
    assert "portcheck/rules/python/packages.yaml" in names
    assert "portcheck/rules/python/apis.yaml" in names
    assert "portcheck/rules/gpus.yaml" in names
    assert "portcheck/parse/cuda_shim.h" in names  # the libclang front end's CUDA builtins
    assert "portcheck/report/report.schema.json" in names  # the JSON report's published schema
    # Import from the unpacked wheel only (not the checkout): the rules load from inside it.
    code = (
        "import sys, portcheck, portcheck.resources as r; "
        "print(r.data_dir('rules')); print(len(portcheck.load_rules())); "
        "print(len(portcheck.scan(sys.argv[1]).findings))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "examples" / "heatflow")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path / "site")},
    )
    assert out.returncode == 0, out.stderr
    location, count, findings = out.stdout.split()
    assert location.startswith(str(tmp_path / "site"))
    assert int(count) >= 400
    assert int(findings) > 0  # the hazard catalogue ships too
    # The GPU table ships and loads from inside the wheel.
    code = "import portcheck.gpus as g; print(g.gpu('mi300x').gfx, g.gpu_table().digest[:8])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path / "site")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "gfx942"
    # libclang decides a file from the installed wheel (the shim header found inside it).
    code = (
        "import sys, portcheck; r = portcheck.scan(sys.argv[1], front_end='deep', cache=False); "
        "print(sorted({f.front_end for f in r.files}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "tests" / "fixtures" / "projects" / "stencil")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path / "site")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['libclang']"


def test_portcheck_scan_is_callable_after_its_module_is_imported(tmp_path):
    """A library user who imports ScanOptions first (binding the submodule as the package's
    `scan`) still calls `portcheck.scan(path)`: before, that raised 'module is not callable'."""
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n")
    code = (
        "import sys, portcheck\n"
        "from portcheck.scan import ScanOptions\n"
        "report = portcheck.scan(sys.argv[1], cache=False)\n"
        "print(len(report.files), type(ScanOptions).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "type"]
