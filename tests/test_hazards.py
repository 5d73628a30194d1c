"""Hazard checks: exact (slug, line) pairs on realistic fixtures, silence on correct code,
and one catalogue — CUDA and Python hazards — that matches the registered checks and its own
documentation."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

import portcheck
from portcheck.checks import catalogue, hazard, hazards_of, registered_checks
from portcheck.checks.docs import render_hazard_doc, render_index
from portcheck.checks.spec import CatalogueError, parse_catalogue
from portcheck.model import Language

from conftest import FIXTURES, REPO

HAZARD_FIXTURES = FIXTURES / "hazards"
# `// expect: slug [slug…]` (or `# expect:` in build files) marks findings on the next line.
EXPECT = re.compile(r"(?://|#)\s*expect:\s*([\w\- ]+?)\s*$")


def expected_findings(path) -> Counter[tuple[str, int]]:
    expected: Counter[tuple[str, int]] = Counter()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for slug in match.group(1).split():
                expected[(slug, number + 1)] += 1
    return expected


def findings_of(path) -> Counter[tuple[str, int]]:
    report = portcheck.scan(path)
    return Counter((f.slug, f.span.line) for f in report.findings)


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in HAZARD_FIXTURES.iterdir() if p.name != "wave_agnostic.cu"),
)
def test_findings_match_markers_exactly(name):
    path = HAZARD_FIXTURES / name
    found, expected = findings_of(path), expected_findings(path)
    assert found == expected, (
        f"missing: {sorted((expected - found).elements())}\n"
        f"unexpected: {sorted((found - expected).elements())}"
    )


def test_wave_agnostic_code_is_silent():
    assert findings_of(HAZARD_FIXTURES / "wave_agnostic.cu") == Counter()


def test_every_catalogued_hazard_has_a_fixture_that_fires_it():
    fired = set()
    for path in HAZARD_FIXTURES.iterdir():
        fired |= {slug for slug, _ in expected_findings(path)}
    required = set(hazards_of(Language.CUDA)) - {"unsupported-api"}  # real rules below
    assert required <= fired  # the Python hazards' fixture is tests/fixtures/python/mlproj


def test_catalogue_and_registered_checks_are_the_same_set():
    over_cuda, over_python = registered_checks(Language.CUDA), registered_checks(Language.PYTHON)
    assert set(over_cuda) | set(over_python) == set(catalogue())
    # Each hazard is checked in the code it is about; a CUDA hazard may also have a check
    # over Python code (warp arithmetic in numba.cuda kernels), never the other way round.
    assert set(over_cuda) == set(hazards_of(Language.CUDA))
    assert set(hazards_of(Language.PYTHON)) <= set(over_python)


def test_a_second_check_for_the_same_hazard_and_language_is_refused():
    with pytest.raises(ValueError, match="two python checks registered for 'nvidia-smi'"):
        hazard("nvidia-smi", language=Language.PYTHON)(lambda ctx: None)


def test_required_slugs_and_stable_ids():
    specs = catalogue()
    for slug in (
        "warp-size-assumption",
        "lane-mask-width",
        "inline-ptx",
        "arch-conditional",
        "launch-bounds",
        "managed-memory",
        "texture-reference",
        "dynamic-parallelism",
        "tensor-core-wmma",
        "cooperative-grid-sync",
        "cuda-graphs",
        "library-port",
        "ptx-module-load",
        "unsupported-api",
    ):
        assert slug in specs
    assert specs["warp-size-assumption"].id == "PC001"
    assert len({s.id for s in specs.values()}) == len(specs)


def slugs_found(path, language: Language) -> set[str]:
    """The hazards a scan of `path` reports in the report section of `language`: the
    findings for CUDA hazards, the Python section's for Python hazards."""
    report = portcheck.scan(path, cache=False)
    if language is Language.PYTHON:
        return {f.slug for f in report.python.findings} if report.python else set()
    return {f.slug for f in report.findings}


@pytest.mark.parametrize("slug", sorted(catalogue()))
def test_catalogue_example_fires_and_instead_is_silent(tmp_path, slug):
    spec = catalogue()[slug]
    bad = tmp_path / "bad" / spec.example_file
    good = tmp_path / "good" / spec.example_file
    bad.parent.mkdir()
    good.parent.mkdir()
    bad.write_text(spec.example)
    good.write_text(spec.instead)
    assert slug in slugs_found(bad, spec.language)
    assert slug not in slugs_found(good, spec.language)


@pytest.mark.parametrize("slug", sorted(catalogue()))
def test_help_pages_are_generated_from_the_catalogue(slug):
    page = REPO / "docs" / "rules" / f"{slug}.md"
    assert page.read_text() == render_hazard_doc(catalogue()[slug]), (
        "docs out of date: run `python tools/gen_hazard_docs.py`"
    )


def test_help_index_is_generated_and_every_page_has_a_hazard():
    index = render_index(catalogue())
    assert (REPO / "docs" / "rules" / "README.md").read_text() == index, (
        "docs out of date: run `python tools/gen_hazard_docs.py`"
    )
    pages = {p.stem for p in (REPO / "docs" / "rules").glob("*.md")} - {"README"}
    assert pages == set(catalogue())


