"""Python and PyTorch projects: manifests, Python code, and the CUDA inside Python."""

from __future__ import annotations

import json
import shutil

import pytest

import portcheck
from portcheck.python.deps import parse_conda, parse_pyproject, parse_requirements
from portcheck.python.rules import PythonRuleError, parse_rules, python_rules

from conftest import FIXTURES, run_portcheck

MLPROJ = FIXTURES / "python" / "mlproj"


@pytest.fixture(scope="module")
def report():
    return portcheck.scan(MLPROJ, cache=False)


def python_findings(report):
    return {(f.id, f.path, f.span.line) for f in report.python.findings}


def test_python_hazards_are_found_where_they_are(report):
    found = python_findings(report)
    expected = {
        ("PY001", "mlproj/train.py", 17),  # th.version.cuda (the comment on line 15 is not code)
        ("PY003", "mlproj/train.py", 23),  # get_device_capability
        ("PY002", "mlproj/train.py", 29),  # "nvidia-smi" in a subprocess argument list
        ("PY004", "ext/setup.py", 8),  # CUDAExtension
        ("PY005", "mlproj/kernels.py", 17),  # cp.RawKernel
        ("PY005", "mlproj/kernels.py", 19),  # cp.ElementwiseKernel
        ("PY006", "mlproj/kernels.py", 27),  # @cuda.jit
        ("PY007", "requirements.txt", 2),  # --extra-index-url .../whl/cu121
        ("PY007", "requirements.txt", 3),  # torch==2.3.1+cu121
        ("PY007", "pyproject.toml", 21),  # [[tool.uv.index]] cu124
        ("PY007", "environment.yml", 4),  # conda channel nvidia
        ("PY008", "requirements.txt", 5),  # cupy-cuda12x
        ("PY008", "requirements.txt", 6),  # nvidia-cudnn-cu12, by the `nvidia-` prefix rule
        ("PY008", "requirements.txt", 9),  # pynvml, written over a `\` continuation
        ("PY008", "pyproject.toml", 17),  # tensorrt and jax[cuda12]
        ("PY008", "environment.yml", 9),  # pytorch-cuda
    }
    assert expected <= found, sorted(expected - found)
    assert not any(path == "mlproj/model.py" for _, path, _ in found)  # plain nn code is portable
    assert not any(line == 15 for _, path, line in found if path == "mlproj/train.py")


def test_aliases_resolve_and_comments_never_count(report):
    names = {(u.name, u.span.line) for u in report.python.uses if u.path == "mlproj/train.py"}
    assert ("torch.cuda.is_available", 15) in names  # `th.cuda.is_available()`
    assert ("torch.cuda.amp.GradScaler", 45) in names  # imported with `from … import`
    assert ("torch.cuda.nvtx.range_push", 48) in names
    assert ("torch.Tensor.cuda", 44) in names  # `Classifier().cuda()`
    assert not any(line in (1, 14) for _, line in names)  # the docstring and the comment


def test_dependencies_get_sourced_verdicts_and_unknowns_stay_unknown(report):
    deps = {(d.path, d.name): d for d in report.python.dependencies}
    cupy = deps[("requirements.txt", "cupy-cuda12x")]
    assert str(cupy.status.rocm) == "unsupported" and "cupy-rocm" in cupy.rule.replacement
    assert cupy.rule.source  # every verdict names where it came from
    assert str(deps[("requirements.txt", "torch")].status.rocm) == "supported"
    assert deps[("requirements.txt", "pynvml")].line == 9
    internal = deps[("requirements.txt", "internal-metrics-client")]
    assert internal.rule is None and str(internal.status.rocm) == "unknown"
    assert report.python.unknown_packages >= 1
    assert ("environment.yml", "python") not in deps  # the interpreter is not a library
    assert ("pyproject.toml", "jax") in deps and ("ext/setup.py", "ninja") in deps


