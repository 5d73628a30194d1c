"""The rule loader refuses malformed data with a message that says where, and the shipped
rules load, cover the families and carry provenance."""

from __future__ import annotations

import pytest

from portcheck.model import Status
from portcheck.ruleset import RuleError, load_rules

GOOD_ENTRY = """
  - cuda: cudaMalloc
    kind: function
    hip: hipMalloc
    status: {hip: supported, zluda: supported, scale: supported}
    source: {hip: hipify, zluda: "inferred: cuMemAlloc is implemented", scale: scale}
"""
HEADER = """schema: portcheck.rules/1
family: runtime
sources:
  hipify: {project: ROCm/HIPIFY, ref: 0123456789abcdef, path: docs/tables/runtime.md}
  scale: {project: spectral-compute/scale-docs, ref: fedcba, path: api-runtime.md}
entries:
"""


def write(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return tmp_path


def test_a_valid_file_loads_with_described_sources(tmp_path):
    rules = load_rules(write(tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY))
    rule = rules.lookup("cudaMalloc")
    assert rule.hip == "hipMalloc" and rule.status.zluda is Status.SUPPORTED
    assert rule.source["hip"] == "ROCm/HIPIFY@0123456789ab docs/tables/runtime.md"
    assert rule.source["zluda"] == "inferred: cuMemAlloc is implemented"


@pytest.mark.parametrize(
    "mutation, message",
    [
        (
            ("scale: supported}", "scale: works}"),
            "runtime.yaml: entry 0 (cuda='cudaMalloc'): key 'status.scale': 'works' is not one of",
        ),
        (
            ("hip: hipMalloc", "hip: hipMalloc\n    colour: blue"),
            "runtime.yaml: entry 0 (cuda='cudaMalloc'): unknown key(s) ['colour']",
        ),
        (("kind: function", "kind: gadget"), "key 'kind': 'gadget' is not one of"),
        (
            ("scale: scale}", "scale: nvidia}"),
            "key 'source.scale': 'nvidia' is neither a source id",
        ),
        (
            (
                "status: {hip: supported, zluda: supported, scale: supported}",
                "status: {hip: supported}",
            ),
            "key 'status': must give exactly hip, zluda and scale",
        ),
    ],
)
def test_malformed_entries_are_rejected_with_file_entry_and_key(tmp_path, mutation, message):
    old, new = mutation
    write(tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY.replace(old, new))
    with pytest.raises(RuleError) as err:
        load_rules(tmp_path)
    assert message in str(err.value)


def test_duplicate_names_across_files_are_rejected(tmp_path):
    write(tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY)
    write(tmp_path, "driver.yaml", HEADER.replace("family: runtime", "family: driver") + GOOD_ENTRY)
    with pytest.raises(
        RuleError,
        match=r"runtime.yaml: duplicate name 'cudaMalloc' \(already defined in driver.yaml\)",
    ):
        load_rules(tmp_path)


def test_family_must_match_file_name(tmp_path):
    write(tmp_path, "cublas.yaml", HEADER + GOOD_ENTRY)
    with pytest.raises(RuleError, match="'runtime' must match the file name 'cublas'"):
        load_rules(tmp_path)


def test_shipped_rules_cover_the_families(rules):
    families = rules.families
    for family in (
        "runtime",
        "driver",
        "device",
        "cublas",
        "cublaslt",
        "curand",
        "cufft",
        "cusparse",
        "cusolver",
        "cudnn",
        "nccl",
        "nvtx",
        "thrust",
        "cub",
        "nvrtc",
        "cooperative_groups",
        "wmma",
        "headers",
    ):
        assert families.get(family, 0) >= 5, family
    assert len(rules) >= 400


@pytest.mark.parametrize(
    "cuda, hip",
    [
        ("cudaMalloc", "hipMalloc"),
        ("cudaMemcpyAsync", "hipMemcpyAsync"),
        ("cudaStream_t", "hipStream_t"),
        ("cuModuleLoadData", "hipModuleLoadData"),
        ("cuLaunchKernel", "hipModuleLaunchKernel"),
        ("cublasSgemm", "hipblasSgemm"),
        ("curandCreateGenerator", "hiprandCreateGenerator"),
        ("cufftPlan2d", "hipfftPlan2d"),
        ("cuda_runtime.h", "hip/hip_runtime.h"),
        ("__shfl_down_sync", "__shfl_down_sync"),
    ],
)
def test_known_mappings(rules, cuda, hip):
    assert rules.lookup(cuda).hip == hip


def test_every_shipped_entry_records_where_each_status_came_from(rules):
    for rule in rules:
        assert set(rule.source) == {"hip", "zluda", "scale"}, rule.cuda
        assert all(rule.source.values()), rule.cuda


def test_validated_rules_are_cached_and_an_edit_invalidates_the_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(cache))
    folder = write(tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY)
    first = load_rules(folder)
    (cached_file,) = cache.glob("rules-*.json")
    again = load_rules(folder)
    assert again.lookup("cudaMalloc") == first.lookup("cudaMalloc")
    # An edited rule file is validated again (and a bad edit is caught), never served stale.
    write(
        tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY.replace("scale: supported}", "scale: maybe}")
    )
    with pytest.raises(RuleError, match="'maybe' is not one of"):
        load_rules(folder)
    # A damaged cache file is ignored, not trusted.
    write(tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY)
    cached_file.write_bytes(b"\x00not JSON")
    assert load_rules(folder).lookup("cudaMalloc").hip == "hipMalloc"


