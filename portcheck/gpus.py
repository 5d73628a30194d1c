"""The AMD GPU table: rules/gpus.yaml, read and validated once.

Owns what portcheck knows about each AMD GPU target — family and generation, wavefront widths,
XNACK, unified memory, FP8 flavour, matrix cores, product names, which routes serve it — with
the source of every fact, and the lookups on it:

- `gpu(name)`: a gfx name, an offload target ID (`gfx90a:xnack+`) or a product name or alias
  (`mi300x`, `RX 7900 XTX`, `strix-halo`) to a `GpuProfile`, or None. Case, spaces and
  punctuation do not matter. A product narrows the profile: `gpu("mi300a")` is gfx942 with
  unified memory, `gpu("mi300x")` is gfx942 without.
- `require_gpu(name)`: the same, or `UnknownGpuError` with the message the CLI prints.
- `describe_gpus(...)`, `describe_wave64()`: a set of GPUs in a few words for findings
  ("wave64 GPUs: MI100-MI355X, Vega", the range joined by an en dash), made from the data.

A malformed table is a `GpuTableError` naming the file, the entry and the key.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from portcheck.model import TARGETS, Target
from portcheck.resources import data_dir
from portcheck.ruleset import YamlSyntaxError, load_yaml

SCHEMA = "portcheck.gpus/1"
TABLE_FILE = "gpus.yaml"
INFERRED_PREFIX = "inferred:"

FILE_KEYS = frozenset({"schema", "title", "sources", "gpus"})
SOURCE_KEYS = frozenset({"project", "ref", "path", "url", "note", "date", "retrieved"})
ENTRY_REQUIRED = frozenset(
    {
        "gfx",
        "family",
        "generation",
        "wavefront",
        "xnack",
        "unified_memory",
        "fp8",
        "matrix",
        "products",
        "routes",
        "source",
    }
)
ENTRY_OPTIONAL = frozenset({"series", "withdrawn", "notes"})
# The facts of an entry that `source` must name a source for, one each.
SOURCED_FACTS = ("family", "wavefront", "xnack", "unified_memory", "fp8", "matrix")
PRODUCT_KEYS = frozenset({"name", "short", "aliases", "unified_memory", "source"})
ROUTE_KEYS = frozenset({"serves", "source", "note"})
WAVEFRONT_WIDTHS = (32, 64)

GFX_NAME = re.compile(r"gfx[0-9a-f]+")
ALIAS = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")  # lower-case, no spaces: rx7900xtx, mi300x
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


E = TypeVar("E", bound=StrEnum)


class GpuTableError(ValueError):
    """rules/gpus.yaml is malformed. The message names the file, the entry and the key."""


class UnknownGpuError(ValueError):
    """A GPU name the table does not know. The message lists the known ones."""


class Family(StrEnum):
    GCN = "GCN"
    CDNA = "CDNA"
    RDNA = "RDNA"


class Fp8(StrEnum):
    """The FP8 encoding the hardware accelerates."""

    NONE = "none"
    FNUZ = "fnuz"  # finite and NaN only, no infinities or negative zero: gfx940-gfx942
    OCP = "ocp"  # the Open Compute Project encoding NVIDIA's __nv_fp8 types use


class MatrixKind(StrEnum):
    NONE = "none"
    MFMA = "mfma"  # CDNA matrix cores (v_mfma_*), wave64
    WMMA = "wmma"  # RDNA3/RDNA4 (v_wmma_*), wave32


@dataclass(frozen=True)
class Product:
    """One product built on a gfx target."""

    name: str  # as AMD's documentation spells it: "MI300X", "Radeon RX 7900 XTX"
    short: str  # for summaries: "RX 7900 XTX"
    aliases: tuple[str, ...]
    unified_memory: bool  # the entry's value unless the product overrides it (MI300A)
    source: str  # described


@dataclass(frozen=True)
class RouteSupport:
    """Whether a route's documentation serves a GPU target, and why."""

    serves: bool
    note: str
    source: str  # described

    @property
    def reason(self) -> str:
        return f"{self.note} (source: {self.source})"


