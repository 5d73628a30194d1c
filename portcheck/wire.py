"""Plain-data forms of scan results: what the scan cache stores and worker processes send.

An entry is JSON text. Decoding it runs no code whatever the bytes are (pickle would run
any callable a planted entry names), and every value read back is checked for type and
shape before it becomes a FileScan or a Report, down to what the formatters later index
(a finding's slug is a known hazard, a report's scores name its targets). An entry that
does not check out raises WireError, which the cache treats as a miss.

Uses are the bulk of a report (tens of thousands), so they travel as columns: a table of
their distinct strings and packed integer arrays (base64) of string indices, spans and
device flags. Arrays hold integers by construction; a few C-level bounds checks make the
indices safe; decoding builds no intermediate objects per use.
"""

from __future__ import annotations

import base64
import json
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, starmap
from typing import Any

from portcheck.checks import FunctionInfo
from portcheck.filescan import FileScan
from portcheck.model import (
    VERDICT_NAMES,
    AmdPath,
    CellStart,
    Dependency,
    Effort,
    EffortCategory,
    Excerpt,
    Extension,
    FileSummary,
    Finding,
    Kernel,
    Language,
    OptionalComponent,
    OptionalCost,
    PyFinding,
    PyRule,
    PythonSection,
    PyUse,
    Report,
    ReportTarget,
    RouteAssessment,
    RouteBlocker,
    RouteVerdicts,
    Severity,
    Skipped,
    Span,
    Status,
    Target,
    Use,
    Verdicts,
    WheelAdvice,
    WorkItems,
)
from portcheck.preproc import Branch, ConstantDef, Invocation, MacroDef, PreprocFacts
from portcheck.project import Pending
from portcheck.ruleset import RuleSet

FORMAT = "portcheck.wire/1"
_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


class WireError(ValueError):
    """An entry that is not a well-formed encoding of what was asked for."""


def _bad(what: str) -> WireError:
    return WireError(f"malformed cache entry: {what}")


# ------------------------------------------------------------------ scalar fields


