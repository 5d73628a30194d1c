#!/usr/bin/env python3
"""Build portcheck's rule files (rules/<family>.yaml) from upstream sources.

This script owns the whole rule-building pipeline and nothing else:

* **Reading sources** straight out of bare git repositories (``git show REF:path``):
  - HIPIFY (ROCm/HIPIFY): the CUDA->HIP tables in ``docs/reference/tables/*.md`` (before
    2025 ``docs/tables/``: names, HIP equivalents, CUDA/HIP added/deprecated/removed/
    experimental versions), the ``src/CUDA2HIP_*.cpp`` maps (which tell a type from an enum
    value from a macro) and ``src/Statistics.h`` (HIP_LATEST, the newest HIP it knows);
  - ZLUDA (vosen/ZLUDA): the ``implemented`` lists in ``zluda/src/lib.rs`` and in the
    replacement-library crates (zluda_blas, zluda_blaslt, zluda_sparse, zluda_fft,
    zluda_dnn), the PTX instructions its parser accepts (``ptx_parser/src/lib.rs``) and
    the special registers it lowers (``ptx/src/pass/mod.rs``); its generated bindings
    (``cuda_macros/src/*.rs``: every exported function's parameter and return types;
    ``cuda_types/src/*.rs``: typedefs, struct members, each enumerator's enum), so a type
    or enumerator is supported only when a function ZLUDA implements takes it; which
    device attributes its cuDeviceGetAttribute answers (``zluda/src/impl/device.rs``)
    and which launch attributes its cuLaunchKernelEx accepts (``zluda/src/impl/driver.rs``);
  - SCALE (spectral-compute/scale-docs): the API-difference pages for the Runtime,
    Driver and Math APIs, section by section (a section holding only a marked-missing
    sentence, "-EGL is currently unsupported", marks its whole NVIDIA module unsupported;
    NVIDIA's prototypes on the pages say which calls take a type), the release
    changelogs (APIs added after the diff pages were generated) and the inline-PTX
    instruction table;
  - optionally SCALE's published library wrappers (spectral-compute/scale-library-wrappers),
    which show which cuBLAS/cuRAND/cuSPARSE/cuSOLVER entry points SCALE declares
    (commented-out code declares nothing);
  - optionally HIP's own headers (tools/hip_headers.py), read at ROCm release tags rather
    than HEAD: ROCm/clr ``hipamd/include/hip/amd_detail/`` (ROCm 5.6 on), ROCm/hipamd
    ``include/hip/amd_detail/`` (before 5.6) and ROCm/HIP ``include/hip/``. They say what HIP
    *provides*, where HIPIFY's tables say what hipify *translates*: a device name the newest
    release declares (under HIPIFY's HIP spelling, CUDA's own, or the one HIPIFY's src maps
    give) is HIP-supported with that header as source, whatever HIPIFY's table says; the
    first release declaring it is its ``hip_added`` (none when the oldest release read, 5.0,
    has it). A name that vanished from the headers is left to the other sources (ROCm 6.0
    moved device math into the compiler's headers, so a removal cannot be told from a move).
* **Dating** every HIP equivalent: ``hip_added`` / ``hip_deprecated`` / ``hip_removed``
  (ROCm releases) and ``experimental`` from HIPIFY's HIP columns, checked against the
  headers at the release tags for every name they declare (runtime, driver and device
  alike); where the two disagree the headers win and the entry's notes say so
  (RuleBuilder.reconcile_with_headers; the HIP-to-ROCm version mapping is explained
  above ``rocm_release``). A removed HIP equivalent makes the verdict `unsupported`, an
  experimental one `partial`: the family files hold the newest release's statuses, and
  portcheck.rocm derives an older release's from the dates.
* **Combining** them with curated facts kept beside this script in tools/:
  - ``seed_names.txt``: a curated subset of names, emitted instead of everything with
    ``--seed-only`` (handy for a quick, reviewable build);
  - ``manual_families.yaml``: entries for names no parsed source covers (NCCL, NVTX,
    Thrust, CUB, cooperative groups, WMMA, headers, builtins), each with a citation;
  - ``target_facts.yaml``: the reasoning tables (which driver calls a runtime call needs,
    which PTX instruction a device intrinsic or a family of intrinsics becomes, per-library
    defaults and per-name rules) and the per-name overrides, each with a citation or an
    ``inferred:`` reason.
* **Recording provenance** per route: each entry's ``origin`` says whether its status was
  read off a source (``source``), derived by a named rule (``derived:<rule>``, the rules
  in DERIVATIONS: a type follows the calls that take it, an enumerator its enum, a runtime
  name its driver counterpart, …) or is the family's default (``default``).
* **Writing** one ``<family>.yaml`` per family in the ``portcheck.rules/1`` schema. Every
  family file starts with the command that regenerates it and the commits it was built from;
  ``sources.yaml`` lists every snapshot read (project, commit, commit date, the fork that
  carried it, the release tags read) and the ROCm releases the dates cover
  (``portcheck rules stats`` shows it).

By default every name the sources know is emitted (all HIPIFY table rows and include-map
headers plus the curated entries): the full knowledge base.

Usage::

    python tools/build_rules.py --hipify DIR --zluda DIR --scale-docs DIR --out rules/ \
        [--hipify-ref COMMIT] [--hipify-via OWNER/NAME] [--scale-wrappers DIR] \
        [--hip-clr DIR] [--hip-hipamd DIR] [--hip-public DIR] [--seed-only]

Each DIR is a git repository (bare is fine) read at HEAD (HIPIFY: at --hipify-ref), except
the --hip-* ones, read at their ``rocm-X.Y.Z`` tags; the commit of every repository (and
every tag) read ends up in the header and the `sources` of the family files, and in
sources.yaml. --hipify-via names the fork whose mirror --hipify is, when only a fork carries
upstream history newer than ROCm/HIPIFY's own stored snapshot. Without ``--scale-wrappers``,
SCALE's per-function verdicts for cuBLAS/cuRAND/cuSPARSE/cuSOLVER fall back to the family
defaults in target_facts.yaml.

The committed rules/ were generated with exactly this command, from the repository root,
with the upstream repositories mirrored as bare clones under /work/.mirror/<owner>+<name>/repo.
HIPIFY is ROCm/HIPIFY 0cd7efafdfe9 (2025-08-04, "Merge pull request #2053", its newest
upstream commit stored anywhere here): ROCm/HIPIFY's own stored snapshot ends at 014177bc2e43
(2024-10-24), so it is read from the fork vjelic/HIPIFY-glog-fork, whose amd-develop branch
carries upstream's history and adds only CI/workflow commits after 0cd7efaf. The others:
vosen/ZLUDA 8a7931be87d7, spectral-compute/scale-docs f20700f5f55e,
spectral-compute/scale-library-wrappers df393c4d3fc8 (each its newest stored snapshot); HIP
headers at rocm-5.0.0 to rocm-5.5.0 from ROCm/hipamd, rocm-5.6.0 to rocm-6.2.2 from ROCm/clr,
all with ROCm/HIP: the first tag of each minor release plus the newest, 12 in all, each tag's
commit listed in the files' ``from:`` line. These clr/HIP snapshots (HEAD f9f995c6d0ae,
c5e11fcac824) end at rocm-6.2.2 (no fork with later tags was found): dates after 6.2.2 rest
on HIPIFY alone::

    M=/work/.mirror
    python tools/build_rules.py --hipify $M/vjelic+HIPIFY-glog-fork/repo \
        --hipify-ref 0cd7efafdfe9d69211d23064b9af5c55361a2ed0 \
        --hipify-via vjelic/HIPIFY-glog-fork --zluda $M/vosen+ZLUDA/repo \
        --scale-docs $M/spectral-compute+scale-docs/repo \
        --scale-wrappers $M/spectral-compute+scale-library-wrappers/repo \
        --hip-clr $M/ROCm+clr/repo --hip-hipamd $M/ROCm+hipamd/repo \
        --hip-public $M/ROCm+HIP/repo --out rules

Only the standard library and PyYAML are used.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hip_headers import HipHeaders, History, TaggedRepo, git, load_hip_headers

SCHEMA = "portcheck.rules/1"
TOOLS_DIR = Path(__file__).resolve().parent
FAMILIES_DIR = TOOLS_DIR / "families"  # curated family files (load_family_files)
TARGETS = ("hip", "zluda", "scale")
STATUSES = ("supported", "partial", "unsupported", "unknown")

# Families whose HIP verdicts HIP's own device headers decide when they declare the name.
HEADER_FAMILIES = ("device",)
# Runtime names HIP's public headers decide the same way, by kind: an enumerator or a type
# declared under HIP's spelling (hipMemoryTypeUnregistered in hip_runtime_api.h) is what
# HIP provides, even where HIPIFY's table still says it has none. Functions are left to
# HIPIFY: a function of the same spelling may take other arguments.
HEADER_KINDS = {"runtime": ("enum", "type")}
FOREIGN_INTEROP = re.compile(r"NvSci|D3D|KeyedMutex|Win32")

FAMILY_TITLES = {
    "runtime": "CUDA Runtime API",
    "driver": "CUDA Driver API",
    "device": "CUDA device code: builtins, intrinsics, math and vector types",
    "cublas": "cuBLAS",
    "cublaslt": "cuBLASLt",
    "curand": "cuRAND (host and device API)",
    "cufft": "cuFFT",
    "cusparse": "cuSPARSE",
    "cusolver": "cuSOLVER (dense)",
    "cudnn": "cuDNN",
    "cutensor": "cuTENSOR",
    "nccl": "NCCL",
    "nvtx": "NVTX",
    "thrust": "Thrust",
    "cub": "CUB",
    "nvrtc": "NVRTC",
    "cooperative_groups": "Cooperative Groups",
    "wmma": "Warp matrix functions (nvcuda::wmma)",
    "headers": "CUDA headers",
}

# HIPIFY tables and the families whose names they hold. The tables live in docs/tables/
# (before 2025) or docs/reference/tables/ (HIPIFY_TABLE_DIRS); the cuDNN table is the
# HIP+MIOpen one while HIPIFY documented hipDNN, the MIOpen-only one since it dropped
# hipDNN from its default output (2025-07): the first of HIPIFY_TABLE_ALTERNATIVES present.
HIPIFY_TABLE_DIRS = ("docs/reference/tables/", "docs/tables/")
HIPIFY_TABLES = {
    "runtime": "CUDA_Runtime_API_functions_supported_by_HIP.md",
    "driver": "CUDA_Driver_API_functions_supported_by_HIP.md",
    "device": "CUDA_Device_API_supported_by_HIP.md",
    "complex": "cuComplex_API_supported_by_HIP.md",
    "blas": "CUBLAS_API_supported_by_HIP.md",
    "rand": "CURAND_API_supported_by_HIP.md",
    "fft": "CUFFT_API_supported_by_HIP.md",
    "sparse": "CUSPARSE_API_supported_by_HIP.md",
    "solver": "CUSOLVER_API_supported_by_HIP.md",
    "dnn": "CUDNN_API_supported_by_HIP_and_MIOPEN.md",
    "cub": "CUB_API_supported_by_HIP.md",
    "rtc": "CUDA_RTC_API_supported_by_HIP.md",
    "tensor": "CUTENSOR_API_supported_by_HIP.md",
}
HIPIFY_TABLE_ALTERNATIVES = {"dnn": ("CUDNN_API_supported_by_MIOPEN.md",)}
FAMILY_TABLES = {
    "runtime": ["runtime"],
    "driver": ["driver"],
    "device": ["device", "complex"],
    "cublas": ["blas"],
    "cublaslt": ["blas"],
    "curand": ["rand"],
    "cufft": ["fft"],
    "cusparse": ["sparse"],
    "cusolver": ["solver"],
    "cudnn": ["dnn"],
    "cub": ["cub"],
    "nvrtc": ["rtc"],
    "cutensor": ["tensor"],
}
# Which family a whole table feeds in --all mode (cuBLASLt is split off by section).
TABLE_FAMILY = {
    "runtime": "runtime",
    "driver": "driver",
    "device": "device",
    "complex": "device",
    "blas": "cublas",
    "rand": "curand",
    "fft": "cufft",
    "sparse": "cusparse",
    "solver": "cusolver",
    "dnn": "cudnn",
    "cub": "cub",
    "rtc": "nvrtc",
    "tensor": "cutensor",
}
# For cuDNN the HIP column is the archived hipDNN; the MIOpen column is the ROCm route.
USE_ROC_COLUMN = {"dnn"}

HIPIFY_KIND_BY_CONV = {
    "CONV_TYPE": "type",
    "CONV_DEVICE_TYPE": "type",
    "CONV_NUMERIC_LITERAL": "enum",
    "CONV_DEFINE": "macro",
    "CONV_LITERAL": "macro",
}


# --------------------------------------------------------------------------- git access


class GitRepo:
    """Read-only access to one git repository (bare is fine) at one commit.

    `ref` is HEAD unless a newer upstream commit is only carried by a fork's mirror; then
    `via` names that fork (owner/name) and `ref` the upstream commit read from it."""

    def __init__(self, path: str | Path, project: str, ref: str = "HEAD", via: str | None = None):
        self.path = str(path)
        self.project = project
        self.via = via
        self.ref = self._git("rev-parse", f"{ref}^{{commit}}").strip()
        self.date = self._git("show", "-s", "--format=%cI", self.ref).strip()
        self._listing: list[str] | None = None

    def _git(self, *args: str) -> str:
        return git(self.path, *args)

    def show(self, path: str) -> str:
        return self._git("show", f"{self.ref}:{path}")

    def show_if_present(self, path: str) -> str:
        """The file's text, or "" with a warning when this commit has no such file (a
        trimmed-down repository, e.g. the test fixtures, or an upstream rename)."""
        if not self.exists(path):
            print(f"warning: {self.project} has no {path}; skipping it", file=sys.stderr)
            return ""
        return self.show(path)

    def exists(self, path: str) -> bool:
        return path in self.files()

    def files(self) -> list[str]:
        if self._listing is None:
            self._listing = self._git("ls-tree", "-r", "--name-only", self.ref).splitlines()
        return self._listing

    def source(self, path: str) -> dict[str, str]:
        return {"project": self.project, "ref": self.ref, "path": path}

    def snapshot(self) -> dict[str, str]:
        """What was read, for rules/sources.yaml: project, commit, commit date (and the
        fork whose mirror carried that commit)."""
        found = {"project": self.project, "commit": self.ref, "date": self.date}
        if self.via:
            found["via"] = self.via
        return found


# --------------------------------------------------------------------------- text

_C_TOKEN = re.compile(
    r'"(?:\\.|[^"\\\n])*"'  # string literal
    r"|'(?:\\.|[^'\\\n])*'"  # character literal
    r"|//[^\n]*"  # line comment
    r"|/\*.*?\*/",  # block comment
    re.S,
)


def strip_c_comments(text: str) -> str:
    """C/C++ (or Rust) text with its comments blanked out (line breaks kept); string
    and character literals are left alone, so a `//` inside a string is not a comment."""

    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith(("//", "/*")):
            return "\n" * token.count("\n") or " "
        return token

    return _C_TOKEN.sub(blank, text)


# --------------------------------------------------------------------------- HIPIFY


@dataclass
class HipifyRow:
    """One row of a HIPIFY markdown table."""

    name: str
    table: str
    section: str
    hip: str | None
    cuda: dict[str, str]  # A/D/C/R of the CUDA column
    hip_versions: dict[str, str]  # A/D/C/R/E of the target column used


@dataclass
class HipifyData:
    repo: GitRepo
    rows: dict[str, dict[str, HipifyRow]]  # table key -> name -> row
    kinds: dict[str, str]  # CUDA name -> kind, from src/CUDA2HIP_*.cpp
    hipdnn_names: dict[str, str]  # cuDNN name -> hipDNN name (HIPIFY's default target)
    includes: dict[str, tuple[str, str]]  # CUDA header -> (HIP header, ROC header)
    # CUDA name -> the HIP spelling HIPIFY's src maps give it, also for entries the maps
    # flag UNSUPPORTED (the tables then show no HIP name): __nv_bfloat162 -> __hip_bfloat162
    map_spellings: dict[str, str] = field(default_factory=dict)
    enum_owner: dict[str, str] = field(default_factory=dict)  # enumerator -> enum type
    table_paths: dict[str, str] = field(default_factory=dict)  # table key -> path read
    hip_latest: str | None = None  # HIP_LATEST of src/Statistics.h: the newest release it knows

    def find(self, family: str, name: str) -> HipifyRow | None:
        """The row for `name`, preferring the tables of its family; names HIPIFY files
        elsewhere (e.g. __CUDACC__ among driver types) are found in any table."""
        tables = FAMILY_TABLES.get(family, []) + [
            t for t in HIPIFY_TABLES if t not in FAMILY_TABLES.get(family, [])
        ]
        for table in tables:
            row = self.rows.get(table, {}).get(name)
            if row is not None:
                return row
        return None

    def table_path(self, table: str) -> str:
        return self.table_paths.get(table, f"docs/tables/{HIPIFY_TABLES[table]}")

    @property
    def hipdnn_dropped(self) -> bool:
        """HIPIFY no longer emits hipDNN by default (July 2025, commit 3f17bacd): its
        cuDNN table is the MIOpen-only one; MIOpen needs --miopen, hipDNN --hipdnn."""
        return self.table_path("dnn").endswith(HIPIFY_TABLE_ALTERNATIVES["dnn"][0])


def find_hipify_table(repo: GitRepo, table: str) -> str:
    """The path of one table in this snapshot (the first candidate when none exists, so
    the warning names what was looked for)."""
    names = (HIPIFY_TABLES[table], *HIPIFY_TABLE_ALTERNATIVES.get(table, ()))
    candidates = [directory + name for name in names for directory in HIPIFY_TABLE_DIRS]
    present = [path for path in candidates if repo.exists(path)]
    return present[0] if present else f"docs/tables/{names[0]}"


HIPIFY_VERSIONS = "src/Statistics.h"
_HIP_LATEST = re.compile(r"\bHIP_LATEST\s*=\s*HIP_(\d+)")


def parse_hip_latest(text: str) -> str | None:
    """`HIP_LATEST = HIP_7000` -> "7.0.0": the newest HIP release HIPIFY's versions know
    (HIP_<major><minor:2><patch>, e.g. HIP_6020 = 6.2.0, HIP_6002 = 6.0.2)."""
    match = _HIP_LATEST.search(text)
    return hip_enum_version(match.group(1)) if match else None


def hip_enum_version(digits: str) -> str:
    number = int(digits)
    return f"{number // 1000}.{number // 10 % 100}.{number % 10}"


def _table_cells(line: str) -> list[str]:
    return [cell.strip().strip("`").strip() for cell in line.strip().strip("|").split("|")]


def parse_hipify_table(text: str, table: str, use_roc: bool) -> dict[str, HipifyRow]:
    """Parse one docs/tables/*.md file: `## section` headings, a `|**CUDA**|...` header
    row giving the column groups, then one `|`name`|...` row per CUDA name."""
    rows: dict[str, HipifyRow] = {}
    section = ""
    groups: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("## "):
            section = re.sub(r"[*#]", "", line).strip()
            section = re.sub(r"^\d+\.\s*", "", section)
        elif line.startswith("|**CUDA**"):
            header = [c.strip("*") for c in _table_cells(line)]
            groups = {h: i for i, h in enumerate(header) if h in ("CUDA", "HIP", "ROC", "MIOPEN")}
        elif line.startswith("|`") and groups:
            cells = _table_cells(line)
            cuda_at = groups["CUDA"]
            target = "MIOPEN" if use_roc and "MIOPEN" in groups else "HIP"
            if use_roc and "ROC" in groups:
                target = "ROC"
            at = groups[target]
            name = cells[cuda_at]
            cuda = dict(zip("ADCR", cells[cuda_at + 1 : cuda_at + 5], strict=True))
            hip_versions = dict(zip("ADCRE", cells[at + 1 : at + 6], strict=True))
            rows[name] = HipifyRow(
                name=name,
                table=table,
                section=section,
                hip=cells[at] or None,
                cuda={k: v for k, v in cuda.items() if v},
                hip_versions={k: v for k, v in hip_versions.items() if v},
            )
    return rows


_HIPIFY_MAP_ENTRY = re.compile(
    r'\{"([^"]+)",\s*\{"([^"]*)",\s*"([^"]*)",\s*(CONV_\w+),\s*(API_\w+)'
)


_HIPIFY_ENUM_COMMENT = re.compile(r"^\s*//\s*(\w+)\s+enum values\b")


