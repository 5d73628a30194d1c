"""ML repositories as teams have them: a training script, a notebook, Triton kernels, a CUDA
extension and pinned manifests (tests/fixtures/python/llmtune), judged on the Python routes.

Findings are compared as sets of (path, cell, line, slug) with the `# expect: slug` (or
`// expect:`) markers on the line before each target, in .py files and in notebook cells."""

from __future__ import annotations

import json
import re

import pytest

import portcheck
from portcheck.options import ScanOptions
from portcheck.python.rules import PythonRuleError, parse_entries, python_rules
from portcheck.python.versions import interval, requirement_interval
from portcheck.python.wheels import advice

from conftest import FIXTURES, run_portcheck

LLMTUNE = FIXTURES / "python" / "llmtune"
NOTEBOOK = "notebooks/finetune_lora.ipynb"
EXPECT = re.compile(r"(?:#|//)\s*expect:\s*([\w\- ]+?)\s*$")
MARKED = ("llmtune/train.py", "kernels/fused_softmax.py", "kernels/portable.py", NOTEBOOK)


def expected_markers() -> set[tuple[str, int | None, int, str]]:
    """(path, cell or None, line, slug) for every marker in the marked files."""
    found = set()
    for path in MARKED:
        if path.endswith(".ipynb"):
            cells = json.loads((LLMTUNE / path).read_text())["cells"]
            for number, cell in enumerate(cells, 1):
                if cell["cell_type"] != "code":
                    continue
                lines = "".join(cell["source"]).split("\n")
                for index, text in enumerate(lines, 1):
                    match = EXPECT.search(text)
                    if match:
                        found |= {(path, number, index + 1, s) for s in match.group(1).split()}
            continue
        for index, text in enumerate((LLMTUNE / path).read_text().splitlines(), 1):
            match = EXPECT.search(text)
            if match:
                found |= {(path, None, index + 1, s) for s in match.group(1).split()}
    return found


@pytest.fixture(scope="module")
def doc():
    result = run_portcheck("scan", str(LLMTUNE), "--format", "json", "--no-cache")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_findings_sit_where_the_markers_say_in_scripts_kernels_and_notebook_cells(doc):
    entries = [*doc["python"]["findings"], *doc["findings"]]
    found = {
        (f["path"], f.get("cell"), f["line"], f["slug"]) for f in entries if f["path"] in MARKED
    }
    expected = expected_markers()
    assert found == expected, (sorted(expected - found), sorted(found - expected))


def test_notebook_entries_carry_cell_and_line_in_every_format(doc):
    usages = {(u["name"], u.get("cell"), u["line"]) for u in doc["python"]["usages"]}
    assert ("torch.version.cuda.split", 4, 5) in usages  # cell 4 counts the markdown cells too
    deps = {(d["name"], d.get("cell"), d["line"]) for d in doc["python"]["dependencies"]}
    assert {("torch", 2, 2), ("bitsandbytes", 2, 4), ("peft", 2, 4)} <= deps  # `!pip install`
    cuda = [u for u in doc["usages"] if u["path"] == NOTEBOOK]
    assert ("__shfl_down_sync", 5, 9) in {(u["name"], u["cell"], u["line"]) for u in cuda}
    assert all("cell" not in f for f in doc["findings"] if f["path"].endswith(".py"))
    text = run_portcheck("scan", str(LLMTUNE), "--no-cache").stdout
    assert f"PY001 {NOTEBOOK}:cell 4:5" in text
    markdown = run_portcheck("scan", str(LLMTUNE), "--format", "markdown").stdout
    assert f"{NOTEBOOK}:cell 2:6" in markdown  # !nvidia-smi
    sarif = json.loads(run_portcheck("scan", str(LLMTUNE), "--format", "sarif").stdout)
    raw = (LLMTUNE / NOTEBOOK).read_text().splitlines()
    in_notebook = [
        result
        for result in sarif["runs"][0]["results"]
        if result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == NOTEBOOK
    ]
    assert len(in_notebook) == len([m for m in expected_markers() if m[0] == NOTEBOOK])
    for result in in_notebook:
        location = result["locations"][0]["physicalLocation"]
        # the region is the .ipynb file's own line holding that code line
        cell, line = result["properties"]["cell"], result["properties"]["cellLine"]
        source = json.loads((LLMTUNE / NOTEBOOK).read_text())["cells"][cell - 1]["source"]
        assert (
            raw[location["region"]["startLine"] - 1]
            .strip()
            .startswith(json.dumps(source[line - 1])[:-1])
        )
        assert f"[cell {cell}, line {line}]" in result["message"]["text"]