@dataclass(frozen=True, slots=True)
class Field:
    """How one field travels: `encode` to a JSON value, `decode` back with checks."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _typed(kind: type) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if type(value) is not kind:
            raise _bad(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return check


_check_str = _typed(str)
_check_int = _typed(int)  # `type(...) is int` also refuses True and False
_check_bool = _typed(bool)
_check_list = _typed(list)


def _decode_float(value: Any) -> float:
    if type(value) is not float and type(value) is not int:
        raise _bad("expected a number")
    return float(value)


def _decode_strs(value: Any) -> tuple[str, ...]:
    if type(value) is not list or not set(map(type, value)) <= {str}:
        raise _bad("expected a list of strings")
    return tuple(value)


def _decode_span(value: Any) -> Span:
    if type(value) is not list or len(value) != 6 or not set(map(type, value)) <= {int}:
        raise _bad("expected a span of six integers")
    return Span._make(value)


def _enum(kind: Any) -> Field:
    def decode(value: Any) -> Any:
        if type(value) is not (int if issubclass(kind, int) else str):
            raise _bad(f"expected a {kind.__name__}")
        return kind(value)  # ValueError (a WireError's base) for an unknown member

    return Field(lambda member: member.value, decode)


def _optional(inner: Field) -> Field:
    return Field(
        lambda value: None if value is None else inner.encode(value),
        lambda value: None if value is None else inner.decode(value),
    )


STR = Field(_same, _check_str)
INT = Field(_same, _check_int)
BOOL = Field(_same, _check_bool)
FLOAT = Field(_same, _decode_float)
STRS = Field(list, _decode_strs)
STR_SET = Field(sorted, lambda value: set(_decode_strs(value)))
SPAN = Field(list, _decode_span)
SEVERITY = _enum(Severity)
LANGUAGE = _enum(Language)
STATUS = _enum(Status)


def _decode_verdicts(kind: Any, size: int) -> Callable[[Any], Any]:
    def decode(value: Any) -> Any:
        if type(value) is not list or len(value) != size:
            raise _bad(f"expected {size} statuses")
        return kind(*map(STATUS.decode, value))

    return decode


VERDICTS = Field(
    lambda v: [v.hip.value, v.zluda.value, v.scale.value], _decode_verdicts(Verdicts, 3)
)
ROUTE_VERDICTS = Field(
    lambda v: [v.rocm.value, v.directml.value], _decode_verdicts(RouteVerdicts, 2)
)


def _decode_scores(value: Any) -> dict[str, int | None]:
    if type(value) is not dict or not set(map(type, value.values())) <= {int, type(None)}:
        raise _bad("expected scores")
    return value


SCORES = Field(dict, _decode_scores)


def _decode_reasons(value: Any) -> dict[str, str]:
    if type(value) is not dict or not set(map(type, value.values())) <= {str}:
        raise _bad("expected reasons by route")
    return value


REASONS = Field(dict, _decode_reasons)


def _decode_optional_int(value: Any) -> int | None:
    return None if value is None else _check_int(value)


def _decode_effort(value: Any) -> dict[str, Effort]:
    """{route: {"categories": {name: {"items": int, "hours": number}}, "total_hours": n}}"""
    if type(value) is not dict:
        raise _bad("expected effort")
    efforts = {}
    for route, estimate in value.items():
        if type(estimate) is not dict or set(estimate) != {"categories", "total_hours"}:
            raise _bad("expected an effort estimate")
        categories = estimate["categories"]
        if type(categories) is not dict:
            raise _bad("expected effort categories")
        decoded = {}
        for name, counts in categories.items():
            if type(counts) is not dict or set(counts) != {"items", "hours"}:
                raise _bad("expected an effort category")
            decoded[name] = EffortCategory(
                _check_int(counts["items"]), _decode_float(counts["hours"])
            )
        efforts[route] = Effort(decoded, _decode_float(estimate["total_hours"]))
    return efforts


EFFORT = Field(lambda effort: {k: v.to_dict() for k, v in effort.items()}, _decode_effort)


def _decode_status_counts(value: Any) -> dict[Status, int]:
    if type(value) is not dict:
        raise _bad("expected counts by status")
    return {STATUS.decode(status): _check_int(count) for status, count in value.items()}


STATUS_COUNTS = Field(lambda counts: {s.value: n for s, n in counts.items()}, _decode_status_counts)


# ------------------------------------------------------------------ records


class Record:
    """A dataclass (or named tuple) as a JSON list of its fields, in order."""

    def __init__(
        self,
        kind: Callable[..., Any],
        fields: Sequence[tuple[str, Field]],
        check: Callable[[Any], None] | None = None,
    ) -> None:
        self.kind = kind
        self.names = [name for name, _ in fields]
        self.encoders = [field.encode for _, field in fields]
        self.decoders = [field.decode for _, field in fields]
        self.check = check
        self.field = Field(self.encode, self.decode)
        self.list = Field(lambda items: [self.encode(item) for item in items], self.decode_list)
        self.tuple = Field(self.list.encode, lambda items: tuple(self.decode_list(items)))

    def encode(self, item: Any) -> list[Any]:
        pairs = zip(self.names, self.encoders, strict=True)
        return [enc(getattr(item, name)) for name, enc in pairs]

    def decode(self, value: Any) -> Any:
        if type(value) is not list or len(value) != len(self.decoders):
            raise _bad(f"expected a {getattr(self.kind, '__name__', 'record')}")
        item = self.kind(*[dec(v) for dec, v in zip(self.decoders, value, strict=True)])
        if self.check is not None:
            self.check(item)
        return item

    def decode_list(self, value: Any) -> list[Any]:
        if type(value) is not list:
            raise _bad("expected a list")
        return [self.decode(item) for item in value]


def _known_hazard(finding: Finding) -> None:
    from portcheck.checks import catalogue

    spec = catalogue().get(finding.slug)
    if spec is None or spec.id != finding.id or spec.language is not Language.CUDA:
        raise _bad(f"unknown hazard {finding.slug!r}")


def _known_python_hazard(finding: PyFinding) -> None:
    from portcheck.checks import catalogue

    spec = catalogue().get(finding.slug)
    if spec is None or spec.id != finding.id or spec.language is not Language.PYTHON:
        raise _bad(f"unknown Python hazard {finding.slug!r}")


KERNEL = Record(Kernel, [("name", STR), ("path", STR), ("span", SPAN), ("findings", STRS)])
FINDING = Record(
    Finding,
    [
        ("id", STR),
        ("slug", STR),
        ("severity", SEVERITY),
        ("path", STR),
        ("span", SPAN),
        ("message", STR),
        ("targets", VERDICTS),
        ("help_url", STR),
        ("fix", STR),
        ("function", STR),
        ("kernels", STRS),
        ("fingerprint", STR),
        ("amd_alternative", BOOL),
        ("optional", STR),
    ],
    _known_hazard,
)
STR_TUPLE = Field(list, _decode_strs)
BRANCH = Record(
    Branch,
    [
        ("group", INT),
        ("start_line", INT),
        ("end_line", INT),
        ("start_byte", INT),
        ("end_byte", INT),
        ("prior", STR_TUPLE),
        ("test", _optional(STR)),
        ("directive", STR),
    ],
)
MACRO_DEF = Record(
    MacroDef,
    [
        ("name", STR),
        ("body", STR),
        ("offset", INT),
        ("function_like", BOOL),
        ("line", INT),
        ("column", INT),
        ("text", STR),
    ],
)
CONSTANT_DEF = Record(
    ConstantDef,
    [("name", STR), ("expr", STR), ("offset", INT), ("line", INT), ("column", INT), ("text", STR)],
)


def _pairs(
    check: Callable[[Any], Any],
    second: Callable[[Any], Any] | None = None,
    make: Callable[[list[Any]], Any] = tuple,
) -> Field:
    """Pairs (byte ranges, (relpath, digest), (name, offset)) as a JSON list of 2-lists:
    `check` reads the first of each pair, `second` (else `check`) the other; `make` builds
    the container (a tuple, or a list where the dataclass holds one)."""
    other = second or check

    def decode(value: Any) -> Any:
        if type(value) is not list:
            raise _bad("expected a list of pairs")
        pairs = []
        for item in value:
            if type(item) is not list or len(item) != 2:
                raise _bad("expected a pair")
            pairs.append((check(item[0]), other(item[1])))
        return make(pairs)

    return Field(lambda pairs: [list(pair) for pair in pairs], decode)


NAMED_OFFSETS = _pairs(_check_str, _check_int)  # (name, byte offset)
NAMED_LIST = _pairs(_check_str, _check_int, list)


INVOCATION = Record(
    Invocation,
    [("name", STR), ("arguments", _pairs(_check_int))],
)
PREPROC = Record(
    PreprocFacts,
    [
        ("branches", BRANCH.tuple),
        ("macros", MACRO_DEF.tuple),
        ("constants", CONSTANT_DEF.tuple),
        ("invocations", INVOCATION.tuple),
        ("shuffle_widths", NAMED_OFFSETS),
        ("constexpr_branches", BRANCH.tuple),
        ("hip_aliases", STR_TUPLE),
        ("includes", NAMED_OFFSETS),
    ],
)
PENDING = Record(
    Pending,
    [
        ("finding", FINDING.field),
        ("expr", STR),
        ("values", Field(list, lambda v: tuple(_check_int(x) for x in _check_list(v)))),
        ("negate", BOOL),
        ("device_macros", STR_TUPLE),
        ("fold", BOOL),
        ("directive", BOOL),
        ("if_unknown", BOOL),
        ("wrapper", STR),
        ("wrapper_arg", INT),
        ("ptx_callee", STR),
        ("lane_callees", STR),
        ("launched", STR),
        ("polled", BOOL),
    ],
)
REPORT_TARGET = Record(
    ReportTarget,
    [
        ("rocm", _optional(STR)),
        ("gpu", _optional(STR)),
        ("gpu_name", STR),
        ("wavefront", Field(_same, _decode_optional_int)),
    ],
)
AMD_PATH = Record(AmdPath, [("path", STR), ("start_line", INT), ("end_line", INT), ("guard", STR)])
FUNCTION = Record(
    FunctionInfo,
    [
        ("name", STR),
        ("start", INT),
        ("end", INT),
        ("is_kernel", BOOL),
        ("is_device", BOOL),
        ("calls", STR_SET),
        ("sites", NAMED_LIST),
        ("scoped", BOOL),
    ],
)
PY_RULE = Record(
    PyRule,
    [
        ("name", STR),
        ("kind", STR),
        ("match", STR),
        ("status", ROUTE_VERDICTS),
        ("note", STR),
        ("source", STR),
        ("replacement", _optional(STR)),
        ("gaps", STRS),
        ("not_applicable", _pairs(_check_str)),
    ],
)
DEPENDENCY = Record(
    Dependency,
    [
        ("name", STR),
        ("spec", STR),
        ("path", STR),
        ("line", INT),
        ("manifest", LANGUAGE),
        ("rule", _optional(PY_RULE.field)),
    ],
)
PY_USE = Record(PyUse, [("name", STR), ("path", STR), ("span", SPAN), ("rule", PY_RULE.field)])
PY_FINDING = Record(
    PyFinding,
    [
        ("id", STR),
        ("slug", STR),
        ("severity", SEVERITY),
        ("path", STR),
        ("span", SPAN),
        ("message", STR),
        ("targets", ROUTE_VERDICTS),
        ("help_url", STR),
        ("fix", STR),
        ("fingerprint", STR),
    ],
    _known_python_hazard,
)
EXTENSION = Record(
    Extension,
    [
        ("kind", STR),
        ("path", STR),
        ("line", INT),
        ("sources", STRS),
        ("missing", STRS),
        ("scanned_lines", INT),
    ],
)
SKIPPED = Record(Skipped, [("path", STR), ("reason", STR)])
CELL_START = Record(CellStart, [("cell", INT), ("line", INT), ("raw_line", INT)])


def _decode_notebooks(value: Any) -> dict[str, tuple[CellStart, ...]]:
    if type(value) is not dict:
        raise _bad("expected notebooks by path")
    return {_check_str(path): CELL_START.tuple.decode(cells) for path, cells in value.items()}


NOTEBOOKS = Field(
    lambda notebooks: {path: CELL_START.tuple.encode(c) for path, c in notebooks.items()},
    _decode_notebooks,
)
WHEEL_ADVICE = Record(
    WheelAdvice,
    [
        ("rocm", STR),
        ("index_url", _optional(STR)),
        ("torch", STRS),
        ("requirement", STR),
        ("command", STR),
        ("note", STR),
        ("amd_validated", STRS),
        ("source", STR),
    ],
)
WORK_ITEMS = Record(WorkItems, [("names", STATUS_COUNTS), ("hazards", STATUS_COUNTS)])


def _decode_work_items(value: Any) -> dict[str, WorkItems]:
    if type(value) is not dict:
        raise _bad("expected work items")
    return {_check_str(target): WORK_ITEMS.decode(items) for target, items in value.items()}


WORK_ITEMS_BY_TARGET = Field(
    lambda by_target: {t: WORK_ITEMS.encode(items) for t, items in by_target.items()},
    _decode_work_items,
)
ROUTE_BLOCKER = Record(
    RouteBlocker, [("kind", STR), ("name", STR), ("path", STR), ("line", INT), ("reason", STR)]
)


def _decode_verdict(value: Any) -> str:
    if value not in VERDICT_NAMES:
        raise _bad("expected a route verdict")
    return str(value)


ROUTE_ASSESSMENT = Record(
    RouteAssessment,
    [
        ("verdict", Field(_same, _decode_verdict)),
        ("coverage", Field(_same, _decode_optional_int)),
        ("blockers", ROUTE_BLOCKER.tuple),
    ],
)
OPTIONAL_COST = Record(OptionalCost, [("hours", FLOAT), ("blockers", ROUTE_BLOCKER.tuple)])


def _by_route(record: Record) -> Field:
    def decode(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _bad("expected a value per route")
        return {_check_str(route): record.decode(item) for route, item in value.items()}

    return Field(lambda by_route: {r: record.encode(v) for r, v in by_route.items()}, decode)


def _decode_hours_by_directory(value: Any) -> dict[str, dict[str, float]]:
    if type(value) is not dict:
        raise _bad("expected hours by folder per route")
    decoded = {}
    for route, hours in value.items():
        if type(hours) is not dict:
            raise _bad("expected hours by folder")
        decoded[_check_str(route)] = {
            _check_str(folder): _decode_float(h) for folder, h in hours.items()
        }
    return decoded


HOURS_BY_DIRECTORY = Field(
    lambda by_route: {route: dict(hours) for route, hours in by_route.items()},
    _decode_hours_by_directory,
)
OPTIONAL_COMPONENT = Record(
    OptionalComponent,
    [
        ("guard", STR),
        ("paths", STRS),
        ("names", STRS),
        ("findings", INT),
        ("if_enabled", _by_route(OPTIONAL_COST)),
    ],
)
EXCERPT = Record(Excerpt, [("path", STR), ("start_line", INT), ("lines", STRS)])
FILE_SUMMARY = Record(
    FileSummary,
    [
        ("path", STR),
        ("language", LANGUAGE),
        ("lines", INT),
        ("encoding", STR),
        ("uses", INT),
        ("findings", INT),
        ("parse_errors", INT),
        ("scores", SCORES),
        ("front_end", STR),
    ],
)


def _python_scores_name_routes(section: PythonSection) -> None:
    from portcheck.model import ROUTES

    routes = {str(route) for route in ROUTES}
    if set(section.scores) != routes or not routes - set(section.not_applicable) <= set(
        section.effort
    ):
        raise _bad("Python scores do not name the Python routes")


PYTHON_SECTION = Record(
    PythonSection,
    [
        ("dependencies", DEPENDENCY.tuple),
        ("uses", PY_USE.tuple),
        ("findings", PY_FINDING.tuple),
        ("extensions", EXTENSION.tuple),
        ("scores", SCORES),
        ("effort", EFFORT),
        ("files", INT),
        ("kernels", KERNEL.tuple),
        ("not_applicable", REASONS),
        ("rocm_wheels", _optional(WHEEL_ADVICE.field)),
    ],
    _python_scores_name_routes,
)


# ------------------------------------------------------------------ uses, as columns


def _pack(values: array) -> str:
    return base64.b64encode(values.tobytes()).decode("ascii")


def _unpack(code: str, value: Any) -> array:
    if type(value) is not str:
        raise _bad("expected packed integers")
    packed = array(code)
    packed.frombytes(base64.b64decode(value, validate=True))  # ValueError if not whole items
    return packed


def encode_uses(uses: Sequence[Use]) -> dict[str, object]:
    """Uses as a string table and packed columns (rules by name: the receiver has them)."""
    if not uses:
        return {"strings": [], "text": "", "rule": "", "span": "", "device": ""}
    names, kinds, families, paths, spans, devices, rules = zip(*uses, strict=True)
    rule_names = [None if rule is None else rule.cuda for rule in rules]
    strings = list(dict.fromkeys(chain(names, kinds, families, paths, filter(None, rule_names))))
    index = {text: i for i, text in enumerate(strings)}
    columns = zip(names, kinds, families, paths, strict=True)
    text_ids = array("i", map(index.__getitem__, chain.from_iterable(columns)))
    rule_ids = array("i", [-1 if name is None else index[name] for name in rule_names])
    return {
        "strings": strings,
        "text": _pack(text_ids),
        "rule": _pack(rule_ids),
        "span": _pack(array("q", chain.from_iterable(spans))),
        "device": base64.b64encode(bytes(map(bool, devices))).decode("ascii"),
    }


def decode_uses(value: Any, rules: RuleSet) -> list[Use]:
    if type(value) is not dict:
        raise _bad("expected uses")
    strings = value["strings"]
    if type(strings) is not list or not set(map(type, strings)) <= {str}:
        raise _bad("expected a string table")
    text_ids = _unpack("i", value["text"])
    rule_ids = _unpack("i", value["rule"])
    spans = _unpack("q", value["span"])
    if type(value["device"]) is not str:
        raise _bad("expected device flags")
    devices = base64.b64decode(value["device"], validate=True)
    count = len(rule_ids)
    if (len(text_ids), len(spans), len(devices)) != (4 * count, 6 * count, count):
        raise _bad("use columns of different lengths")
    if not count:
        return []
    if min(text_ids) < 0 or max(text_ids) >= len(strings) or min(spans) < 0:
        raise _bad("a use index out of range")
    if min(rule_ids) < -1 or max(rule_ids) >= len(strings):
        raise _bad("a rule index out of range")
    rule_by_id = {i: None if i < 0 else rules.lookup(strings[i]) for i in set(rule_ids)}
    text = strings.__getitem__
    return list(
        map(
            Use,
            map(text, text_ids[0::4]),
            map(text, text_ids[1::4]),
            map(text, text_ids[2::4]),
            map(text, text_ids[3::4]),
            starmap(Span, zip(*[iter(spans)] * 6, strict=True)),
            map(bool, devices),
            map(rule_by_id.__getitem__, rule_ids),
        )
    )


# ------------------------------------------------------------------ documents


def _document(kind: str, body: dict[str, object]) -> bytes:
    return _dumps({"format": FORMAT, "kind": kind, **body}).encode("ascii")


def _open(payload: bytes | str, kind: str) -> dict[str, Any]:
    """The JSON object of an entry of this kind; WireError for anything else."""
    try:
        doc = json.loads(payload)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _bad(f"not JSON ({exc.__class__.__name__})") from None
    if type(doc) is not dict or doc.get("format") != FORMAT or doc.get("kind") != kind:
        raise _bad(f"not a {kind} entry")
    return doc


def _decoded(decode: Callable[[], Any]) -> Any:
    """Run a decoder; any error it meets in the data is a WireError."""
    try:
        return decode()
    except WireError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        raise _bad(exc.__class__.__name__) from None


_FILE_FIELDS: list[tuple[str, Field]] = [
    ("kernels", KERNEL.list),
    ("definitions", STR_SET),
    ("api_definitions", NAMED_OFFSETS),
    ("parse_errors", INT),
    ("findings", FINDING.list),
    ("functions", FUNCTION.list),
    ("dependencies", DEPENDENCY.list),
    ("py_uses", PY_USE.list),
    ("py_findings", PY_FINDING.list),
    ("extensions", EXTENSION.list),
    ("py_kernels", KERNEL.list),
    ("preproc", PREPROC.field),
    ("pending", PENDING.list),
    ("front_end", STR),
    ("facts_only", BOOL),
    ("clang_inputs", _pairs(_check_str)),
    ("cells", CELL_START.tuple),
    ("lane_blind_names", STR_SET),
    ("polls", BOOL),
    ("replaced_apis", STR_SET),
]


def encode_file_scan(scan: FileScan) -> bytes:
    body: dict[str, object] = {
        "path": scan.path,
        "language": scan.language.value,
        "lines": scan.lines,
        "encoding": scan.encoding,
        "uses": encode_uses(scan.uses),
    }
    for name, field in _FILE_FIELDS:
        body[name] = field.encode(getattr(scan, name))
    return _document("file", body)


def decode_file_scan(payload: bytes | str, rules: RuleSet) -> FileScan:
    doc = _open(payload, "file")

    def decode() -> FileScan:
        scan = FileScan(
            _check_str(doc["path"]),
            LANGUAGE.decode(doc["language"]),
            _check_int(doc["lines"]),
            _check_str(doc["encoding"]),
        )
        scan.uses = decode_uses(doc["uses"], rules)
        for name, field in _FILE_FIELDS:
            setattr(scan, name, field.decode(doc[name]))
        return scan

    result: FileScan = _decoded(decode)
    return result


_REPORT_FIELDS: list[tuple[str, Field]] = [
    ("root", STR),
    ("tool_version", STR),
    ("files", FILE_SUMMARY.tuple),
    ("findings", FINDING.tuple),
    ("skipped", SKIPPED.tuple),
    ("kernels", KERNEL.tuple),
    ("scores", SCORES),
    ("effort", EFFORT),
    ("seconds", FLOAT),
    ("python", _optional(PYTHON_SECTION.field)),
    ("amd_paths", AMD_PATH.tuple),
    ("excerpts", EXCERPT.tuple),
    ("work_items", WORK_ITEMS_BY_TARGET),
    ("target", REPORT_TARGET.field),
    ("not_applicable", REASONS),
    ("routes", _by_route(ROUTE_ASSESSMENT)),
    ("optional", OPTIONAL_COMPONENT.tuple),
    ("effort_by_directory", HOURS_BY_DIRECTORY),
    ("alternative_names", Field(sorted, lambda value: frozenset(_decode_strs(value)))),
    ("notebooks", NOTEBOOKS),
]


def encode_report(report: Report) -> bytes:
    """A scan's report (before --compile and --baseline add to it: compile_results,
    toolchain and new_finding_indices are not kept)."""
    body: dict[str, object] = {
        "targets": [target.value for target in report.targets],
        "uses": encode_uses(report.uses),
    }
    for name, field in _REPORT_FIELDS:
        body[name] = field.encode(getattr(report, name))
    return _document("report", body)


def decode_report(payload: bytes | str, rules: RuleSet) -> Report:
    doc = _open(payload, "report")

    def decode() -> Report:
        targets = tuple(map(_enum(Target).decode, _decode_strs(doc["targets"])))
        values = {name: field.decode(doc[name]) for name, field in _REPORT_FIELDS}
        names = {str(target) for target in targets}
        if set(values["scores"]) != names or not names <= set(values["effort"]):
            raise _bad("scores do not name the report's targets")
        if not names <= set(values["work_items"]) or set(values["routes"]) != names:
            raise _bad("work items do not name the report's targets")
        return Report(targets=targets, uses=tuple(decode_uses(doc["uses"], rules)), **values)

    result: Report = _decoded(decode)
    return result


__all__ = [
    "FORMAT",
    "WireError",
    "decode_file_scan",
    "decode_report",
    "decode_uses",
    "encode_file_scan",
    "encode_report",
    "encode_uses",
]
