"""Terminal view of a compile run: per target, what built, why the rest did not, and which
sources were not compiled on their own."""

from __future__ import annotations

from collections import Counter, defaultdict

from portcheck.model import CompileReport, CompileResult

CLASS_TITLE = {
    "untranslated-cuda": "CUDA left untranslated",
    "missing-library": "ROCm library not installed (not the code's fault)",
    "port-problem": "genuine port problem (see the hazard)",
    "unsupported-target": "target not supported by the installed toolchain",
    "hip-api-difference": "HIP API missing in this ROCm or different from CUDA's",
    "missing-dependency": "a non-CUDA dependency is not installed",
    "rocm-version": "needs a newer ROCm than the installed toolchain (not the code's fault)",
    "timeout": "hipcc timed out (stopped; not cached)",
    "other": "other",
}
SKIPPED_SHOWN = 20


def render_compile(report: CompileReport) -> str:
    lines = [f"hipcc {report.toolchain.version} ({report.toolchain.hipcc})"]
    for database in report.databases:
        lines.append(f"flags from {database}")
    by_arch: dict[str, list[CompileResult]] = defaultdict(list)
    for result in report.results:
        by_arch[result.arch].append(result)
    for arch, results in sorted(by_arch.items()):
        ok = sum(r.ok for r in results)
        cached = sum(r.cached for r in results)
        lines.append(
            f"{arch}: {ok}/{len(results)} translation units build"
            + (f" ({cached} from cache)" if cached else "")
        )
        classes = Counter(r.failure_class for r in results if not r.ok)
        for name, count in classes.most_common():
            lines.append(f"  {count:>4}  {CLASS_TITLE.get(name, name)}")
    failures = [r for r in report.results if not r.ok]
    if failures:
        lines.append("")
    for result in failures:
        lines.append(
            f"{result.path} [{result.arch}]: {CLASS_TITLE.get(result.failure_class, '')}"
            f" — {result.explanation}"
        )
        for diagnostic in [d for d in result.diagnostics if d.severity.endswith("error")][:3]:
            where = f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}"
            lines.append(f"    {where}: {diagnostic.severity}: {diagnostic.message}")
            if diagnostic.source_line:
                lines.append(f"      | {diagnostic.source_line}")
    if report.skipped:
        lines.append("")
        lines.append(f"skipped: {len(report.skipped)}")
        for skipped in report.skipped[:SKIPPED_SHOWN]:
            lines.append(f"  {skipped.path}: {skipped.reason}")
        if len(report.skipped) > SKIPPED_SHOWN:
            lines.append(f"  … {len(report.skipped) - SKIPPED_SHOWN} more (see --format json)")
    return "\n".join(lines) + "\n"