def test_html_shows_notebook_positions_in_cards_and_tables():
    from portcheck.report.html import render_html

    report = portcheck.scan(LLMTUNE / "notebooks", cache=False)
    page = render_html(report)
    name = NOTEBOOK.split("/")[-1]
    assert f"{name}:cell 5:4" in page  # the CUDA card of `% 32` in cell 5
    assert f"{name}:cell 2:6" in page  # `!nvidia-smi` in the Python table
    for finding in report.findings:  # no line of the joined cells' text leaks out
        assert f"{name}:{finding.span.line}<" not in page


def test_triton_kernels_are_listed_with_the_hazards_in_their_bodies(doc):
    kernels = {(k["path"], k["name"]): k for k in doc["python"]["kernels"]}
    assert set(kernels) >= {
        ("kernels/fused_softmax.py", "softmax_kernel"),
        ("kernels/fused_softmax.py", "gemm_tile"),
        ("kernels/portable.py", "scale_kernel"),
    }
    assert kernels[("kernels/fused_softmax.py", "gemm_tile")]["slugs"] == ["triton-dot-precision"]
    assert kernels[("kernels/portable.py", "scale_kernel")]["slugs"] == []
    assert not any(k["path"].endswith(".py") for k in doc["kernels"])  # not CUDA kernels


@pytest.mark.parametrize(
    ("gpu", "verdicts"),
    [
        # RDNA3 runs 32-wide warps; it has no TF32 inputs and no FP8 in Triton
        (
            "gfx1100",
            {
                "triton-warp-count": "supported",
                "triton-dot-precision": "unsupported",
                "triton-fp8-type": "unsupported",
            },
        ),
        # MI300: 64-wide wavefronts, TF32 inputs, FP8 by conversion (FNUZ hardware)
        (
            "gfx942",
            {
                "triton-warp-count": "unsupported",
                "triton-dot-precision": "supported",
                "triton-fp8-type": "partial",
            },
        ),
        # MI350 computes the OCP FP8 NVIDIA uses; TF32 is CDNA3-only
        ("gfx950", {"triton-dot-precision": "unsupported", "triton-fp8-type": "supported"}),
    ],
)
def test_triton_verdicts_follow_the_chosen_gpu(gpu, verdicts):
    report = portcheck.scan(LLMTUNE / "kernels", options=ScanOptions.of(gpu=gpu, cache=False))
    judged = {}
    for finding in report.python.findings:
        if finding.slug == "triton-warp-count" and not finding.message.startswith("`num_warps="):
            continue  # `num_warps * 32` arithmetic: a review item apart from the launches
        judged.setdefault(finding.slug, set()).add(str(finding.targets.rocm))
    assert {slug: judged[slug] for slug in verdicts} == {s: {v} for s, v in verdicts.items()}


def test_dependencies_are_judged_by_the_versions_their_requirements_admit(doc):
    deps = {(d["path"], d["name"]): d for d in doc["python"]["dependencies"]}
    flash = deps[("pyproject.toml", "flash-attn")]  # ==2.5.8: before the ROCm backend
    assert flash["status"]["rocm"] == "unsupported"
    assert "<2.6.2" in flash["note"] and "flash-attn>=2.7.3" in flash["replacement"]
    bnb = deps[("pyproject.toml", "bitsandbytes")]  # >=0.43,<0.44: no ROCm build yet
    assert bnb["status"]["rocm"] == "unsupported" and "bitsandbytes>=0.50" in bnb["replacement"]
    xformers = deps[("pyproject.toml", "xformers")]  # 0.0.28.post1: experimental rocm6.1 wheel
    assert xformers["status"]["rocm"] == "partial" and "rocm6.1" in xformers["note"]
    assert xformers["gaps"] and xformers["source"]
    # unversioned: the newest releases, as the entry says
    assert deps[("pyproject.toml", "triton")]["status"]["rocm"] == "supported"
    # Hugging Face libraries run on ROCm PyTorch: credited, with a source
    peft = deps[("pyproject.toml", "peft")]
    assert peft["status"]["rocm"] == "supported" and "hugging-face" in peft["source"]
    messages = {f["message"] for f in doc["python"]["findings"]}
    assert (
        "`bitsandbytes>=0.43,<0.44` is unsupported on ROCm; on ROCm: bitsandbytes>=0.50 "
        "(supported on ROCm)" in messages
    )


def test_build_tooling_and_the_project_itself_are_not_gpu_dependencies(doc):
    names = {d["name"] for d in doc["python"]["dependencies"]}
    # [build-system] requires setuptools, wheel, ninja; setup.py's setup_requires ninja, cmake;
    # optional-dependencies name `llmtune[notebooks]` (the project itself)
    assert not names & {"setuptools", "wheel", "ninja", "cmake", "llmtune"}
    assert "torch" in names  # a known GPU package is kept even when only needed to build
    assert "numpy" in names  # an ordinary dependency stays listed (unknown, not scored)


