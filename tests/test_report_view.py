"""Every report format states the same figures (DESIGN.md: "All formats take their figures
from one computed view: same totals, same verdict marks").

One realistic report per tree is rendered in all five formats, and each rendering is read
back the way its reader would read it: the text and Markdown as printed, the HTML through
its data attributes, SARIF and JSON as documents. What each states — the score and effort
per route, the counts, and for each hazard its severity, number of findings and verdict
mark per route — must be the same everywhere.

The trees: the hazard fixtures (every hazard kind) and a project whose `unsupported-api`
finding (PC014) takes its ZLUDA and SCALE verdicts from the name's own rule rather than
from the catalogue, whose warp-width findings differ in severity, and which has AMD paths;
and the scan fixtures, which include files that do not parse.
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

import pytest

from portcheck import scan
from portcheck.model import Finding, Severity, Span, Status, Verdicts
from portcheck.report.html import render_html
from portcheck.report.markdown import MARK, render_markdown
from portcheck.report.sarif import report_to_sarif
from portcheck.report.text import STATUS_MARK, render_text

from conftest import FIXTURES, run_portcheck

TREES = {
    "hazards": FIXTURES / "hazards",
    "logical_warps": FIXTURES / "projects" / "logical_warps",
    "scan": FIXTURES / "scan",
}
FORMATS = ("text", "markdown", "html", "sarif", "json")
TARGET_BY_TITLE = {"HIP": "hip", "ZLUDA": "zluda", "SCALE": "scale"}
STATUS_BY_TEXT_MARK = {mark: str(status) for status, mark in STATUS_MARK.items()}
STATUS_BY_MARKDOWN_MARK = {mark: str(status) for status, mark in MARK.items()}
# What every format states; each may state more (checked against the JSON below).
COMMON_COUNTS = ("files_scanned", "lines", "uses", "distinct_names", "findings", "kernels")
VERDICT_BY_TITLE = {"ready": "ready", "needs work": "needs-work", "blocked": "blocked"}


@dataclass
class Stated:
    """What one rendering says about the report."""

    scores: dict[str, int | None] = field(default_factory=dict)
    effort_hours: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    # hazard id -> (severity, findings, {target: status})
    hazards: dict[str, tuple[str, int, dict[str, str]]] = field(default_factory=dict)
    # route -> its verdict ("blocked", "needs-work", …)
    verdicts: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module", params=sorted(TREES))
def report(request):
    return scan(TREES[request.param], cache=False)


class _Readings(dict):
    """Each format's rendering of the report, read on first use (so that one format that
    cannot be read fails only the tests that read it)."""

    def __init__(self, report) -> None:
        super().__init__()
        self.report = report

    def __missing__(self, name: str) -> Stated:
        self[name] = READERS[name](self.report)
        return self[name]


@pytest.fixture(scope="module")
def stated(report) -> dict[str, Stated]:
    return _Readings(report)


# ------------------------------------------------------------------ reading each format


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def read_text(report) -> Stated:
    text = render_text(report, width=240)
    stated = Stated()
    header = re.search(
        r"^(\d+) files, ([\d,]+) lines scanned in [\d.]+ s · ([\d,]+) CUDA uses of (\d+) "
        r"distinct names · (\d+) kernels · (\d+) skipped$",
        text,
        re.MULTILINE,
    )
    assert header, text
    keys = ("files_scanned", "lines", "uses", "distinct_names", "kernels", "files_skipped")
    stated.counts = {
        key: int(_number(value)) for key, value in zip(keys, header.groups(), strict=True)
    }
    found = re.search(r"^Hazards renaming cannot fix \((\d+)\)$", text, re.MULTILINE)
    stated.counts["findings"] = int(found.group(1)) if found else 0
    broken = re.search(r"^Parse errors in (\d+) file\(s\)", text, re.MULTILINE)
    stated.counts["files_with_parse_errors"] = int(broken.group(1)) if broken else 0
    for title, score, verdict in re.findall(
        r"^  (HIP|ZLUDA|SCALE) +(\d+)  [█·]+  (ready|needs work|blocked)", text, re.MULTILINE
    ):
        stated.scores[TARGET_BY_TITLE[title]] = int(score)
        stated.verdicts[TARGET_BY_TITLE[title]] = VERDICT_BY_TITLE[verdict]
    for title, hours in re.findall(r"^  (HIP|ZLUDA|SCALE) +([\d.]+) h   ", text, re.MULTILINE):
        stated.effort_hours[TARGET_BY_TITLE[title]] = float(hours)
    hazard_line = re.compile(r"^  (PC\d+) \S+ \[(\w+)\] ×(\d+) +(.+?) +help: ", re.MULTILINE)
    for hazard_id, severity, count, marks in hazard_line.findall(text):
        verdicts = {
            TARGET_BY_TITLE[title]: STATUS_BY_TEXT_MARK[mark]
            for title, mark in re.findall(r"(HIP|ZLUDA|SCALE) (\S)", marks)
        }
        stated.hazards[hazard_id] = (severity, int(count), verdicts)
    return stated


def read_markdown(report) -> Stated:
    text = render_markdown(report)
    stated = Stated()
    for title, verdict, score, hours in re.findall(
        r"^\| (HIP|ZLUDA|SCALE) \| \S+ (ready|needs work|blocked)[^|]* \| \*\*(\d+)\*\* / 100 \| "
        r"([\d.]+) h \|",
        text,
        re.MULTILINE,
    ):
        stated.scores[TARGET_BY_TITLE[title]] = int(score)
        stated.effort_hours[TARGET_BY_TITLE[title]] = float(hours)
        stated.verdicts[TARGET_BY_TITLE[title]] = VERDICT_BY_TITLE[verdict]
    counts = re.search(
        r"^(\d+) files, ([\d,]+) lines, ([\d,]+) CUDA uses of (\d+) names, (\d+) findings, "
        r"(\d+) kernels\.$",
        text,
        re.MULTILINE,
    )
    assert counts, text
    keys = ("files_scanned", "lines", "uses", "distinct_names", "findings", "kernels")
    stated.counts = {
        key: int(_number(value)) for key, value in zip(keys, counts.groups(), strict=True)
    }
    broken = re.search(r"^\*\*Parse errors in (\d+) file\(s\)\*\*", text, re.MULTILINE)
    stated.counts["files_with_parse_errors"] = int(broken.group(1)) if broken else 0
    header = re.search(r"^\| hazard \| severity \| count \| (.+) \|$", text, re.MULTILINE)
    titles = header.group(1).split(" | ") if header else []
    for hazard_id, severity, count, marks in re.findall(
        r"^\| (PC\d+) [\w-]+ \| (\w+) \| (\d+) \| (.+) \|$", text, re.MULTILINE
    ):
        verdicts = {
            TARGET_BY_TITLE[title]: STATUS_BY_MARKDOWN_MARK[mark]
            for title, mark in zip(titles, marks.split(" | "), strict=True)
        }
        stated.hazards[hazard_id] = (severity, int(count), verdicts)
    return stated


class _HtmlFigures(HTMLParser):
    """The figures an HTML report marks with data attributes, with the text they show."""

    def __init__(self) -> None:
        super().__init__()
        self.stated = Stated()
        self.capture: tuple[str, str] | None = None  # (what, key) whose text comes next
        self.route = ""
        self.hazard: dict[str, str] | None = None
        self.cells: list[str] = []
        self.in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {name: value or "" for name, value in attrs}
        if tag == "article" and "data-target" in data:
            self.route = data["data-target"]
            self.stated.verdicts[self.route] = data["data-verdict"]
        elif "data-score" in data:
            self.capture = ("score", data["data-score"])
        elif tag == "p" and data.get("class") == "effort" and self.route:
            self.capture = ("effort", self.route)
        elif "data-count" in data:
            self.capture = ("count", data["data-count"])
        elif tag == "tr" and "data-hazard" in data:
            self.hazard = data
            self.cells = []
        elif tag == "td" and self.hazard is not None:
            self.in_cell = True
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self.route = ""
        elif tag == "td":
            self.in_cell = False
        elif tag == "tr" and self.hazard is not None:
            statuses = {
                name.removeprefix("data-status-"): value
                for name, value in self.hazard.items()
                if name.startswith("data-status-")
            }
            severity, count = self.cells[1].strip(), int(self.cells[2])
            self.stated.hazards[self.hazard["data-hazard"]] = (severity, count, statuses)
            self.hazard = None

    def handle_data(self, data: str) -> None:
        if self.in_cell:
            self.cells[-1] += data
        if self.capture is None or not data.strip():
            return
        what, key = self.capture
        if what == "score":
            self.stated.scores[key] = None if data.strip() == "—" else int(data)
        elif what == "effort":
            self.stated.effort_hours[key] = _number(data.strip().removesuffix(" h"))
        elif what == "count":
            if data.strip().replace(",", "").isdigit():  # the <dd>, not the <dt>
                self.stated.counts[key] = int(_number(data))
            else:
                return
        self.capture = None


def read_html(report) -> Stated:
    markup = render_html(report)
    parser = _HtmlFigures()
    parser.feed(markup)
    stated = parser.stated
    broken = re.search(r"(\d+) file\(s\) with parse errors", markup)
    stated.counts["files_with_parse_errors"] = int(broken.group(1)) if broken else 0
    return stated


def read_sarif(report) -> Stated:
    run = report_to_sarif(report)["runs"][0]
    properties = run["properties"]
    stated = Stated(
        scores=dict(properties["scores"]),
        effort_hours=dict(properties["effort_hours"]),
        counts=dict(properties["counts"]),
    )
    for hazard in properties["hazards"]:
        stated.hazards[hazard["id"]] = (hazard["severity"], hazard["findings"], hazard["targets"])
    stated.verdicts = {route: r["verdict"] for route, r in properties["routes"].items()}
    cuda_results = [r for r in run["results"] if r["ruleId"].startswith("PC")]
    assert len(cuda_results) == stated.counts["findings"]
    notes = run["invocations"][0].get("toolExecutionNotifications", [])
    parse_errors = [n for n in notes if n["descriptor"]["id"] == "parse-error"]
    assert len(parse_errors) == stated.counts["files_with_parse_errors"]
    return stated


def read_json(report) -> Stated:
    """The JSON states no per-hazard mark; its findings give it, aggregated as the scoring
    does: the worst verdict and the highest severity among a hazard's findings."""
    document = json.loads(report.to_json())
    summary = document["summary"]
    stated = Stated(
        scores=dict(summary["scores"]),
        effort_hours={t: e["total_hours"] for t, e in summary["effort"].items()},
        counts={k: v for k, v in summary.items() if isinstance(v, int)},
        verdicts={route: r["verdict"] for route, r in summary["routes"].items()},
    )
    worst_first = [str(s) for s in (Status.UNSUPPORTED, Status.PARTIAL, Status.UNKNOWN)]
    by_id: dict[str, list[dict]] = {}
    for finding in document["findings"]:
        by_id.setdefault(finding["id"], []).append(finding)
    for hazard_id, findings in by_id.items():
        severity = max(Severity[f["severity"].upper()] for f in findings)
        verdicts = {}
        for target in document["targets"]:
            seen = {f["targets"][target] for f in findings}
            verdicts[target] = next((s for s in worst_first if s in seen), "supported")
        stated.hazards[hazard_id] = (severity.name.lower(), len(findings), verdicts)
    return stated