@dataclass(frozen=True)
class GpuProfile:
    """One AMD GPU target, optionally narrowed to one of its products."""

    gfx: str
    family: Family
    generation: str  # GCN5.0, GCN5.1, CDNA1 … CDNA4, RDNA1 … RDNA4
    wavefronts: tuple[int, ...]  # widths the hardware runs: (64,) or (32, 64)
    default_wavefront: int  # what hipcc/clang compiles for without -mwavefrontsize64
    xnack: bool  # supports XNACK replay (recoverable page faults)
    unified_memory: bool | None  # memory shared with the CPU; None: differs between products
    fp8: Fp8
    matrix: MatrixKind
    matrix_generation: str | None  # CDNA1 … CDNA4 for MFMA, RDNA3 / RDNA4 for WMMA
    products: tuple[Product, ...]  # flagship first
    product: Product | None = None  # the product the lookup named, if any
    series: str | None = None  # one name for summaries ("Vega")
    withdrawn: str | None = None  # why the target should not be chosen any more
    notes: str | None = None
    routes: Mapping[str, RouteSupport] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )
    sources: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )  # fact -> its described source

    @property
    def name(self) -> str:
        """How messages name it: "MI300A (gfx942)" for a product, else the gfx name."""
        return f"{self.product.name} ({self.gfx})" if self.product else self.gfx

    @property
    def label(self) -> str:
        """A short name for summaries: the product's, or the flagship's, or the gfx name."""
        chosen = self.product or (self.products[0] if self.products else None)
        return chosen.short if chosen else self.gfx

    @property
    def is_wave64_only(self) -> bool:
        """GCN and CDNA: every wavefront is 64 lanes."""
        return self.wavefronts == (64,)

    @property
    def is_wave32_default(self) -> bool:
        """RDNA: HIP code runs 32-wide (warpSize == 32) unless built with -mwavefrontsize64."""
        return self.default_wavefront == 32

    @property
    def runs_wave64(self) -> bool:
        """Can run 64-wide wavefronts at all (RDNA only when asked to)."""
        return 64 in self.wavefronts

    @property
    def warp_size(self) -> int:
        """The warpSize HIP device code sees by default."""
        return self.default_wavefront

    def serves(self, route: str | Target) -> tuple[bool, str]:
        """(does `route` serve this GPU, the reason with its source). Routes: hip, zluda,
        scale. A ValueError for any other name."""
        if str(route) not in self.routes:
            known = ", ".join(str(t) for t in TARGETS)
            raise ValueError(f"unknown route {str(route)!r} (known: {known})")
        support = self.routes[str(route)]
        return support.serves, support.reason

    def source_of(self, fact: str) -> str:
        """The described source of one fact (family, wavefront, xnack, unified_memory, fp8,
        matrix); a product's own source for unified memory when one was named."""
        if fact == "unified_memory" and self.product is not None:
            return self.product.source
        return self.sources[fact]

    def with_product(self, product: Product) -> GpuProfile:
        """This target narrowed to one of its products."""
        return replace(self, product=product, unified_memory=product.unified_memory)


@dataclass(frozen=True)
class GpuTable:
    """Every GPU in the table, in table order, and the index the lookups use."""

    profiles: tuple[GpuProfile, ...]
    index: Mapping[str, tuple[str, int | None]]  # normalised name -> (gfx, product position)
    sources: Mapping[str, Mapping[str, str]]
    title: str = ""
    digest: str = ""  # of the file's bytes: keys caches of results that depend on the table

    def by_gfx(self, gfx: str) -> GpuProfile | None:
        return next((p for p in self.profiles if p.gfx == gfx), None)

    def lookup(self, name: str) -> GpuProfile | None:
        hit = self.index.get(_lookup_key(name))
        if hit is None:
            return None
        gfx, position = hit
        profile = self.by_gfx(gfx)
        assert profile is not None  # the index is built from the profiles
        return profile if position is None else profile.with_product(profile.products[position])

    def gfx_names(self) -> tuple[str, ...]:
        return tuple(p.gfx for p in self.profiles)

    def aliases(self) -> tuple[str, ...]:
        """Every product alias, in table order."""
        return tuple(a for p in self.profiles for product in p.products for a in product.aliases)

    def order(self, profile: GpuProfile) -> int:
        return self.gfx_names().index(profile.gfx)


# -- loading ---------------------------------------------------------------------------------


def load_gpu_table(path: Traversable | Path | None = None) -> GpuTable:
    """Read and validate a GPU table (default: the shipped rules/gpus.yaml)."""
    source = data_dir("rules").joinpath(TABLE_FILE) if path is None else path
    text = source.read_text("utf-8")
    return parse_gpu_table(text, where=source.name)