def test_the_wheel_index_follows_the_target_rocm_release(doc):
    wheels = doc["python"]["rocm_wheels"]  # default: the newest release the rule set knows
    assert wheels["rocm"] == "7.0" and wheels["command"] == ""
    assert "torch==2.3.1" in wheels["requirement"] and "rocm6.0" in wheels["note"]
    pinned = json.loads(
        run_portcheck("scan", str(LLMTUNE), "--format", "json", "--rocm", "6.0").stdout
    )["python"]
    command = pinned["rocm_wheels"]["command"]
    assert (
        command == 'pip install "torch==2.3.*" --index-url https://download.pytorch.org/whl/rocm6.0'
    )
    fixes = {f["fix"] for f in pinned["findings"] if f["slug"] == "cuda-wheel-index"}
    assert fixes and all(command in fix for fix in fixes)
    assert "AMD validates PyTorch" in advice("6.3", "torch==2.4.0").note
    assert advice("6.2", "torch==2.5.1").index_url.endswith("/whl/rocm6.2")
    assert advice("6.2", "").index_url.endswith("/whl/rocm6.2.4")  # newest torch for 6.2
    assert advice("6.5", "").index_url is None
    assert "nearest older one is https://download.pytorch.org/whl/rocm6.4" in advice("6.5", "").note


def test_directml_is_not_applicable_when_the_project_gpu_code_cannot_run_there(doc):
    python = doc["python"]
    assert python["scores"]["directml"] is None and "directml" not in python["effort"]
    reason = python["not_applicable"]["directml"]
    assert "CUDA extension" in reason and "setup.py:9" in reason
    assert isinstance(python["scores"]["rocm"], int) and "rocm" in python["effort"]
    text = run_portcheck("scan", str(LLMTUNE), "--no-cache").stdout
    assert "directml n/a  not applicable:" in text
    assert not re.search(r"directml\s+\d+", text)  # no score, no hours


def test_a_plain_pytorch_script_keeps_its_directml_estimate(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\n\nmodel = torch.nn.Linear(8, 2).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loss = model(torch.randn(4, 8, device='cuda')).sum()\nloss.backward()\nopt.step()\n"
    )
    python = portcheck.scan(tmp_path, cache=False).python
    assert python.not_applicable == {} and python.scores["directml"] is not None
    assert python.effort["directml"].total_hours > 0


def test_no_cuda_means_null_cuda_scores_everywhere(tmp_path):
    (tmp_path / "infer.py").write_text(
        "import torch\nfrom transformers import AutoModel\n\n"
        "model = AutoModel.from_pretrained('gpt2').to('cuda')\n"
    )
    doc = json.loads(run_portcheck("scan", str(tmp_path), "--format", "json").stdout)
    assert doc["summary"]["scores"] == {"hip": None, "zluda": None, "scale": None}
    assert [f["scores"] for f in doc["files"]] == [{"hip": None, "zluda": None, "scale": None}]
    assert doc["python"]["scores"]["rocm"] == 100
    text = run_portcheck("scan", str(tmp_path)).stdout
    assert "Estimated effort" not in text and " 100 " not in text.split("Python (")[0]
    markdown = run_portcheck("scan", str(tmp_path), "--format", "markdown").stdout
    assert "| HIP | ➖ nothing to score | — | — | — |" in markdown


