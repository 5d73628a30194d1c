"""How the chosen ROCm release spells the HIP side of a translation.

Owns `Spelling`: for one ROCm release (None: the newest the rule set knows), the HIP text
the translator writes for a rule. The rules hold the newest release's spelling; an older
release may spell it otherwise (rules/translate/spellings.yaml, built by
tools/build_spellings.py: hipBLAS's `_v2` names in ROCm 6.x, the flat library headers
before ROCm 5.2, `hip_bfloat16` before 5.7), and may lack a name altogether (the rule's
HIP dates, portcheck.rocm): then a warp builtin is written in the form that release has
(`__shfl_xor_sync(mask, v, o)` -> `__shfl_xor(v, o)` and `__activemask()` ->
`__ballot(1)` before ROCm 6.2, as ROCm 6.2 itself defines `__activemask`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from portcheck.model import ApiRule, Status
from portcheck.resources import data_dir
from portcheck.rocm import RocmRelease, hip_status, parse_rocm_version
from portcheck.ruleset import default_rules, load_yaml

SPELLINGS_FILE = ("translate", "spellings.yaml")
ENTRY_KEYS = frozenset({"cuda", "hip", "from", "until", "source"})

# The `_sync` warp builtins came to HIP in ROCm 6.2 (rules: hip_added). For an older
# release the translation writes the mask-less builtins every HIP release has, as the
# human ports of that time did; the mask is dropped, which is right when every lane of
# the wavefront takes part (the lane-mask-width finding marks the line either way).
MASKLESS_WARP_BUILTINS = {
    "__shfl_sync": "__shfl",
    "__shfl_up_sync": "__shfl_up",
    "__shfl_down_sync": "__shfl_down",
    "__shfl_xor_sync": "__shfl_xor",
    "__ballot_sync": "__ballot",
    "__any_sync": "__any",
    "__all_sync": "__all",
}
# A call with no arguments written as another call, before the release that has the name:
# ROCm 6.2 defines `__activemask()` as `__ballot(true)` (ROCm/clr rocm-6.2.0,
# hipamd/include/hip/amd_detail/amd_warp_functions.h).
CALL_FALLBACKS = {"__activemask": ("__ballot", "1")}


# HIP's vector types (float4 = HIP_vector_type<float, 4>) bring operators of their own. A
# project's helper (cuda-samples' helper_math.h) defining the same operator as a plain
# function makes every use ambiguous. The compound assignments `x op= y` with a vector of
# the same type are non-template members in every release (ROCm/hipamd rocm-5.0.0
# include/hip/amd_detail/amd_hip_vector_types.h); `x * y` and `x / y` became non-template
# friends in ROCm 5.6 (ROCm/clr rocm-5.6.0, same file; absent from hipamd rocm-5.5.0).
VECTOR_MEMBER_OPERATORS = frozenset({"+=", "-=", "*=", "/=", "%=", "^=", "|=", "&=", ">>=", "<<="})
VECTOR_FRIEND_OPERATORS = frozenset({"*", "/"})
VECTOR_FRIENDS_SINCE = RocmRelease(5, 6)
HIP_VECTOR_TYPES = frozenset(
    f"{base}{width}"
    for base in (
        "char",
        "uchar",
        "short",
        "ushort",
        "int",
        "uint",
        "long",
        "ulong",
        "longlong",
        "ulonglong",
        "float",
        "double",
    )
    for width in (1, 2, 3, 4)
)


class SpellingError(ValueError):
    """rules/translate/spellings.yaml is malformed; the message names the entry."""


@dataclass(frozen=True)
class ReleaseSpelling:
    cuda: str
    hip: str
    start: RocmRelease | None  # first release with this spelling (None: every earlier one)
    until: RocmRelease | None  # first release without it (None: every later one)

    def holds(self, release: RocmRelease) -> bool:
        return (self.start is None or release >= self.start) and (
            self.until is None or release < self.until
        )


@lru_cache(maxsize=1)
def release_spellings() -> dict[str, tuple[ReleaseSpelling, ...]]:
    """The shipped table, by CUDA name; validated once."""
    where = "rules/" + "/".join(SPELLINGS_FILE)
    doc = load_yaml(data_dir("rules").joinpath(*SPELLINGS_FILE).read_text("utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise SpellingError(f"{where}: expected a mapping with an 'entries' list")
    sources = doc.get("sources") or {}
    table: dict[str, list[ReleaseSpelling]] = {}
    for number, entry in enumerate(doc["entries"], start=1):
        if not isinstance(entry, dict):
            raise SpellingError(f"{where}: entry {number} is not a mapping")
        unknown = set(entry) - ENTRY_KEYS
        missing = {"cuda", "hip", "source"} - set(entry)
        cited = entry.get("source") or []
        if unknown or missing or not all(s in sources for s in cited):
            raise SpellingError(
                f"{where}: entry {number} ({entry.get('cuda')}): "
                + (f"unknown keys {sorted(unknown)}" if unknown else "")
                + (f"missing {sorted(missing)}" if missing else "")
                + ("" if unknown or missing else f"unknown source in {cited}")
            )
        try:
            start = parse_rocm_version(str(entry["from"])) if "from" in entry else None
            until = parse_rocm_version(str(entry["until"])) if "until" in entry else None
        except ValueError as exc:
            raise SpellingError(f"{where}: entry {number} ({entry['cuda']}): {exc}") from None
        table.setdefault(str(entry["cuda"]), []).append(
            ReleaseSpelling(str(entry["cuda"]), str(entry["hip"]), start, until)
        )
    return {name: tuple(found) for name, found in table.items()}


@dataclass(frozen=True)
class Spelling:
    """The HIP spelling of one ROCm release (`release` None: the newest the rules know)."""

    release: RocmRelease | None = None
    _table: dict[str, tuple[ReleaseSpelling, ...]] = field(
        default_factory=release_spellings, repr=False, compare=False
    )

    @classmethod
    def for_release(cls, release: RocmRelease | str | None) -> Spelling:
        if isinstance(release, str):
            release = parse_rocm_version(release)
        return cls(release)

    def version_number(self) -> int:
        """The release as HIP's APIs take a version (`hipGetProcAddress`): 6.3 -> 603."""
        release = self.release or default_rules().newest_rocm() or RocmRelease(7, 0)
        return release.major * 100 + release.minor

    def hip(self, rule: ApiRule) -> str | None:
        """What to write for `rule`'s CUDA name in this release."""
        spellings = self._table.get(rule.cuda)
        if spellings:
            release = self.release or default_rules().newest_rocm()
            for spelled in spellings:
                if release is not None and spelled.holds(release):
                    return spelled.hip
        return rule.hip

    def lacks(self, rule: ApiRule) -> bool:
        """Does this release lack the rule's HIP equivalent (added later, or removed)?"""
        if self.release is None:
            return rule.status.hip is Status.UNSUPPORTED
        # The rule as loaded: a scan made for another release hands in its adjusted copy.
        loaded = default_rules().lookup(rule.cuda) or rule
        return hip_status(loaded, self.release).status is Status.UNSUPPORTED

    def maskless(self, rule: ApiRule) -> str | None:
        """The mask-less builtin to write for a `_sync` warp builtin this release lacks."""
        plain = MASKLESS_WARP_BUILTINS.get(rule.cuda)
        return plain if plain is not None and self.lacks(rule) else None

    def vector_operator_clashes(self, operator: str, binary_same_type: bool) -> bool:
        """Does HIP's own operator `operator` on two vectors of one type clash with a
        project's plain function for it in this release? (`binary_same_type`: the
        function takes two vectors of one type, by value or const reference; for
        compound assignments the first by reference.)"""
        if not binary_same_type:
            return False
        if operator in VECTOR_MEMBER_OPERATORS:
            return True
        release = self.release if self.release is not None else VECTOR_FRIENDS_SINCE
        return operator in VECTOR_FRIEND_OPERATORS and release >= VECTOR_FRIENDS_SINCE

    def call_fallback(self, rule: ApiRule) -> tuple[str, str] | None:
        """(callee, arguments) to write for a no-argument call this release lacks."""
        fallback = CALL_FALLBACKS.get(rule.cuda)
        return fallback if fallback is not None and self.lacks(rule) else None