@dataclass
class HipifyMaps:
    """What HIPIFY's src/CUDA2HIP_*.cpp maps say beyond the tables."""

    kinds: dict[str, str]  # CUDA name -> kind, from the conversion type
    hipdnn: dict[str, str]  # cuDNN name -> hipDNN name (HIPIFY's default cuDNN target)
    spellings: dict[str, str]  # CUDA name -> HIP spelling
    # enumerator -> its enum type: the `// X enum values` comment above a group, else
    # the type entry the group follows (the maps list each enum's values after it)
    enum_owner: dict[str, str]


def parse_hipify_maps(repo: GitRepo) -> HipifyMaps:
    maps = HipifyMaps({}, {}, {}, {})
    for path in repo.files():
        if not re.fullmatch(
            r"src/CUDA2HIP_\w+_API_(functions|types)\.cpp|src/CUDA2HIP_Device_\w+\.cpp", path
        ):
            continue
        functions_file = "functions" in path
        owner: str | None = None
        for line in repo.show(path).splitlines():
            comment = _HIPIFY_ENUM_COMMENT.match(line)
            if comment:
                owner = comment.group(1)
                continue
            match = _HIPIFY_MAP_ENTRY.search(line)
            if match is None:
                continue
            name, hip, _roc, conv, api = match.groups()
            kind = HIPIFY_KIND_BY_CONV.get(conv, "function" if functions_file else "type")
            maps.kinds.setdefault(name, kind)
            if conv == "CONV_TYPE":
                owner = name
            elif conv == "CONV_NUMERIC_LITERAL" and owner is not None:
                maps.enum_owner.setdefault(name, owner)
            if hip:
                maps.spellings.setdefault(name, hip)
            if api == "API_DNN" and hip:
                maps.hipdnn.setdefault(name, hip)
    return maps


HIPIFY_INCLUDE_MAP = "src/CUDA2HIP.cpp"
_HIPIFY_INCLUDE = re.compile(r'\{"([^"]+)",\s*\{"([^"]*)",\s*"([^"]*)",\s*CONV_INCLUDE')


def parse_hipify_includes(text: str) -> dict[str, tuple[str, str]]:
    """CUDA header -> (HIP header, ROC-library header) from HIPIFY's CUDA_INCLUDE_MAP."""
    return {m.group(1): (m.group(2), m.group(3)) for m in _HIPIFY_INCLUDE.finditer(text)}


def load_hipify(repo: GitRepo) -> HipifyData:
    paths = {table: find_hipify_table(repo, table) for table in HIPIFY_TABLES}
    rows = {
        table: parse_hipify_table(repo.show_if_present(path), table, table in USE_ROC_COLUMN)
        for table, path in paths.items()
    }
    maps = parse_hipify_maps(repo)
    includes = parse_hipify_includes(repo.show(HIPIFY_INCLUDE_MAP))
    return HipifyData(
        repo=repo,
        rows=rows,
        kinds=maps.kinds,
        hipdnn_names=maps.hipdnn,
        includes=includes,
        map_spellings=maps.spellings,
        enum_owner=maps.enum_owner,
        table_paths=paths,
        hip_latest=parse_hip_latest(repo.show_if_present(HIPIFY_VERSIONS)),
    )


# --------------------------------------------------------------------------- ZLUDA

ZLUDA_DRIVER_LIST = "zluda/src/lib.rs"
ZLUDA_PTX_PARSER = "ptx_parser/src/lib.rs"
ZLUDA_SPECIAL_REGISTERS = "ptx/src/pass/mod.rs"
_ZLUDA_LIST = re.compile(r"\b(\w+)\s*<=\s*\[([^\]]*)\]")
_ZLUDA_DUAL_LIST = re.compile(r"\((\w+)\s*\|\s*(\w+)\)\s*<=\s*\[([^\]]*)\]")
_API_SUFFIX = re.compile(r"(_v\d+)?(_ptds|_ptsz)?$")


def normalize_versioned(name: str) -> str:
    """cuMemAlloc_v2 -> cuMemAlloc, cuMemcpyHtoD_v2_ptds -> cuMemcpyHtoD: CUDA headers
    #define the plain names to these versioned ABI symbols."""
    return _API_SUFFIX.sub("", name)


def parse_zluda_lists(text: str, prefix: str) -> set[str]:
    """Names inside every `<macro> <= [ ... ]` list except the `unimplemented` one
    (a commented-out name is not in the list)."""
    text = strip_c_comments(text)
    names: set[str] = set()
    for match in _ZLUDA_DUAL_LIST.finditer(text):
        names.update(re.findall(r"\b(" + prefix + r"\w*)", match.group(3)))
    for match in _ZLUDA_LIST.finditer(text):
        macro, body = match.groups()
        if macro != "unimplemented":
            names.update(re.findall(r"\b(" + prefix + r"\w*)", body))
    return names


@dataclass
class PtxGrammar:
    """The PTX instruction forms ZLUDA's parser accepts.

    Each form is a list of (segment, optional) pairs: ``add{.rnd}{.ftz}.f32`` becomes
    add, rnd?, ftz?, f32. A segment is either literal text or the name of a placeholder
    declared beside the rule (``.rnd: RawRoundingMode = { .rn, .rz, .rm, .rp };``).
    Placeholder values are pooled over all rules, so a check is slightly permissive.
    """

    forms: list[list[tuple[str, bool]]]
    placeholders: dict[str, set[str]]  # `rnd` -> {"rn", "rz", ...}
    # Instructions whose forms a hand-written function parses (`bra <= { bra(stream) }`):
    # every form of them is taken as accepted.
    open_forms: set[str] = field(default_factory=set)

    def _fits(self, segment: str, wanted: str) -> bool:
        return segment == wanted or wanted in self.placeholders.get(segment, ())

    def _matches(self, form: list[tuple[str, bool]], need: list[str]) -> bool:
        if not need:
            return True  # `wanted` may stop before the form does
        if not form:
            return False
        (segment, optional), rest = form[0], form[1:]
        if self._fits(segment, need[0]) and self._matches(rest, need[1:]):
            return True
        return optional and self._matches(rest, need)

    def accepts(self, wanted: str) -> bool:
        """True when some form starts with the dotted instruction `wanted` (optional
        segments may be skipped; a placeholder matches any of its declared values)."""
        need = wanted.split(".")
        if need[0] in self.open_forms:
            return True
        return any(self._matches(form, need) for form in self.forms)


_PTX_RULE_HEAD = re.compile(r"^    ([a-z][a-z0-9_]*(?:[.{][^\s]*)?)\s.*=>\s*\{\s*$")
_PTX_OPEN_RULE = re.compile(r"^    ([a-z][a-z0-9_]*)\s*<=\s*\{")
_PTX_DECL = re.compile(r"^\s*\.([A-Za-z_0-9]+(?:::[A-Za-z_0-9]+)?)\s*(?::\s*\w+\s*)?=\s*\{")


def _split_form(head: str) -> list[tuple[str, bool]]:
    """`add{.rnd}{.ftz}.f32` -> [("add", False), ("rnd", True), ("ftz", True), ("f32", False)]."""
    segments: list[tuple[str, bool]] = []
    for optional, required in re.findall(r"\{\.([^}]*)\}|([^.{}]+)", head):
        if optional:
            segments.append((optional, True))
        elif required:
            segments.append((required, False))
    return segments


def _declared_values(text: str, start: int) -> set[str]:
    """Values of the `{ .a, .b{::c}, ... }` set opening at text[start] (may span lines)."""
    depth, end = 0, start
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    body = re.sub(r"//[^\n]*", "", text[start + 1 : end])
    body = re.sub(r"\{[^{}]*\}", "", body)
    return {v.strip().lstrip(".") for v in body.split(",") if v.strip()}


_PTX_ROUNDING = {"rn": "rn", "rz": "rz", "rd": "rm", "ru": "rp"}


def expand_ptx(template: str, match: re.Match[str]) -> str:
    """Fill a `zluda_device_ptx_patterns` template: {name} or {1} is that group of the
    match; the group `rnd` becomes a PTX rounding modifier (``_rd`` -> ``rm``)."""
    groups = {k: v or "" for k, v in match.groupdict().items()}
    if "rnd" in groups:
        groups["rnd"] = _PTX_ROUNDING[groups["rnd"]]
    numbered = [match.group(0), *(g or "" for g in match.groups())]
    return template.format(*numbered, **groups)


def parse_ptx_grammar(text: str) -> PtxGrammar:
    forms: list[list[tuple[str, bool]]] = []
    placeholders: dict[str, set[str]] = defaultdict(set)
    open_forms: set[str] = set()
    offset = 0
    for line in text.splitlines(keepends=True):
        delegated = _PTX_OPEN_RULE.match(line)
        if delegated:
            open_forms.add(delegated.group(1))
        head = _PTX_RULE_HEAD.match(line)
        if head and not line.lstrip().startswith(("let ", "match ", "if ", "Some", "None")):
            forms.append(_split_form(head.group(1)))
        decl = _PTX_DECL.match(line)
        if decl:
            brace = offset + line.index("{", decl.start())
            placeholders[decl.group(1)].update(_declared_values(text, brace))
        offset += len(line)
    return PtxGrammar(forms=forms, placeholders=dict(placeholders), open_forms=open_forms)


