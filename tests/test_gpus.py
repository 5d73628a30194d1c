"""The AMD GPU table (rules/gpus.yaml) says what a user of each GPU would notice, from its
sources, and its loader refuses a malformed table naming the file, the entry and the key.

The facts asserted here, and where they come from (the ids are those of the table's
`sources`, which record each commit and date):

- gfx942 (MI300X, MI300A, MI325X) is CDNA3 and runs 64-wide wavefronts only
  [rocm_gpu_specs: ROCm/legacy-rocm-build docs/reference/gpu-specs.rst, "Wavefront Size 64"].
- gfx942 accelerates FP8 in the FNUZ encoding, not OCP [hip_fp8_2024: ROCm/HIP
  docs/reference/fp8_numbers.rst, "gfx940/gfx941/gfx942 FNUZ yes, OCP no"; hip_low_fp].
- gfx942 has MFMA matrix cores [rocwmma_readme, rocwmma_2024: rocWMMA's gfx9 path calls
  __builtin_amdgcn_mfma_*].
- ZLUDA does not serve gfx942 or any CDNA or Vega part, and serves RDNA from the RX 5000
  series on, integrated GPUs included [zluda_faq: vosen/ZLUDA docs/src/faq.md].
- SCALE lists gfx942, gfx1100 and gfx1151 but not gfx1031 [scale_gpus: scale-docs
  docs/README.md, "Which GPUs are supported?"].
- gfx1100 (RX 7900 XTX) is RDNA3, runs wave32 and wave64, and HIP compiles wave32 unless
  -mwavefrontsize64 is given [llvm_processors: AMDGPUUsage.rst, feature wavefrontsize64 off =
  native wave32; rocm_gpu_specs: "32 or 64"].
- gfx1100 has WMMA and no FP8 [rocwmma_2024: __builtin_amdgcn_wmma_*_w32; hip_low_fp: RDNA3
  no FP8].
- gfx1151 (Strix Halo, Ryzen AI Max+ PRO 395) is an RDNA3.5 APU whose GPU memory is system
  memory [llvm_processors: APU; rocm_gpu_specs: VRAM "Dynamic + carveout"; scale_v150:
  "Strix-halo"].
- MI300A and MI300X share gfx942; MI300A is an APU, MI300X is not [rocm_mi300a;
  llvm_processors: gfx942 dGPU].
- gfx950 (MI355X) and gfx1201 (RX 9070 XT) use the OCP FP8 encoding [hip_low_fp: CDNA4 and
  RDNA4 OCP].
- gfx940 and gfx941 were pre-production and left LLVM [llvm_gfx940_removed].
"""

from __future__ import annotations

import pytest

from portcheck import gpus
from portcheck.gpus import Family, Fp8, GpuTableError, MatrixKind, UnknownGpuError

from conftest import REPO

TABLE = REPO / "rules" / "gpus.yaml"


def test_gfx942_is_wave64_only_cdna3_with_fnuz_fp8_and_mfma():
    mi300 = gpus.gpu("gfx942")
    assert mi300 is not None
    assert (mi300.family, mi300.generation) == (Family.CDNA, "CDNA3")
    assert mi300.wavefronts == (64,) and mi300.is_wave64_only and mi300.warp_size == 64
    assert mi300.fp8 is Fp8.FNUZ
    assert (mi300.matrix, mi300.matrix_generation) == (MatrixKind.MFMA, "CDNA3")
    assert "fp8_numbers.rst" in mi300.source_of("fp8") or "low_fp_types" in mi300.source_of("fp8")


def test_zluda_does_not_serve_gfx942_and_says_why():
    serves, reason = gpus.gpu("gfx942").serves("zluda")
    assert serves is False
    assert "ZLUDA" in reason and "vosen/ZLUDA" in reason and "faq.md" in reason


def test_gfx1100_is_rdna3_wave32_by_default_with_wmma_and_zluda_serves_it():
    navi31 = gpus.gpu("gfx1100")
    assert (navi31.family, navi31.generation) == (Family.RDNA, "RDNA3")
    assert navi31.wavefronts == (32, 64)
    assert navi31.default_wavefront == 32 and navi31.is_wave32_default
    assert not navi31.is_wave64_only and navi31.runs_wave64
    assert (navi31.matrix, navi31.matrix_generation) == (MatrixKind.WMMA, "RDNA3")
    assert navi31.fp8 is Fp8.NONE
    assert navi31.serves("zluda")[0] is True


