"""The command line as users and CI scripts see it: output shape, files, exit codes."""

from __future__ import annotations

import json

import pytest

import portcheck

from conftest import REPO, SCAN_FIXTURES, run_portcheck

EXAMPLE = REPO / "examples" / "heatflow"


run = run_portcheck


@pytest.fixture(scope="module")
def example_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.json"
    result = run("scan", str(EXAMPLE), "--format", "json", "-o", str(out))
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text())


def test_json_report_follows_the_contract(example_json):
    doc = example_json
    assert doc["schema"] == "portcheck.report/1"
    assert doc["tool"] == {"name": "portcheck", "version": portcheck.__version__}
    summary = doc["summary"]
    for key in ("files_scanned", "files_skipped", "lines", "uses", "findings", "scores"):
        assert key in summary
    assert set(summary["scores"]) == {"hip", "zluda", "scale"}
    assert all(0 <= v <= 100 for v in summary["scores"].values())
    assert summary["uses"] == len(doc["usages"])
    assert summary["files_scanned"] == len(doc["files"])
    for entry in doc["files"]:
        assert {"path", "language", "lines", "uses", "findings"} <= set(entry)
    for use in doc["usages"]:
        assert {"name", "kind", "family", "path", "line", "column", "hip", "status"} <= set(use)
        assert set(use["status"]) == {"hip", "zluda", "scale"}
        assert use["line"] >= 1 and use["column"] >= 1
        assert "\\" not in use["path"] and not use["path"].startswith("/")


def test_example_report_names_real_uses_on_real_lines(example_json):
    uses = {(u["path"], u["line"], u["name"]) for u in example_json["usages"]}
    assert ("src/residual.cu", 6, "__shfl_down_sync") in uses
    assert ("src/loader.cpp", 18, "cuModuleLoadData") in uses
    assert ("src/spectral.cu", 33, "cublasSscal") in uses
    assert ("src/ensemble.cu", 8, "cooperative_groups") in uses
    paths = {f["path"] for f in example_json["files"]}
    assert {"CMakeLists.txt", "include/check.cuh", "src/loader.cpp", "src/main.cu"} <= paths
    # The project's own CUDA_CHECK macro is not mistaken for a CUDA API.
    assert "CUDA_CHECK" not in {u["name"] for u in example_json["usages"]}


def test_library_and_cli_agree(example_json):
    report = portcheck.scan(EXAMPLE)
    doc = json.loads(report.to_json())
    doc["summary"].pop("seconds")
    cli = dict(example_json, summary=dict(example_json["summary"]))
    cli["summary"].pop("seconds")
    assert doc["usages"] == cli["usages"]
    assert doc["summary"] == cli["summary"]


def test_text_report_shows_scores_and_attention_items():
    result = run("scan", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Readiness by route" in out
    assert "HIP" in out and "ZLUDA" in out and "SCALE" in out
    assert "cudaMallocManaged" in out  # partial on HIP: listed under "needs attention"
    assert "\x1b[" not in out  # no colour codes when not writing to a terminal


def test_targets_option_limits_the_scores(tmp_path):
    out = tmp_path / "r.json"
    result = run("scan", str(EXAMPLE), "--format", "json", "--targets", "hip", "-o", str(out))
    assert result.returncode == 0
    assert list(json.loads(out.read_text())["summary"]["scores"]) == ["hip"]


def test_missing_path_is_a_usage_error_without_traceback():
    result = run("scan", "no/such/dir")
    assert result.returncode == 2
    assert "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--targets", "hip,cuda"], "unknown target 'cuda'"),
        (["--format", "pdf"], "'pdf' is not one of"),
        (["--fail-under", "150"], "150 is not in the range"),
    ],
)
def test_bad_options_are_usage_errors(args, message):
    result = run("scan", str(SCAN_FIXTURES / "reduction.cu"), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_fail_under_exit_codes():
    report = portcheck.scan(EXAMPLE, targets="hip")
    hip = report.scores["hip"]
    assert 0 < hip < 100
    ok = run("scan", str(EXAMPLE), "--targets", "hip", "--fail-under", str(hip))
    assert ok.returncode == 0
    failing = run("scan", str(EXAMPLE), "--targets", "hip", "--fail-under", str(hip + 1))
    assert failing.returncode == 1
    assert f"readiness below {hip + 1}: hip {hip}" in failing.stderr


def test_output_file_in_missing_folder_is_a_clear_error(tmp_path):
    result = run("scan", str(EXAMPLE), "-o", str(tmp_path / "nope" / "r.txt"))
    assert result.returncode == 2
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr


def test_output_dash_is_standard_output(tmp_path):
    """`-o -` prints the report, as other command-line tools read it, and leaves no file
    named `-` behind."""
    result = run("scan", str(SCAN_FIXTURES / "reduction.cu"), "--format", "json", "-o", "-")
    assert result.returncode == 0
    assert json.loads(result.stdout)["findings"]
    assert not (REPO / "-").exists()


def test_version():
    result = run("--version")
    assert result.returncode == 0
    assert portcheck.__version__ in result.stdout


def test_rules_show_json_and_unknown_names():
    result = run("rules", "show", "cudaMalloc", "cudaNoSuchThing", "--format", "json")
    assert result.returncode == 1
    assert "no rule for 'cudaNoSuchThing'" in result.stderr
    (entry,) = json.loads(result.stdout)
    assert entry["cuda"] == "cudaMalloc" and entry["hip"] == "hipMalloc"
    assert entry["family"] == "runtime" and entry["kind"] == "function"
    assert set(entry["status"]) == {"hip", "zluda", "scale"}
    assert set(entry["source"]) == {"hip", "zluda", "scale"}


def test_rules_stats_json():
    result = run("rules", "stats", "--format", "json")
    assert result.returncode == 0
    stats = json.loads(result.stdout)
    assert stats["total"] == sum(stats["families"].values())
    assert isinstance(stats["entries_without_full_status"], int)


def test_rules_search_finds_by_cuda_or_hip_name():
    result = run("rules", "search", "hipMemcpyAsync", "--format", "json")
    assert result.returncode == 0
    assert "cudaMemcpyAsync" in [entry["cuda"] for entry in json.loads(result.stdout)]
    nothing = run("rules", "search", "definitelyNotAnApi")
    assert nothing.returncode == 1 and "no rule matches" in nothing.stderr
    bad = run("rules", "search", "x", "--family", "opencl")
    assert bad.returncode == 2 and "unknown family 'opencl'" in bad.stderr