READERS = {
    "text": read_text,
    "markdown": read_markdown,
    "html": read_html,
    "sarif": read_sarif,
    "json": read_json,
}


# ------------------------------------------------------------------ the same everywhere


def test_text_and_markdown_give_each_hazard_the_same_verdict_marks(stated):
    text, markdown = stated["text"].hazards, stated["markdown"].hazards
    assert text, "no hazard read from the text report"
    differ = {h: (text[h], markdown.get(h)) for h in text if text[h] != markdown.get(h)}
    assert not differ, f"text and Markdown disagree (text, Markdown): {differ}"
    assert set(markdown) == set(text)


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_states_the_same_hazards_and_marks(stated, name):
    expected = stated["text"].hazards
    got = stated[name].hazards
    differ = {h: (expected.get(h), got.get(h)) for h in expected.keys() | got.keys()}
    differ = {h: pair for h, pair in differ.items() if pair[0] != pair[1]}
    assert not differ, f"{name} disagrees with the text report (text, {name}): {differ}"


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_states_the_same_scores_and_effort(stated, report, name):
    assert stated[name].scores == stated["json"].scores == dict(report.scores)
    assert stated[name].effort_hours == stated["json"].effort_hours


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_states_the_same_route_verdicts(stated, report, name):
    truth = {route: r.verdict for route, r in report.routes.items()}
    assert stated[name].verdicts == truth


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_states_the_same_counts(stated, name):
    truth = stated["json"].counts
    counts = stated[name].counts
    assert set(COMMON_COUNTS) <= set(counts), f"{name} does not state {COMMON_COUNTS}"
    assert set(counts) <= set(truth)
    assert counts == {k: truth[k] for k in counts}
    assert counts["files_with_parse_errors"] == truth["files_with_parse_errors"]