def test_gfx1151_is_an_apu_with_unified_memory():
    strix_halo = gpus.gpu("gfx1151")
    assert strix_halo.unified_memory is True
    assert strix_halo.generation == "RDNA3.5" and strix_halo.is_wave32_default
    assert gpus.gpu("strix-halo").gfx == "gfx1151"
    assert gpus.gpu("ryzen-ai-max-pro-395").unified_memory is True


def test_mi300a_and_mi300x_share_gfx942_but_not_unified_memory():
    mi300a, mi300x = gpus.gpu("mi300a"), gpus.gpu("mi300x")
    assert mi300a.gfx == mi300x.gfx == "gfx942"
    assert mi300a.unified_memory is True and mi300x.unified_memory is False
    assert gpus.gpu("gfx942").unified_memory is None  # depends on the product
    assert mi300a.name == "MI300A (gfx942)"
    assert "mi300a.rst" in mi300a.source_of("unified_memory")


@pytest.mark.parametrize(
    "spelling, gfx, product",
    [
        ("mi300x", "gfx942", "MI300X"),
        ("MI300X", "gfx942", "MI300X"),
        ("rx7900xtx", "gfx1100", "Radeon RX 7900 XTX"),
        ("Radeon RX 7900 XTX", "gfx1100", "Radeon RX 7900 XTX"),
        ("radeon-pro-w7900", "gfx1100", "Radeon PRO W7900"),
        ("mi355x", "gfx950", "MI355X"),
        ("rx9070xt", "gfx1201", "Radeon RX 9070 XT"),
        ("GFX90A", "gfx90a", None),
        ("gfx90a:xnack+", "gfx90a", None),  # an --offload-arch target ID
    ],
)
def test_names_aliases_and_target_ids_resolve(spelling, gfx, product):
    profile = gpus.gpu(spelling)
    assert profile is not None and profile.gfx == gfx
    assert (profile.product.name if profile.product else None) == product


def test_routes_follow_zluda_and_scale_documentation():
    zluda = {g.gfx for g in gpus.all_gpus() if g.serves("zluda")[0]}
    assert all(gpus.gpu(name).family is Family.RDNA for name in zluda)
    assert {"gfx1010", "gfx1030", "gfx1100", "gfx1103", "gfx1151", "gfx1201"} <= zluda
    assert not zluda & {"gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950"}
    scale = {g.gfx for g in gpus.all_gpus() if g.serves("scale")[0]}
    assert {"gfx942", "gfx1100", "gfx1151", "gfx950", "gfx1201"} <= scale
    assert "gfx1031" not in scale


def test_ocp_fp8_on_cdna4_and_rdna4():
    assert gpus.gpu("gfx950").fp8 is Fp8.OCP
    assert gpus.gpu("gfx1201").fp8 is Fp8.OCP


def test_pre_production_mi300_targets_are_marked_withdrawn():
    for name in ("gfx940", "gfx941"):
        profile = gpus.gpu(name)
        assert profile.withdrawn and "gfx942" in profile.withdrawn
        assert profile.serves("hip")[0] is False


def test_the_table_holds_the_targets_users_have():
    assert set(gpus.known_gpus()) >= {
        *("gfx900", "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"),
        *("gfx1010", "gfx1030", "gfx1031", "gfx1032"),
        *("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1200", "gfx1201"),
    }
    names = gpus.known_names()
    assert names[: len(gpus.known_gpus())] == gpus.known_gpus()
    assert "mi300x" in names and "rx7900xtx" in names


def test_every_fact_has_a_source():
    for profile in gpus.all_gpus():
        assert set(profile.sources) == set(gpus.SOURCED_FACTS)
        for product in profile.products:
            assert product.source
        for route in ("hip", "zluda", "scale"):
            assert "(source: " in profile.serves(route)[1]