def test_unknown_packages_do_not_move_the_score(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.4.0\ncupy-cuda12x\n")
    before = portcheck.scan(tmp_path, cache=False).python.scores
    (tmp_path / "requirements.txt").write_text("torch==2.4.0\ncupy-cuda12x\nfoo-internal\nbar\n")
    after = portcheck.scan(tmp_path, cache=False).python
    assert after.scores == before
    assert after.unknown_packages == 2


def test_cuda_in_python_is_scanned_as_cuda_at_the_right_lines(report):
    cuda = {(f.slug, f.span.line) for f in report.findings if f.path == "mlproj/kernels.py"}
    # The RawKernel source string starts on line 7 of kernels.py.
    assert ("warp-size-assumption", 9) in cuda  # threadIdx.x % 32
    assert ("lane-mask-width", 12) in cuda  # __shfl_down_sync(0xffffffff, …)
    # The numba.cuda kernel body.
    assert ("warp-size-assumption", 29) in cuda  # cuda.threadIdx.x % 32
    assert ("lane-mask-width", 33) in cuda  # cuda.shfl_down_sync(0xFFFFFFFF, …)
    uses = {(u.name, u.span.line, u.span.column) for u in report.uses if u.path.endswith(".py")}
    assert ("__shfl_down_sync", 12, 22) in uses  # 1-based column in the .py file
    kernels = {k.name: k for k in report.kernels if k.path == "mlproj/kernels.py"}
    assert "row_max" in kernels  # from the RawKernel string
    # The numba kernel is a kernel of the report, ranked by the hazards in its body.
    assert set(kernels["block_sum"].findings) == {"warp-size-assumption", "lane-mask-width"}


def test_extension_sources_are_listed_and_missing_ones_said(report):
    (extension,) = [e for e in report.python.extensions if e.kind == "CUDAExtension"]
    assert "ext/csrc/fused_layernorm.cu" in extension.sources
    assert extension.missing == ("ext/csrc/generated_kernels.cu",)
    cu = {(f.slug, f.span.line) for f in report.findings if f.path == "ext/csrc/fused_layernorm.cu"}
    assert ("lane-mask-width", 8) in cu


def test_files_without_gpu_code_are_not_read(report):
    paths = {f.path for f in report.files}
    assert "mlproj/utils.py" not in paths
    assert {"mlproj/train.py", "requirements.txt", "pyproject.toml", "environment.yml"} <= paths


def test_json_html_sarif_markdown_carry_the_python_section(tmp_path):
    doc = json.loads(run_portcheck("scan", str(MLPROJ), "--format", "json").stdout)
    assert set(doc["summary"]["scores"]) == {"hip", "zluda", "scale"}  # contract unchanged
    python = doc["python"]
    assert python["routes"] == ["rocm", "directml"]
    assert 0 <= python["scores"]["rocm"] <= 100
    # a CUDA extension, CuPy and numba.cuda kernels cannot run on DirectML at all: no score,
    # no hours, the reason instead
    assert python["scores"]["directml"] is None and "directml" not in python["effort"]
    assert "CUDA extension" in python["not_applicable"]["directml"]
    assert {"name", "spec", "path", "line", "status", "replacement", "note", "source"} <= set(
        python["dependencies"][0]
    )
    sarif = json.loads(run_portcheck("scan", str(MLPROJ), "--format", "sarif").stdout)
    run = sarif["runs"][0]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {"PC001", "PY001", "PY008"} <= rule_ids
    py_results = [r for r in run["results"] if r["ruleId"].startswith("PY")]
    assert any(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "mlproj/train.py"
        for r in py_results
    )
    markdown = run_portcheck("scan", str(MLPROJ), "--format", "markdown").stdout
    assert "#### Python" in markdown and "PyTorch on ROCm" in markdown
    text = run_portcheck("scan", str(MLPROJ)).stdout
    assert "PY002 mlproj/train.py:29" in text


def test_a_cuda_only_tree_has_no_python_section():
    doc = json.loads(run_portcheck("scan", str(FIXTURES / "scan"), "--format", "json").stdout)
    assert "python" not in doc


def test_suppression_and_ignore_work_for_python_hazards(tmp_path):
    (tmp_path / "probe.py").write_text(
        "import subprocess\nimport torch\n"
        "subprocess.run(['nvidia-smi'])  # portcheck: ignore[nvidia-smi]\n"
        "major = float(torch.version.cuda)\n"
    )
    report = portcheck.scan(tmp_path, cache=False)
    assert [f.id for f in report.python.findings] == ["PY001"]
    assert portcheck.scan(tmp_path, cache=False, ignore=["PY001"]).python.findings == ()


def test_cuda_hazards_in_numba_kernels_are_cuda_findings_and_follow_ignore(tmp_path):
    (tmp_path / "k.py").write_text(
        "from numba import cuda\n\n\n@cuda.jit\ndef k(x):\n    x[0] = cuda.threadIdx.x % 32\n"
    )
    report = portcheck.scan(tmp_path, cache=False)
    assert [(f.slug, f.span.line, f.function) for f in report.findings] == [
        ("warp-size-assumption", 6, "k")
    ]
    assert [f.id for f in report.python.findings] == ["PY006"]
    assert portcheck.scan(tmp_path, cache=False, ignore=["PC001"]).findings == ()


def test_broken_manifests_and_python_give_no_traceback(tmp_path):
    shutil.copytree(MLPROJ, tmp_path / "proj")
    (tmp_path / "proj" / "pyproject.toml").write_text("[project\ndependencies = [torch\n")
    (tmp_path / "proj" / "environment.yml").write_text("dependencies: [unclosed\n  - x: {")
    broken = "import torch\ndef f(:\n  torch.cuda(\n"
    (tmp_path / "proj" / "mlproj" / "broken.py").write_text(broken)
    (tmp_path / "proj" / "mlproj" / "blob.py").write_bytes(b"torch\x00\x01\x02")
    result = run_portcheck("scan", str(tmp_path / "proj"), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    errors = {f["path"]: f["parse_errors"] for f in doc["files"]}
    assert errors["pyproject.toml"] >= 1 and errors["environment.yml"] >= 1
    assert errors["mlproj/broken.py"] >= 1
    assert {"path": "mlproj/blob.py", "reason": "binary file (contains NUL bytes)"} in doc[
        "skipped"
    ]


def test_manifest_parsers_on_real_shapes():
    requirements = parse_requirements(
        "-i https://download.pytorch.org/whl/rocm6.2\n"
        "-e git+https://github.com/org/lib.git#egg=fancy_lib\n"
        "Cupy_CUDA11x==12.0 ; python_version >= '3.9'  # comment\n"
        "-r base.txt\n"
        "https://example.com/pkg.whl\n"
    )
    assert [r.name for r in requirements.requirements] == ["fancy_lib", "Cupy_CUDA11x"]
    assert requirements.indexes == [("https://download.pytorch.org/whl/rocm6.2", 1)]
    assert python_rules().package("Cupy_CUDA11x").name == "cupy-cuda"
    poetry = parse_pyproject(
        '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = "2.3"\n'
        '[[tool.poetry.source]]\nname = "torch"\nurl = "https://download.pytorch.org/whl/cu118"\n'
    )
    assert [r.name for r in poetry.requirements] == ["torch"]
    assert poetry.indexes[0][1] == 6
    conda = parse_conda("channels: [nvidia]\ndependencies:\n  - nvidia::cuda-toolkit=12.1\n")
    assert [r.name for r in conda.requirements] == ["cuda-toolkit"]


def test_python_rules_are_validated():
    good = {"name": "x", "status": {"rocm": "supported", "directml": "unknown"}}
    with pytest.raises(PythonRuleError, match="missing"):
        parse_rules([good], "package", "packages.yaml")  # no note, no source
    bad = {**good, "note": "n", "source": "s", "status": {"rocm": "works", "directml": "unknown"}}
    with pytest.raises(PythonRuleError, match="works"):
        parse_rules([bad], "package", "packages.yaml")
    rules = python_rules()
    for rule in [*rules.packages.values(), *rules.package_prefixes, *rules.apis.values()]:
        assert rule.source.strip() and rule.note.strip(), rule.name