def test_the_html_score_arithmetic_gives_the_score_it_states(report):
    """'How scored' shows 100 x credit / items = score over the work items the scan scored
    (not over the uses and findings in NVIDIA-only code that has an AMD path)."""
    markup = render_html(report)
    rows = re.findall(
        r'<tr data-scoring="(\w+)">.*?100 × ([\d.]+) / (\d+) = <b class="coverage">(\d+)</b>'
        r"(?: → blocked: <b>(\d+)</b>)?",
        markup,
        re.DOTALL,
    )
    assert len(rows) == len(report.targets)
    for route, credit, items, coverage, blocked in rows:
        assert round(100 * float(credit) / int(items)) == int(coverage)
        assert report.routes[route].coverage == int(coverage)
        assert report.scores[route] == (int(blocked) if blocked else int(coverage))
        assert bool(blocked) == (report.routes[route].verdict == "blocked")


def test_the_trees_exercise_what_the_formats_used_to_disagree_on(stated, report):
    """The comparison above is only as good as the cases it sees."""
    tree = report.root
    if tree.endswith("logical_warps"):
        assert "PC014" in stated["text"].hazards  # its verdicts come from the name's rule
        # hazards whose findings carry different verdicts and severities
        assert len({f.targets for f in report.findings}) > 1
        assert len({f.severity for f in report.findings}) > 1
        assert report.amd_paths
    if tree.endswith("scan"):
        assert stated["json"].counts["files_with_parse_errors"] > 0


