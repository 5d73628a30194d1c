"""Translate CUDA sources to HIP into an output tree; the input is never modified.

Owns: choosing what to translate (the scan's discovery), the engines (built-in span
edits, or hipify-perl / hipify-clang through a subprocess), and writing the output
safely: every file goes through a temporary file and an atomic rename, only inside
the output folder, never into the input tree and never through a symlink that leads
out of the output folder.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from portcheck.checks import resolve_ignores
from portcheck.discover import Candidate, discover, read_candidate
from portcheck.extract import Extractor
from portcheck.model import Skipped
from portcheck.ruleset import RuleSet, default_rules
from portcheck.translate.builtin import Translation, translate_source
from portcheck.translate.hipify import ENGINES, EngineError, find_tool, run_hipify

__all__ = [
    "ENGINES",
    "EngineError",
    "FileResult",
    "TranslateError",
    "TranslationReport",
    "translate",
    "translate_source",
]


class TranslateError(Exception):
    """Translation cannot start or cannot write; the message is for the user."""


@dataclass
class FileResult:
    path: str  # relative to the input root, with "/"
    output: str  # where it was written ("" with diff_only)
    engine: str
    changed: bool
    replacements: int = 0
    markers: int = 0
    injected_include: bool = False
    inserted_lines: list[int] = field(default_factory=list)
    diff: str = ""
    error: str = ""
    text: bytes = field(default=b"", repr=False)  # the translated bytes
    compared_with: str = ""
    disagreements: list[tuple[int, str, str]] = field(default_factory=list)  # (line, ours, theirs)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "output": self.output,
            "engine": self.engine,
            "changed": self.changed,
            "replacements": self.replacements,
            "markers": self.markers,
            "injected_include": self.injected_include,
            "inserted_lines": self.inserted_lines,
            "error": self.error,
            **(
                {
                    "compared_with": self.compared_with,
                    "disagreements": [
                        {"line": line, self.engine: ours, self.compared_with: theirs}
                        for line, ours, theirs in self.disagreements
                    ],
                }
                if self.compared_with
                else {}
            ),
        }


@dataclass
class TranslationReport:
    root: str
    output: str
    engine: str
    files: list[FileResult] = field(default_factory=list)
    copied: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": "portcheck.translate/1",
            "root": self.root,
            "output": self.output,
            "engine": self.engine,
            "files": [f.to_dict() for f in self.files],
            "copied": self.copied,
            "skipped": [s.to_dict() for s in self.skipped],
        }


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


class _SafeWriter:
    """Writes files under one output folder, atomically, refusing to escape it."""

    def __init__(self, out_root: Path) -> None:
        self.root = out_root.resolve()

    def destination(self, relpath: str) -> Path:
        target = self.root / relpath
        # Resolve the parent (it may be a symlink someone planted) and the file itself.
        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True)
        real_parent = parent.resolve()
        if not _inside(real_parent, self.root):
            raise TranslateError(f"refusing to write {relpath}: {parent} leads outside {self.root}")
        if target.is_symlink():
            raise TranslateError(f"refusing to write {relpath}: it is a symlink in the output")
        return real_parent / target.name

    def write(self, relpath: str, data: bytes, mode: int | None = None) -> Path:
        destination = self.destination(relpath)
        fd, tmp = tempfile.mkstemp(prefix=f".{destination.name}.", dir=destination.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if mode is not None:
                os.chmod(tmp, mode & 0o777)
            os.replace(tmp, destination)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return destination


def _unified_diff(relpath: str, before: bytes, after: bytes) -> str:
    return "".join(
        difflib.unified_diff(
            before.decode("utf-8", "replace").splitlines(keepends=True),
            after.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=f"a/{relpath}",
            tofile=f"b/{relpath}",
        )
    )


def _check_paths(source: Path, out: Path | None) -> None:
    if not source.exists():
        raise TranslateError(f"path does not exist: {source}")
    if out is None:
        return
    src, dst = source.resolve(), out.resolve()
    if src == dst:
        raise TranslateError("the output must not be the input: translation never modifies PATH")
    if source.is_dir() and _inside(dst, src):
        raise TranslateError(f"the output {out} is inside the input tree {source}; choose another")
    if source.is_file() and dst.is_dir():
        raise TranslateError(f"{out} is a directory; give a file name for a single-file input")


def translate(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None,
    *,
    engine: str = "builtin",
    exclude: Sequence[str] = (),
    diff_only: bool = False,
    compare: str | None = None,
    rules: RuleSet | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> TranslationReport:
    """Translate a CUDA file (to the file `out`) or tree (mirrored into the folder `out`).

    With `diff_only`, nothing is written and each FileResult carries a unified diff.
    """
    source = Path(path)
    out_path = None if out is None else Path(out)
    if out_path is None and not diff_only:
        raise TranslateError("an output (-o OUT) is required unless --diff is given")
    if engine not in ENGINES:
        raise TranslateError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    _check_paths(source, out_path)
    if compare is not None and (compare not in ENGINES or compare == engine):
        raise TranslateError(f"--compare needs another engine than {engine!r}")
    for needed in (engine, compare):
        if needed in (None, "builtin"):
            continue
        if find_tool(needed) is None:
            raise TranslateError(
                f"{needed} was not found on PATH or in $ROCM_PATH/bin; install ROCm's HIPIFY "
                "(or put its bin/ on PATH), or use --engine builtin"
            )
    extractor = Extractor(rules if rules is not None else default_rules(), resolve_ignores(()))
    report = TranslationReport(str(source), str(out_path or ""), engine)
    single_file = source.is_file()
    writer = None
    if out_path is not None and not diff_only:
        if single_file:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            writer = _SafeWriter(out_path.parent)
        else:
            out_path.mkdir(parents=True, exist_ok=True)
            writer = _SafeWriter(out_path)

    candidates: list[Candidate] = []
    for item in discover(source, exclude):
        if isinstance(item, Skipped):
            report.skipped.append(item)
        else:
            candidates.append(item)
    translated_paths: set[str] = set()
    for done, candidate in enumerate(candidates):
        if progress is not None:
            progress(done, len(candidates), candidate.relpath)
        raw = read_candidate(candidate)
        if isinstance(raw, Skipped):
            report.skipped.append(raw)
            continue
        if raw is None or not candidate.language.is_source:
            continue  # plain C/C++ and build files are copied below
        relpath = out_path.name if single_file and out_path is not None else candidate.relpath
        result = _translate_one(extractor, candidate, raw, engine)
        if compare is not None:
            other = _translate_one(extractor, candidate, raw, compare)
            result.compared_with = compare
            result.disagreements = disagreements(result.text, other.text)
        if diff_only:
            result.diff = _unified_diff(candidate.relpath, raw, result.text)
        elif writer is not None:
            # A file the engine could not translate is still mirrored, unchanged: nothing is lost.
            mode = candidate.path.stat().st_mode
            result.output = str(
                writer.write(relpath, result.text if not result.error else raw, mode)
            )
        report.files.append(result)
        translated_paths.add(candidate.relpath)

    if writer is not None and not single_file:
        report.copied = _copy_rest(source, writer, translated_paths, exclude)
    return report


MARKER_COMMENT = re.compile(rb"\s*/\* portcheck: [^*]*\*/")


def _comparable_lines(text: bytes) -> list[str]:
    """Lines as engines should agree on them: without portcheck's markers, blank lines
    and the runtime include that engines add in different places."""
    lines = []
    for line in MARKER_COMMENT.sub(b"", text).decode("utf-8", "replace").splitlines():
        normal = " ".join(line.replace('"hip/hip_runtime.h"', "<hip/hip_runtime.h>").split())
        if normal and normal != "#include <hip/hip_runtime.h>":
            lines.append(normal)
    return lines


def disagreements(ours: bytes, theirs: bytes) -> list[tuple[int, str, str]]:
    """(line in our output, our line, their line) wherever two engines' outputs differ."""
    mine, other = _comparable_lines(ours), _comparable_lines(theirs)
    found = []
    matcher = difflib.SequenceMatcher(a=mine, b=other, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            ours_line = mine[i1 + k] if i1 + k < i2 else ""
            theirs_line = other[j1 + k] if j1 + k < j2 else ""
            found.append((i1 + k + 1, ours_line, theirs_line))
    return found


def _translate_one(
    extractor: Extractor, candidate: Candidate, raw: bytes, engine: str
) -> FileResult:
    if engine == "builtin":
        translation: Translation = translate_source(
            extractor, candidate.relpath, candidate.language, raw
        )
        result = FileResult(
            path=candidate.relpath,
            output="",
            engine=engine,
            changed=translation.text != raw,
            replacements=translation.replacements,
            markers=translation.markers,
            injected_include=translation.injected_include,
            inserted_lines=translation.inserted_lines,
            text=translation.text,
        )
        return result
    try:
        text = run_hipify(engine, candidate.path)
    except EngineError as exc:
        return FileResult(candidate.relpath, "", engine, False, error=str(exc))
    return FileResult(candidate.relpath, "", engine, changed=text != raw, text=text)


def _copy_rest(source: Path, writer: _SafeWriter, done: set[str], exclude: Sequence[str]) -> int:
    """Mirror every other file of the tree (data, docs, build files) so the output builds."""
    import pathspec

    excluded = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
    copied = 0
    for folder, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in {".git", ".hg", ".svn"})
        for name in sorted(filenames):
            absolute = Path(folder) / name
            relpath = absolute.relative_to(source).as_posix()
            if relpath in done or (excluded is not None and excluded.match_file(relpath)):
                continue
            if absolute.is_symlink() or not absolute.is_file():
                continue  # links are not followed out of the input tree
            destination = writer.destination(relpath)
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=destination.parent)
            os.close(fd)
            try:
                shutil.copy2(absolute, tmp)
                os.replace(tmp, destination)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            copied += 1
    return copied