def test_sets_of_gpus_are_described_from_the_data():
    assert gpus.describe_wave64() == "wave64 GPUs: MI100–MI355X, Vega"
    assert gpus.describe_wave32().startswith("wave32 GPUs: RX 5700 XT–")
    assert "MI300A" in gpus.describe_unified_memory()
    assert "MI300X" not in gpus.describe_unified_memory()


def test_unknown_names_get_one_line_naming_the_known_ones():
    assert gpus.gpu("gfx9999") is None
    message = gpus.unknown_gpu_message("gfx9999")
    assert message.startswith("unknown GPU 'gfx9999' (known: gfx900, ")
    assert "gfx1201" in message
    with pytest.raises(UnknownGpuError, match="did you mean mi300x"):
        gpus.require_gpu("mi300")
    with pytest.raises(ValueError, match="unknown route"):
        gpus.gpu("gfx942").serves("opencl")


def _mutated(old: str, new: str) -> str:
    text = TABLE.read_text(encoding="utf-8")
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "    fp8: fnuz\n    matrix: {kind: mfma, generation: CDNA3}\n"
            "    products:\n      - {name: MI300X",
            "    fp8: fnuz8\n    matrix: {kind: mfma, generation: CDNA3}\n"
            "    products:\n      - {name: MI300X",
            r"entry 7 \(gfx942\): key 'fp8': 'fnuz8' is not one of none, fnuz, ocp",
        ),
        (
            "  - gfx: gfx1100\n    family: RDNA\n    generation: RDNA3\n"
            "    wavefront: {sizes: [32, 64], default: 32}",
            "  - gfx: gfx1100\n    family: RDNA\n    generation: RDNA3\n"
            "    wavefront: {sizes: [32, 64], default: 16}",
            r"entry 13 \(gfx1100\): key 'wavefront.default': 16 is not one of sizes",
        ),
        (
            "aliases: [rx7900xtx, 7900xtx]",
            "aliases: [RX 7900 XTX]",
            r"entry 13 \(gfx1100\): key 'products\[0\].aliases': 'RX 7900 XTX' must be lower-case",
        ),
        (
            "aliases: [mi300a, instinct-mi300a]",
            "aliases: [mi300x]",
            r"entry 7 \(gfx942\) product 'MI300A': 'mi300x' is already a name of .*MI300X",
        ),
        (
            "      zluda: {serves: false, source: zluda_faq, note: ZLUDA does not support "
            "server-class (CDNA) GPUs}\n      scale: {serves: true, source: scale_gpus, "
            "note: SCALE lists gfx942",
            "      zluda: {serves: false, source: zluda_docs, note: ZLUDA does not support "
            "server-class (CDNA) GPUs}\n      scale: {serves: true, source: scale_gpus, "
            "note: SCALE lists gfx942",
            r"entry 7 \(gfx942\): key 'routes.zluda.source': 'zluda_docs' is neither a source id",
        ),
        (
            "  - gfx: gfx950\n",
            "  - gfx: gfx950\n    vram: 288\n",
            r"entry 8 \(gfx950\): unknown key\(s\) \['vram'\]",
        ),
        (
            "  - gfx: gfx1201\n",
            "  - gfx: gfx1200\n",
            r"entry 20 \(gfx1200\): key 'gfx': gfx1200 is listed twice",
        ),
        (
            "    retrieved: '2026-11-23'\n  llvm_processors_older:",
            "  llvm_processors_older:",
            r"gpus.yaml: sources.llvm_processors: key 'retrieved': missing",
        ),
    ],
)
def test_a_malformed_table_is_rejected_naming_file_entry_and_key(old, new, message):
    with pytest.raises(GpuTableError, match=message) as caught:
        gpus.parse_gpu_table(_mutated(old, new), where="gpus.yaml")
    assert str(caught.value).startswith("gpus.yaml: ")


def test_the_shipped_table_loads_from_the_package_data(tmp_path):
    table = gpus.load_gpu_table()
    assert len(table.profiles) >= 20 and len(table.digest) == 64
    copy = tmp_path / "gpus.yaml"
    copy.write_text(TABLE.read_text(encoding="utf-8"), encoding="utf-8")
    assert gpus.load_gpu_table(copy).gfx_names() == table.gfx_names()


def test_the_rule_set_does_not_read_the_gpu_table_as_an_api_family(rules):
    assert "gpus" not in rules.families