# ------------------------------------------------------------------ the view itself


def _finding(slug: str, hazard_id: str, severity: Severity, path: str, targets: Verdicts):
    return Finding(hazard_id, slug, severity, path, Span(1, 1, 1, 2, 0, 1), "message", targets)


def test_a_hazard_is_marked_with_the_worst_verdict_and_highest_severity_of_its_findings():
    from portcheck.report.view import ReportView

    report = scan(TREES["logical_warps"], cache=False)
    mild = Verdicts(Status.SUPPORTED, Status.SUPPORTED, Status.PARTIAL)
    harsh = Verdicts(Status.PARTIAL, Status.UNKNOWN, Status.SUPPORTED)
    findings = (
        _finding("warp-size-assumption", "PC001", Severity.LOW, "a.cu", mild),
        _finding("warp-size-assumption", "PC001", Severity.HIGH, "b.cu", harsh),
    )
    (group,) = ReportView(replace(report, findings=findings)).hazards
    assert group.severity is Severity.HIGH
    assert dict(group.verdicts) == {
        "hip": Status.PARTIAL,
        "zluda": Status.UNKNOWN,
        "scale": Status.PARTIAL,
    }
    assert group.count == 2


def test_html_shows_the_same_code_from_a_cached_report(tmp_path, monkeypatch):
    """Snippets are kept in the Report (excerpts), so the report the cache gives back
    shows the same code; and the formatter reads nothing from disk."""
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    fresh = scan(TREES["hazards"])
    cached = scan(TREES["hazards"])
    assert cached.excerpts == fresh.excerpts and fresh.excerpts
    normalise = lambda markup: re.sub(r"in [\d.]+ s\.", "", markup)  # noqa: E731
    assert normalise(render_html(cached)) == normalise(render_html(fresh))
    assert '<pre class="hitline"' in render_html(fresh)
    assert '<script type="application/json" id="excerpts">' in render_html(fresh)


def test_html_after_a_json_scan_from_the_cache_still_shows_the_code(tmp_path):
    """The command line reads the code around findings only for HTML (the only format
    that shows it); a JSON scan remembered in the cache must not hand a later HTML scan
    a report without it."""
    env = {**os.environ, "PORTCHECK_CACHE_DIR": str(tmp_path / "cache")}
    tree = TREES["hazards"]
    first = run_portcheck("scan", str(tree), "--format", "json", env=env)
    assert first.returncode in (0, 1), first.stderr
    page = tmp_path / "report.html"
    second = run_portcheck("scan", str(tree), "--format", "html", "-o", str(page), env=env)
    assert second.returncode in (0, 1), second.stderr
    markup = page.read_text()
    finding = json.loads(first.stdout)["findings"][0]
    source = (tree / finding["path"]).read_text().splitlines()[finding["line"] - 1].strip()
    assert '<pre class="hitline"' in markup
    assert html.escape(source, quote=False) in html.unescape(markup) or source in markup


def test_only_files_inside_the_tree_get_excerpts(tmp_path):
    from portcheck.excerpts import read_excerpts

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "kernel.cu").write_text("a\nb\nc\n")
    (tmp_path / "secret.cu").write_text("password\n")
    (tree / "link.cu").symlink_to(tmp_path / "secret.cu")
    hit = Verdicts(Status.PARTIAL, Status.PARTIAL, Status.PARTIAL)
    findings = [
        _finding("inline-ptx", "PC003", Severity.HIGH, path, hit)
        for path in ("kernel.cu", "../secret.cu", "link.cu", "missing.cu")
    ]
    excerpts = read_excerpts(tree, findings)
    assert [(e.path, e.start_line, e.lines) for e in excerpts] == [
        ("kernel.cu", 1, ("a", "b", "c"))
    ]