# ZLUDA's generated bindings: every function it exports with its parameter and return
# types (cuda_macros/src/*.rs) and the CUDA types those name (cuda_types/src/*.rs).
ZLUDA_BINDINGS_MACROS = "cuda_macros/src/"
ZLUDA_BINDINGS_TYPES = "cuda_types/src/"
ZLUDA_DEVICE_ATTRIBUTES = "zluda/src/impl/device.rs"
ZLUDA_LAUNCH = "zluda/src/impl/driver.rs"
_RUST_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_RUST_FN = re.compile(r"\bfn\s+(\w+)\s*\(([^;{]*?)\)\s*(?:->\s*([^;{]+))?;", re.S)
_RUST_ALIAS = re.compile(r"\bpub\s+type\s+(\w+)\s*=\s*([^;]+);")
_RUST_USE = re.compile(r"\bpub\s+use\s+(?:self|super)::(?:\w+::)*(\w+)\s+as\s+(\w+)\s*;")
_RUST_AGGREGATE = re.compile(r"\bpub\s+(?:struct|union)\s+(\w+)\s*(\{[^{}]*\}|\([^()]*\))", re.S)
_RUST_ENUMERATOR = re.compile(r"\bimpl\s+(\w+)\s*\{\s*pub\s+const\s+(\w+)\s*:\s*(\w+)\s*=")
_RUST_CONST = re.compile(r"^pub\s+const\s+(\w+)\s*:", re.M)


def _type_words(text: str) -> set[str]:
    """The type names a Rust type expression mentions (`*mut cuda_types::cuda::CUstream`
    -> {CUstream}); paths, pointer words and primitive types are dropped."""
    text = re.sub(r"(?:::)?(?:\w+::)+", "", text)
    return {w for w in _RUST_WORD.findall(text)} - _RUST_NOISE


_RUST_NOISE = frozenset(
    {
        "mut",
        "const",
        "pub",
        "unsafe",
        "extern",
        "fn",
        "Option",
        "system",
        "C",
        "usize",
        "isize",
        "u8",
        "u16",
        "u32",
        "u64",
        "i8",
        "i16",
        "i32",
        "i64",
        "f32",
        "f64",
        "bool",
        "c_void",
        "c_char",
        "c_uchar",
        "c_int",
        "c_uint",
        "c_long",
        "c_ulong",
        "c_longlong",
        "c_ulonglong",
        "c_short",
        "c_ushort",
        "c_float",
        "c_double",
    }
)


@dataclass
class ZludaBindings:
    """The types ZLUDA's exported functions take and return, and what those types are
    made of: enough to tell whether any function ZLUDA implements can receive a type."""

    signatures: dict[str, set[str]] = field(default_factory=dict)  # function -> type names
    parameters: dict[str, set[str]] = field(default_factory=dict)  # … of its parameters only
    aliases: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    members: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    enum_owner: dict[str, str] = field(default_factory=dict)  # enumerator -> its type
    constants: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)  # every type name the bindings define

    def add_functions(self, text: str) -> None:
        for name, params, ret in _RUST_FN.findall(strip_c_comments(text)):
            taken: set[str] = set()
            for param in params.split(","):
                taken |= _type_words(param.partition(":")[2])
            words = taken | _type_words(ret or "")
            for key in {name, normalize_versioned(name)}:
                self.signatures[key] = self.signatures.get(key, set()) | words
                self.parameters[key] = self.parameters.get(key, set()) | taken

    def add_types(self, text: str) -> None:
        text = strip_c_comments(text)
        for name, target in _RUST_ALIAS.findall(text):
            self.declared.add(name)
            words = _type_words(target)
            # `pub type CUstream = *mut CUstream_st` renames one type: either name stands
            # for the other. A function-pointer type only leads to its parameter types.
            for word in words:
                self.aliases[name].add(word)
                if len(words) == 1:
                    self.aliases[word].add(name)
        for target, name in _RUST_USE.findall(text):
            self.declared.add(name)
            self.aliases[name].add(target)
            self.aliases[target].add(name)
        for name, body in _RUST_AGGREGATE.findall(text):
            self.declared.add(name)
            fields = re.findall(r":\s*([^,]+)", body) if body.startswith("{") else [body]
            for field_type in fields:
                self.members[name] |= _type_words(field_type) - {name}
        for owner, name, typed in _RUST_ENUMERATOR.findall(text):
            if typed == owner:
                self.enum_owner[name] = owner
                self.declared.add(owner)
        self.constants.update(_RUST_CONST.findall(text))

    def mentioned(self) -> set[str]:
        """Every type name some exported function's signature names."""
        return set().union(*self.signatures.values())

    def reachable(self, functions: set[str]) -> dict[str, str]:
        """Type name -> one of `functions` that takes or returns it, directly, through a
        typedef, or as a member of a struct it takes."""
        found: dict[str, str] = {}
        # parameters first, so a type is credited to a call that takes it where one does
        for table in (self.parameters, self.signatures):
            for function in sorted(functions):
                self._walk(table.get(function, ()), function, found)
        return found

    def _walk(self, start: Any, function: str, found: dict[str, str]) -> None:
        queue = list(start)
        while queue:
            name = queue.pop()
            if name in found:
                continue
            found[name] = function
            queue.extend(self.aliases.get(name, ()))
            queue.extend(self.members.get(name, ()))


def load_zluda_bindings(repo: GitRepo) -> ZludaBindings:
    bindings = ZludaBindings()
    for path in repo.files():
        if path.startswith(ZLUDA_BINDINGS_MACROS) and path.endswith(".rs"):
            bindings.add_functions(repo.show(path))
        elif path.startswith(ZLUDA_BINDINGS_TYPES) and path.endswith(".rs"):
            bindings.add_types(repo.show(path))
    return bindings


def _match_arms(body: str) -> list[tuple[str, str]]:
    """(patterns, arm body) of each `PATTERN | PATTERN => { … }` / `=> expr,` arm at the
    top level of a Rust `match` body."""
    arms: list[tuple[str, str]] = []
    depth, start, pattern = 0, 0, None
    i = 0
    while i < len(body):
        char = body[i]
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
            if depth < 0:  # the end of the match body
                break
        elif depth == 0 and body.startswith("=>", i) and pattern is None:
            pattern = body[start:i]
            start = i + 2
            i += 1
        elif depth == 0 and char == "," and pattern is not None:
            arms.append((pattern, body[start:i]))
            pattern, start = None, i + 1
        if depth == 0 and char == "}" and pattern is not None:
            arms.append((pattern, body[start : i + 1]))
            pattern, start = None, i + 1
        i += 1
    return arms


def _function_body(text: str, name: str) -> str:
    """The body of the Rust function `name` (comments already stripped)."""
    match = re.search(r"\bfn\s+" + name + r"\s*\(", text)
    if not match:
        return ""
    brace = text.index("{", match.end())
    depth = 0
    for end in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[brace + 1 : end]
    return text[brace + 1 :]


@dataclass
class DeviceAttributes:
    """How ZLUDA's cuDeviceGetAttribute (zluda/src/impl/device.rs) answers each
    CUdevice_attribute: from HIP's device properties or attribute query, or with a fixed
    value; any other attribute falls to `_ => return Err(INVALID_VALUE)`."""

    answered: dict[str, str | None]  # CU_DEVICE_ATTRIBUTE_X -> fixed value, None: queried


def parse_zluda_device_attributes(text: str) -> DeviceAttributes:
    body = _function_body(strip_c_comments(text), "get_attribute")
    answered: dict[str, str | None] = {}
    # explicit match arms before the remapping: a fixed value (`*pi = 32`) or a property
    for patterns, arm in _match_arms(body[body.find("match attrib") :].partition("{")[2]):
        fixed = re.search(r"\*pi\s*=\s*(-?\d+)\s*;", arm)
        for name in re.findall(r"CUdevice_attribute::(CU_DEVICE_ATTRIBUTE_\w+)", patterns):
            answered[name] = fixed.group(1) if fixed and "get_device_prop" not in arm else None
    # remap_attribute!{ attrib => { [MAX THREADS PER BLOCK], … }, { EXACT => Hip, … } }
    remap = body[body.find("remap_attribute!") :]
    for words in re.findall(r"\[([A-Z0-9 ]+)\]", remap):
        answered.setdefault("CU_DEVICE_ATTRIBUTE_" + "_".join(words.split()), None)
    for exact in re.findall(r"\b([A-Z][A-Z0-9_]+)\s*=>\s*\w+", remap):
        answered.setdefault("CU_DEVICE_ATTRIBUTE_" + exact, None)
    return DeviceAttributes(answered)


def parse_zluda_launch_attributes(text: str) -> set[str]:
    """The CUlaunchAttributeID values ZLUDA's cuLaunchKernelEx (launch_kernel_ex in
    zluda/src/impl/driver.rs) names; it returns CUDA_ERROR_NOT_SUPPORTED for the rest."""
    body = _function_body(strip_c_comments(text), "launch_kernel_ex")
    return set(re.findall(r"CUlaunchAttributeID::(CU_LAUNCH_ATTRIBUTE_\w+)", body))


@dataclass
class ZludaData:
    repo: GitRepo
    driver: set[str]  # implemented driver functions, normalized names
    driver_declared: set[str]
    libraries: dict[str, set[str]]  # family -> implemented names (normalized)
    library_paths: dict[str, str]
    ptx: PtxGrammar
    special_registers: set[str]
    bindings: ZludaBindings = field(default_factory=ZludaBindings)
    device_attributes: DeviceAttributes = field(default_factory=lambda: DeviceAttributes({}))
    launch_attributes: set[str] = field(default_factory=set)

    def implemented(self) -> set[str]:
        """Every function ZLUDA implements, driver and replacement libraries alike."""
        return self.driver.union(*self.libraries.values())


def load_zluda(repo: GitRepo, crates: dict[str, dict[str, str]]) -> ZludaData:
    driver_raw = parse_zluda_lists(repo.show(ZLUDA_DRIVER_LIST), "cu")
    declared_text = repo.show("cuda_macros/src/cuda.rs")
    declared = {normalize_versioned(n) for n in re.findall(r"\bfn\s+(cu\w+)", declared_text)}
    libraries: dict[str, set[str]] = {}
    library_paths: dict[str, str] = {}
    for family, crate in crates.items():
        raw = parse_zluda_lists(repo.show_if_present(crate["path"]), crate["prefix"])
        exact = crate.get("exact_names", False)
        libraries[family] = raw if exact else {normalize_versioned(n) for n in raw} | raw
        library_paths[family] = crate["path"]
    registers = set(re.findall(r'=>\s*"(%\w+)"', repo.show(ZLUDA_SPECIAL_REGISTERS)))
    return ZludaData(
        repo=repo,
        driver={normalize_versioned(n) for n in driver_raw},
        driver_declared=declared,
        libraries=libraries,
        library_paths=library_paths,
        ptx=parse_ptx_grammar(repo.show(ZLUDA_PTX_PARSER)),
        special_registers=registers,
        bindings=load_zluda_bindings(repo),
        device_attributes=parse_zluda_device_attributes(
            repo.show_if_present(ZLUDA_DEVICE_ATTRIBUTES)
        ),
        launch_attributes=parse_zluda_launch_attributes(repo.show_if_present(ZLUDA_LAUNCH)),
    )


# --------------------------------------------------------------------------- SCALE

SCALE_PAGES = {
    "runtime": "docs/manual/library/apidiff/api-runtime.md",
    "driver": "docs/manual/library/apidiff/api-driver.md",
    "math": "docs/manual/library/apidiff/api-math.md",
}
SCALE_CHANGELOG_DIR = "docs/manual/changelogs/"
SCALE_INLINE_PTX = "docs/manual/compiler/inline-ptx.md"


@dataclass
class ScaleListing:
    """What one API-difference page says about one name."""

    present: list[str] = field(default_factory=list)  # declarations without a '-'
    missing: list[str] = field(default_factory=list)  # declarations marked '-'

    def verdict(self, device_code: bool = False) -> tuple[str, str | None]:
        """`device_code`: the page lists device functions (Math API), where a missing
        overload is another argument type rather than the dynamic-parallelism variant."""
        if device_code:
            if not self.present:
                return "unsupported", None
            note = "SCALE lacks some overloads (other argument types)" if self.missing else None
            return "supported", note
        host_present = [d for d in self.present if not d.startswith("__device__")]
        host_missing = [d for d in self.missing if not d.startswith("__device__")]
        if host_present or (self.present and not host_missing):
            note = None
            if any(d.startswith("__device__") for d in self.missing):
                note = "SCALE lacks the device-side (dynamic parallelism) overload"
            elif host_missing:
                note = "SCALE lacks some overloads of this name"
            return "supported", note
        return "unsupported", None


def _declared_name(decl: str) -> tuple[str | None, str]:
    """Name and declaration kind of one line of SCALE's diff listings."""
    decl = re.sub(r"^template\s*<[^>]*>\s*", "", decl).strip()
    for keyword, kind in (
        ("#define", "macro"),
        ("enum", "type"),
        ("struct", "type"),
        ("union", "type"),
        ("class", "type"),
    ):
        match = re.match(re.escape(keyword) + r"\s+(\w+)\s*;?$", decl)
        if match:
            return match.group(1), kind
    if decl.startswith("typedef"):
        pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
        if pointer:
            return pointer.group(1), "type"
        match = re.search(r"(\w+)\s*;\s*$", decl)
        return (match.group(1) if match else None), "type"
    match = re.search(r"(\w+)\s*\(", decl)
    return (match.group(1) if match else None), "function"


_SCALE_HEADING = re.compile(r"^#{2,}\s*\[?\s*(?:[\d.]+\s+)?([^\]]+?)\s*\]?(?:\(.*\))?\s*$")


def section_title(heading: str) -> str:
    """`## [6.24. EGL Interoperability](https://…)` (SCALE) or `## **25. EGL
    Interoperability**` (HIPIFY) -> "EGL Interoperability": the NVIDIA documentation
    module both pages are laid out by, so one can be looked up in the other."""
    text = re.sub(r"[*#]", "", heading).strip()
    text = re.sub(r"^\[(.*)\]\(.*\)$", r"\1", text)
    return re.sub(r"^\d+(\.\d+)*\.?\s*", "", text).strip()


@dataclass
class ScaleSection:
    """One `## …` section of an API-difference page."""

    title: str
    names: list[str] = field(default_factory=list)  # declarations listed, in page order
    # The words of a section that lists no declaration, only a marked-missing sentence
    # ("-EGL is currently unsupported"): the whole NVIDIA module is unsupported.
    unsupported: str | None = None


@dataclass
class ScalePage:
    """What one API-difference page says: each declared name's listing and the page's
    sections (which names each lists, and which SCALE marks unsupported as a whole)."""

    listings: dict[str, ScaleListing]
    sections: dict[str, ScaleSection]  # title -> section
    _signatures: dict[bool, dict[str, set[str]]] = field(default_factory=dict, repr=False)

    def get(self, name: str) -> ScaleListing | None:
        return self.listings.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.listings

    def unsupported_section(self, title: str | None) -> ScaleSection | None:
        """The section `title` when SCALE marks it unsupported as a whole: a sentence in
        place of declarations, or every declaration it lists marked missing."""
        section = self.sections.get(title) if title else None
        if section is None:
            return None
        if section.unsupported is not None:
            return section
        # every declaration marked missing, and more than one (a lone missing line says
        # little about the rest of the module)
        listed = [self.listings[n] for n in section.names]
        if len(listed) > 1 and all(not listing.present for listing in listed):
            return section
        return None

    def signatures(self, present: bool) -> dict[str, set[str]]:
        """Function -> the identifiers its declarations on this page mention (NVIDIA's
        documented prototypes), from the declarations SCALE has (`present`) or lacks."""
        cached = self._signatures.get(present)
        if cached is None:
            cached = self._signatures[present] = self._read_signatures(present)
        return cached

    def _read_signatures(self, present: bool) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for name, listing in self.listings.items():
            decls = listing.present if present else listing.missing
            for decl in decls:
                if _declared_name(decl)[1] != "function":
                    continue
                words = set(re.findall(r"\b[A-Za-z_]\w*\b", decl)) - {name}
                found.setdefault(name, set()).update(words)
        return found


