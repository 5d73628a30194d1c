"""A project's own defaults (`.portcheck.toml`, `[tool.portcheck]`), under the command line."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, SCAN_FIXTURES, run_portcheck


@pytest.fixture
def project(tmp_path):
    """A small tree: reduction kernels with warp-size and lane-mask hazards, and vendored
    third-party CUDA the team does not own."""
    (tmp_path / "src").mkdir()
    (tmp_path / "third_party").mkdir()
    shutil.copy(FIXTURES / "hazards" / "warp_reduce.cu", tmp_path / "src" / "reduction.cu")
    shutil.copy(SCAN_FIXTURES / "cublas_gemm.cu", tmp_path / "third_party" / "gemm.cu")
    return tmp_path


def _scan(tree, *args):
    run = run_portcheck("scan", str(tree), "--format", "json", "--no-cache", *args)
    return run, (json.loads(run.stdout) if run.returncode in (0, 1) else None)


def test_project_settings_choose_targets_excludes_and_ignores(project):
    (project / ".portcheck.toml").write_text(
        'targets = ["hip"]\nexclude = ["third_party/"]\nignore = ["lane-mask-width"]\n'
    )
    run, doc = _scan(project)
    assert run.returncode == 0, run.stderr
    assert set(doc["summary"]["scores"]) == {"hip"}
    assert [f["path"] for f in doc["files"]] == ["src/reduction.cu"]
    slugs = {f["slug"] for f in doc["findings"]}
    assert "lane-mask-width" not in slugs and "warp-size-assumption" in slugs


def test_the_command_line_wins_and_adds_up(project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "solver"\n\n'
        '[tool.portcheck]\ntargets = "hip"\nexclude = ["third_party/"]\n'
    )
    run, doc = _scan(project, "--targets", "hip,scale", "--exclude", "src/")
    assert run.returncode == 0, run.stderr
    assert set(doc["summary"]["scores"]) == {"hip", "scale"}
    # Both excludes apply: only the manifest is left.
    assert [f["path"] for f in doc["files"]] == ["pyproject.toml"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('gpus = "gfx942"\n', "unknown key 'gpus'"),
        ("exclude = 3\n", "exclude must be a string or a list of strings"),
        ("targets = [\n", "not valid TOML"),
        ('ignore = ["PC999"]\n', "unknown hazard 'PC999'"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(project, text, says):
    (project / ".portcheck.toml").write_text(text)
    run, _ = _scan(project)
    assert run.returncode == 2
    assert says in run.stderr and ".portcheck.toml" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_a_linked_settings_file_is_not_followed(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "evil.toml"
    outside.write_text('exclude = ["src/"]\n')
    (project / ".portcheck.toml").symlink_to(outside)
    run, doc = _scan(project)
    assert run.returncode == 0, run.stderr
    assert "src/reduction.cu" in [f["path"] for f in doc["files"]]
