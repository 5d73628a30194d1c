"""The HTML report as a person sees it: rendered by headless Chromium, read from its DOM.

Chromium runs the page's own JavaScript before dumping the DOM, so what these tests read
is what a browser shows, not what the template meant to write."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

import portcheck
from portcheck.compile import CompileResult, Diagnostic, Toolchain
from portcheck.report.html import render_html

from conftest import FIXTURES, REPO

EXAMPLE = REPO / "examples" / "heatflow"
HOSTILE_STRING = "</script><script>alert(1)</script>"
HOSTILE_NAME = "a<b>.cu"
HOSTILE_SOURCE = f"""\
#include <cuda_runtime.h>

const char* s = "{HOSTILE_STRING}";
__global__ void lane(unsigned* out) {{
  unsigned id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  out[threadIdx.x] = id;
}}

int main() {{
  unsigned* d;
  cudaMalloc(&d, 128);
  lane<<<1, 32>>>(d);
  cudaFree(d);
  return 0;
}}
"""
HOSTILE_ASM_LINE = 6
VOID_NAMES = "area base br col embed hr img input link meta source track wbr"  # no end tag
VOID_ELEMENTS = frozenset(VOID_NAMES.split())


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("headless Chromium is required in CI (apt-get install -y chromium)")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def _run_chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
        page.resolve().as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@dataclasses.dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Dom(HTMLParser):
    """The dumped DOM as a flat list of elements, each with all the text inside it."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        if tag not in VOID_ELEMENTS:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self._open) - 1, -1, -1):
            if self._open[index].tag == tag:
                del self._open[index:]
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Element]:
        return [
            e
            for e in self.elements
            if (tag is None or e.tag == tag)
            and (cls is None or cls in e.classes)
            and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    @property
    def body_text(self) -> str:
        return " ".join(self.find("body")[0].text.split())


def _dump_dom(page: Path, tmp_path: Path) -> Dom:
    result = _run_chromium(page, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "<body" in result.stdout, result.stderr[-2000:]
    return Dom(result.stdout)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    report = portcheck.scan(EXAMPLE)
    page = tmp_path_factory.mktemp("html") / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    return report, page


def test_summary_scores_findings_and_help_links_show_in_the_browser(example, tmp_path):
    report, page = example
    dom = _dump_dom(page, tmp_path)

    for target in ("hip", "zluda", "scale"):
        shown = dom.find("span", cls="score", data_score=target)
        assert [e.text.strip() for e in shown] == [str(report.scores[target])]

    for target in ("hip", "zluda", "scale"):
        (card,) = dom.find("article", data_target=target)
        assert card.attrs["data-verdict"] == report.routes[target].verdict
    open_routes = [t for t in report.targets if report.routes[str(t)].verdict != "blocked"]
    best = max(open_routes, key=lambda t: report.scores[str(t)])
    recommendation = dom.find(id="recommendation")[0].text
    assert f"{best.value.upper()} is the most direct route" in recommendation
    assert f"readiness {report.scores[str(best)]}/100" in recommendation
    for target in report.targets:
        if report.routes[str(target)].verdict == "blocked":
            assert f"{target.value.upper()} is blocked" in recommendation

    ptx = next(f for f in report.findings if f.slug == "inline-ptx")
    text = dom.body_text
    assert ptx.message in text
    assert f"{ptx.path}:{ptx.span.line}" in text
    group = dom.find("details", id="finding-inline-ptx")[0]
    assert "open" not in group.attrs  # collapsed until a reader opens it
    assert "asm" in group.text  # the line the finding points at
    (row,) = [e for e in dom.find("li", cls="finding") if e.attrs["data-slug"] == "inline-ptx"]
    assert row.attrs["data-fingerprint"] == ptx.fingerprint
    # Help travels with the page: the rule's page itself, and the command that prints it;
    # no link into a checkout's docs/ folder, which is dead anywhere else.
    assert "portcheck explain PC003" in group.text
    assert "Why is this a problem?" in group.text
    assert not [e for e in dom.find("a") if e.attrs.get("href", "").startswith("docs/")]

    # Every scanned file and kernel has its row; the chart has one bar group per family.
    file_cells = {e.text.strip() for e in dom.find("td", cls="path")}
    assert {f.path for f in report.files} <= file_cells
    assert {k.name for k in report.kernels} <= {e.text for e in dom.find("code")}
    families = {u.family for u in report.uses}
    chart_labels = [e.text for e in dom.find("text", cls="family")]
    assert Counter(chart_labels) == Counter({family: 3 for family in families})  # 3 routes

    # Offline: nothing in the page points at the network.
    assert not dom.find("link") and not [e for e in dom.find("script") if "src" in e.attrs]
    assert not [e for e in dom.find("img") if "src" in e.attrs]


def test_help_links_only_to_a_published_absolute_address(example, monkeypatch):
    report, _ = example
    assert 'class="help"' not in render_html(report)
    monkeypatch.setenv("PORTCHECK_HELP_BASE_URL", "https://docs.example.org/portcheck/rules/")
    markup = render_html(report)
    assert 'href="https://docs.example.org/portcheck/rules/inline-ptx.md"' in markup
    monkeypatch.setenv("PORTCHECK_HELP_BASE_URL", "docs/rules")  # not absolute: ignored
    assert 'class="help"' not in render_html(report)


OPEN_CONTEXT = """
<script>
document.querySelector('li.finding[data-slug="inline-ptx"] button.context').click();
</script>
"""


def test_hostile_source_text_and_file_names_stay_text(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / HOSTILE_NAME).write_text(HOSTILE_SOURCE, encoding="utf-8")
    report = portcheck.scan(project)
    finding = next(f for f in report.findings if f.slug == "inline-ptx")
    assert (finding.path, finding.span.line) == (HOSTILE_NAME, HOSTILE_ASM_LINE)

    markup = render_html(report)
    assert "<script>alert(1)" not in markup
    assert "a<b>.cu" not in markup
    page = tmp_path / "report.html"
    page.write_text(markup.replace("</body>", OPEN_CONTEXT + "</body>"), encoding="utf-8")
    dom = _dump_dom(page, tmp_path)

    scripts = dom.find("script")
    assert scripts, "the page's own script should be there"
    code = [s for s in scripts if s.attrs.get("type") != "application/json"]  # data is not run
    assert not [s for s in code if "alert(1)" in s.text]
    snippets = [e.text for e in dom.find("pre", cls="snippet")]  # shown from the excerpt store
    assert any(HOSTILE_STRING in text for text in snippets)
    assert f"{HOSTILE_NAME}:{HOSTILE_ASM_LINE}" in dom.body_text
    assert HOSTILE_NAME in {e.text.strip() for e in dom.find("td", cls="path")}


def test_screenshot_is_a_real_picture(example, tmp_path):
    _, page = example
    png = tmp_path / "report.png"
    result = _run_chromium(
        page, tmp_path / "profile", f"--screenshot={png}", "--window-size=1280,2400"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 20_000  # a blank page compresses to a few hundred bytes


def test_compile_results_and_a_single_target_render():
    report = portcheck.scan(EXAMPLE, targets="hip")
    failed = CompileResult(
        path="src/residual.cu",
        arch="gfx90a",
        ok=False,
        seconds=0.7,
        diagnostics=[
            Diagnostic(6, 10, "error", "use of undeclared identifier '<T>'", "src/residual.cu")
        ]
        * 2,
        failure_class="port-problem",
        explanation="PC002 lane-mask-width",
    )
    built = CompileResult(path="src/main.cu", arch="gfx90a", ok=True, seconds=1.1)
    report = dataclasses.replace(
        report,
        compile_results=(failed, built),
        toolchain=Toolchain("/usr/bin/hipcc", "5.2", frozenset({"gfx90a"})),
    )
    markup = render_html(report)
    assert "1/2 translation units build" in markup
    assert "undeclared identifier &#39;&lt;T&gt;&#39;" in markup
    assert markup.count("src/residual.cu:6:10") == 1  # duplicate diagnostics shown once
    assert markup.count('<article class="route ') == 1
    assert 'data-score="hip"' in markup and 'data-score="zluda"' not in markup


# Clicks and choices a reader would make, run after the page's own script has loaded.
READER_ACTIONS = """
<script>
document.querySelector('#files-table thead th:nth-child(3)').click();  // lines, ascending
document.querySelector('#files-table thead th:nth-child(3)').click();  // then descending
var severity = document.querySelector('#finding-filters [data-filter=severity]');
severity.value = 'medium';
severity.dispatchEvent(new Event('change', {bubbles: true}));
</script>
"""


def test_tables_sort_and_findings_filter_on_click(example, tmp_path):
    report, page = example
    markup = page.read_text(encoding="utf-8").replace("</body>", READER_ACTIONS + "</body>")
    clicked = tmp_path / "clicked.html"
    clicked.write_text(markup, encoding="utf-8")
    dom = _dump_dom(clicked, tmp_path)

    rows = [e for e in dom.find("tr") if "data-language" in e.attrs]
    shown_order = [row.text.split()[0] for row in rows]  # the path cell comes first
    by_lines = [f.path for f in sorted(report.files, key=lambda f: (-f.lines, f.path))]
    assert shown_order == by_lines

    cards = dom.find("li", cls="finding")
    visible = {c.attrs["data-severity"] for c in cards if "hidden" not in c.attrs}
    assert visible == {"medium"}
    hidden = [c for c in cards if "hidden" in c.attrs]
    assert len(hidden) == sum(1 for f in report.findings if f.severity.name != "MEDIUM")


def test_python_section_shows_routes_dependencies_and_findings(tmp_path):
    report = portcheck.scan(FIXTURES / "python" / "mlproj", cache=False)
    page = tmp_path / "python.html"
    page.write_text(render_html(report), encoding="utf-8")
    dom = _dump_dom(page, tmp_path)
    assert report.python is not None
    shown = dom.find("span", cls="score", data_python_score="rocm")
    assert [e.text.strip() for e in shown] == [str(report.python.scores["rocm"])]
    # DirectML cannot run the project's CUDA extension, CuPy and numba kernels: no score,
    # no hours, the reason instead
    directml = dom.find("article", data_route="directml")[0].text
    assert "n/a" in directml and "CUDA extension" in directml and "of work" not in directml
    rows = {
        e.attrs["data-package"]: e.text
        for e in dom.find("tr", data_row="")
        if "data-package" in e.attrs
    }
    assert "cupy-rocm-7-0" in rows["cupy-cuda12x"]  # the replacement is named
    assert "unknown" in rows["internal-metrics-client"]
    findings = dom.find("table", id="python-findings")[0].text
    assert "mlproj/train.py:29" in findings and "nvidia-smi" in findings
    assert "not in the tree" in dom.find("section", id="python")[0].text  # generated_kernels.cu
    assert "#python" in {e.attrs.get("href") for e in dom.find("a")}