def parse_gpu_table(text: str, where: str = TABLE_FILE) -> GpuTable:
    """Validate the text of a GPU table; `where` names it in errors."""
    try:
        doc = load_yaml(text)
    except YamlSyntaxError as exc:
        raise GpuTableError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise GpuTableError(f"{where}: must be a mapping with schema, sources and gpus")
    unknown = set(doc) - FILE_KEYS
    if unknown:
        raise GpuTableError(f"{where}: unknown top-level key(s) {sorted(unknown)}")
    if doc.get("schema") != SCHEMA:
        raise GpuTableError(
            f"{where}: key 'schema': expected {SCHEMA!r}, got {doc.get('schema')!r}"
        )
    sources = _parse_sources(doc.get("sources"), where)
    entries = doc.get("gpus")
    if not isinstance(entries, list) or not entries:
        raise GpuTableError(f"{where}: key 'gpus': must be a non-empty list")
    profiles = tuple(
        _parse_entry(raw, number, sources, where) for number, raw in enumerate(entries, start=1)
    )
    index = _build_index(profiles, where)
    frozen_sources = MappingProxyType({k: MappingProxyType(v) for k, v in sources.items()})
    return GpuTable(
        profiles=profiles,
        index=MappingProxyType(index),
        sources=frozen_sources,
        title=str(doc.get("title") or ""),
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _parse_sources(raw: Any, where: str) -> dict[str, dict[str, str]]:
    if not isinstance(raw, dict) or not raw:
        raise GpuTableError(f"{where}: key 'sources': must be a mapping of id -> source")
    sources: dict[str, dict[str, str]] = {}
    for source_id, body in raw.items():
        at = f"{where}: sources.{source_id}"
        if not isinstance(body, dict):
            raise GpuTableError(f"{at}: must be a mapping")
        unknown = set(body) - SOURCE_KEYS
        if unknown:
            raise GpuTableError(f"{at}: unknown key(s) {sorted(unknown)}")
        values = {key: str(value) for key, value in body.items()}  # YAML dates too
        if "project" not in values:
            raise GpuTableError(f"{at}: key 'project': missing")
        if "url" not in values and not {"ref", "path"} <= set(values):
            raise GpuTableError(f"{at}: needs 'ref' and 'path' (a commit), or a 'url'")
        if "ref" in values and not re.fullmatch(r"[0-9a-f]{40}", values["ref"]):
            raise GpuTableError(f"{at}: key 'ref': must be a 40-digit commit hash")
        for key in ("date", "retrieved"):
            if key in values and not DATE.fullmatch(values[key]):
                raise GpuTableError(f"{at}: key {key!r}: {values[key]!r} is not YYYY-MM-DD")
        if "retrieved" not in values:
            raise GpuTableError(f"{at}: key 'retrieved': missing (the date it was read)")
        sources[str(source_id)] = values
    return sources


def describe_source(source: Mapping[str, str]) -> str:
    """One line naming a source: "owner/repo@commit12 path (date)" or its URL."""
    if "ref" in source:
        text = f"{source['project']}@{source['ref'][:12]} {source['path']}"
    else:
        text = source["url"]
    return f"{text} ({source['date']})" if "date" in source else text


class _Entry:
    """Reads one entry's keys, failing with the file, the entry and the key."""

    def __init__(self, raw: dict[str, Any], at: str, sources: Mapping[str, Mapping[str, str]]):
        self.raw = raw
        self.at = at
        self.sources = sources

    def fail(self, key: str, problem: str) -> GpuTableError:
        return GpuTableError(f"{self.at}: key {key!r}: {problem}")

    def text(self, key: str, value: Any = None, *, optional: bool = False) -> str | None:
        value = self.raw.get(key) if value is None else value
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string")
        return value

    def flag(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"{value!r} must be true or false")
        return value

    def choice(self, key: str, value: Any, enum: type[E]) -> E:
        try:
            return enum(value)
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise self.fail(key, f"{value!r} is not one of {allowed}") from None

    def source(self, key: str, ref: Any) -> str:
        """A described source: an id of the file's sources, or 'inferred: …' kept as is."""
        if isinstance(ref, str) and ref.startswith(INFERRED_PREFIX):
            return ref
        if isinstance(ref, str) and ref in self.sources:
            return describe_source(self.sources[ref])
        known = ", ".join(sorted(self.sources))
        raise self.fail(key, f"{ref!r} is neither a source id ({known}) nor 'inferred: …'")


def _parse_entry(
    raw: Any, number: int, sources: Mapping[str, Mapping[str, str]], where: str
) -> GpuProfile:
    gfx = raw.get("gfx") if isinstance(raw, dict) else None
    at = f"{where}: entry {number} ({gfx})" if gfx else f"{where}: entry {number}"
    if not isinstance(raw, dict):
        raise GpuTableError(f"{at}: must be a mapping")
    unknown = set(raw) - ENTRY_REQUIRED - ENTRY_OPTIONAL
    if unknown:
        raise GpuTableError(f"{at}: unknown key(s) {sorted(unknown)}")
    missing = ENTRY_REQUIRED - set(raw)
    if missing:
        raise GpuTableError(f"{at}: missing key(s) {sorted(missing)}")
    entry = _Entry(raw, at, sources)
    if not isinstance(gfx, str) or not GFX_NAME.fullmatch(gfx):
        raise entry.fail("gfx", f"{gfx!r} is not a gfx processor name such as gfx942")

    sizes, default = _wavefront(entry)
    unified = entry.flag("unified_memory", raw["unified_memory"])
    matrix, matrix_generation = _matrix(entry)
    described = _fact_sources(entry)
    products = _products(entry, unified)
    routes = _routes(entry)
    # The target's own answer: its products' when they all agree, None when they differ.
    by_product = {p.unified_memory for p in products} or {unified}
    return GpuProfile(
        gfx=gfx,
        family=entry.choice("family", raw["family"], Family),
        generation=str(entry.text("generation")),
        wavefronts=sizes,
        default_wavefront=default,
        xnack=entry.flag("xnack", raw["xnack"]),
        unified_memory=by_product.pop() if len(by_product) == 1 else None,
        fp8=entry.choice("fp8", raw["fp8"], Fp8),
        matrix=matrix,
        matrix_generation=matrix_generation,
        products=products,
        series=entry.text("series", optional=True),
        withdrawn=entry.text("withdrawn", optional=True),
        notes=entry.text("notes", optional=True),
        routes=MappingProxyType(routes),
        sources=MappingProxyType(described),
    )


def _wavefront(entry: _Entry) -> tuple[tuple[int, ...], int]:
    raw = entry.raw["wavefront"]
    if not isinstance(raw, dict) or set(raw) != {"sizes", "default"}:
        raise entry.fail("wavefront", "must be {sizes: [...], default: N}")
    sizes = raw["sizes"]
    if (
        not isinstance(sizes, list)
        or not sizes
        or any(size not in WAVEFRONT_WIDTHS or isinstance(size, bool) for size in sizes)
        or len(set(sizes)) != len(sizes)
    ):
        raise entry.fail("wavefront.sizes", f"{sizes!r} must list distinct widths of 32 and 64")
    if raw["default"] not in sizes:
        raise entry.fail("wavefront.default", f"{raw['default']!r} is not one of sizes {sizes}")
    return tuple(sorted(sizes)), int(raw["default"])


def _matrix(entry: _Entry) -> tuple[MatrixKind, str | None]:
    raw = entry.raw["matrix"]
    if not isinstance(raw, dict) or not {"kind"} <= set(raw) <= {"kind", "generation"}:
        raise entry.fail("matrix", "must be {kind: none|mfma|wmma, generation: …}")
    kind = entry.choice("matrix.kind", raw["kind"], MatrixKind)
    generation = raw.get("generation")
    if kind is MatrixKind.NONE and generation is not None:
        raise entry.fail("matrix.generation", "must be absent when kind is none")
    if kind is not MatrixKind.NONE:
        generation = entry.text("matrix.generation", generation)
    return kind, generation


def _fact_sources(entry: _Entry) -> dict[str, str]:
    raw = entry.raw["source"]
    if not isinstance(raw, dict) or set(raw) != set(SOURCED_FACTS):
        raise entry.fail("source", f"must name a source for exactly {', '.join(SOURCED_FACTS)}")
    return {fact: entry.source(f"source.{fact}", raw[fact]) for fact in SOURCED_FACTS}


def _products(entry: _Entry, unified_memory: bool) -> tuple[Product, ...]:
    raw = entry.raw["products"]
    if not isinstance(raw, list):
        raise entry.fail("products", "must be a list (empty when no product is known)")
    products = []
    for position, item in enumerate(raw):
        key = f"products[{position}]"
        if not isinstance(item, dict) or not {"name", "source"} <= set(item):
            raise entry.fail(key, "must be a mapping with at least name and source")
        unknown = set(item) - PRODUCT_KEYS
        if unknown:
            raise entry.fail(key, f"unknown key(s) {sorted(unknown)}")
        name = str(entry.text(f"{key}.name", item["name"]))
        aliases = item.get("aliases", [])
        if not isinstance(aliases, list):
            raise entry.fail(f"{key}.aliases", "must be a list")
        for alias in aliases:
            if not isinstance(alias, str) or not ALIAS.fullmatch(alias):
                raise entry.fail(
                    f"{key}.aliases", f"{alias!r} must be lower-case with no spaces (rx7900xtx)"
                )
        override = item.get("unified_memory")
        products.append(
            Product(
                name=name,
                short=str(entry.text(f"{key}.short", item.get("short", name))),
                aliases=tuple(aliases),
                unified_memory=(
                    unified_memory
                    if override is None
                    else entry.flag(f"{key}.unified_memory", override)
                ),
                source=entry.source(f"{key}.source", item["source"]),
            )
        )
    return tuple(products)


def _routes(entry: _Entry) -> dict[str, RouteSupport]:
    raw = entry.raw["routes"]
    names = {str(t) for t in TARGETS}
    if not isinstance(raw, dict) or set(raw) != names:
        raise entry.fail("routes", f"must give exactly {', '.join(str(t) for t in TARGETS)}")
    routes = {}
    for route in (str(t) for t in TARGETS):
        item = raw[route]
        key = f"routes.{route}"
        if not isinstance(item, dict) or set(item) != ROUTE_KEYS:
            raise entry.fail(key, "must be {serves: true|false, source: …, note: …}")
        routes[route] = RouteSupport(
            serves=entry.flag(f"{key}.serves", item["serves"]),
            note=str(entry.text(f"{key}.note", item["note"])),
            source=entry.source(f"{key}.source", item["source"]),
        )
    return routes


def _lookup_key(name: str) -> str:
    """What lookups compare: lower-case letters and digits only, so "RX 7900 XTX",
    "rx-7900-xtx" and "rx7900xtx" are one name; a target ID's features (gfx90a:xnack+) are
    dropped."""
    name = name.strip().lower()
    if name.startswith("gfx"):
        name = name.split(":", 1)[0]
    return re.sub(r"[^a-z0-9]", "", name)


def _build_index(profiles: tuple[GpuProfile, ...], where: str) -> dict[str, tuple[str, int | None]]:
    """Every spelling a lookup accepts, each naming one target or product: a second entry
    claiming the same spelling is an error."""
    index: dict[str, tuple[str, int | None]] = {}
    claimed_by: dict[str, str] = {}

    def claim(spelling: str, target: tuple[str, int | None], who: str) -> None:
        key = _lookup_key(spelling)
        if key in index and index[key] != target:
            raise GpuTableError(
                f"{where}: {who}: {spelling!r} is already a name of {claimed_by[key]}"
            )
        index[key] = target
        claimed_by[key] = who

    for number, profile in enumerate(profiles, start=1):
        at = f"entry {number} ({profile.gfx})"
        if _lookup_key(profile.gfx) in index:
            raise GpuTableError(f"{where}: {at}: key 'gfx': {profile.gfx} is listed twice")
        claim(profile.gfx, (profile.gfx, None), at)
        for position, product in enumerate(profile.products):
            who = f"{at} product {product.name!r}"
            for spelling in (product.name, product.short, *product.aliases):
                if _lookup_key(spelling).startswith("gfx"):
                    raise GpuTableError(f"{where}: {who}: {spelling!r} looks like a gfx name")
                claim(spelling, (profile.gfx, position), who)
    return index


# -- the shipped table and the questions asked of it -----------------------------------------


@lru_cache(maxsize=1)
def gpu_table() -> GpuTable:
    """The shipped table, loaded once per process."""
    return load_gpu_table()


def gpu(name: str) -> GpuProfile | None:
    """The profile a gfx name, target ID or product name/alias names, or None."""
    return gpu_table().lookup(name)


def require_gpu(name: str) -> GpuProfile:
    """Like gpu(), but an unknown name is an UnknownGpuError with the message to show."""
    profile = gpu(name)
    if profile is None:
        raise UnknownGpuError(unknown_gpu_message(name))
    return profile


def known_gpus() -> tuple[str, ...]:
    """The gfx names of the table, in table order (GCN, CDNA, RDNA; oldest first)."""
    return gpu_table().gfx_names()


def known_names() -> tuple[str, ...]:
    """Every gfx name and product alias a user may type, gfx names first."""
    table = gpu_table()
    return table.gfx_names() + table.aliases()


def unknown_gpu_message(name: str) -> str:
    """One line for a name the table does not know: close matches first, then every gfx
    name and a few product aliases."""
    table = gpu_table()
    examples = _example_aliases(table)
    known = ", ".join(table.gfx_names())
    close = difflib.get_close_matches(name.strip().lower(), known_names(), n=3, cutoff=0.75)
    hint = f"; did you mean {_either(close)}?" if close else ""
    return (
        f"unknown GPU {name!r}{hint} (known: {known}; "
        f"or a product name such as {', '.join(examples)})"
    )


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _example_aliases(table: GpuTable) -> list[str]:
    """The flagship alias of the newest target of each family, newest family first."""
    newest: dict[Family, GpuProfile] = {}
    for profile in table.profiles:
        if profile.products and profile.products[0].aliases:
            newest[profile.family] = profile
    ordered = sorted(newest.values(), key=table.order, reverse=True)
    return [profile.products[0].aliases[0] for profile in ordered]


def all_gpus(*, products: bool = False) -> Iterator[GpuProfile]:
    """Every target in table order; with `products`, one profile per product instead (a
    target without products still yields itself)."""
    for profile in gpu_table().profiles:
        if products and profile.products:
            yield from (profile.with_product(product) for product in profile.products)
        else:
            yield profile


def gpus_where(
    predicate: Callable[[GpuProfile], bool | None], *, products: bool = False
) -> tuple[GpuProfile, ...]:
    """The targets (or, with `products`, the products) for which `predicate` holds."""
    return tuple(profile for profile in all_gpus(products=products) if predicate(profile))


def describe_gpus(profiles: Iterable[GpuProfile]) -> str:
    """A set of GPUs of the shipped table in a few words, one part per family, newest family
    first: a family's `series` when all its members share one ("Vega"), else the range from
    its oldest to its newest member's flagship product ("MI100-MI355X", with an en dash).
    Targets without products (gfx940) are named only when nothing else represents their
    family; a profile narrowed to a product is named by that product."""
    table = gpu_table()
    by_family: dict[Family, dict[str, GpuProfile]] = {}
    for profile in sorted(profiles, key=table.order):
        by_family.setdefault(profile.family, {}).setdefault(profile.gfx, profile)
    groups = sorted(
        by_family.values(), key=lambda group: max(map(table.order, group.values())), reverse=True
    )
    return ", ".join(_describe_family(list(group.values())) for group in groups)


def _describe_family(members: list[GpuProfile]) -> str:
    series = {member.series for member in members}
    if len(series) == 1 and None not in series:
        return str(series.pop())
    named = [m for m in members if m.product is not None or m.products] or members
    labels = [m.label for m in named]
    return labels[0] if len(labels) == 1 else f"{labels[0]}–{labels[-1]}"


@lru_cache(maxsize=1)  # the table is loaded once; messages ask for this per finding
def describe_wave64() -> str:
    """The GPUs whose wavefronts are always 64 wide: "wave64 GPUs: MI100-MI355X, Vega" (en dash)."""
    return f"wave64 GPUs: {describe_gpus(gpus_where(lambda g: g.is_wave64_only))}"


@lru_cache(maxsize=1)  # the table is loaded once; messages ask for this per finding
def describe_wave32() -> str:
    """The GPUs HIP compiles 32-wide by default: "wave32 GPUs: RX 5700 XT-RX 9070 XT" (en dash)."""
    return f"wave32 GPUs: {describe_gpus(gpus_where(lambda g: g.is_wave32_default))}"


@lru_cache(maxsize=1)  # the table is loaded once; messages ask for this per finding
def describe_unified_memory() -> str:
    """The GPUs that share memory with the CPU (APUs), product by product."""
    shared = gpus_where(lambda g: g.unified_memory, products=True)
    return f"unified-memory GPUs: {describe_gpus(shared)}"
