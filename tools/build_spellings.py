#!/usr/bin/env python3
"""Build rules/translate/spellings.yaml: how a ROCm release spells a HIP equivalent when it
differs from the spelling in rules/ (which is the newest release's).

The translator writes, for a chosen ROCm release, the entry here whose [from, until)
range holds that release instead of the rule's `hip`. Three kinds of facts:

* **hipBLAS `_v2` names** (generated). hipBLAS 2.0 (ROCm 6.0) added `hipblasX_v2`
  functions that take HIP's complex and data types, the signatures of cuBLAS's; HIPIFY for
  ROCm 6.x maps cuBLAS to them (ROCm/HIPIFY 014177bc, src/CUDA2HIP_BLAS_API_functions.cpp,
  with the release that added each in the same file's version map). In ROCm 7.0 the plain
  names took those signatures (HIPIFY 0cd7efaf lists each in
  HIP_BLAS_FUNCTION_CHANGED_VER_MAP with HIP_7000) and the rules map cuBLAS to the plain
  names. An entry is written for every cuBLAS name whose rule's HIP name is the `_v2` name
  without `_v2`, when the change release of the plain name is known.
* **Library header paths** (curated, CURATED_HEADERS below). ROCm 5.2 moved the libraries'
  headers to `include/<library>/` (hipBLAS 0.51.0 for ROCm 5.2.0: "File/Folder Reorg
  Changes with backward compatibility support"; rocRAND for ROCm 5.2.0: wrapper headers
  for the old paths) and ROCm 6.0 removed the old paths (ROCm 6.0 release notes,
  "Filesystem Hierarchy Standard"). Before 5.2 only the flat name exists.
* **bfloat16 before ROCm 5.7** (curated): `hip/hip_bf16.h` and `__hip_bfloat16` first
  ship in ROCm/clr rocm-5.7.0 (rules/compile/rocm_versions.yaml, source clr_bf16); older
  releases have `hip_bfloat16` in `hip/hip_bfloat16.h` (ROCm/HIP rocm-5.0.0
  include/hip/hip_bfloat16.h), which the human ports of that time use.

Usage::

    python tools/build_spellings.py --hipify-v2 /work/.mirror/ROCm+HIPIFY/repo \
        --hipify-v2-ref 014177bc2e434ce3e834aa4f3d0e2abb1efa9796 \
        --hipify-new /work/.mirror/vjelic+HIPIFY-glog-fork/repo \
        --hipify-new-ref 0cd7efafdfe9d69211d23064b9af5c55361a2ed0 --out rules/translate
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

BLAS_FUNCTIONS = "src/CUDA2HIP_BLAS_API_functions.cpp"
MAP_PREFIX = "src/CUDA2HIP"
MAP_ENTRY = re.compile(r'\{\s*"(\w+)"\s*,\s*\{\s*"(\w+)"')
VERSION_ENTRY = re.compile(r'\{\s*"(\w+)"\s*,\s*\{\s*HIP_(\d+)')
CHANGED_MAP = re.compile(r"HIP_BLAS_FUNCTION_CHANGED_VER_MAP\s*\{(.*?)\n\};", re.DOTALL)

# (CUDA header, the flat HIP header before ROCm 5.2) for the libraries that moved.
CURATED_HEADERS = [
    ("cublas.h", "hipblas.h"),
    ("cublas_v2.h", "hipblas.h"),
    ("cublas_api.h", "hipblas.h"),
    ("cusparse.h", "hipsparse.h"),
    ("cusparse_v2.h", "hipsparse.h"),
    ("curand.h", "hiprand.h"),
    ("curand_kernel.h", "hiprand_kernel.h"),
    ("cufft.h", "hipfft.h"),
    ("cufftXt.h", "hipfftXt.h"),
    ("cusolverDn.h", "hipsolver.h"),
    ("cusolverSp.h", "hipsolver.h"),
    ("cusolver_common.h", "hipsolver.h"),
    ("nccl.h", "rccl.h"),
]
CURATED_BF16 = [("cuda_bf16.h", "hip/hip_bfloat16.h")]
# HIP's own deprecations that name the replacement, where the rules keep the deprecated
# name: `DEPRECATED("use hipHostMalloc instead") hipError_t hipHostAlloc(void**, ...)`
# (ROCm/HIP rocm-5.0.0 include/hip/hip_runtime_api.h). hipHostMalloc takes the same flags
# (hipHostMalloc*, which the rules map cudaHostAlloc* to) and has the `T**` template
# cudaHostAlloc has, so every release gets it.
CURATED_REPLACEMENTS = [("cudaHostAlloc", "hipHostMalloc")]
# HIP spelled this enumerator `...PciDomainID` up to ROCm 6.2.2 at least (ROCm/HIP
# rocm-6.2.2 include/hip/hip_runtime_api.h; Debian's 5.2 headers); HIPIFY 0cd7efaf (HIP
# 7.0) writes `...PciDomainId` but dates it 4.3, so the generated rule cannot see it.
CURATED_RENAMES = [
    ("cudaDevAttrPciDomainId", "hipDeviceAttributePciDomainID", "7.0"),
    ("CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID", "hipDeviceAttributePciDomainID", "7.0"),
]
SOURCES = {
    "hipify_blas_v2": "{project: ROCm/HIPIFY, ref: %(v2_ref)s, path: "
    + BLAS_FUNCTIONS
    + ", note: 'cuBLAS -> hipblasX_v2 and the HIP release that added each'}",
    "hipify_blas_changed": "{project: ROCm/HIPIFY, ref: %(new_ref)s, path: "
    + BLAS_FUNCTIONS
    + ", via: vjelic/HIPIFY-glog-fork, note: 'HIP_BLAS_FUNCTION_CHANGED_VER_MAP: the release "
    "in which the plain name took the _v2 signature'}",
    "rocm_fhs": "{project: ROCm/hipBLAS, path: CHANGELOG.md, note: 'hipBLAS 0.51.0 for ROCm "
    "5.2.0: File/Folder Reorg with backward compatibility (the old flat paths kept as "
    "wrappers); ROCm 6.0 release notes: backward compatibility for old file locations "
    "removed. Before 5.2 a library header is include/<name>.h only'}",
    "hipify_renamed": "{project: ROCm/HIPIFY, ref: %(v2_ref)s, path: 'src/CUDA2HIP_*.cpp', "
    "note: 'the HIP name HIPIFY for ROCm 6.3 writes and the release that added it; the name "
    "in rules/ (HIPIFY %(new_ref)s via vjelic/HIPIFY-glog-fork) was added later (until)'}",
    "hip_pci_domain_id": "{project: ROCm/HIP, ref: rocm-6.2.2, path: "
    "include/hip/hip_runtime_api.h, note: 'hipDeviceAttributePciDomainID; the Id spelling "
    "first in HIPIFY 0cd7efaf, whose newest HIP is 7.0'}",
    "hip_deprecations": "{project: ROCm/HIP, ref: rocm-5.0.0, path: "
    "include/hip/hip_runtime_api.h, note: 'hipHostAlloc is DEPRECATED with the message: use "
    "hipHostMalloc instead'}",
    "hip_bfloat16": "{project: ROCm/HIP, ref: rocm-5.0.0, path: include/hip/hip_bfloat16.h, "
    "note: 'hip_bfloat16 in every release; __hip_bfloat16 and hip/hip_bf16.h from ROCm 5.7 "
    "(ROCm/clr rocm-5.7.0 hipamd/include/hip/amd_detail/amd_hip_bf16.h)'}",
}


def git_show(git_dir: Path, ref: str, path: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{ref}:{path}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise SystemExit(f"git show {ref}:{path} in {git_dir}: {done.stderr.strip()}")
    return done.stdout


def release(digits: str) -> str:
    """HIPIFY's HIP_6010 -> '6.1' (HIP and ROCm share numbers since 5.0)."""
    major, minor = int(digits[0]), int(digits[1:3])
    return f"{major}.{minor}"