def _is_declaration(decl: str) -> bool:
    """A listed C declaration, not a sentence: `-EGL is currently unsupported` is prose."""
    name, kind = _declared_name(decl)
    return name is not None and (kind != "function" or "(" in decl)


def parse_scale_page(text: str) -> ScalePage:
    """Read one API-difference page: `## [N. Title](url)` sections, each with a ```diff
    block of NVIDIA's declarations, `-` marking those SCALE lacks. A block holding only a
    `-` sentence marks the whole section unsupported. Lines without the diff's space or
    `-` prefix are read as present (the page's convention for unmarked lines)."""
    listings: dict[str, ScaleListing] = defaultdict(ScaleListing)
    sections: dict[str, ScaleSection] = {}
    section = ScaleSection("")
    in_block = False
    for line in text.splitlines():
        if not in_block and line.startswith("#"):
            section = ScaleSection(section_title(line))
            sections.setdefault(section.title, section)
            section = sections[section.title]
            continue
        if line.startswith("```"):
            in_block = not in_block
            continue
        if not in_block or not line.strip():
            continue
        missing = line.startswith("-")
        decl = line[1:].strip() if line[:1] in "- " else line.strip()
        if not _is_declaration(decl):
            if missing and re.search(r"\b(unsupported|not supported)\b", decl, re.I):
                section.unsupported = decl
            continue
        name, _kind = _declared_name(decl)
        assert name is not None
        (listings[name].missing if missing else listings[name].present).append(decl)
        if name not in section.names:
            section.names.append(name)
    return ScalePage(dict(listings), sections)


def parse_scale_changelogs(repo: GitRepo) -> dict[str, str]:
    """Names announced as newly supported/added APIs in SCALE's changelogs
    -> the changelog file that announced them."""
    added: dict[str, str] = {}
    for path in sorted(p for p in repo.files() if p.startswith(SCALE_CHANGELOG_DIR)):
        collecting = False
        for line in repo.show(path).splitlines():
            if re.search(r"new(ly)?[- ]?(supported|added)? (CUDA )?APIs?\b", line, re.I):
                collecting = True
                for name in re.findall(r"`(\w+)(?:\(\))?`", line):
                    added.setdefault(name, path)
                continue
            if collecting and re.match(r"^\s+[*-]\s", line):
                for name in re.findall(r"`(\w+)(?:\(\))?`", line):
                    added.setdefault(name, path)
            elif line.strip():
                collecting = False
    return added


@dataclass
class ScaleData:
    repo: GitRepo
    pages: dict[str, ScalePage]
    changelog_added: dict[str, str]
    ptx_instructions: set[str]
    wrappers: WrapperData | None


@dataclass
class WrapperData:
    repo: GitRepo
    tokens: dict[str, set[str]]  # family -> identifiers declared in that wrapper library
    paths: dict[str, str]


_WRAPPER_MACROS = (
    # (macro call, CUDA prefix, letters[, suffix]): BLAS_API(S, s, gemm, ...) declares
    # cublasSgemm_v2 (cublas_v2.h maps cublasSgemm onto it);
    # C_CU_CXX_UNPACK(Dn, getrf, ...) declares cusolverDn{S,D,C,Z}getrf.
    (re.compile(r"\bBLAS_API\(\s*(\w+)\s*,\s*\w+\s*,\s*(\w+)"), "cublas", ("",), "_v2"),
    (re.compile(r"\bLEGACY_BLAS_API_RET\(\s*[\w ]+?\s*,\s*(\w+)\s*,\s*(\w+)"), "cublas", ("",)),
    (re.compile(r"\bLEGACY_BLAS_API\(\s*(\w+)\s*,\s*(\w+)"), "cublas", ("",)),
    (re.compile(r"\bDIRECT_BLAS_API(?:_N)?\(\s*(\w+)"), "cublas", ("",)),
    (re.compile(r"\bSPARSE_API\(\s*(\w+)\s*,\s*\w+\s*,\s*(\w+)"), "cusparse", ("",)),
    (re.compile(r"\bSPARSE_API_DIRECT\w*\(\s*(\w+)"), "cusparse", ("",)),
    (re.compile(r"\bC_CU_CXX_UNPACK\(\s*(\w+)\s*,\s*(\w+)"), "cusolver", ("S", "D", "C", "Z")),
)


def load_scale_wrappers(repo: GitRepo, libraries: dict[str, Any]) -> WrapperData:
    """Identifiers each published SCALE wrapper library declares. Plain identifiers are
    collected from its headers; the BLAS/SPARSE helper macros are expanded by hand."""
    tokens: dict[str, set[str]] = {}
    paths: dict[str, str] = {}
    for family, info in libraries.items():
        directory = info.get("wrapper_dir")
        if not directory:
            continue
        found: set[str] = set()
        for path in repo.files():
            if not path.startswith(directory) or not path.endswith((".h", ".hpp", ".cpp", ".cu")):
                continue
            # Commented-out code declares nothing: `// SPARSE_API_DIRECT(Sgemvi, …)` is a
            # function the wrapper does not (yet) provide.
            text = strip_c_comments(repo.show(path))
            found.update(re.findall(r"\b[A-Za-z_]\w*\b", text))
            for pattern, prefix, letters, *suffix in _WRAPPER_MACROS:
                for match in pattern.finditer(text):
                    head, *rest = match.groups()
                    for letter in letters:
                        declared = prefix + head + letter + "".join(rest)
                        found.update({declared, declared + "".join(suffix)})
        tokens[family] = found
        paths[family] = directory
    return WrapperData(repo=repo, tokens=tokens, paths=paths)


def load_scale(docs: GitRepo, wrappers: WrapperData | None) -> ScaleData:
    pages = {key: parse_scale_page(docs.show_if_present(path)) for key, path in SCALE_PAGES.items()}
    ptx_table = docs.show_if_present(SCALE_INLINE_PTX)
    ptx = set(re.findall(r"^\|\s*([a-z][\w.:]*)\s*\|", ptx_table, re.M))
    return ScaleData(
        repo=docs,
        pages=pages,
        changelog_added=parse_scale_changelogs(docs),
        ptx_instructions=ptx,
        wrappers=wrappers,
    )


# --------------------------------------------------------------------------- curated data


def read_seed_names(path: Path) -> list[tuple[str, str]]:
    """(family, name) pairs from seed_names.txt, in file order."""
    seeds: list[tuple[str, str]] = []
    family = None
    for raw in path.read_text("utf-8").splitlines():
        line = raw.strip()
        if not line:
            continue
        header = re.fullmatch(r"#\s*([a-z_]+)", line)
        if header:
            family = header.group(1)
            if family not in FAMILY_TITLES:
                raise SystemExit(f"{path}: unknown family header {line!r}")
            continue
        if line.startswith("#"):
            continue
        if family is None:
            raise SystemExit(f"{path}: name {line!r} appears before any '# family' header")
        seeds.append((family, line))
    return seeds


def load_yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text("utf-8")) or {}


# --------------------------------------------------------------------------- family files
#
# tools/families/<family>.yaml: one curated file per family (or group of names) that no
# parsed source covers, in the shape tools/families/README.md describes. Each becomes
# manual_families-style entries, so the RuleBuilder treats them exactly like those.

FAMILY_FILE_KEYS = frozenset(
    {
        "family",
        "title",
        "sources",
        "defaults",
        "hip_map",
        "hip_declared",
        "unversioned",
        "names",
        "entries",
    }
)
FAMILY_NAME_KINDS = ("function", "type", "enum", "macro", "namespace", "header", "variable")


def _camel(rest: str) -> str:
    """DRIVER_NOT_INITIALIZED -> DriverNotInitialized."""
    return "".join(part[:1] + part[1:].lower() for part in rest.split("_") if part)


def _hip_spellings(name: str, hip_map: dict[str, Any]) -> list[str]:
    """The HIP spellings `name` may have under a family's renaming rule, best first."""
    spellings = []
    for prefix, hip_prefix in hip_map.get("camel_enums", {}).items():
        if name.startswith(prefix):
            spellings.append(hip_prefix + _camel(name[len(prefix) :]))
    for prefix, hip_prefix in hip_map.get("prefixes", {}).items():
        if name.startswith(prefix):
            renamed = hip_prefix + name[len(prefix) :]
            spellings.append(renamed)
            # nvshmemx_float_put_block -> rocshmem_float_put_wg, nvshmemx_barrier_all_block
            # -> rocshmem_wg_barrier_all: the thread-group scope as a suffix or after the prefix
            for suffix, hip_scope in hip_map.get("scopes", {}).items():
                if renamed.endswith(suffix):
                    base = renamed[len(hip_prefix) : -len(suffix)]
                    spellings.append(f"{hip_prefix}{base}_{hip_scope}")
                    spellings.append(f"{hip_prefix}{hip_scope}_{base}")
    return spellings