def test_search_ranks_exact_then_prefix_then_substring(rules):
    hits = [rule.cuda for rule in rules.search("cudaMalloc")]
    assert hits[0] == "cudaMalloc"
    prefixed = [h for h in hits if h.startswith("cudaMalloc")]
    assert hits[: len(prefixed)] == prefixed  # every prefix match before any other match
    assert all(
        "cudamalloc" in h.lower() or "cudamalloc" in (rules.lookup(h).hip or "").lower()
        for h in hits
    )
    by_hip = [rule.cuda for rule in rules.search("hipblasSgemm")]
    assert "cublasSgemm" in by_hip
    assert rules.search("cudaMalloc", family="driver") == []


# One known mapping per family, with the fact behind one of its statuses.
@pytest.mark.parametrize(
    "cuda, family, hip, target, status",
    [
        ("cudaMallocAsync", "runtime", "hipMallocAsync", "hip", "supported"),
        ("cuMemAllocManaged", "driver", "hipMallocManaged", "zluda", "unsupported"),
        ("__shfl_xor_sync", "device", "__shfl_xor_sync", "zluda", "supported"),
        ("cublasDgemm", "cublas", "hipblasDgemm", "hip", "supported"),
        ("cublasLtMatmul", "cublaslt", "hipblasLtMatmul", "hip", "supported"),
        ("curandGenerateNormal", "curand", "hiprandGenerateNormal", "hip", "supported"),
        ("cufftExecZ2Z", "cufft", "hipfftExecZ2Z", "scale", "supported"),
        ("cusparseSpMV", "cusparse", "hipsparseSpMV", "hip", "supported"),
        ("cusolverDnDgetrf", "cusolver", "hipsolverDnDgetrf", "hip", "supported"),
        ("cudnnConvolutionForward", "cudnn", "miopenConvolutionForward", "hip", "supported"),
        ("ncclAllReduce", "nccl", "ncclAllReduce", "hip", "supported"),
        ("nvtxRangePushA", "nvtx", "roctxRangePushA", "hip", "supported"),
        ("thrust::reduce", "thrust", "thrust::reduce", "hip", "supported"),
        ("cub::BlockReduce", "cub", "hipcub::BlockReduce", "hip", "supported"),
        ("nvrtcCompileProgram", "nvrtc", "hiprtcCompileProgram", "hip", "supported"),
        (
            "cooperative_groups::this_grid",
            "cooperative_groups",
            "cooperative_groups::this_grid",
            "zluda",
            "unsupported",
        ),
        ("nvcuda::wmma::mma_sync", "wmma", "rocwmma::mma_sync", "zluda", "unsupported"),
        ("cufft.h", "headers", "hipfft/hipfft.h", "hip", "supported"),
    ],
)
def test_a_known_mapping_per_family(rules, cuda, family, hip, target, status):
    rule = rules.lookup(cuda)
    assert (rule.family, rule.hip, rule.status[target].value) == (family, hip, status)


def test_full_knowledge_base_size(rules):
    stats = rules.stats()
    assert stats["total"] >= 8000
    assert len(stats["families"]) >= 18


# ---------------------------------------------------------------- HIP versions, sources.yaml

DATED_ENTRY = GOOD_ENTRY.replace(
    "    hip: hipMalloc\n",
    "    hip: hipMalloc\n    hip_added: 6.2.0\n    hip_deprecated: 6.4.0\n    experimental: true\n",
)
SOURCES = """schema: portcheck.sources/1
snapshots:
- {project: ROCm/HIPIFY, commit: 0123456789abcdef, date: '2025-08-04T23:04:53+02:00', via: a/fork}
rocm: {oldest: '5.0', newest: '7.0', headers_read: '5.0, 6.2'}
"""