def map_files(git_dir: Path, ref: str) -> list[str]:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "--name-only", ref, "src/"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return [
        f for f in done.stdout.split() if f.startswith(MAP_PREFIX) and f.endswith(".cpp")
    ]


def all_maps(git_dir: Path, ref: str) -> tuple[dict[str, str], dict[str, str]]:
    """(CUDA name -> HIP name, HIP name -> HIPIFY's added version digits) over every map."""
    names: dict[str, str] = {}
    added: dict[str, str] = {}
    for path in map_files(git_dir, ref):
        text = git_show(git_dir, ref, path)
        for cuda, hip in MAP_ENTRY.findall(text):
            names.setdefault(cuda, hip)
        for hip, version in VERSION_ENTRY.findall(text):
            added.setdefault(hip, version)
    return names, added


def renamed_entries(
    old: tuple[dict[str, str], dict[str, str]], new: tuple[dict[str, str], dict[str, str]]
) -> list[tuple[str, str, str, str]]:
    """(cuda, the HIP name HIPIFY for 6.3 writes, its first release, the first release of
    the rules' name) where the rules' HIP name came later than the one it replaced."""
    from portcheck.ruleset import default_rules

    rules = default_rules()
    old_names, old_added = old
    new_names, new_added = new
    entries = []
    for cuda, hip in old_names.items():
        rule = rules.lookup(cuda)
        if rule is None or rule.hip is None or rule.hip == hip or cuda.startswith("cublas"):
            continue
        if new_names.get(cuda) != rule.hip or hip not in old_added:
            continue
        later = new_added.get(rule.hip)
        if later is None or int(later) <= int(old_added[hip]):
            continue
        entries.append((cuda, hip, release(old_added[hip]), release(later)))
    return sorted(entries)


