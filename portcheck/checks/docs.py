"""Help pages (docs/rules/<slug>.md) rendered from the hazard catalogue, so they cannot drift.
tools/gen_hazard_docs.py writes them; a test checks the files on disk match."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from portcheck.checks import HazardSpec
from portcheck.model import ROUTES, TARGETS
from portcheck.python.rules import PyHazardSpec
from portcheck.report.text import PY_ROUTE_TITLE

TARGET_TITLE = {"hip": "HIP", "zluda": "ZLUDA", "scale": "SCALE"}


def _fence(code: str, language: str) -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def render_hazard_doc(spec: HazardSpec) -> str:
    language = "cmake" if spec.example_file.lower().startswith("cmakelists") else "cuda"
    verdicts = "\n".join(
        f"| {TARGET_TITLE[t]} | {spec.targets[t].value} | {spec.target_notes.get(t, '')} |"
        for t in TARGETS
    )
    return (
        f"# {spec.slug} ({spec.id})\n\n"
        f"*{spec.summary}* — severity **{spec.severity.name.lower()}**, since {spec.since}.\n\n"
        "<!-- Generated from rules/hazards.yaml by tools/gen_hazard_docs.py; do not edit. -->\n\n"
        f"## What it does\n\nReports {spec.summary}.\n\n"
        f"## Why is this a problem?\n\n{spec.why}\n\n"
        f"## Per route\n\n| route | verdict | why |\n|---|---|---|\n{verdicts}\n\n"
        f"## Example\n\n{_fence(spec.example, language)}\n\n"
        f"## Use instead\n\n{_fence(spec.instead, language)}\n\n"
        f"## Fix\n\n{spec.fix}\n\n"
        "## Suppressing\n\n"
        f"Add `// portcheck: ignore[{spec.slug}]` on the line (or the line before), or run "
        f"`portcheck scan --ignore {spec.id}`.\n"
    )


def render_python_hazard_doc(spec: PyHazardSpec) -> str:
    verdicts = "\n".join(f"| {PY_ROUTE_TITLE[r]} | {spec.targets[r].value} |" for r in ROUTES)
    return (
        f"# {spec.slug} ({spec.id})\n\n"
        f"*{spec.summary}* — severity **{spec.severity.name.lower()}**; a Python hazard.\n\n"
        "<!-- Generated from rules/python/hazards.yaml by tools/gen_hazard_docs.py; "
        "do not edit. -->\n\n"
        f"## Why is this a problem?\n\n{spec.why}\n\n"
        f"## Per Python route\n\n| route | verdict |\n|---|---|\n{verdicts}\n\n"
        f"## Fix\n\n{spec.fix}\n\n"
        f"## Source\n\n{spec.source}\n\n"
        "## Suppressing\n\n"
        f"Add `# portcheck: ignore[{spec.slug}]` on the line (or the line before), or run "
        f"`portcheck scan --ignore {spec.id}`.\n"
    )


def render_index(
    specs: Mapping[str, HazardSpec], python: Mapping[str, PyHazardSpec] | None = None
) -> str:
    rows = _index_rows(specs.values(), TARGETS)
    return (
        "# Hazard reference\n\n"
        "<!-- Generated from rules/hazards.yaml by tools/gen_hazard_docs.py; do not edit. -->\n\n"
        "Problems that renaming CUDA to HIP cannot fix. Verdict per route for code that has "
        "the hazard.\n\n"
        "| id | slug | severity | what | HIP | ZLUDA | SCALE |\n|---|---|---|---|---|---|---|\n"
        f"{rows}\n" + (_python_index(python) if python else "")
    )


def _index_rows(specs: Iterable[HazardSpec | PyHazardSpec], columns: Sequence[str]) -> str:
    """One table row per hazard, by id: link, severity, summary, a verdict per column."""
    return "\n".join(
        f"| {s.id} | [{s.slug}]({s.slug}.md) | {s.severity.name.lower()} | {s.summary} | "
        + " | ".join(s.targets[c].value for c in columns)
        + " |"
        for s in sorted(specs, key=lambda s: s.id)
    )


def _python_index(specs: Mapping[str, PyHazardSpec]) -> str:
    rows = _index_rows(specs.values(), ROUTES)
    return (
        "\n## Python hazards\n\n"
        "Python code and dependency manifests, judged on the Python routes.\n\n"
        "| id | slug | severity | what | PyTorch on ROCm | DirectML |\n"
        "|---|---|---|---|---|---|\n"
        f"{rows}\n"
    )