def family_file_entries(path: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The manual_families-style entries of one family file: its curated `entries`, then
    one entry per enumerated name with the file's defaults (and, under `hip_map`, the
    renamed HIP spelling when `hip_declared` lists it)."""
    unknown = {k for k in data if not k.startswith("x_")} - FAMILY_FILE_KEYS  # x_*: anchors
    if unknown:
        raise SystemExit(f"{path}: unknown key(s) {sorted(unknown)}")
    family = data["family"]
    defaults = data.get("defaults", {})
    inherited = {t: defaults[t] for t in TARGETS if t in defaults}
    entries = [{**inherited, "family": family, **entry} for entry in data.get("entries", [])]
    declared = set(data.get("hip_declared", []))
    # CU_FILE_HANDLE_TYPE_OPAQUE_FD -> hipFileHandleTypeOpaqueFD: acronyms keep their case
    by_folded = {spelling.lower(): spelling for spelling in declared}
    hip_map = data.get("hip_map")
    listed: dict[str, str] = {}
    for kind, names in (data.get("names") or {}).items():
        if kind not in FAMILY_NAME_KINDS:
            raise SystemExit(f"{path}: names: unknown kind {kind!r}")
        for name in names:
            listed.setdefault(name, kind)
            if data.get("unversioned") and kind == "function":
                listed.setdefault(re.sub(r"_v\d+$", "", name), kind)
    for name, kind in listed.items():
        entry: dict[str, Any] = {"cuda": name, "family": family, "kind": kind}
        entry.update({t: defaults[t] for t in TARGETS if t in defaults})
        if hip_map is not None:
            spellings = _hip_spellings(name, hip_map)
            hip = next((s for s in spellings if s in declared), None) or next(
                (by_folded[s.lower()] for s in spellings if s.lower() in by_folded), None
            )
            entry["hip_name"] = hip
            if hip is not None:
                entry["hip"] = hip_map["found"]
        entries.append(entry)
    return entries


def load_family_files(directory: Path) -> dict[str, Any]:
    """Titles, sources and entries of every tools/families/*.yaml, in file-name order."""
    titles: dict[str, str] = {}
    sources: dict[str, Any] = {}
    entries: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        data = load_yaml(path)
        if data.get("title"):
            titles[data["family"]] = data["title"]
        for source_id, body in (data.get("sources") or {}).items():
            if sources.get(source_id, body) != body:
                raise SystemExit(f"{path}: source id {source_id!r} is defined twice, differently")
            sources[source_id] = body
        entries += family_file_entries(path, data)
    return {"titles": titles, "sources": sources, "entries": entries}


def merge_family_files(manual: dict[str, Any], directory: Path) -> dict[str, Any]:
    """manual_families.yaml with the family files' sources and entries added (a name or a
    source id defined in two places is an error); their titles join FAMILY_TITLES."""
    extra = load_family_files(directory)
    FAMILY_TITLES.update({k: v for k, v in extra["titles"].items() if k not in FAMILY_TITLES})
    sources = dict(manual.get("sources") or {})
    for source_id, body in extra["sources"].items():
        if sources.get(source_id, body) != body:
            raise SystemExit(
                f"source id {source_id!r} differs in manual_families.yaml and {directory}"
            )
        sources[source_id] = body
    seen = {entry["cuda"] for entry in manual.get("entries", [])}
    for entry in extra["entries"]:
        if entry["cuda"] in seen:
            raise SystemExit(f"{entry['cuda']!r} is curated twice ({directory})")
        seen.add(entry["cuda"])
    return {
        **manual,
        "sources": sources,
        "entries": [*manual.get("entries", []), *extra["entries"]],
    }


# --------------------------------------------------------------------------- HIP versions
#
# HIPIFY's tables give HIP versions (A/D/R, and E for experimental). From ROCm 2.8 on HIP's
# version is the ROCm release's: HIP's own bin/hipconfig (ROCm/HIP) names base version 2.8
# at tag roc-2.8.0, 2.10 at roc-2.10.0, 3.x at roc-3.x / rocm-3.x, and so on; HIPIFY's
# `hipVersions` enum (src/Statistics.h) is the one scale for the HIP, ROC and MIOpen
# columns alike (HIP_6020 = 6.2.0). Versions from 2.0 on are therefore kept as the ROCm
# release that shipped them. HIP 1.x is HIP's own numbering from before it followed ROCm:
# hipconfig says 1.5 at every tag from roc-1.7.1 to roc-2.7.2 and 2.8 at roc-2.8.0, so
# 1.6-1.9 name no release, and what HIPIFY dates to them reached ROCm by 2.8 at the latest.
# HIPIFY also uses 1.5/1.6 as the floor for APIs much older than that (hipMalloc: 1.5.0),
# so a HIP 1.x *added* version is recorded as none (present in every release portcheck
# tells apart, 5.0 on), and a HIP 1.x deprecation or removal as ROCm 2.8.0.
HIP_1X_RELEASE = "2.8.0"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def rocm_release(hip_version: str | None, *, added: bool = False) -> str | None:
    """HIPIFY's HIP version as the ROCm release that shipped it (HIP 1.x: see above)."""
    if not hip_version:
        return None
    if version_key(hip_version)[0] < 2:
        return None if added else HIP_1X_RELEASE
    return hip_version


def short_release(version: str) -> str:
    """6.2.0 -> 6.2; 6.0.2 stays."""
    return version.removesuffix(".0") if version.count(".") == 2 else version


def dated_between(version: str | None, after: str | None, upto: str) -> bool:
    """True when a release `version` (None: before every release read) lies after the
    release `after` (None: no lower bound) and at or before `upto`."""
    if version is None:
        return after is None
    key = version_key(version)
    return (after is None or version_key(after) < key) and key <= version_key(upto)


def _release_before(releases: list[str], release: str) -> str | None:
    index = releases.index(release)
    return releases[index - 1] if index else None


@dataclass
class HipDates:
    added: str | None
    deprecated: str | None
    removed: str | None
    hipify_added: str | None  # the added version as HIPIFY's table gives it (HIP 1.x too)


# --------------------------------------------------------------------------- resolution


# Where a status came from, recorded per route in each entry's `origin`:
#   source          read off one source (a table row, a listed declaration, a list entry)
#   derived:<rule>  computed by the named rule from facts read off sources (DERIVATIONS)
#   default         the family's or the page's default: no fact about this name was found
ORIGIN_SOURCE = "source"
ORIGIN_DEFAULT = "default"
DERIVATIONS = {
    "curated": "a per-name judgement in tools/*.yaml, with its reason",
    "family-rule": "a per-family pattern rule in tools/target_facts.yaml",
    "runtime-to-driver": "libcudart serves the call with driver calls ZLUDA (does not) implement",
    "driver-counterpart": "a runtime name shares its HIP name with a driver name, which decides",
    "type-use": "a type is supported when a function the route implements takes or returns it",
    "enum-consumer": "an enumerator follows its enum type",
    "compile-time-constant": "a #define constant is compiled into the application",
    "ptx-lowering": "the PTX the intrinsic compiles to, checked against ZLUDA's PTX parser",
    "versioned-name": "a _v2/_ptds ABI name follows the base name it is #defined from",
    "section-unsupported": "SCALE marks the whole documentation section unsupported",
    "absent-from-wrapper": "not declared in SCALE's published wrapper sources",
    "compiled-into-ptx": "a device-side type or constant reaches ZLUDA only as compiled PTX",
}


# Graphics-interop names (Direct3D, VDPAU, OpenGL, EGL): see _zluda_runtime_by_name.
GRAPHICS_INTEROP = r"D3D\d+|VDPAU|Vdpau|WGL|GL(?=[A-Z])|(?<=Graphics)GL|EGL|Egl"
# SCALE's enum listings: see RuleBuilder._scale_enumerator.
SCALE_ENUM_BASELINE = "12.0"


@dataclass
class Verdict:
    status: str
    source: str  # a source id of the family file, or "inferred: ..."
    note: str | None = None
    origin: str = ""  # see ORIGIN_*; empty: "source" for a source id, else derived:curated

    def origin_label(self) -> str:
        if self.origin:
            return self.origin
        return "derived:curated" if self.source.startswith("inferred:") else ORIGIN_SOURCE


def derived(rule: str) -> str:
    assert rule in DERIVATIONS, rule
    return f"derived:{rule}"


@dataclass
class Entry:
    cuda: str
    family: str
    kind: str
    hip: str | None
    verdicts: dict[str, Verdict]
    since: str | None = None
    deprecated: str | None = None
    removed: str | None = None
    hip_added: str | None = None
    hip_deprecated: str | None = None
    hip_removed: str | None = None
    hip_experimental: bool = False
    notes: list[str] = field(default_factory=list)


class SourceRegistry:
    """Provenance ids used by one family file, with their {project, ref, path}."""

    def __init__(self) -> None:
        self.sources: dict[str, dict[str, str]] = {}

    def use(self, source_id: str, body: dict[str, str]) -> str:
        existing = self.sources.get(source_id)
        if existing is not None and existing != body:
            raise RuntimeError(f"source id {source_id!r} used with two bodies: {existing} / {body}")
        self.sources[source_id] = body
        return source_id


class RuleBuilder:
    """Turns (family, name) pairs into entries, one target at a time."""

    def __init__(
        self,
        hipify: HipifyData,
        zluda: ZludaData,
        scale: ScaleData,
        manual: dict[str, Any],
        facts: dict[str, Any],
        headers: HipHeaders | None = None,
    ):
        self.hipify = hipify
        self.zluda = zluda
        self.scale = scale
        self.headers = headers if headers is not None and headers.releases else None
        self.header_conflicts: list[str] = []
        self.manual_sources: dict[str, dict[str, str]] = manual.get("sources", {})
        self.manual_entries = {e["cuda"]: e for e in manual.get("entries", [])}
        self.facts = facts
        self.fact_sources: dict[str, dict[str, str]] = facts.get("sources", {})
        self.overrides: dict[str, dict[str, Any]] = facts.get("overrides", {})
        self.registries: dict[str, SourceRegistry] = defaultdict(SourceRegistry)
        self._zluda_memo: dict[tuple[str, str], Verdict] = {}
        self._zluda_types: dict[str, str] | None = None
        self._driver_by_hip: dict[str, list[str]] | None = None
        self._prototypes: dict[str, set[str]] | None = None

    # ---- provenance helpers

    def _src(self, family: str, source_id: str, body: dict[str, str]) -> str:
        return self.registries[family].use(source_id, body)

    def _repo_for(self, key: str) -> GitRepo | None:
        return {
            "hipify": self.hipify.repo,
            "zluda": self.zluda.repo,
            "scale-docs": self.scale.repo,
            "scale-wrappers": self.scale.wrappers.repo if self.scale.wrappers else None,
        }.get(key)

    def _curated_src(self, family: str, ref: str) -> str:
        """Resolve a source named in the curated files: an `inferred: ...` string passes
        through; an id from their `sources` tables becomes a family source. A body with
        `repo:` points into one of the parsed repositories (its commit is filled in and
        the path checked); other bodies carry their own project/ref/path."""
        if ref.startswith("inferred:"):
            return ref
        body = self.manual_sources.get(ref) or self.fact_sources.get(ref)
        if body is None:
            raise SystemExit(f"curated data names unknown source id {ref!r}")
        body = {k: str(v) for k, v in body.items()}
        if "repo" in body:
            repo = self._repo_for(body["repo"])
            if repo is None:
                fallback = body.get("fallback_ref")
                if not fallback:
                    raise SystemExit(f"source {ref!r} needs the {body['repo']} repository")
                body = {"project": body["project"], "ref": fallback, "path": body["path"]}
            else:
                for path in body["path"].split(", "):
                    if not repo.exists(path) and not any(f.startswith(path) for f in repo.files()):
                        raise SystemExit(f"source {ref!r}: {path} not found in {repo.project}")
                body = repo.source(body["path"])
        return self._src(family, ref, body)

    # ---- entry assembly

    def build(self, family: str, name: str) -> Entry:
        manual = self.manual_entries.get(name, {})
        override = self.overrides.get(name, {})
        row = self.hipify.find(family, name)
        kind = (
            manual.get("kind")
            or override.get("kind")
            or self.hipify.kinds.get(name)
            or self._guess_kind(name, row)
        )
        entry = Entry(cuda=name, family=family, kind=kind, hip=None, verdicts={})
        if row is not None:
            entry.since = row.cuda.get("A")
            entry.deprecated = row.cuda.get("D")
            entry.removed = row.cuda.get("R")
        for key in ("since", "deprecated", "removed"):
            if manual.get(key):
                setattr(entry, key, str(manual[key]))
        entry.hip, entry.verdicts["hip"] = self.resolve_hip(family, name, row, manual, override)
        curated = bool(manual.get("hip") or override.get("hip"))
        if self.headers is not None and (
            family in HEADER_FAMILIES or kind in HEADER_KINDS.get(family, ())
        ):
            self.apply_hip_headers(entry, row, curated)
        if entry.hip is not None:
            self.date_hip_versions(entry, row, curated)
            for body in (manual, override):
                if body.get("hip_added"):  # a release later than the headers read
                    entry.hip_added = str(body["hip_added"])
        entry.verdicts["zluda"] = self.resolve_zluda(family, name, kind, manual)
        entry.verdicts["scale"] = self.resolve_scale(family, name, kind, manual)
        for body in (manual, override):
            if body.get("notes"):
                entry.notes.append(body["notes"])
        return entry

    @staticmethod
    def _guess_kind(name: str, row: HipifyRow | None) -> str:
        if name.endswith((".h", ".cuh", ".hpp", "/")):
            return "header"
        if row is not None and "type" in row.section.lower():
            return "enum" if re.fullmatch(r"[A-Z0-9_]+", name) else "type"
        if re.fullmatch(r"[A-Z][A-Z0-9_]+", name):
            return "enum"
        return "function"

    def _curated_verdict(
        self, body: dict[str, Any] | None, family: str, origin: str = ""
    ) -> Verdict | None:
        """A verdict written in tools/*.yaml. Its origin: `source` when it cites a source
        id, derived:curated when it gives an `inferred:` reason, unless `origin` says
        otherwise (a family default, a pattern rule)."""
        if not body:
            return None
        source = self._curated_src(family, body["source"])
        return Verdict(body["status"], source, body.get("note"), origin)

    def _matching_rule(
        self,
        rules: dict[str, Any] | list[dict[str, Any]],
        family: str,
        name: str,
        origin: str = "",
    ) -> Verdict | None:
        """The first curated rule that applies to `name`. A rule may limit itself with
        `match` (a full-match regex on the name) and/or `section` (a heading of the
        name's HIPIFY table); a bare mapping is one rule that always applies."""
        for rule in [rules] if isinstance(rules, dict) else rules:
            if "match" in rule and not re.fullmatch(rule["match"], name):
                continue
            if "section" in rule:
                row = self.hipify.find(family, name)
                if row is None or rule["section"] not in row.section:
                    continue
            return self._curated_verdict(rule, family, origin or derived("family-rule"))
        return None

    def _library(self, family: str) -> dict[str, Any]:
        return self.facts.get("libraries", {}).get(family, {})

    # ---- HIP

    def resolve_hip(
        self,
        family: str,
        name: str,
        row: HipifyRow | None,
        manual: dict[str, Any],
        override: dict[str, Any],
    ) -> tuple[str | None, Verdict]:
        """Curated verdicts first, then HIPIFY (tables, or its include map for headers),
        then the family default (e.g. rocThrust keeps Thrust's names)."""
        curated = self._curated_verdict(manual.get("hip") or override.get("hip"), family)
        if curated is not None:
            if "hip_name" in manual:
                return manual["hip_name"], curated
            if "hip_name" in override:
                return override["hip_name"], curated
            if row is not None:
                return row.hip, curated
            same_name = self._library(family).get("hip", {}).get("same_name")
            return (name if same_name else None), curated
        if family == "headers" and name in self.hipify.includes:
            return self._hip_header(family, name)
        if row is not None:
            return self._hip_from_row(family, name, row)
        default = self._library(family).get("hip")
        if default:
            hip_name = manual.get("hip_name", name if default.get("same_name") else None)
            return hip_name, self._curated_verdict(default, family, ORIGIN_DEFAULT)
        return None, Verdict(
            "unknown", "inferred: not found in HIPIFY's CUDA->HIP tables", origin=ORIGIN_DEFAULT
        )

    # ---- HIP's own headers

    def _header_spellings(
        self, family: str, name: str, row: HipifyRow | None, hip: str | None, curated: bool
    ) -> list[tuple[str, bool]]:
        """(spelling, FNUZ-only?) pairs to look for in HIP's headers, best first: the HIP
        name the table gives, CUDA's own spelling, the spelling HIPIFY's src maps give
        (also for entries they flag UNSUPPORTED); for fp8 names, the _fnuz variant."""
        if curated:
            return [(hip or name, False)]
        exact: list[str] = []
        if family != "device":
            # A runtime enumerator or type: HIP's spelling of the name itself
            # (cudaMemoryTypeUnregistered -> hipMemoryTypeUnregistered). Not the spelling
            # HIPIFY's maps give an unsupported name: cudaDevAttrGpuPciDeviceId (vendor
            # and device id) maps to hipDeviceAttributePciDeviceId (the bus's device
            # number), another quantity.
            renamed = "hip" + name[len("cuda") :] if name.startswith("cuda") else None
            candidates = (row.hip if row else None, renamed)
        else:
            candidates = (row.hip if row else None, name, self.hipify.map_spellings.get(name))
        for spelling in candidates:
            if spelling and spelling not in exact:
                exact.append(spelling)
        pairs = [(s, False) for s in exact]
        for spelling in exact:
            if re.search(r"fp8|e4m3|e5m2", spelling, re.I):
                suffix = "_FNUZ" if spelling.isupper() else "_fnuz"
                pairs.append((spelling + suffix, True))
        return pairs

    def _header_source(self, family: str, where: Any) -> str:
        stem = where.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        source_id = f"hip_headers_{where.tag.removeprefix('rocm-')}_{stem}"
        body = {
            "project": where.project,
            "ref": where.commit,
            "path": where.path,
            "note": where.tag,
        }
        return self._src(family, source_id, body)

    @staticmethod
    def _bf16_only(spelling: str, wheres: list[Any]) -> bool:
        """True for a half-precision intrinsic (__hmax2, h2sin) that HIP declares only in
        its bfloat16 header: CUDA declares these names for __half (cuda_fp16.h) and for
        __nv_bfloat16 (cuda_bf16.h), so HIP lacks the __half overload."""
        if re.search(r"bf16|bfloat16", spelling, re.I) or not spelling.startswith(("__h", "h")):
            return False
        return all(re.search(r"bf16|bfloat16", w.path) for w in wheres)

    def _fp8_fnuz_only(self, name: str) -> bool:
        """An fp8 name, in a newest release whose fp8 types are all FNUZ (ROCm 6.2). The
        storage typedefs are plain integers, the same whatever the encoding."""
        assert self.headers is not None
        newest = self.headers.releases[-1].declared
        return (
            re.search(r"fp8|e4m3|e5m2", name, re.I) is not None
            and not name.endswith("storage_t")
            and "__hip_fp8_e4m3_fnuz" in newest
            and "__hip_fp8_e4m3" not in newest
        )

    @staticmethod
    def _primary(spelling: str, wheres: list[Any]) -> Any:
        """The declaration to cite: a bf16 header only for a bf16 name."""
        if re.search(r"bf16|bfloat16", spelling, re.I):
            return wheres[0]
        return next((w for w in wheres if not re.search(r"bf16|bfloat16", w.path)), wheres[0])

    def apply_hip_headers(self, entry: Entry, row: HipifyRow | None, curated: bool) -> None:
        """Let HIP's headers decide the HIP verdict of a device name: a spelling declared in
        the newest release read is supported (the headers win over HIPIFY's table), and the
        releases date its addition. Curated verdicts stand (they record semantic
        differences); they only get the dates."""
        assert self.headers is not None
        chosen: tuple[str, bool, History] | None = None
        spellings = self._header_spellings(entry.family, entry.cuda, row, entry.hip, curated)
        for spelling, fnuz in spellings:
            history = self.headers.history(spelling)
            if history is None:
                continue
            if history.newest:
                chosen = (spelling, fnuz, history)
                break
            chosen = chosen or (spelling, fnuz, history)
        if chosen is None:
            return
        spelling, fnuz, history = chosen
        verdict = entry.verdicts["hip"]
        newest_tag = self.headers.releases[-1].tag
        if not history.newest:
            # Gone from HIP's own headers is not gone from HIP: ROCm 6.0 dropped the device
            # math of amd_math_functions.h, long compiled out under clang's HIP wrapper
            # headers (which declare it). Without those headers a removal cannot be told
            # from a move, so a vanished name is left to the other sources.
            return
        if curated:
            if verdict.status in ("unsupported", "unknown"):
                self.header_conflicts.append(
                    f"{entry.cuda}: curated HIP verdict {verdict.status}, but {spelling} is "
                    f"declared in {history.newest[0].path} at {newest_tag}"
                )
            return
        where = self._primary(spelling, history.newest)
        notes = []
        status = "supported"
        if fnuz:
            status = "partial"
            notes.append(
                f"HIP declares only {spelling}, the FNUZ fp8 encoding of gfx94x (other "
                "exponent bias, no negative zero or infinity), not the OCP encoding "
                "CUDA's type uses"
            )
        elif self._fp8_fnuz_only(entry.cuda):
            status = "partial"
            notes.append(
                f"HIP's fp8 header at {where.tag} has only the FNUZ fp8 encodings of gfx94x "
                "(no __hip_fp8_e4m3), while CUDA's fp8 is the OCP encoding"
            )
        elif (
            entry.family != "device"
            and (row is None or row.hip is None)
            and FOREIGN_INTEROP.search(spelling)
        ):
            status = "partial"
            notes.append(
                f"HIP's headers at {where.tag} declare {spelling}, but it names another "
                "platform's interop (NVIDIA's NvSci, Direct3D, Windows handles): declared for "
                "source compatibility, with no AMD implementation documented"
            )
        elif self._bf16_only(spelling, history.newest):
            status = "partial"
            notes.append(
                f"HIP declares {spelling} only in {where.path.rsplit('/', 1)[-1]}, for "
                "__hip_bfloat16 operands; the __half overload of cuda_fp16.h is missing"
            )
        if row is None or row.hip is None:
            notes.append(
                f"HIPIFY's table says it has no HIP equivalent, but HIP's headers at "
                f"{where.tag} declare {spelling}; the headers win"
            )
        entry.hip = spelling
        entry.verdicts["hip"] = Verdict(
            status, self._header_source(entry.family, where), "; ".join(notes) or None
        )

    # ---- HIP versions

    def date_hip_versions(self, entry: Entry, row: HipifyRow | None, curated: bool) -> None:
        """The ROCm releases that added, deprecated and removed `entry.hip`, and whether
        HIPIFY marks it experimental, from HIPIFY's table (when the table's HIP name is
        the entry's); where HIP's headers at the release tags disagree, the headers win and
        the note says so (reconcile_with_headers). An uncurated verdict follows: removed
        -> unsupported, experimental -> partial; deprecated only adds a note (the name
        still builds and runs). Curated verdicts keep their status; they get the dates."""
        assert entry.hip is not None
        hipify = row.hip_versions if row is not None and row.hip == entry.hip else {}
        dates = HipDates(
            added=rocm_release(hipify.get("A"), added=True),
            deprecated=rocm_release(hipify.get("D")),
            removed=rocm_release(hipify.get("R")),
            hipify_added=hipify.get("A"),
        )
        notes: list[str] = []
        if self.headers is not None:
            dates = self.reconcile_with_headers(entry.hip, dates, notes)
        entry.hip_added = dates.added
        entry.hip_deprecated = dates.deprecated
        entry.hip_removed = dates.removed
        entry.hip_experimental = bool(hipify.get("E"))
        verdict = entry.verdicts["hip"]
        status = verdict.status
        if not curated:
            if dates.removed:
                status = "unsupported"
                notes.append(f"removed in ROCm {short_release(dates.removed)}")
            elif entry.hip_experimental and status == "supported":
                status = "partial"
        if entry.hip_experimental:
            notes.append(f"HIPIFY marks {entry.hip} experimental (HIP {hipify['E']})")
        if dates.deprecated and not dates.removed:
            notes.append(f"deprecated in ROCm {short_release(dates.deprecated)}")
        if notes or status != verdict.status:
            note = "; ".join(n for n in (verdict.note, *notes) if n) or None
            entry.verdicts["hip"] = Verdict(status, verdict.source, note, verdict.origin)

    def reconcile_with_headers(self, spelling: str, dates: HipDates, notes: list[str]) -> HipDates:
        """Check HIPIFY's dates for `spelling` against the releases whose headers were
        read (the first of each minor release from 5.0, and the newest). Headers decide
        when they declare the name: HIPIFY's added version must fall after the last release
        read without it and at or before the first with it; a name HIPIFY calls removed
        must be gone from the headers of that release. A name the headers never declare
        is left to HIPIFY (its header may not be among those read), and so is one that
        vanished without HIPIFY calling it removed (ROCm 6.0 moved device math into the
        compiler's own headers: a move, not a removal)."""
        assert self.headers is not None
        releases = [r.version for r in self.headers.releases]
        present = [r.version for r in self.headers.releases if spelling in r.declared]
        if not present:
            return dates
        first = releases.index(present[0])
        header_added = None if first == 0 else releases[first]
        before = releases[first - 1] if first else None
        added, deprecated, removed = dates.added, dates.deprecated, dates.removed
        if not dates.hipify_added:
            added = header_added
        elif not dated_between(dates.added, before, releases[first]):
            seen = (
                f"first declare it at rocm-{releases[first]} (not at rocm-{before})"
                if before
                else f"already declare it at rocm-{releases[0]}"
            )
            notes.append(
                f"HIPIFY's table dates {spelling} to HIP {dates.hipify_added}, but HIP's "
                f"headers {seen}; the headers win"
            )
            added = header_added
        newest = releases[-1]
        if removed and version_key(removed) <= version_key(newest):
            if newest in present:
                notes.append(
                    f"HIPIFY's table says {spelling} was removed in HIP {removed}, but HIP's "
                    f"headers at rocm-{newest} still declare it; the headers win"
                )
                removed = None
            else:
                last = releases.index(present[-1])
                gone = releases[last + 1]
                if not dated_between(removed, releases[last], gone):
                    notes.append(
                        f"HIPIFY's table says {spelling} was removed in HIP {removed}, but "
                        f"HIP's headers last declare it at rocm-{releases[last]} and no longer "
                        f"at rocm-{gone}; the headers win"
                    )
                    removed = gone
        marked = self._header_deprecation(spelling)
        if marked is not None and (
            deprecated is None
            or not dated_between(deprecated, _release_before(releases, marked), marked)
        ):
            said = f"deprecates it in HIP {deprecated}" if deprecated else "does not deprecate it"
            notes.append(
                f"HIPIFY's table {said}, but HIP's headers mark {spelling} deprecated from "
                f"rocm-{marked}; the headers win"
            )
            deprecated = marked
        return HipDates(added, deprecated, removed, dates.hipify_added)

    def _header_deprecation(self, spelling: str) -> str | None:
        """The first release read whose every declaration of `spelling` is marked
        deprecated (a header with no such mark is silent, not a contradiction)."""
        assert self.headers is not None
        for release in self.headers.releases:
            wheres = release.declared.get(spelling)
            if wheres and all(w.deprecated for w in wheres):
                return release.version
        return None

    def _hip_header(self, family: str, name: str) -> tuple[str | None, Verdict]:
        hip, roc = self.hipify.includes[name]
        source = self._src(family, "hipify_include", self.hipify.repo.source(HIPIFY_INCLUDE_MAP))
        if name == "cudnn.h" and roc:
            note = (
                f"HIPIFY emits the MIOpen header given here with --miopen, {hip} (hipDNN) "
                "with --hipdnn"
                if self.hipify.hipdnn_dropped
                else f"HIPIFY's default target is {hip} (hipDNN); "
                "with --roc it emits the MIOpen header given here"
            )
            return roc, Verdict("supported", source, note)
        if not hip:
            return None, Verdict(
                "supported", source, "not needed under HIP; HIPIFY drops the include"
            )
        return hip, Verdict("supported", source)

    def _hip_from_row(self, family: str, name: str, row: HipifyRow) -> tuple[str | None, Verdict]:
        source = self._src(
            family,
            f"hipify_{row.table}",
            self.hipify.repo.source(self.hipify.table_path(row.table)),
        )
        notes = []
        if row.table == "dnn":
            default = self.hipify.hipdnn_names.get(name)
            if default and self.hipify.hipdnn_dropped:
                notes.append(
                    "HIPIFY translates cuDNN to MIOpen (given here) with --miopen; its hipDNN "
                    f"mapping ({default}) needs --hipdnn"
                )
            elif default:
                notes.append(
                    f"HIPIFY's default cuDNN target is hipDNN ({default}); "
                    "the MIOpen mapping (hipify-clang --roc) is given here"
                )
        if row.hip is None:
            return None, Verdict("unsupported", source, "; ".join(notes) or None)
        # removed / experimental / deprecated: see date_hip_versions
        return row.hip, Verdict("supported", source, "; ".join(notes) or None)

    # ---- ZLUDA

    def resolve_zluda(self, family: str, name: str, kind: str, manual: dict[str, Any]) -> Verdict:
        verdict = self._curated_verdict(
            manual.get("zluda") or self.overrides.get(name, {}).get("zluda"), family
        )
        if verdict is not None:
            return verdict
        if family == "driver":
            return self._zluda_driver(family, name, kind)
        if family == "runtime":
            return self._zluda_runtime(family, name, kind)
        if family == "device":
            return self._zluda_device(family, name, kind)
        if family in self.zluda.libraries:
            return self._zluda_library(family, name, kind)
        library = self._library(family)
        by_name = self._matching_rule(library.get("zluda_by_name", []), family, name)
        default = by_name or self._curated_verdict(library.get("zluda"), family, ORIGIN_DEFAULT)
        return default or Verdict(
            "unknown", "inferred: no ZLUDA source covers this family", origin=ORIGIN_DEFAULT
        )

    def _carry(self, verdict: Verdict, origin_family: str, family: str) -> str:
        """`verdict`'s source, made usable in `family`'s file: a source id another
        family's file declared is declared in this one too."""
        if verdict.source.startswith("inferred:") or origin_family == family:
            return verdict.source
        body = self.registries[origin_family].sources[verdict.source]
        return self._src(family, verdict.source, body)

    def _zluda_verdict_of(self, family: str, name: str) -> Verdict:
        """The ZLUDA verdict of another name (a consumer, an enum type, a counterpart),
        computed once."""
        key = (family, name)
        found = self._zluda_memo.get(key)
        if found is None:
            manual = self.manual_entries.get(name, {})
            kind = (
                manual.get("kind")
                or self.overrides.get(name, {}).get("kind")
                or self.hipify.kinds.get(name)
                or self._guess_kind(name, self.hipify.find(family, name))
            )
            found = self._zluda_memo[key] = self.resolve_zluda(family, name, kind, manual)
        return found

    def _zluda_used_types(self) -> dict[str, str]:
        """Type -> a function ZLUDA implements that takes (or returns) it; enum types
        passed as plain integers count for the calls `zluda_integer_enums` names."""
        if self._zluda_types is None:
            implemented = self.zluda.implemented()
            bindings = self.zluda.bindings
            used = bindings.reachable(implemented)
            for enum, calls in self.facts.get("zluda_integer_enums", {}).items():
                served = [c for c in calls if normalize_versioned(c) in implemented]
                if served and enum not in used:
                    for name in {enum, *bindings.aliases.get(enum, ())}:
                        used.setdefault(name, served[0])
            self._zluda_types = used
        return self._zluda_types

    def _zluda_bindings_source(self, family: str) -> str:
        body = self.zluda.repo.source(f"{ZLUDA_BINDINGS_MACROS}, {ZLUDA_BINDINGS_TYPES}")
        return self._src(family, "zluda_bindings", body)

    def _zluda_declared_item(self, family: str, name: str, kind: str) -> Verdict:
        """A type, enumerator or constant of an API ZLUDA exports (driver, cuBLAS, …):
        usable only when a function ZLUDA implements takes it (or, for an enumerator, its
        enum type); device and launch attributes are checked against the code that
        answers them."""
        if name.startswith("CU_DEVICE_ATTRIBUTE_") and self.zluda.device_attributes.answered:
            return self._zluda_device_attribute(family, name)
        if name.startswith("CU_LAUNCH_ATTRIBUTE_") and self.zluda.launch_attributes:
            return self._zluda_launch_attribute(family, name)
        bindings = self.zluda.bindings
        owner = bindings.enum_owner.get(name) or self.hipify.enum_owner.get(name)
        stubbed = family in self.zluda.libraries and not self.zluda.libraries[family]
        if (kind == "macro" or (name in bindings.constants and owner is None)) and stubbed:
            path = self.zluda.library_paths[family]
            source = self._src(family, f"{path.split('/')[0]}_crate", self.zluda.repo.source(path))
            note = "a constant of an API whose every function ZLUDA's replacement stubs"
            return Verdict("unsupported", source, note, derived("compile-time-constant"))
        if kind == "macro" or (name in bindings.constants and owner is None):
            return Verdict(
                "supported",
                "inferred: a #define constant, compiled into the application",
                origin=derived("compile-time-constant"),
            )
        if owner is not None and kind != "type":
            verdict = self._zluda_type(family, owner)
            return Verdict(
                verdict.status,
                verdict.source,
                f"its enum type {owner}: {verdict.note}",
                derived("enum-consumer"),
            )
        return self._zluda_type(family, name)

    def _zluda_type(self, family: str, name: str) -> Verdict:
        used = self._zluda_used_types()
        source = self._zluda_bindings_source(family)
        if name in used:
            note = f"taken or returned by {used[name]}, which ZLUDA implements"
            return Verdict("supported", source, note, derived("type-use"))
        bindings = self.zluda.bindings
        if name in bindings.declared or name in bindings.mentioned():
            note = "no function ZLUDA implements takes or returns it"
        else:
            note = "ZLUDA's CUDA bindings do not declare it, so no function ZLUDA exports takes it"
        return Verdict("unsupported", source, note, derived("type-use"))

    def _zluda_device_attribute(self, family: str, name: str) -> Verdict:
        source = self._src(
            family,
            "zluda_device_attributes",
            self.zluda.repo.source(ZLUDA_DEVICE_ATTRIBUTES),
        )
        answered = self.zluda.device_attributes.answered
        if name not in answered:
            note = "ZLUDA's cuDeviceGetAttribute returns CUDA_ERROR_INVALID_VALUE for it"
            return Verdict("unsupported", source, note, ORIGIN_SOURCE)
        fixed = answered[name]
        note = f"ZLUDA's cuDeviceGetAttribute answers a fixed {fixed}" if fixed else None
        return Verdict("supported", source, note, ORIGIN_SOURCE)

    def _zluda_launch_attribute(self, family: str, name: str) -> Verdict:
        source = self._src(family, "zluda_launch", self.zluda.repo.source(ZLUDA_LAUNCH))
        accepted = sorted(self.zluda.launch_attributes)
        if name in accepted:
            note = (
                "ZLUDA's cuLaunchKernelEx accepts this launch attribute only with the value "
                "its check allows, and no other"
            )
            return Verdict("partial", source, note, ORIGIN_SOURCE)
        note = (
            "ZLUDA's cuLaunchKernelEx returns CUDA_ERROR_NOT_SUPPORTED for every launch "
            f"attribute but {', '.join(accepted)}"
        )
        return Verdict("unsupported", source, note, ORIGIN_SOURCE)

    def _zluda_driver(self, family: str, name: str, kind: str) -> Verdict:
        if kind != "function":
            return self._zluda_declared_item(family, name, kind)
        source = self._src(family, "zluda_driver_list", self.zluda.repo.source(ZLUDA_DRIVER_LIST))
        if normalize_versioned(name) in self.zluda.driver:
            return Verdict("supported", source)
        return Verdict(
            "unsupported", source, "ZLUDA exports it but it returns CUDA_ERROR_NOT_SUPPORTED"
        )

    def _driver_counterpart(self, name: str) -> str | None:
        """The driver name HIPIFY maps to the same HIP name as the runtime name `name`
        (cudaDevAttrWarpSize and CU_DEVICE_ATTRIBUTE_WARP_SIZE are both
        hipDeviceAttributeWarpSize), of the same kind."""
        row = self.hipify.find("runtime", name)
        hip = (row.hip if row else None) or self.hipify.map_spellings.get(name)
        if not hip:
            return None
        if self._driver_by_hip is None:
            index: dict[str, list[str]] = defaultdict(list)
            for driver_name, driver_row in self.hipify.rows.get("driver", {}).items():
                spelling = driver_row.hip or self.hipify.map_spellings.get(driver_name)
                if spelling:
                    index[spelling].append(driver_name)
            self._driver_by_hip = dict(index)
        kind = self.hipify.kinds.get(name)
        candidates = self._driver_by_hip.get(hip, [])
        same_kind = [c for c in candidates if self.hipify.kinds.get(c) == kind]
        return (same_kind or candidates or [None])[0]

    def _runtime_prototypes(self) -> dict[str, set[str]]:
        """Runtime function -> the names its documented prototype mentions, read from
        SCALE's runtime API diff (which lists NVIDIA's declarations, present or not)."""
        if self._prototypes is None:
            page = self.scale.pages["runtime"]
            found = dict(page.signatures(present=True))
            for name, words in page.signatures(present=False).items():
                found[name] = found.get(name, set()) | words
            self._prototypes = found
        return self._prototypes

    def _zluda_runtime(self, family: str, name: str, kind: str) -> Verdict:
        if kind == "function" or name in self.facts.get("zluda_runtime_to_driver", {}):
            return self._zluda_runtime_call(family, name, kind)
        counterpart = self._driver_counterpart(name)
        if counterpart is not None:
            verdict = self._zluda_verdict_of("driver", counterpart)
            note = f"as its driver counterpart {counterpart}" + (
                f": {verdict.note}" if verdict.note else ""
            )
            source = self._carry(verdict, "driver", family)
            return Verdict(verdict.status, source, note, derived("driver-counterpart"))
        if kind == "macro":
            return Verdict(
                "supported",
                "inferred: a #define constant, compiled into the application",
                origin=derived("compile-time-constant"),
            )
        owner = self.hipify.enum_owner.get(name)
        if owner is not None and kind != "type":
            verdict = self._zluda_verdict_of("runtime", owner)
            note = f"its enum type {owner}" + (f": {verdict.note}" if verdict.note else "")
            return Verdict(verdict.status, verdict.source, note, derived("enum-consumer"))
        users = sorted(f for f, words in self._runtime_prototypes().items() if name in words)
        if users:
            served = [
                f
                for f in users
                if self._zluda_verdict_of("runtime", f).status in ("supported", "partial")
            ]
            source = self._src(
                family, "scale_runtime", self.scale.repo.source(SCALE_PAGES["runtime"])
            )
            if served:
                note = (
                    f"taken by {served[0]} (prototype as SCALE's runtime diff lists it), "
                    "which ZLUDA serves"
                )
                return Verdict("supported", source, note, derived("type-use"))
            note = f"only runtime calls ZLUDA does not serve take it ({', '.join(users[:3])})"
            return Verdict("unsupported", source, note, derived("type-use"))
        return Verdict(
            "supported",
            "inferred: runtime type/constant compiled into the application and NVIDIA's "
            "libcudart; no documented runtime call takes it",
            origin=ORIGIN_DEFAULT,
        )

    def _zluda_runtime_call(self, family: str, name: str, kind: str) -> Verdict:
        mapping = self.facts.get("zluda_runtime_to_driver", {})
        if name not in mapping:
            return self._zluda_runtime_by_name(name)
        spec = mapping[name]
        drivers = spec if isinstance(spec, list) else spec.get("drivers", [])
        note = None if isinstance(spec, list) else spec.get("note")
        rule = derived("runtime-to-driver")
        if not drivers:
            return Verdict(
                "supported",
                "inferred: handled inside NVIDIA's libcudart without a driver call",
                note,
                rule,
            )
        have = [d for d in drivers if normalize_versioned(d) in self.zluda.driver]
        lacking = [d for d in drivers if d not in have]
        mapped = ", ".join(drivers)
        if not lacking:
            return Verdict(
                "supported",
                f"inferred: libcudart calls {mapped}, implemented in ZLUDA's {ZLUDA_DRIVER_LIST}",
                note,
                rule,
            )
        status = "partial" if have else "unsupported"
        reason = (
            f"inferred: libcudart calls {mapped}; ZLUDA's {ZLUDA_DRIVER_LIST} does not "
            f"implement {', '.join(lacking)}"
        )
        return Verdict(status, reason, note, rule)

    def _device_lowering(self, name: str) -> Any:
        """The recorded PTX lowering of a device name: its own entry in
        `zluda_device_ptx`, else what nvcc was seen to emit for it
        (`zluda_device_ptx_nvcc`), else the first `zluda_device_ptx_patterns` rule that fits."""
        spec = self.facts.get("zluda_device_ptx", {}).get(name)
        if spec is not None:
            return spec
        observed = self.facts.get("zluda_device_ptx_nvcc", {})
        if name in observed.get("lowerings", {}):
            return {"ptx": observed["lowerings"][name], "compiler": observed.get("compiler")}
        for rule in self.facts.get("zluda_device_ptx_patterns", []):
            match = re.fullmatch(rule["match"], name)
            if match:
                ptx = [expand_ptx(template, match) for template in rule["ptx"]]
                return {"ptx": ptx, "note": rule.get("note")}
        return None

    def _zluda_runtime_by_name(self, name: str) -> Verdict:
        """A runtime call with no recorded mapping: libcudart implements cudaFoo with the
        driver's cuFoo when the driver API declares a function of that name. A graphics
        interop call whose driver counterpart ZLUDA's bindings do not even declare
        (Direct3D: ZLUDA's bindings come from cuda.h) cannot be served."""
        rule = derived("runtime-to-driver")
        driver = "cu" + name[len("cuda") :] if name.startswith("cuda") else None
        if driver is None or normalize_versioned(driver) not in self.zluda.driver_declared:
            if driver is not None and re.search(GRAPHICS_INTEROP, name):
                return Verdict(
                    "unsupported",
                    f"inferred: a graphics-interop call; ZLUDA's driver bindings "
                    f"(cuda_macros/src/cuda.rs) declare no {driver} for libcudart to call",
                    origin=rule,
                )
            return Verdict(
                "unknown",
                "inferred: no runtime->driver mapping recorded for this call",
                origin=ORIGIN_DEFAULT,
            )
        if normalize_versioned(driver) in self.zluda.driver:
            return Verdict(
                "supported",
                f"inferred: libcudart serves it with the same-named driver call {driver}, "
                f"which ZLUDA's {ZLUDA_DRIVER_LIST} implements",
                origin=rule,
            )
        return Verdict(
            "unsupported",
            f"inferred: libcudart serves it with the same-named driver call {driver}, "
            f"which ZLUDA's {ZLUDA_DRIVER_LIST} does not implement",
            origin=rule,
        )

    def _zluda_device(self, family: str, name: str, kind: str) -> Verdict:
        rules = self._library(family).get("zluda_by_name", [])
        by_name = self._matching_rule(rules, family, name)
        if by_name is not None:
            return by_name
        spec = self._device_lowering(name)
        if spec is None:
            if kind in ("type", "macro", "enum", "variable"):
                return Verdict(
                    "supported",
                    "inferred: compile-time construct; it reaches ZLUDA "
                    "only as ordinary PTX, which ZLUDA recompiles",
                    origin=derived("compiled-into-ptx"),
                )
            return Verdict(
                "unknown",
                "inferred: no PTX lowering recorded for this intrinsic",
                origin=ORIGIN_DEFAULT,
            )
        ptx = spec if isinstance(spec, list) else spec.get("ptx", [])
        note = None if isinstance(spec, list) else spec.get("note")
        compiler = None if isinstance(spec, list) else spec.get("compiler")
        missing = []
        for item in ptx:
            if item.startswith("%"):
                if item not in self.zluda.special_registers:
                    missing.append(item)
            elif not self.zluda.ptx.accepts(item):
                missing.append(item)
        rule = derived("ptx-lowering")
        seen = f" (as {compiler} emits it)" if compiler else ""
        if not ptx:
            return Verdict(
                "supported",
                "inferred: lowers to plain PTX arithmetic, which ZLUDA recompiles",
                note,
                rule,
            )
        uses_sreg = any(p.startswith("%") for p in ptx)
        source = self._src(
            family,
            "zluda_special_registers" if uses_sreg else "zluda_ptx_parser",
            self.zluda.repo.source(ZLUDA_SPECIAL_REGISTERS if uses_sreg else ZLUDA_PTX_PARSER),
        )
        if not missing:
            registers = [p for p in ptx if p.startswith("%")]
            instructions = [p for p in ptx if not p.startswith("%")]
            lowering = "; ".join(
                text
                for text in (
                    f"compiles to PTX {', '.join(instructions)}{seen}" if instructions else "",
                    f"reads PTX special register {', '.join(registers)}" if registers else "",
                )
                if text
            )
            return Verdict("supported", source, note or lowering, rule)
        return Verdict(
            "unsupported",
            source,
            f"compiles to PTX {', '.join(missing)}{seen}, which ZLUDA's PTX front end does not "
            f"accept" + (f"; {note}" if note else ""),
            rule,
        )

    def _zluda_library(self, family: str, name: str, kind: str) -> Verdict:
        implemented = self.zluda.libraries[family]
        path = self.zluda.library_paths[family]
        if kind == "function":
            source = self._src(family, f"{path.split('/')[0]}_crate", self.zluda.repo.source(path))
            if name in implemented or normalize_versioned(name) in implemented:
                return Verdict("supported", source)
            return Verdict(
                "unsupported",
                source,
                "ZLUDA's replacement library stubs it (it returns NOT_SUPPORTED)",
            )
        return self._zluda_declared_item(family, name, kind)

    # ---- SCALE

    def resolve_scale(self, family: str, name: str, kind: str, manual: dict[str, Any]) -> Verdict:
        verdict = self._curated_verdict(
            manual.get("scale") or self.overrides.get(name, {}).get("scale"), family
        )
        if verdict is not None:
            return verdict
        if family in ("runtime", "driver"):
            return self._scale_page(family, family, name, kind)
        if family == "device":
            return self._scale_page(family, "math", name, kind)
        return self._scale_library(family, name, kind)

    def _scale_page_source(self, family: str, page: str) -> str:
        return self._src(family, f"scale_{page}", self.scale.repo.source(SCALE_PAGES[page]))

    def _scale_unsupported_scope(self, family: str, page: str, name: str) -> ScaleSection | None:
        """The section SCALE marks unsupported as a whole that `name` belongs to: the one
        its HIPIFY table row sits in (both follow NVIDIA's documentation modules), or one
        whose names `scale_section_scope` describes (the module's data types, listed
        elsewhere: cudaEglFrame, __nv_fp8_e4m3)."""
        listing = self.scale.pages[page]
        row = self.hipify.find(family, name)
        if row is not None:
            section = listing.unsupported_section(section_title(row.section))
            if section is not None:
                return section
        for scope in self.facts.get("scale_section_scope", {}).get(page, []):
            if re.search(scope["names"], name):
                section = listing.unsupported_section(scope["section"])
                if section is not None:
                    return section
        return None

    def _scale_page(self, family: str, page: str, name: str, kind: str) -> Verdict:
        listing = self.scale.pages[page]
        scope = self._scale_unsupported_scope(family, page, name)
        found = listing.get(name)
        if found is not None:
            verdict = self._scale_listed(family, page, name, kind, found)
            if verdict.status != "supported" and scope is not None:
                return self._scale_section_verdict(family, page, scope)
            return verdict
        base = normalize_versioned(name)
        if base != name and base in listing:
            verdict = self._scale_page(family, page, base, kind)
            note = f"a versioned name of {base}, which SCALE's API diff lists" + (
                f"; {verdict.note}" if verdict.note else ""
            )
            return Verdict(verdict.status, verdict.source, note, derived("versioned-name"))
        if scope is not None:
            return self._scale_section_verdict(family, page, scope)
        added = self.scale.changelog_added.get(name)
        if added:
            return Verdict(
                "supported", self._src(family, "scale_changelog", self.scale.repo.source(added))
            )
        owner = self.hipify.enum_owner.get(name) or self.facts.get("scale_enum_parent", {}).get(
            name
        )
        if owner is not None and kind != "type" and owner in listing:
            return self._scale_enumerator(family, page, name, owner)
        if kind == "type":
            verdict = self._scale_type_use(family, page, name)
            if verdict is not None:
                return verdict
        return Verdict(
            "supported",
            "inferred: not listed among SCALE's API differences",
            origin=ORIGIN_DEFAULT,
        )

    def _scale_section_verdict(self, family: str, page: str, section: ScaleSection) -> Verdict:
        said = f" ('{section.unsupported}')" if section.unsupported else ""
        how = "marks" if section.unsupported else "lists every declaration of"
        note = f"SCALE's API diff {how} the section '{section.title}'{said} as unsupported"
        return Verdict(
            "unsupported",
            self._scale_page_source(family, page),
            note,
            derived("section-unsupported"),
        )

    def _scale_listed(
        self, family: str, page: str, name: str, kind: str, listing: ScaleListing
    ) -> Verdict:
        source = self._scale_page_source(family, page)
        added = self.scale.changelog_added.get(name)
        status, note = listing.verdict(device_code=(page == "math"))
        if status == "unsupported" and added:
            return Verdict(
                "supported",
                self._src(family, "scale_changelog", self.scale.repo.source(added)),
                "marked missing in the API diff but announced as added in this changelog",
            )
        if status == "unsupported" and kind == "type" and listing.present == []:
            return Verdict(
                "partial",
                source,
                "SCALE's API diff flags this type as differing from "
                "NVIDIA's documentation (e.g. missing enumerators or members)",
            )
        return Verdict(status, source, note)

    def _scale_enumerator(self, family: str, page: str, name: str, owner: str) -> Verdict:
        """An enumerator follows its enum type's listing. SCALE's diff flags a type as a
        whole when its declaration differs from NVIDIA's (usually: newer enumerators
        missing), so an enumerator CUDA has had since before SCALE_ENUM_BASELINE is
        taken as present and a newer one as possibly missing."""
        rule = derived("enum-consumer")
        listing = self.scale.pages[page].listings[owner]
        source = self._scale_page_source(family, page)
        if listing.present:
            return Verdict("supported", source, f"its enum {owner} is listed as available", rule)
        row = self.hipify.find(family, name)
        since = row.cuda.get("A") if row is not None else None
        # HIPIFY leaves the CUDA "added" column empty for what CUDA has always had
        if row is not None and (
            since is None or version_key(since) < version_key(SCALE_ENUM_BASELINE)
        ):
            age = f"since CUDA {since}" if since else "from its first releases"
            note = (
                f"its enum {owner} is flagged as differing in SCALE's API diff; an enumerator "
                f"CUDA has had {age} is taken as present"
            )
            return Verdict("supported", source, note, rule)
        when = f"added in CUDA {since}" if since else "of unknown age"
        note = (
            f"its enum {owner} is flagged as differing in SCALE's API diff, and this "
            f"enumerator ({when}) may be among those SCALE lacks"
        )
        return Verdict("partial", source, note, rule)

    def _scale_type_use(self, family: str, page: str, name: str) -> Verdict | None:
        """A type the diff does not list follows the functions whose prototypes name it:
        supported when SCALE has one of them, unsupported when SCALE lacks them all."""
        listing = self.scale.pages[page]
        present = sorted(
            f for f, words in listing.signatures(present=True).items() if name in words
        )
        missing = sorted(
            f for f, words in listing.signatures(present=False).items() if name in words
        )
        source = self._scale_page_source(family, page)
        if present:
            note = f"taken by {present[0]}, which SCALE's API diff lists as available"
            return Verdict("supported", source, note, derived("type-use"))
        if missing:
            note = f"only calls SCALE's API diff marks missing take it ({', '.join(missing[:3])})"
            return Verdict("unsupported", source, note, derived("type-use"))
        return None

    def _scale_library(self, family: str, name: str, kind: str) -> Verdict:
        library = self._library(family)
        by_name = self._matching_rule(library.get("scale_by_name", []), family, name)
        if by_name is not None:
            return by_name
        wrappers = self.scale.wrappers
        if wrappers and family in wrappers.tokens:
            path = wrappers.paths[family]
            source = self._src(family, "scale_wrappers", wrappers.repo.source(path))
            if name in wrappers.tokens[family]:
                return Verdict("supported", source, library.get("scale_found_note"))
            base = name.removesuffix("_v2")
            if base != name and base in wrappers.tokens[family]:
                return Verdict(
                    "partial",
                    source,
                    f"SCALE declares only {base}, the name NVIDIA's header maps onto this "
                    "symbol; source that spells the _v2 name must drop the suffix",
                    derived("versioned-name"),
                )
            absent = derived("absent-from-wrapper")
            not_found = self._matching_rule(
                library.get("scale_not_found", []), family, name, absent
            )
            return not_found or Verdict(
                "unsupported",
                source,
                "not declared in SCALE's published wrapper sources (the snapshot read); "
                "a later SCALE release may add it",
                absent,
            )
        default = self._curated_verdict(library.get("scale"), family, ORIGIN_DEFAULT)
        return default or Verdict(
            "unknown", "inferred: no SCALE source covers this family", origin=ORIGIN_DEFAULT
        )


# --------------------------------------------------------------------------- output


class FlowMap(dict):
    """A mapping YAML writes on one line: {hip: x, zluda: y, scale: z}."""


def _flow_representer(dumper: yaml.SafeDumper, data: FlowMap) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)


class RuleDumper(yaml.SafeDumper):
    pass


RuleDumper.add_representer(FlowMap, _flow_representer)


def _compact(items: Any) -> dict[str, str]:
    """One-line flow mapping when every value is short, block mapping otherwise."""
    mapping = dict(items)
    if all(len(str(v)) <= 40 for v in mapping.values()):
        return FlowMap(mapping)
    return mapping


def entry_document(entry: Entry) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "cuda": entry.cuda,
        "kind": entry.kind,
        "hip": entry.hip,
        "status": FlowMap((t, entry.verdicts[t].status) for t in TARGETS),
        "source": _compact((t, entry.verdicts[t].source) for t in TARGETS),
        "origin": FlowMap((t, entry.verdicts[t].origin_label()) for t in TARGETS),
    }
    for key in ("since", "deprecated", "removed", "hip_added", "hip_deprecated", "hip_removed"):
        value = getattr(entry, key)
        if value:
            doc[key] = str(value)
    if entry.hip_experimental:
        doc["experimental"] = True
    notes = list(entry.notes)
    for target in TARGETS:
        note = entry.verdicts[target].note
        if note:
            labelled = re.match(rf"{target.upper()}\b", note) is not None
            notes.append(note if labelled else f"{target.upper()}: {note}")
    if notes:
        doc["notes"] = " | ".join(notes)
    return doc


def regeneration_command(args: argparse.Namespace) -> str:
    """The command line that rebuilds the rule set, with each repository named by its
    project (a clone of it) rather than by this machine's path."""
    parts = ["python tools/build_rules.py"]
    for option, project in REPOSITORY_OPTIONS + HEADER_OPTIONS:
        if getattr(args, option.replace("-", "_")) is not None:
            via = args.hipify_via if option == "hipify" else None
            parts.append(f"--{option} <{via or project}>")
            if option == "hipify" and args.hipify_ref != "HEAD":
                parts.append(f"--hipify-ref {args.hipify_ref}")
            if option == "hipify" and args.hipify_via:
                parts.append(f"--hipify-via {args.hipify_via}")
    parts.append("--out rules")
    if args.seed_only:
        parts.append("--seed-only")
    return " ".join(parts)


def write_family(
    out_dir: Path,
    family: str,
    entries: list[Entry],
    registry: SourceRegistry,
    command: str,
    inputs: str,
) -> Path:
    used = {v.source for e in entries for v in e.verdicts.values()}
    sources = {k: registry.sources[k] for k in sorted(registry.sources) if k in used}
    document = {
        "schema": SCHEMA,
        "family": family,
        "title": FAMILY_TITLES[family],
        "sources": {k: FlowMap(v) for k, v in sources.items()},
        "entries": [entry_document(e) for e in entries],
    }
    text = yaml.dump(
        document,
        Dumper=RuleDumper,
        sort_keys=False,
        allow_unicode=True,
        width=4096,
        default_flow_style=False,
    )
    header = (
        "# Generated by tools/build_rules.py; edit the curated data in tools/ and "
        "regenerate instead of editing this file.\n"
        f"# Regenerate: {command}\n"
        f"# from: {inputs}\n"
    )
    path = out_dir / f"{family}.yaml"
    path.write_text(header + text, "utf-8")
    return path


SOURCES_SCHEMA = "portcheck.sources/1"


def write_sources(
    out_dir: Path,
    command: str,
    repos: list[GitRepo],
    header_repos: list[TaggedRepo],
    headers: HipHeaders | None,
    hipify: HipifyData,
) -> Path:
    """rules/sources.yaml: the snapshot (commit and commit date) of every repository the
    rule set was built from, and the ROCm releases its HIP dates cover: from the oldest
    release whose headers were read (dates before it are not told apart) to the newest
    HIP release HIPIFY's version table knows (HIP_LATEST)."""
    snapshots = [repo.snapshot() for repo in repos]
    for repo in header_repos:
        snapshot = repo.snapshot()
        if headers is not None:
            tags = [r.tag for r in headers.releases if repo.project in r.repos]
            snapshot["tags"] = ", ".join(tags)
        snapshots.append(snapshot)
    releases = [r.version for r in headers.releases] if headers else []
    newest = max([hipify.hip_latest or "0.0.0", *releases], key=version_key)
    document = {
        "schema": SOURCES_SCHEMA,
        "snapshots": [FlowMap(s) for s in snapshots],
        "rocm": FlowMap(
            {
                "oldest": short_release(releases[0]) if releases else None,
                "newest": short_release(newest),
                "headers_read": ", ".join(short_release(r) for r in releases),
            }
        ),
    }
    text = yaml.dump(document, Dumper=RuleDumper, sort_keys=False, width=4096)
    header = (
        "# Generated by tools/build_rules.py: the upstream snapshots rules/*.yaml were built\n"
        f"# from. Regenerate: {command}\n"
    )
    path = out_dir / "sources.yaml"
    path.write_text(header + text, "utf-8")
    return path


# --------------------------------------------------------------------------- driver


def all_names(hipify: HipifyData, manual: dict[str, Any]) -> list[tuple[str, str]]:
    """Every name the sources know, for --all: HIPIFY rows plus the curated entries."""
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    for table, rows in hipify.rows.items():
        for name, row in rows.items():
            family = TABLE_FAMILY[table]
            if table == "blas" and "Lt" in row.section:
                family = "cublaslt"
            if name not in seen:
                seen.add(name)
                pairs.append((family, name))
    for header in hipify.includes:
        if header not in seen:
            seen.add(header)
            pairs.append(("headers", header))
    for entry in manual.get("entries", []):
        if entry["cuda"] not in seen:
            seen.add(entry["cuda"])
            pairs.append((entry["family"], entry["cuda"]))
    return pairs


def validate(entries: list[Entry]) -> None:
    names: set[str] = set()
    for entry in entries:
        if entry.cuda in names:
            raise SystemExit(f"duplicate CUDA name {entry.cuda!r}")
        names.add(entry.cuda)
        for target, verdict in entry.verdicts.items():
            if verdict.status not in STATUSES:
                raise SystemExit(f"{entry.cuda}: bad {target} status {verdict.status!r}")
            origin = verdict.origin_label()
            rule = origin.removeprefix("derived:")
            if origin not in (ORIGIN_SOURCE, ORIGIN_DEFAULT) and rule not in DERIVATIONS:
                raise SystemExit(f"{entry.cuda}: bad {target} origin {origin!r}")


# Command-line option -> the upstream project it must be a clone of.
REPOSITORY_OPTIONS = (
    ("hipify", "ROCm/HIPIFY"),
    ("zluda", "vosen/ZLUDA"),
    ("scale-docs", "spectral-compute/scale-docs"),
    ("scale-wrappers", "spectral-compute/scale-library-wrappers"),
)
# The repositories holding HIP's headers, read at ROCm release tags rather than at HEAD
# (clr first: from ROCm 5.6 it holds the amd_detail headers hipamd held before).
HEADER_OPTIONS = (
    ("hip-clr", "ROCm/clr"),
    ("hip-hipamd", "ROCm/hipamd"),
    ("hip-public", "ROCm/HIP"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hipify", required=True, help="bare git repo of ROCm/HIPIFY")
    parser.add_argument("--zluda", required=True, help="bare git repo of vosen/ZLUDA")
    parser.add_argument(
        "--scale-docs", required=True, help="bare git repo of spectral-compute/scale-docs"
    )
    parser.add_argument(
        "--scale-wrappers", help="bare git repo of spectral-compute/scale-library-wrappers"
    )
    for option, project in HEADER_OPTIONS:
        parser.add_argument(
            f"--{option}", help=f"git repo of {project}, read at its rocm-* release tags"
        )
    parser.add_argument(
        "--hipify-ref",
        default="HEAD",
        help="the HIPIFY commit to read (default HEAD), e.g. upstream's newest commit in a fork",
    )
    parser.add_argument(
        "--hipify-via",
        metavar="OWNER/NAME",
        help="the fork whose mirror --hipify is, when it carries newer upstream history "
        "than ROCm/HIPIFY's own snapshot (recorded in rules/sources.yaml)",
    )
    parser.add_argument("--out", required=True, help="output directory (rules/)")
    parser.add_argument("--seeds", default=str(TOOLS_DIR / "seed_names.txt"))
    parser.add_argument(
        "--seed-only",
        action="store_true",
        help="emit only the curated names of --seeds instead of every name the sources know",
    )
    parser.add_argument("--all", action="store_true", help=argparse.SUPPRESS)  # the default now
    args = parser.parse_args(argv)

    manual = merge_family_files(load_yaml(TOOLS_DIR / "manual_families.yaml"), FAMILIES_DIR)
    facts = load_yaml(TOOLS_DIR / "target_facts.yaml")
    repos = {
        option: GitRepo(getattr(args, option.replace("-", "_")), project)
        for option, project in REPOSITORY_OPTIONS
        if getattr(args, option.replace("-", "_")) is not None and option != "hipify"
    }
    repos = {
        "hipify": GitRepo(args.hipify, "ROCm/HIPIFY", args.hipify_ref, args.hipify_via),
        **repos,
    }
    hipify = load_hipify(repos["hipify"])
    zluda = load_zluda(repos["zluda"], facts.get("zluda_library_crates", {}))
    wrappers = None
    if "scale-wrappers" in repos:
        wrappers = load_scale_wrappers(repos["scale-wrappers"], facts.get("libraries", {}))
    scale = load_scale(repos["scale-docs"], wrappers)
    header_repos = [
        TaggedRepo(getattr(args, option.replace("-", "_")), project)
        for option, project in HEADER_OPTIONS
        if getattr(args, option.replace("-", "_")) is not None
    ]
    headers = load_hip_headers(header_repos) if header_repos else None
    command = regeneration_command(args)
    inputs = ", ".join(
        f"{repo.project}@{repo.ref}" + (f" (via {repo.via})" if repo.via else "")
        for repo in repos.values()
    )
    if headers is not None:
        inputs += "; " + headers.describe()

    seeds = read_seed_names(Path(args.seeds))
    pairs = seeds if args.seed_only else all_names(hipify, manual)
    if not args.seed_only:
        # Curated names that no table lists (warp intrinsics such as __activemask) stay in.
        known = {name for _, name in pairs}
        pairs += [(family, name) for family, name in seeds if name not in known]
    builder = RuleBuilder(hipify, zluda, scale, manual, facts, headers)
    entries = [builder.build(family, name) for family, name in pairs]
    validate(entries)
    for entry in entries:
        for target, verdict in entry.verdicts.items():
            declared = builder.registries[entry.family].sources
            if not verdict.source.startswith("inferred:") and verdict.source not in declared:
                raise SystemExit(
                    f"{entry.cuda}: {target} source {verdict.source!r} is not declared in "
                    f"{entry.family}.yaml"
                )
    for conflict in builder.header_conflicts:
        print(f"warning: {conflict}", file=sys.stderr)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_family: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        by_family[entry.family].append(entry)
    for family in FAMILY_TITLES:
        if by_family.get(family):
            path = write_family(
                out_dir, family, by_family[family], builder.registries[family], command, inputs
            )
            print(f"{path}: {len(by_family[family])} entries")
    path = write_sources(out_dir, command, list(repos.values()), header_repos, headers, hipify)
    print(f"{path}: {len(repos) + len(header_repos)} snapshots")
    unknown = sum(1 for e in entries for v in e.verdicts.values() if v.status == "unknown")
    print(f"total {len(entries)} entries, {unknown} unknown verdicts", file=sys.stderr)
    for target in TARGETS:
        origins = Counter(e.verdicts[target].origin_label().split(":")[0] for e in entries)
        print(
            f"  {target}: " + ", ".join(f"{k} {v}" for k, v in sorted(origins.items())),
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