def blas_entries(v2_text: str, new_text: str) -> list[tuple[str, str, str, str]]:
    """(cuda, hip _v2 name, from, until) for every cuBLAS name the rules map to the plain
    name whose `_v2` spelling HIPIFY for ROCm 6.x writes."""
    from portcheck.ruleset import default_rules

    rules = default_rules()
    added = dict(VERSION_ENTRY.findall(v2_text))
    changed_block = CHANGED_MAP.search(new_text)
    changed = dict(VERSION_ENTRY.findall(changed_block.group(1))) if changed_block else {}
    entries = []
    for cuda, hip in MAP_ENTRY.findall(v2_text):
        if "_v2" not in hip or not cuda.startswith("cublas"):
            continue
        plain = hip.replace("_v2", "", 1)
        rule = rules.lookup(cuda)
        if rule is None or rule.hip != plain or plain not in changed or hip not in added:
            continue
        entries.append((cuda, hip, release(added[hip]), release(changed[plain])))
    return sorted(set(entries))


def render(
    blas: list[tuple[str, str, str, str]],
    renamed: list[tuple[str, str, str, str]],
    v2_ref: str,
    new_ref: str,
) -> str:
    lines = [
        "# Generated by tools/build_spellings.py (see its docstring for every source). How a ROCm",
        "# release spells a HIP equivalent where it differs from rules/ (the newest release's",
        "# spelling): the translator writes `hip` for releases in [from, until).",
        "schema: portcheck.spellings/1",
        "title: HIP spellings by ROCm release",
        "sources:",
    ]
    refs = {"v2_ref": v2_ref, "new_ref": new_ref}
    for key, value in SOURCES.items():
        lines.append(f"  {key}: {value % refs}")
    lines.append("entries:")
    lines.append("# hipBLAS: the _v2 names of ROCm 6.x (cuBLAS signatures before 7.0)")
    for cuda, hip, start, until in blas:
        lines.append(
            f"- {{cuda: {cuda}, hip: {hip}, from: '{start}', until: '{until}', "
            "source: [hipify_blas_v2, hipify_blas_changed]}"
        )
    lines.append("# HIP names renamed after ROCm 6.3 (HIPIFY for 6.3 vs the rules' newer names)")
    for cuda, hip, start, until in renamed:
        lines.append(
            f"- {{cuda: {cuda}, hip: {hip}, from: '{start}', until: '{until}', "
            "source: [hipify_renamed]}"
        )
    for cuda, hip, until in CURATED_RENAMES:
        lines.append(
            f"- {{cuda: {cuda}, hip: {hip}, until: '{until}', source: [hip_pci_domain_id]}}"
        )
    lines.append("# HIP's replacement for a name it deprecated")
    for cuda, hip in CURATED_REPLACEMENTS:
        lines.append(f"- {{cuda: {cuda}, hip: {hip}, source: [hip_deprecations]}}")
    lines.append("# Library headers before the ROCm 5.2 reorganisation")
    for cuda, hip in CURATED_HEADERS:
        lines.append(f"- {{cuda: {cuda}, hip: {hip}, until: '5.2', source: [rocm_fhs]}}")
    lines.append("# bfloat16 before ROCm 5.7")
    for cuda, hip in CURATED_BF16:
        lines.append(f"- {{cuda: {cuda}, hip: {hip}, until: '5.7', source: [hip_bfloat16]}}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hipify-v2", type=Path, required=True)
    parser.add_argument("--hipify-v2-ref", default="014177bc2e434ce3e834aa4f3d0e2abb1efa9796")
    parser.add_argument("--hipify-new", type=Path, required=True)
    parser.add_argument("--hipify-new-ref", default="0cd7efafdfe9d69211d23064b9af5c55361a2ed0")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "rules" / "translate")
    args = parser.parse_args()
    v2_text = git_show(args.hipify_v2, args.hipify_v2_ref, BLAS_FUNCTIONS)
    new_text = git_show(args.hipify_new, args.hipify_new_ref, BLAS_FUNCTIONS)
    blas = blas_entries(v2_text, new_text)
    renamed = renamed_entries(
        all_maps(args.hipify_v2, args.hipify_v2_ref),
        all_maps(args.hipify_new, args.hipify_new_ref),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / "spellings.yaml"
    text = render(blas, renamed, args.hipify_v2_ref, args.hipify_new_ref)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}: {len(blas)} hipBLAS, {len(renamed)} renamed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