def test_python_hazards_are_judged_on_the_python_routes():
    spec = catalogue()["torch-version-cuda"]
    assert (spec.id, spec.language, spec.routes) == ("PY001", Language.PYTHON, ("rocm", "directml"))
    assert spec.python_targets.to_dict() == {"rocm": "partial", "directml": "partial"}
    with pytest.raises(TypeError, match="Python hazard"):
        spec.cuda_targets  # noqa: B018  (the property raises)
    assert catalogue()["inline-ptx"].routes == ("hip", "zluda", "scale")


CUDA_ENTRY = {
    "id": "PC901",
    "slug": "made-up",
    "severity": "low",
    "since": "0.1.0",
    "summary": "s",
    "targets": {"hip": "partial", "zluda": "supported", "scale": "partial"},
    "target_notes": {"hip": "h", "zluda": "z", "scale": "s"},
    "why": "w",
    "example": "e",
    "instead": "i",
    "fix": "f",
}
PYTHON_ENTRY = {
    **CUDA_ENTRY,
    "id": "PY901",
    "slug": "made-up-py",
    "language": "python",
    "targets": {"rocm": "partial", "directml": "unsupported"},
    "target_notes": {"rocm": "r", "directml": "d"},
}


def _catalogue_of(*entries, retired=()):
    return {"schema": "portcheck.hazards/1", "retired": list(retired), "hazards": list(entries)}


def test_both_kinds_of_hazard_are_validated_by_one_loader():
    specs = parse_catalogue(_catalogue_of(CUDA_ENTRY, PYTHON_ENTRY))
    assert specs["made-up"].example_file == "example.cu"
    assert specs["made-up-py"].example_file == "example.py"
    assert specs["made-up-py"].targets.to_dict() == {"rocm": "partial", "directml": "unsupported"}


@pytest.mark.parametrize(
    ("entries", "retired", "message"),
    [
        ([{**CUDA_ENTRY, "colour": "red"}], (), r"entry 0 \(made-up\): unknown \['colour'\]"),
        ([{**PYTHON_ENTRY, "targets": CUDA_ENTRY["targets"]}], (), "key 'targets' needs exactly"),
        ([{**PYTHON_ENTRY, "id": "PC902"}], (), "not a python hazard id"),
        ([{**CUDA_ENTRY, "language": "fortran"}], (), "key 'language' must be one of"),
        ([{**CUDA_ENTRY, "targets": {**CUDA_ENTRY["targets"], "hip": "works"}}], (), "works"),
        ([CUDA_ENTRY, {**PYTHON_ENTRY, "slug": "made-up"}], (), "duplicate or retired slug"),
        ([CUDA_ENTRY], ("PC901",), "duplicate or retired slug or id"),
    ],
)
def test_catalogue_errors_name_the_entry_and_key(entries, retired, message):
    with pytest.raises(CatalogueError, match=message):
        parse_catalogue(_catalogue_of(*entries, retired=retired))


def test_findings_carry_verdicts_help_and_fix():
    report = portcheck.scan(HAZARD_FIXTURES / "device_features.cu")
    ptx = next(f for f in report.findings if f.slug == "inline-ptx")
    assert ptx.id == "PC003"
    assert ptx.targets.to_dict() == {
        "hip": "unsupported",
        "zluda": "supported",
        "scale": "supported",
    }
    assert ptx.help_url == ""  # no absolute address for the help pages: none is made up
    assert ptx.fix


def test_helper_hazards_are_attributed_to_every_kernel_that_reaches_them(tmp_path):
    shutil.copy(HAZARD_FIXTURES / "warp_reduce.cu", tmp_path)
    (tmp_path / "second.cu").write_text(
        "__device__ float warpReduce(float v);\n"
        "__global__ void rowSums(const float* m, float* out) {\n"
        "  out[blockIdx.x] = warpReduce(m[threadIdx.x]);\n"
        "}\n"
    )
    report = portcheck.scan(tmp_path)
    in_helper = [f for f in report.findings if f.function == "warpReduce"]
    assert in_helper and all(f.kernels == ("blockSum", "rowSums") for f in in_helper)
    ranked = [(k.name, len(k.findings)) for k in report.kernels]
    assert ranked[0][0] == "blockSum" and ranked[0][1] > dict(ranked)["rowSums"] > 0


def test_inline_suppression_and_ignore_option(tmp_path):
    source = (HAZARD_FIXTURES / "apis.cu").read_text()
    prefetch_line = (
        source.splitlines().index("  cudaMemPrefetchAsync(m, n * sizeof(float), 0, s);") + 1
    )

    def managed_lines(text):
        (tmp_path / "apis.cu").write_text(text)
        report = portcheck.scan(tmp_path / "apis.cu")
        return {f.span.line for f in report.findings if f.slug == "managed-memory"}

    # `// portcheck: ignore[managed-memory]` on the line before silences it; without it, not.
    assert prefetch_line not in managed_lines(source)
    assert prefetch_line in managed_lines(source.replace("portcheck: ignore", "note: keep"))
    ignored = portcheck.scan(HAZARD_FIXTURES / "apis.cu", ignore=["PC006", "cuda-graphs"])
    slugs = {f.slug for f in ignored.findings}
    assert "managed-memory" not in slugs and "cuda-graphs" not in slugs
    assert "texture-reference" in slugs
    with pytest.raises(portcheck.ScanError, match="unknown hazard 'PC999'"):
        portcheck.scan(HAZARD_FIXTURES / "apis.cu", ignore=["PC999"])