def test_dates_experimental_and_sources_load_and_survive_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    folder = write(tmp_path, "runtime.yaml", HEADER + DATED_ENTRY)
    write(tmp_path, "sources.yaml", SOURCES)  # beside the families, not one of them
    for _ in range(2):  # validated, then from the cache
        rules = load_rules(folder)
        rule = rules.lookup("cudaMalloc")
        assert (rule.hip_added, rule.hip_deprecated, rule.experimental) == ("6.2.0", "6.4.0", True)
        assert str(rules.newest_rocm()) == "7.0" and str(rules.oldest_rocm()) == "5.0"
        assert rules.sources.snapshots[0]["via"] == "a/fork"
        assert rules.stats()["sources"]["snapshots"][0]["commit"] == "0123456789abcdef"
        assert rule.to_dict()["hip_versions"] == {
            "added": "6.2.0",
            "deprecated": "6.4.0",
            "removed": None,
        }
    assert len(list((tmp_path / "cache").glob("rules-*.json"))) == 1
    # sources.yaml is part of what the cache is keyed by
    write(tmp_path, "sources.yaml", SOURCES.replace("newest: '7.0'", "newest: '7.1'"))
    assert str(load_rules(folder).newest_rocm()) == "7.1"


def test_without_sources_the_newest_release_is_the_newest_date(tmp_path):
    rules = load_rules(write(tmp_path, "runtime.yaml", HEADER + DATED_ENTRY), use_cache=False)
    assert str(rules.newest_rocm()) == "6.4" and rules.oldest_rocm() is None
    assert rules.stats()["sources"] == {
        "snapshots": [],
        "rocm": {"oldest": None, "newest": "6.4"},
    }


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("hip_added: 6.2.0", "hip_added: soon", "key 'hip_added': invalid ROCm version 'soon'"),
        ("experimental: true", "experimental: maybe", "key 'experimental': must be true or false"),
    ],
)
def test_bad_hip_dates_are_rejected_with_the_entry(tmp_path, old, new, message):
    write(tmp_path, "runtime.yaml", HEADER + DATED_ENTRY.replace(old, new))
    with pytest.raises(RuleError, match="entry 0 \\(cuda='cudaMalloc'\\)") as err:
        load_rules(tmp_path, use_cache=False)
    assert message in str(err.value)


def test_a_bad_sources_file_is_rejected_with_the_key(tmp_path):
    write(tmp_path, "runtime.yaml", HEADER + GOOD_ENTRY)
    write(tmp_path, "sources.yaml", SOURCES.replace("newest: '7.0'", "newest: 'seven'"))
    with pytest.raises(RuleError) as err:
        load_rules(tmp_path, use_cache=False)
    assert "sources.yaml: key 'rocm.newest': invalid ROCm version 'seven'" in str(err.value)


@pytest.mark.parametrize(
    "text",
    [
        HEADER + GOOD_ENTRY,
        "a: yes\nb: 1.5\nc: 2020-01-01\nd: ~\ne: '1'\nf: null\ng: 0x1F\nh: [1, '2', three]\n",
        "base: &b {x: 1}\nuse: *b\n",  # anchors and aliases: PyYAML's loader
        "<<: {a: 1}\nb: 2\n",  # a merge key
        "- !!str 3\n- !!int '4'\n",  # explicit tags
        "{}\n",
        "",
    ],
)
def test_rule_files_read_as_pyyamls_safe_loader_reads_them(text):
    """The rule files are read from libyaml's events (a machine's first run reads 11 MB of
    YAML): every value comes out as PyYAML's safe loader gives it."""
    import yaml

    from portcheck.ruleset import load_yaml

    assert load_yaml(text, cache=False) == yaml.load(text, Loader=yaml.SafeLoader)


def test_a_shipped_rule_file_reads_as_pyyamls_safe_loader_reads_it():
    import yaml

    from portcheck.resources import data_dir
    from portcheck.ruleset import load_yaml

    text = data_dir("rules").joinpath("nvtx.yaml").read_text("utf-8")
    assert load_yaml(text, cache=False) == yaml.load(text, Loader=yaml.SafeLoader)


def test_broken_yaml_is_one_error_line():
    from portcheck.ruleset import YamlSyntaxError, load_yaml

    with pytest.raises(YamlSyntaxError):
        load_yaml("a: [1, 2\nb: 3\n", cache=False)
    with pytest.raises(YamlSyntaxError):
        load_yaml("---\na: 1\n---\nb: 2\n", cache=False)