def test_python_without_gpu_code_has_nothing_to_judge(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\npandas\n")
    doc = json.loads(run_portcheck("scan", str(tmp_path), "--format", "json").stdout)
    assert doc["python"]["scores"] == {"rocm": None, "directml": None}
    assert doc["python"]["not_applicable"] == {}
    text = run_portcheck("scan", str(tmp_path)).stdout
    assert "No route has a score: nothing GPU-related to judge" in text


def test_a_notebook_survives_the_cache_unchanged(tmp_path):
    cache = tmp_path / "cache"
    env = {"PORTCHECK_CACHE_DIR": str(cache)}
    args = ("scan", str(LLMTUNE / "notebooks"), "--format", "json")
    first = json.loads(run_portcheck(*args, env=env).stdout)
    second = json.loads(run_portcheck(*args, env=env).stdout)
    for doc in (first, second):
        doc["summary"].pop("seconds")
    assert first == second and any("cell" in f for f in first["python"]["findings"])


def test_broken_notebooks_are_reported_not_fatal(tmp_path):
    (tmp_path / "bad.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "source": "import torch\\n'
    )
    (tmp_path / "v3.ipynb").write_text(
        json.dumps(
            {
                "nbformat": 3,
                "worksheets": [
                    {
                        "cells": [
                            {
                                "cell_type": "code",
                                "input": "import torch\nv = float(torch.version.cuda)\n",
                            }
                        ]
                    }
                ],
            }
        )
    )
    result = run_portcheck("scan", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    errors = {f["path"]: f["parse_errors"] for f in doc["files"]}
    assert errors["bad.ipynb"] >= 1
    assert [(f["slug"], f["cell"], f["line"]) for f in doc["python"]["findings"]] == [
        ("torch-version-cuda", 1, 2)
    ]


def test_version_ranges_read_pip_and_conda_specifiers():
    admitted = requirement_interval("flash-attn>=2.5,<2.6 ; python_version > '3.9'")
    assert admitted.meets(interval("<2.6.2")) and not admitted.meets(interval(">=2.7.3"))
    assert requirement_interval("torch==2.3.1+cu121").pinned == (2, 3, 1)
    assert requirement_interval("pytorch-cuda=12.1").meets(interval("==12.1.5"))
    assert not requirement_interval("xformers~=0.0.28").meets(interval(">=0.1"))
    assert requirement_interval("torch @ https://example.com/torch.whl").low is None


def test_package_version_ranges_are_validated():
    base = {
        "name": "pkg",
        "status": {"rocm": "supported", "directml": "unknown"},
        "note": "n",
        "source": "s",
    }
    overlapping = {
        **base,
        "versions": [
            {"range": "<2.0", "rocm": "unsupported", "note": "n", "source": "s"},
            {"range": ">=1.5", "rocm": "supported", "note": "n", "source": "s"},
        ],
    }
    with pytest.raises(PythonRuleError, match="overlap"):
        parse_entries([overlapping], "package", "packages.yaml")
    mismatched = {
        **base,
        "versions": [{"range": ">=2", "rocm": "partial", "note": "n", "source": "s"}],
    }
    with pytest.raises(PythonRuleError, match="open-ended range"):
        parse_entries([mismatched], "package", "packages.yaml")
    with pytest.raises(PythonRuleError, match="not_applicable"):
        parse_entries([{**base, "not_applicable": {"cuda": "x"}}], "package", "packages.yaml")
    rules = python_rules()
    for name, ranges in rules.versions.items():
        assert all(r.source.strip() for r in ranges), name


def test_torch_version_cuda_is_reported_where_it_breaks_not_where_it_is_tested(tmp_path):
    (tmp_path / "aware.py").write_text(  # a file that tells CUDA and ROCm builds apart
        "import torch\n\n"
        "op = 'cutlass' if torch.version.cuda else 'ck'  # ck: AMD's Composable Kernel\n"
        "if torch.version.hip:\n"
        "    arch = torch.cuda.get_device_properties(0).gcnArchName\n"
        "if torch.version.cuda is not None and float(torch.version.cuda) < 12.1:\n"
        "    raise SystemExit('old CUDA')\n"
        "print('CUDA', torch.version.cuda)\n"
        "info = {'cuda': torch.version.cuda}\n"
        "major = int(torch.version.cuda.split('.')[0])\n"
    )
    (tmp_path / "unaware.py").write_text(
        "import torch\n\ndevice = 'cuda' if torch.version.cuda else 'cpu'\n"
    )
    report = portcheck.scan(tmp_path, cache=False)
    found = {
        (f.path, f.span.line) for f in report.python.findings if f.slug == "torch-version-cuda"
    }
    # parsing breaks on ROCm (None); a test of the build is fine where ROCm has its branch,
    # and sends ROCm to the CPU where it has none
    assert found == {("aware.py", 10), ("unaware.py", 3)}


def test_a_package_listing_its_own_extras_gets_no_finding_about_itself(tmp_path):
    """unsloth's pyproject lists `unsloth[huggingface]` in its extras: the package table's
    verdict on unsloth is for projects that use it, not for unsloth itself. A real
    dependency on the same kind of line is still judged."""
    (tmp_path / "unsloth").mkdir()
    (tmp_path / "unsloth" / "__init__.py").write_text("import torch\n\n__version__ = '1.0'\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "unsloth"\nversion = "1.0"\ndependencies = ["torch"]\n\n'
        "[project.optional-dependencies]\n"
        'huggingface = ["transformers", "bitsandbytes==0.45.5"]\n'
        'colab = ["unsloth[huggingface]"]\n'
        'all = [\n    "unsloth[huggingface]",\n    "unsloth[colab]",\n]\n'
    )
    python = portcheck.scan(tmp_path, cache=False).python
    about = [f.message for f in python.findings if f.slug == "cuda-only-package"]
    assert about and all("`unsloth" not in message for message in about), about
    assert any("bitsandbytes==0.45.5" in message for message in about)
