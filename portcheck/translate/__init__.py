"""Translate CUDA sources to HIP into an output tree; the input is never modified.

Owns: choosing what to translate (the walk in tree.py), the engines (built-in span
edits, or hipify-perl / hipify-clang through a subprocess), and writing the output
safely: every file goes through a temporary file and an atomic rename, only inside
the output folder, never into (or around) the input tree and never through a symlink
that leads out of the output folder. Symlinks inside the input are kept as links; those
leading out of it are skipped, never read. A file system error ends translation with a
TranslateError naming the path, never a traceback.
"""

from __future__ import annotations

import difflib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from portcheck.checks import resolve_ignores
from portcheck.discover import Candidate, discover, read_candidate
from portcheck.filescan import FileScanner
from portcheck.model import Skipped
from portcheck.options import ScanError, target_profile
from portcheck.paths import display_path
from portcheck.resources import replace_file
from portcheck.ruleset import RuleSet, default_rules
from portcheck.target import TargetProfile
from portcheck.translate.builtin import ProjectFiles, Translation, translate_source
from portcheck.translate.hipify import ENGINES, EngineError, find_tool, run_hipify
from portcheck.translate.spelling import Spelling
from portcheck.translate.tree import TreeFile, TreeLink, open_input, read_source, walk

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
    links: list[TreeLink] = field(default_factory=list)  # kept as links in the output

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": "portcheck.translate/1",
            "root": self.root,
            "output": self.output,
            "engine": self.engine,
            "files": [f.to_dict() for f in self.files],
            "copied": self.copied,
            "links": [link.to_dict() for link in self.links],
            "skipped": [s.to_dict() for s in self.skipped],
        }


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


@contextmanager
def _os_errors(path: Path, *, name_from_error: bool = False) -> Iterator[None]:
    """Turn a file system error (read-only, out of space, permission) into one message
    naming `path` (or, with `name_from_error`, the path the failing call was given)."""
    try:
        yield
    except OSError as exc:
        shown: str | bytes | Path = path
        if name_from_error and isinstance(exc.filename, (str, bytes)):
            shown = exc.filename
        raise TranslateError(f"cannot write {display_path(shown)}: {exc.strerror or exc}") from None


def _temporary_prefix(destination: Path) -> str:
    """`.name.` for the temporary file beside `destination`; cut short, so that a name
    near the file system's 255-byte limit still leaves room for the random part."""
    return f".{destination.name[:48]}."


class _SafeWriter:
    """Writes files under one output folder, atomically, refusing to escape it."""

    def __init__(self, out_root: Path) -> None:
        self.root = out_root.resolve()

    def _folder(self, relpath: str) -> Path:
        """The real folder that `relpath` goes in, made one level at a time, so that a
        symlink planted in the output is checked before anything is made through it."""
        folder = self.root
        for part in PurePosixPath(relpath).parent.parts:
            folder = folder / part
            with _os_errors(folder):
                try:
                    mode = os.lstat(folder).st_mode
                except FileNotFoundError:
                    os.mkdir(folder)
                    continue
            if stat.S_ISLNK(mode):
                real = folder.resolve()
                if not _inside(real, self.root):
                    raise TranslateError(
                        f"refusing to write {display_path(relpath)}: {display_path(folder)} "
                        f"leads outside {display_path(self.root)}"
                    )
                with _os_errors(folder):
                    folder, mode = real, os.stat(real).st_mode
            if not stat.S_ISDIR(mode):
                raise TranslateError(
                    f"cannot write {display_path(relpath)}: {display_path(folder)} is in the "
                    "way (a file, not a folder)"
                )
        return folder

    def destination(self, relpath: str, replace_link: bool = False) -> Path:
        target = self._folder(relpath) / PurePosixPath(relpath).name
        if target.is_symlink() and not replace_link:
            raise TranslateError(
                f"refusing to write {display_path(relpath)}: it is a symlink in the output"
            )
        return target

    def write(self, relpath: str, data: bytes, mode: int | None = None) -> Path:
        return self._write_with(relpath, mode, lambda fh: fh.write(data))

    def copy(self, relpath: str, source: BinaryIO, mode: int, mtime_ns: int) -> Path:
        destination = self._write_with(relpath, mode, lambda fh: shutil.copyfileobj(source, fh))
        with _os_errors(destination):
            os.utime(destination, ns=(mtime_ns, mtime_ns))
        return destination

    def _write_with(
        self, relpath: str, mode: int | None, fill: Callable[[BinaryIO], object]
    ) -> Path:
        destination = self.destination(relpath)
        with _os_errors(destination):
            replace_file(destination, fill, 0o600 if mode is None else mode & 0o777)
        return destination

    def link(self, relpath: str, target: str) -> Path:
        """A symlink at `relpath` to `target`, replacing a link a previous run left."""
        destination = self.destination(relpath, replace_link=True)
        with _os_errors(destination):
            while True:
                tmp = destination.parent / (_temporary_prefix(destination) + secrets.token_hex(6))
                try:
                    os.symlink(target, tmp)
                    break
                except FileExistsError:
                    continue
            try:
                os.replace(tmp, destination)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        return destination


