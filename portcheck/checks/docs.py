"""Help pages (docs/rules/<slug>.md) rendered from the hazard catalogue, so they cannot drift.
tools/gen_hazard_docs.py writes them; a test checks the files on disk match.

CUDA and Python hazards get the same page; its per-route table lists the routes the
hazard is judged on (HIP/ZLUDA/SCALE, or PyTorch on ROCm/DirectML)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from portcheck.checks.spec import CATALOGUE_FILE, ROUTE_TITLE, ROUTES_OF, HazardSpec
from portcheck.model import Language

GENERATED = (
    f"<!-- Generated from rules/{CATALOGUE_FILE} by tools/gen_hazard_docs.py; do not edit. -->"
)
# The code fence's language, and the comment a suppression is written in, by example file.
FENCE_BY_SUFFIX = {".py": "python", ".txt": "text", ".toml": "toml", ".yml": "yaml", ".cfg": "ini"}
C_LIKE_SUFFIXES = (".cu", ".cuh", ".c", ".cc", ".cpp", ".h", ".hpp")
INDEX_SECTIONS = {
    Language.CUDA: (
        "",
        "Problems that renaming CUDA to HIP cannot fix. Verdict per route for code that has "
        "the hazard.",
    ),
    Language.PYTHON: (
        "Python hazards",
        "Python code and dependency manifests, judged on the Python routes.",
    ),
}


def _fence(code: str, language: str) -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def _fence_language(example_file: str) -> str:
    name = PurePosixPath(example_file)
    if name.name.lower().startswith("cmakelists"):
        return "cmake"
    if name.name.lower() == "makefile":
        return "make"
    return FENCE_BY_SUFFIX.get(name.suffix.lower(), "cuda")


def _comment(example_file: str) -> str:
    """How a comment starts in a file like the example: `//` in C-like code, else `#`."""
    return "//" if example_file.lower().endswith(C_LIKE_SUFFIXES) else "#"


def render_hazard_doc(spec: HazardSpec) -> str:
    language = _fence_language(spec.example_file)
    verdicts = "\n".join(
        f"| {ROUTE_TITLE[r]} | {_verdict(spec, r)} | {_why(spec, r)} |" for r in spec.routes
    )
    source = f"## Source\n\n{spec.source}\n\n" if spec.source else ""
    return (
        f"# {spec.slug} ({spec.id})\n\n"
        f"*{spec.summary}* — severity **{spec.severity.name.lower()}**, since {spec.since}.\n\n"
        f"{GENERATED}\n\n"
        f"## What it does\n\nReports {spec.summary}.\n\n"
        f"## Why is this a problem?\n\n{spec.why}\n\n"
        f"## Per route\n\n| route | verdict | why |\n|---|---|---|\n{verdicts}\n\n"
        f"## Example\n\n{_fence(spec.example, language)}\n\n"
        f"## Use instead\n\n{_fence(spec.instead, language)}\n\n"
        f"## Fix\n\n{spec.fix}\n\n"
        f"{source}"
        "## Suppressing\n\n"
        f"Add `{_comment(spec.example_file)} portcheck: ignore[{spec.slug}]` on the line (or the "
        f"line before), or run `portcheck scan --ignore {spec.id}`.\n"
    )


def _verdict(spec: HazardSpec, route: str) -> str:
    value = spec.targets[route].value
    return f"{value}, not applicable" if spec.blocks(route) else value


def _why(spec: HazardSpec, route: str) -> str:
    """The catalogue's note for the route, and why the route cannot serve the project at
    all when it cannot (it then gets no score)."""
    note = spec.target_notes.get(route, "")
    blocked = spec.blocks(route)
    return (
        f"{note} The route cannot serve such a project (no score): {blocked}" if blocked else note
    )


def render_index(specs: Mapping[str, HazardSpec]) -> str:
    """The reference's front page: one table per kind of hazard, with a column per route."""
    sections = []
    for language, (title, intro) in INDEX_SECTIONS.items():
        group = [s for s in specs.values() if s.language is language]
        if not group:
            continue
        routes = ROUTES_OF[language]
        header = " | ".join(ROUTE_TITLE[r] for r in routes)
        heading = f"## {title}\n\n" if title else ""
        sections.append(
            f"{heading}{intro}\n\n"
            f"| id | slug | severity | what | {header} |\n"
            f"|---|---|---|---|{'---|' * len(routes)}\n"
            f"{_index_rows(group, routes)}\n"
        )
    return f"# Hazard reference\n\n{GENERATED}\n\n" + "\n".join(sections)


def _index_rows(specs: Iterable[HazardSpec], routes: tuple[str, ...]) -> str:
    """One table row per hazard, by id: link, severity, summary, a verdict per route."""
    return "\n".join(
        f"| {s.id} | [{s.slug}]({s.slug}.md) | {s.severity.name.lower()} | {s.summary} | "
        + " | ".join(s.targets[r].value for r in routes)
        + " |"
        for s in sorted(specs, key=lambda s: s.id)
    )