def test_unsupported_api_uses_the_rule_set(tmp_path, rules):
    from portcheck.checks.apis import SPECIFIC

    name = next(
        r.cuda
        for r in rules
        if r.family in ("runtime", "driver")
        and r.kind == "function"
        and str(r.status.hip) == "unsupported"
        and r.cuda not in SPECIFIC
    )
    source = tmp_path / "x.cu"
    source.write_text(f"void f() {{\n  {name}();\n}}\n")
    (finding,) = [f for f in portcheck.scan(source).findings if f.slug == "unsupported-api"]
    assert finding.span.line == 2 and name in finding.message
    assert finding.targets.zluda == rules.lookup(name).status.zluda


def test_a_helper_defined_in_the_callers_own_file_is_the_one_it_calls(tmp_path):
    # Two samples each define their own `warpReduce`; only the first has a hazard in it.
    shutil.copy(HAZARD_FIXTURES / "warp_reduce.cu", tmp_path)
    (tmp_path / "other_sample.cu").write_text(
        "__device__ float warpReduce(float v) {\n"
        "  for (int offset = warpSize / 2; offset > 0; offset /= 2)\n"
        "    v += __shfl_down(v, offset);\n"
        "  return v;\n"
        "}\n"
        "__global__ void columnSums(const float* m, float* out) {\n"
        "  out[blockIdx.x] = warpReduce(m[threadIdx.x]);\n"
        "}\n"
    )
    report = portcheck.scan(tmp_path)
    in_helper = [f for f in report.findings if f.function == "warpReduce"]
    assert in_helper and all(f.path == "warp_reduce.cu" for f in in_helper)
    assert all(f.kernels == ("blockSum",) for f in in_helper)
    needs = {k.name: k.findings for k in report.kernels}
    assert needs["columnSums"] == ()


def test_a_helper_in_the_samples_own_header_is_preferred_to_another_samples(tmp_path):
    for sample, body in (
        ("scan", "(threadIdx.x & 31) + v"),
        ("sort", "(threadIdx.x % warpSize) + v"),
    ):
        folder = tmp_path / "samples" / sample
        folder.mkdir(parents=True)
        (folder / "helpers.cuh").write_text(
            f"__device__ int laneOf(int v) {{\n  return {body};\n}}\n"
        )
        (folder / f"{sample}.cu").write_text(
            '#include "helpers.cuh"\n'
            f"__global__ void {sample}Kernel(int* out) {{\n"
            "  out[threadIdx.x] = laneOf(threadIdx.x);\n"
            "}\n"
        )
    report = portcheck.scan(tmp_path)
    in_helper = [f for f in report.findings if f.function == "laneOf"]
    assert [(f.path, f.kernels) for f in in_helper] == [
        ("samples/scan/helpers.cuh", ("scanKernel",))
    ]
    needs = {k.name: k.findings for k in report.kernels}
    assert needs["scanKernel"] and needs["sortKernel"] == ()


def test_library_calls_and_methods_resolve_like_the_compiler_would(tmp_path):
    # `cg::sync(block)` is cooperative groups', not the project's own `sync`; the member
    # call `peers.sync()` is the method of the class in the same file.
    (tmp_path / "peers.cu").write_text(
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "struct Peers {\n"
        "  __device__ void sync() const {\n"
        '    asm volatile("bar.sync 0;");\n'
        "  }\n"
        "};\n"
        "__global__ void exchange(Peers peers) {\n"
        "  peers.sync();\n"
        "}\n"
        "__global__ void blockOnly(int* out) {\n"
        "  cg::thread_block block = cg::this_thread_block();\n"
        "  cg::sync(block);\n"
        "  out[0] = 1;\n"
        "}\n"
    )
    report = portcheck.scan(tmp_path)
    (ptx,) = [f for f in report.findings if f.slug == "inline-ptx"]
    assert ptx.function == "sync" and ptx.kernels == ("exchange",)


def test_a_barrier_with_an_nvptx_constraint_says_which_constraint_to_change():
    """An empty asm statement is a compiler barrier, not PTX: the finding names the NVPTX
    register constraint hipcc rejects, and the work is a review (change the letter), not
    a rewrite of assembly."""
    report = portcheck.scan(HAZARD_FIXTURES / "value_barriers.cu")
    barriers = {f.span.line: f for f in report.findings if "compiler barrier" in f.message}
    assert sorted(barriers) == [9, 16]
    assert "`l`" in barriers[9].message and "`f`" in barriers[16].message
    assert all(str(f.targets.hip) == "partial" for f in barriers.values())
    assert [u.name for u in report.uses if u.name == "asm"] == ["asm"]  # only the add.cc PTX