def _unified_diff(relpath: str, before: bytes, after: bytes) -> str:
    return "".join(
        difflib.unified_diff(
            before.decode("utf-8", "replace").splitlines(keepends=True),
            after.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=f"a/{display_path(relpath)}",
            tofile=f"b/{display_path(relpath)}",
        )
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_paths(source: Path, out: Path | None) -> None:
    """Refuse, before anything is written, an output that overlaps the input: the same
    file or folder (however spelled: `..`, symlinks, a hard link), one inside the other
    in either direction, or a folder output for a file input."""
    if not os.path.lexists(source):
        raise TranslateError(f"path does not exist: {display_path(source)}")
    if out is None:
        return
    src, dst = source.resolve(), out.resolve()
    shown, path = display_path(out), display_path(source)
    if dst == src or _same_file(out, source):
        raise TranslateError(
            f"the output {shown} must not be the input {path}: translation never modifies PATH"
        )
    if source.is_dir():
        if _inside(dst, src):
            raise TranslateError(
                f"the output {shown} is inside the input tree {path}; choose another"
            )
        if _inside(src, dst):
            raise TranslateError(
                f"the input {path} is inside the output {shown}: translation never writes "
                "into PATH; choose an output outside it"
            )
        if os.path.lexists(out) and not out.is_dir():
            raise TranslateError(f"the output {shown} exists and is not a folder")
        return
    if _inside(dst, src):
        raise TranslateError(f"the output {shown} would be inside the input file {path}")
    if out.is_dir():
        raise TranslateError(f"{shown} is a folder; give a file name for a single-file input")


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
    rocm: str | None = None,
    gpu: str | None = None,
) -> TranslationReport:
    """Translate a CUDA file (to the file `out`) or tree (mirrored into the folder `out`).

    With `diff_only`, nothing is written and each FileResult carries a unified diff.
    `rocm`: the ROCm release the output must build with (default: the newest the rules
    know); names it lacks are written the way that release spells them where HIP has
    another spelling (the mask-less warp builtins before 6.2). `gpu`: the AMD GPU the
    output is for; the marker comments then name only what is a problem on that GPU (no
    warp-width marker on a 32-wide RDNA GPU).
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
    try:
        target = target_profile(None, gpu)
    except ScanError as exc:
        raise TranslateError(str(exc)) from None
    loaded = rules if rules is not None else default_rules()
    try:
        for_release = loaded.at_rocm(rocm) if rocm else loaded
        spelling = Spelling.for_release(loaded.rocm_release(rocm) if rocm else None)
    except ValueError as exc:
        raise TranslateError(f"--rocm {rocm!r}: {exc}") from None
    scanner = FileScanner(for_release, resolve_ignores(()))
    report = TranslationReport(str(source), str(out_path or ""), engine)
    single_file = not source.is_dir()
    writer = None
    if out_path is not None and not diff_only:
        root = out_path.parent if single_file else out_path
        with _os_errors(root, name_from_error=True):  # the folder that could not be made
            root.mkdir(parents=True, exist_ok=True)
        writer = _SafeWriter(root)

    entries = list(_single_file(source) if single_file else walk(source, exclude))
    project_files = ProjectFiles.of(
        e.relpath for e in entries if isinstance(e, TreeFile) and not single_file
    )
    total = sum(1 for e in entries if isinstance(e, TreeFile) and e.candidate is not None)
    done = 0
    for entry in entries:
        if isinstance(entry, Skipped):
            report.skipped.append(entry)
            continue
        if isinstance(entry, TreeLink):
            if writer is not None:
                writer.link(entry.relpath, entry.target)
            report.links.append(entry)
            continue
        skipped = False
        if entry.candidate is not None:
            if progress is not None:
                progress(done, total, entry.relpath)
            done += 1
            raw = (
                read_source(entry.candidate) if not single_file else read_candidate(entry.candidate)
            )
            if isinstance(raw, Skipped):
                report.skipped.append(raw)
                skipped = True
            elif raw is not None:
                written_as = out_path.name if single_file and out_path else entry.relpath
                result = _translate_file(
                    scanner, entry.candidate, raw, engine, compare, target, spelling, project_files
                )
                if diff_only:
                    result.diff = _unified_diff(entry.relpath, raw, result.text)
                elif writer is not None:
                    # A file the engine could not translate is still mirrored, unchanged.
                    text = result.text if not result.error else raw
                    result.output = str(writer.write(written_as, text, entry.mode))
                report.files.append(result)
                continue
        if writer is not None and not single_file:
            # Plain C/C++, build files, data and docs are mirrored so the output builds.
            unreadable = _mirror(writer, entry)
            if unreadable is None:
                report.copied += 1
            elif not skipped:
                report.skipped.append(unreadable)
    return report


def _mirror(writer: _SafeWriter, entry: TreeFile) -> Skipped | None:
    """Copy one file of the tree byte for byte (mode and mtime kept); a Skipped if it
    cannot be read. A write error is a TranslateError: it stops the translation."""
    try:
        source_file = open_input(entry.path)
    except OSError as exc:
        return Skipped(entry.relpath, f"unreadable: {exc.strerror or exc}")
    with source_file:
        mtime_ns = os.fstat(source_file.fileno()).st_mtime_ns
        writer.copy(entry.relpath, source_file, entry.mode, mtime_ns)
    return None


def _single_file(source: Path) -> Iterator[TreeFile | Skipped]:
    """The file PATH names (followed if it is a link: the user named it)."""
    for item in discover(source):
        if isinstance(item, Skipped):
            yield item
        else:
            yield TreeFile(item.path, item.relpath, item.path.stat().st_mode, item)


def _translate_file(
    scanner: FileScanner,
    candidate: Candidate,
    raw: bytes,
    engine: str,
    compare: str | None,
    target: TargetProfile,
    spelling: Spelling,
    project_files: ProjectFiles,
) -> FileResult:
    result = _translate_one(scanner, candidate, raw, engine, target, spelling, project_files)
    if compare is not None:
        other = _translate_one(scanner, candidate, raw, compare, target, spelling, project_files)
        result.compared_with = compare
        result.disagreements = disagreements(result.text, other.text)
    return result


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
    scanner: FileScanner,
    candidate: Candidate,
    raw: bytes,
    engine: str,
    target: TargetProfile,
    spelling: Spelling,
    project_files: ProjectFiles | None = None,
) -> FileResult:
    if engine == "builtin":
        # The scanner hashes and prints the name: give it one that is always valid text.
        translation: Translation = translate_source(
            scanner,
            display_path(candidate.relpath),
            candidate.language,
            raw,
            judge=target.judge,
            spelling=spelling,
            project_files=project_files,
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
