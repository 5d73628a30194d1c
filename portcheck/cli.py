"""Command line: parse options, call the library, print. Exit codes (the contract):
0 success, 1 `--fail-under` not met, 2 usage error or missing path; `compile`: 0 all
built, 1 something failed, 2 usage error, 3 no hipcc; 130 when interrupted."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import gc
import json
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from portcheck import __version__
from portcheck.config import ConfigError, load_project_config
from portcheck.model import ENGINES, TARGETS, ApiRule, Finding, Report
from portcheck.options import DEFAULT_FILE_TIMEOUT, target_profile
from portcheck.paths import display_path
from portcheck.report import FORMATS, NOTHING_TO_SCORE, formatter, nothing_to_score
from portcheck.resources import cache_problem, write_atomically
from portcheck.rocm import parse_rocm_version
from portcheck.ruleset import RuleError, default_rules
from portcheck.scan import ProgressCallback, ScanError, ScanOptions, parse_targets, scan_files
from portcheck.target import TargetProfile

if TYPE_CHECKING:
    from collections.abc import Mapping

    from portcheck.compile import CompileReport
    from portcheck.filescan import FileScan
    from portcheck.rocm import RocmRelease
    from portcheck.translate import TranslationReport

# Each command imports what only it needs (compile, translate, the formatters) when it
# runs: start-up time is paid on every scan, and a CI job scans on every commit.

EXIT_OK, EXIT_FAIL_UNDER, EXIT_USAGE, EXIT_NO_TOOLCHAIN = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
DEFAULT_COMPILE_TIMEOUT = 300.0  # seconds per unit and target (portcheck.compile's default)
PROGRESS_MIN_FILES = 20


def _debug() -> bool:
    """Whether `portcheck --debug` was given (tracebacks instead of one-line errors)."""
    context = click.get_current_context(silent=True)
    return bool(context is not None and context.find_root().params.get("debug"))


def _os_error_line(exc: OSError) -> str:
    """One line naming the path and the problem: `out/r.json: No such file or directory`."""
    problem = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{display_path(os.fsdecode(exc.filename))}: {problem}"
    return problem


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class _Main(click.Group):
    """The command group: an OS error a user can cause (an unwritable folder, a missing
    one) and a usage error end with one line on stderr and exit 2, not a traceback;
    `--debug` shows the traceback instead."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"Error: {_os_error_line(exc)}", err=True)
            ctx.exit(EXIT_USAGE)
        except click.UsageError as exc:
            if ctx.params.get("debug") or exc.ctx is None or exc.ctx is ctx:
                raise  # the group's own usage errors keep click's usage text
            hint = f" (see '{exc.ctx.command_path} --help')"
            click.echo(f"Error: {display_path(exc.format_message())}{hint}", err=True)
            ctx.exit(exc.exit_code)
        return None  # not reached: ctx.exit raises


def _progress_bar() -> tuple[ProgressCallback | None, Callable[[], None]]:
    """A rich progress bar on stderr for long scans in a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    progress = Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}", style="dim"),
        console=Console(stderr=True),
        transient=True,
    )
    state: dict[str, TaskID] = {}

    def update(done: int, total: int, current: str) -> None:
        if total < PROGRESS_MIN_FILES:
            return
        if "task" not in state:
            progress.start()
            state["task"] = progress.add_task(current, total=total)
        progress.update(state["task"], completed=done, description=current[-50:])

    return update, progress.stop


def _target_options(command: Callable) -> Callable:
    """--rocm and --gpu: the target profile, shared by scan, rules show, compile, translate."""
    command = click.option(
        "--gpu",
        metavar="ARCH|PRODUCT",
        help="The AMD GPU to judge for: a gfx name (gfx942, gfx1100) or a product "
        "(mi300x, rx7900xtx). Default: any AMD GPU, or the project's `gpu` setting.",
    )(command)
    return click.option(
        "--rocm",
        metavar="VERSION",
        help="The ROCm release to judge for (6.2, 7.0). Default: the newest the rule set "
        "knows, or the project's `rocm` setting.",
    )(command)


def _compile_input_options(command: Callable) -> Callable:
    """The options that say how units are built, shared by `compile` and `scan --compile`."""
    options = [
        click.option(
            "-p",
            "--build-dir",
            type=click.Path(exists=True, path_type=Path),
            help="A build folder (or the file) with compile_commands.json: each unit gets its "
            "-std/-D/-I from it. Default: one found under PATH.",
        ),
        click.option(
            "--std",
            metavar="STD",
            help="C++ standard for units the compile database does not list (default: c++17).",
        ),
        click.option(
            "-D",
            "--define",
            "defines",
            multiple=True,
            metavar="NAME[=VALUE]",
            help="Macro for units the compile database does not list (repeatable).",
        ),
        click.option(
            "-I",
            "--include",
            multiple=True,
            metavar="DIR",
            help="Extra include folder (repeatable).",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(0, min_open=True),
            default=DEFAULT_COMPILE_TIMEOUT,
            show_default=True,
            metavar="SECONDS",
            help="Stop a unit's hipcc (and its children) after this long; not cached.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="portcheck")
@click.option("--debug", is_flag=True, help="Show a traceback instead of a one-line error.")
def main(debug: bool) -> None:
    """How portable is your CUDA code to AMD GPUs? Audits for HIP, ZLUDA and SCALE."""


def run() -> None:
    """`portcheck` as a program (the console script and `python -m portcheck`): `main`,
    then an exit that skips tearing down the interpreter's objects. Freeing a large
    scan's objects one by one took 40 ms of a 2 s scan; the exit handlers still run
    (temporary folders, worker pools) and the standard streams are flushed first. An
    exception other than SystemExit leaves the usual way, with its traceback."""
    status: object = 0
    try:
        main()
    except SystemExit as exc:
        status = exc.code
    if isinstance(status, int):
        code = status
    elif status is None:
        code = 0
    else:
        print(status, file=sys.stderr)  # what sys.exit("message") prints
        code = 1
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)  # a profiler or coverage writes its data at the usual exit
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: let the interpreter report it as usual
        raise SystemExit(code) from None
    os._exit(code)


@main.command("scan")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(FORMATS)),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to FILE instead of standard output (`-` is standard output).",
)
@click.option(
    "--targets",
    help="Routes to score, comma-separated: hip, zluda, scale (default: all, or the "
    "project's `targets` setting).",
)
@click.option(
    "--fail-under",
    type=click.IntRange(0, 100),
    metavar="N",
    help="Exit 1 if any chosen route scores below N.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1),
    help="Worker processes (default: cores; at most the CPUs available).",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the scan cache.")
@click.option(
    "--deep",
    is_flag=True,
    help="Run the libclang front end on every source file (default: only where it pays: "
    "device code behind macros, code the fast parser cannot read, functors in templates).",
)
@click.option(
    "--front-end",
    type=click.Choice(["auto", "deep", "tree-sitter"]),
    default=None,
    help="Which front end decides: auto (default), deep (= --deep), tree-sitter (never libclang).",
)
@click.option(
    "--baseline",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A previous `--format json` report: exit 1 only if there are new findings.",
)
@click.option(
    "--compile",
    "do_compile",
    is_flag=True,
    help="Also translate and compile with hipcc (needs --offload-arch).",
)
@click.option(
    "--offload-arch", metavar="LIST", help="AMD targets for --compile, e.g. gfx90a,gfx1030."
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="ID|SLUG",
    help="Do not check this hazard (e.g. PC005 or launch-bounds; repeatable, or comma-separated).",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip paths matching this gitignore-style glob (repeatable).",
)
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_FILE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Skip a file (reason: timeout) that takes longer than this to scan; 0: no limit.",
)
@_compile_input_options
@_target_options
def scan_command(
    path: Path,
    fmt: str,
    output: Path | None,
    targets: str | None,
    fail_under: int | None,
    jobs: int | None,
    no_cache: bool,
    baseline: Path | None,
    do_compile: bool,
    offload_arch: str | None,
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    file_timeout: float,
    deep: bool,
    front_end: str | None,
    rocm: str | None,
    gpu: str | None,
    **compile_inputs: Any,
) -> None:
    """Scan PATH (a CUDA file or a source tree) and report its portability.
    With --compile, exit 1 also when a unit fails to compile for a reason in the code."""
    try:
        chosen = parse_targets(targets) if targets is not None else None
    except ScanError as exc:
        raise click.BadParameter(str(exc), param_hint="--targets") from None
    if offload_arch and not do_compile:
        raise click.UsageError("--offload-arch goes with --compile")
    if jobs is not None and jobs > (cpus := _available_cpus()):
        click.echo(
            f"portcheck: -j {jobs} is more than the {cpus} CPU(s) available; using {cpus}", err=True
        )
        jobs = cpus

    try:
        options = ScanOptions.for_project(
            path,
            targets=chosen,
            exclude=exclude,
            ignore=ignore,
            jobs=jobs,
            cache=not no_cache,
            front_end=front_end or ("deep" if deep else "auto"),
            file_timeout=file_timeout,
            rocm=rocm,
            gpu=gpu,
            excerpts=fmt == "html",  # the only format that shows the code around a finding
        )
    except ScanError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if options.target.rocm is not None:
        caveat = default_rules().rocm_caveat(parse_rocm_version(options.target.rocm))
        if caveat:
            click.echo(f"portcheck: {caveat}", err=True)
    archs = _offload_arch(offload_arch, options.target) if do_compile else ""
    progress, stop_progress = _progress_bar()
    try:
        # With --compile the per-file scans are kept: the translation reuses them.
        report, files = scan_files(path, options, progress=progress, keep_files=do_compile)
    except (ScanError, RuleError) as exc:
        stop_progress()
        if _debug():
            raise
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    stop_progress()
    # From here the report is only read, and kept to the end: no garbage collection
    # needs to walk its objects again (on cuda-samples that walk cost 35 ms of writing
    # the JSON). They are handed back when the command ends.
    gc.freeze()
    click.get_current_context().call_on_close(gc.unfreeze)
    compiled = None
    problem = cache_problem()
    if problem is not None and not no_cache:
        click.echo(f"portcheck: {problem}", err=True)  # once: the cache folder is probed once
    if do_compile:
        compiled = _run_compile(
            path,
            archs,
            exclude,
            jobs=jobs,
            cache=not no_cache,
            scans=files,
            rocm=options.target.rocm,
            **compile_inputs,
        )
        _say_if_toolchain_is_older(compiled, options.target)
        report = dataclasses.replace(
            report,
            compile_results=tuple(compiled.results),
            toolchain=compiled.toolchain,
        )

    new: tuple[Finding, ...] = ()
    if baseline is not None:
        from portcheck.baseline import BaselineError, load_baseline, new_finding_indices

        try:
            indices = new_finding_indices(report, load_baseline(baseline))
        except BaselineError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        report = dataclasses.replace(report, new_finding_indices=indices)
        new = report.new_findings or ()

    _emit(report, fmt, output)
    if baseline is not None:
        click.echo(
            f"portcheck: {len(new)} new finding(s) against the baseline "
            f"({len(report.findings) - len(new)} already known)",
            err=True,
        )
        for finding in new[:20]:
            click.echo(
                f"  new: {finding.path}:{finding.span.line} {finding.id} {finding.slug}", err=True
            )
        if new:
            sys.exit(EXIT_FAIL_UNDER)
    if fail_under is not None:
        if nothing_to_score(report):
            click.echo(
                f"portcheck: --fail-under {fail_under} not met: {NOTHING_TO_SCORE} "
                f"under {display_path(str(path))}",
                err=True,
            )
            sys.exit(EXIT_FAIL_UNDER)
        failing = {t: s for t, s in report.scores.items() if s is not None and s < fail_under}
        if failing:
            listed = ", ".join(f"{t} {s}" for t, s in failing.items())
            click.echo(f"portcheck: readiness below {fail_under}: {listed}", err=True)
            sys.exit(EXIT_FAIL_UNDER)
    if compiled is not None:
        # A missing library, an old ROCm or a target the toolchain lacks is not the code's fault.
        broken = [r for r in compiled.results if r.code_failure]
        if broken:
            click.echo(
                f"portcheck: {len(broken)} translation unit build(s) failed for a reason in "
                f"the code (first: {broken[0].path} [{broken[0].arch}], {broken[0].failure_class})",
                err=True,
            )
            sys.exit(EXIT_FAIL_UNDER)


def _emit(report: Report, fmt: str, output: Path | None) -> None:
    from portcheck.report.json import iter_json

    if output is None or str(output) == "-":  # `-o -`: standard output, as other tools read it
        if fmt == "text":
            from portcheck.report.text import render_text

            color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
            columns = os.get_terminal_size().columns if sys.stdout.isatty() else 120
            click.echo(render_text(report, color=color, width=max(columns, 80)), nl=False)
        elif fmt == "json":
            sys.stdout.writelines(iter_json(report))
            sys.stdout.flush()
        else:
            click.echo(formatter(fmt)(report), nl=False)
        return
    _write_output(output, iter_json(report) if fmt == "json" else formatter(fmt)(report))
    click.echo(f"portcheck: wrote {fmt} report to {display_path(str(output))}", err=True)


def _write_output(output: Path, content: str | Iterable[str]) -> None:
    """Write a report to `-o FILE` (resources.write_atomically: a symlink is followed, a
    device or FIFO written in place, a regular file replaced atomically). An OS error is
    one line naming the file and exit 2 (with --debug, the traceback)."""
    try:
        write_atomically(output, content)
    except OSError as exc:
        if _debug():
            raise
        problem = exc.strerror or str(exc)
        click.echo(f"Error: cannot write {display_path(str(output))}: {problem}", err=True)
        sys.exit(EXIT_USAGE)


@main.command("translate")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Output file (for a file) or folder (for a tree). Never inside PATH.",
)
@click.option(
    "--engine",
    type=click.Choice(list(ENGINES)),
    default="builtin",
    show_default=True,
    help="builtin: portcheck's span-exact engine; hipify-perl/hipify-clang if installed.",
)
@click.option("--diff", "diff_only", is_flag=True, help="Print a unified diff; write nothing.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="How to report what changed.",
)
@click.option(
    "--compare",
    type=click.Choice(list(ENGINES)),
    metavar="ENGINE",
    help="Also run ENGINE and report where the two engines' outputs disagree.",
)
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB.")
@click.option(
    "--rocm",
    metavar="VERSION",
    help="The ROCm release the output must build with (e.g. 5.7: the warp builtins without "
    "masks). Default: the newest the rule set knows.",
)
@click.option(
    "--gpu",
    metavar="ARCH|PRODUCT",
    help="The AMD GPU the output is for: markers name only what is a problem on it.",
)
def translate_command(
    path: Path,
    output: Path | None,
    engine: str,
    diff_only: bool,
    fmt: str,
    compare: str | None,
    exclude: tuple[str, ...],
    rocm: str | None,
    gpu: str | None,
) -> None:
    """Translate CUDA under PATH to HIP: a file gives a file, a folder a mirrored folder."""
    from portcheck.paths import display_path
    from portcheck.translate import TranslateError, translate

    try:
        report = translate(
            path,
            output,
            engine=engine,
            exclude=exclude,
            diff_only=diff_only,
            compare=compare,
            rocm=rocm,
            gpu=gpu,
        )
    except TranslateError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if diff_only:
        for result in report.files:
            if result.diff:
                click.echo(result.diff, nl=False)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    elif not diff_only:
        for result in report.files:
            shown = display_path(result.path)
            if result.error:
                click.echo(f"{shown}: not translated: {display_path(result.error)}", err=True)
                continue
            what = f"{result.replacements} replacement(s), {result.markers} marker(s)" + (
                ", added #include <hip/hip_runtime.h>" if result.injected_include else ""
            )
            click.echo(f"{shown}: {what if result.changed else 'unchanged'}")
        for skipped in report.skipped:
            click.echo(f"{display_path(skipped.path)}: skipped: {skipped.reason}", err=True)
        if compare is not None:
            _print_disagreements(report, engine, compare)
        changed = sum(1 for r in report.files if r.changed)
        click.echo(
            f"portcheck: {len(report.files)} source file(s) translated with {engine} "
            f"({changed} changed), {report.copied} other file(s) copied, "
            f"{len(report.links)} link(s) kept, {len(report.skipped)} skipped "
            f"-> {display_path(output or '')}",
            err=True,
        )
    if any(r.error for r in report.files):
        sys.exit(EXIT_FAIL_UNDER)


def _print_disagreements(report: TranslationReport, engine: str, other: str) -> None:
    from portcheck.paths import display_path

    differing = [r for r in report.files if r.disagreements]
    click.echo(f"{engine} and {other} disagree in {len(differing)} of {len(report.files)} file(s)")
    for result in differing:
        click.echo(f"  {display_path(result.path)}: {len(result.disagreements)} line(s)")
        for line, ours, theirs in result.disagreements[:5]:
            click.echo(f"    {line}: {engine}: {ours or '(nothing)'}")
            click.echo(f"    {' ' * len(str(line))}  {other}: {theirs or '(nothing)'}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While compiling, SIGTERM unwinds like Ctrl-C, so that the running hipcc process
    groups are killed on the way out instead of being orphaned."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_compile(
    path: Path,
    offload_arch: str,
    exclude: tuple[str, ...],
    *,
    jobs: int | None = None,
    cache: bool = True,
    engine: str = "builtin",
    build_dir: Path | None = None,
    std: str | None = None,
    defines: tuple[str, ...] = (),
    include: tuple[str, ...] = (),
    timeout: float = DEFAULT_COMPILE_TIMEOUT,
    scans: Mapping[str, FileScan] | None = None,
    only: tuple[str, ...] | None = None,
    rocm: str | None = None,
) -> CompileReport:
    from portcheck.compile import CompileError, NoToolchainError, available_cpus, compile_tree

    cpus = available_cpus()
    if jobs is not None and jobs > cpus:
        click.echo(
            f"portcheck: warning: -j {jobs} is more than the {cpus} CPU(s); using {cpus}", err=True
        )
        jobs = cpus
    progress, stop_progress = _progress_bar()
    try:
        with _sigterm_as_interrupt():
            report = compile_tree(
                path,
                offload_arch,
                include_dirs=include,
                std=std,
                defines=defines,
                build_dir=build_dir,
                jobs=jobs,
                timeout=timeout,
                cache=cache,
                exclude=exclude,
                engine=engine,
                progress=progress,
                scans=scans,
                only=only,
                rocm=rocm,
            )
    except CompileError as exc:
        stop_progress()
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_NO_TOOLCHAIN if isinstance(exc, NoToolchainError) else EXIT_USAGE)
    except KeyboardInterrupt:
        stop_progress()
        click.echo("portcheck: interrupted; hipcc stopped, nothing half-built was cached", err=True)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        stop_progress()
    for warning in report.warnings:
        click.echo(f"portcheck: warning: {warning}", err=True)
    return report


@main.command("compile")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--offload-arch",
    metavar="LIST",
    help="AMD targets, comma-separated (e.g. gfx90a,gfx1030). Default: the --gpu.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the result to FILE.",
)
@_compile_input_options
@click.option(
    "-j", "--jobs", type=click.IntRange(1), help="Parallel hipcc runs (default and most: CPUs)."
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the compile cache.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB.")
@click.option(
    "--unit",
    "units",
    multiple=True,
    metavar="RELPATH",
    help="Compile only this unit (a path relative to PATH; repeatable). The whole tree is "
    "still translated, so that includes resolve.",
)
@click.option(
    "--engine",
    type=click.Choice([*ENGINES, "none"]),
    default="builtin",
    show_default=True,
    help="Translation before compiling; 'none' for sources that are HIP already.",
)
@_target_options
def compile_command(
    path: Path,
    offload_arch: str | None,
    fmt: str,
    output: Path | None,
    build_dir: Path | None,
    std: str | None,
    defines: tuple[str, ...],
    include: tuple[str, ...],
    timeout: float,
    jobs: int | None,
    no_cache: bool,
    exclude: tuple[str, ...],
    units: tuple[str, ...],
    engine: str,
    rocm: str | None,
    gpu: str | None,
) -> None:
    """Translate the CUDA under PATH and compile each unit with hipcc for each target.
    The translation is written for the installed hipcc's ROCm release unless --rocm (or
    the project's `rocm` setting) names another. Exit 0 when everything builds, 1 when
    something fails, 2 for a usage error, 3 when hipcc is missing, 130 when interrupted."""
    from portcheck.report.compile import render_compile

    target = _target_profile(path, rocm, gpu)
    offload_arch = _offload_arch(offload_arch, target)

    report = _run_compile(
        path,
        offload_arch,
        exclude,
        jobs=jobs,
        cache=not no_cache,
        engine=engine,
        build_dir=build_dir,
        std=std,
        defines=defines,
        include=include,
        timeout=timeout,
        only=units or None,
        rocm=target.rocm,
    )
    text = (
        (json.dumps(report.to_dict(), indent=2) + "\n") if fmt == "json" else render_compile(report)
    )
    if output is None:
        click.echo(text, nl=False)
    else:
        _write_output(output, text)
        click.echo(
            f"portcheck: wrote {fmt} compile report to {display_path(str(output))}", err=True
        )
    _say_if_toolchain_is_older(report, target)
    if any(not r.ok for r in report.results):
        sys.exit(EXIT_FAIL_UNDER)


def _target_profile(path: Path, rocm: str | None, gpu: str | None) -> TargetProfile:
    """The --rocm/--gpu target over the project's settings; a bad one ends with exit 2."""
    try:
        config = load_project_config(path)
        return target_profile(rocm or config.rocm, gpu or config.gpu)
    except (ScanError, ConfigError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)


def _offload_arch(offload_arch: str | None, target: TargetProfile) -> str:
    """--offload-arch, else the chosen GPU's gfx target."""
    if offload_arch:
        return offload_arch
    if target.gpu is None:
        raise click.UsageError("give --offload-arch (e.g. gfx90a,gfx1030) or --gpu")
    return target.gpu.gfx


def _say_if_toolchain_is_older(report: CompileReport, target: TargetProfile) -> None:
    """The installed hipcc may be an older ROCm than the one the team targets: say what
    that means for the results, once."""
    have = report.toolchain.rocm
    if target.rocm is None or have is None:
        return
    wanted = tuple(int(p) for p in target.rocm.split("."))
    if have[: len(wanted)] < wanted:
        installed = ".".join(map(str, have))
        click.echo(
            f"portcheck: the installed hipcc is ROCm {installed}, older than the ROCm "
            f"{target.rocm} you target: units that fail for an API it lacks (class "
            f"rocm-version) may build with ROCm {target.rocm}",
            err=True,
        )


@main.command("explain")
@click.argument("hazard", metavar="ID|SLUG", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every hazard's id, slug and summary.")
def explain_command(hazard: str | None, list_all: bool) -> None:
    """Print a hazard's help page: why it breaks on AMD GPUs, an example, what to write
    instead, the verdict per route (e.g. `portcheck explain PC005` or `launch-bounds`)."""
    from portcheck.checks.docs import render_hazard_doc
    from portcheck.checks.spec import catalogue, find_spec

    if list_all:
        for listed in sorted(catalogue().values(), key=lambda s: s.id):
            click.echo(f"{listed.id}  {listed.slug:<28} {listed.summary}")
        return
    if hazard is None:
        raise click.UsageError("give a hazard id or slug (e.g. PC005), or --list")
    spec = find_spec(hazard)
    if spec is None:
        click.echo(
            f"Error: no hazard {display_path(hazard)!r}: give an id such as PC005 or a slug "
            "such as launch-bounds (`portcheck explain --list` lists them)",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    click.echo(render_hazard_doc(spec), nl=False)


@main.command("fleet")
@click.argument("list_file", metavar="LIST", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Folder for one JSON report per repository and the portfolio "
    "(portfolio.html, portfolio.csv, portfolio.json).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="A Dask scheduler (tcp://host:8786) whose workers run the repositories; they need "
    "portcheck installed, and the same paths for local repositories and --work. "
    "Default: a local cluster sized to this machine.",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    help="Worker processes of the local cluster (default: one per CPU).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1),
    help="Processes each repository's scan (and compile) uses (default: the CPUs divided "
    "by the local workers; with --scheduler, each worker machine's CPUs).",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the shallow clones (default: DIR/.work). Local paths are scanned in "
    "place and never written to.",
)
@click.option(
    "--repo-timeout",
    type=click.FloatRange(0, min_open=True),
    default=3600.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop a repository's scan (or one group of its compile units) after this long; "
    "it is recorded as failed and the rest go on.",
)
@click.option(
    "--clone-timeout",
    type=click.FloatRange(0, min_open=True),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop each git command (ls-remote, clone, fetch) after this long.",
)
@click.option(
    "--redo", is_flag=True, help="Scan every repository again, even those that did not change."
)
@click.option("--targets", help="Routes to score, comma-separated: hip, zluda, scale.")
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB in every repository."
)
@click.option("--ignore", multiple=True, metavar="ID|SLUG", help="Do not check this hazard.")
@click.option(
    "--front-end",
    type=click.Choice(["auto", "deep", "tree-sitter"]),
    help="Which front end decides (see `portcheck scan --help`).",
)
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Per-file scan time limit (see `portcheck scan --help`).",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the scan and compile caches.")
@click.option(
    "--compile",
    "do_compile",
    is_flag=True,
    help="Also translate and compile each repository with hipcc; its units are spread "
    "over the workers.",
)
@click.option(
    "--offload-arch", metavar="LIST", help="AMD targets for --compile, e.g. gfx90a,gfx1030."
)
@click.option(
    "--std", metavar="STD", help="C++ standard for units without a compile database entry."
)
@click.option(
    "-D", "--define", "defines", multiple=True, metavar="NAME[=VALUE]", help="Macro for --compile."
)
@click.option(
    "-I",
    "--include",
    "includes",
    multiple=True,
    metavar="DIR",
    help="Include folder for --compile.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=DEFAULT_COMPILE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Stop one unit's hipcc after this long (--compile).",
)
@_target_options
def fleet_command(
    list_file: Path,
    output: Path,
    scheduler: str | None,
    workers: int | None,
    jobs: int | None,
    work: Path | None,
    repo_timeout: float,
    clone_timeout: float,
    redo: bool,
    targets: str | None,
    exclude: tuple[str, ...],
    ignore: tuple[str, ...],
    front_end: str | None,
    file_timeout: float | None,
    no_cache: bool,
    do_compile: bool,
    offload_arch: str | None,
    std: str | None,
    defines: tuple[str, ...],
    includes: tuple[str, ...],
    timeout: float,
    rocm: str | None,
    gpu: str | None,
) -> None:
    """Audit many repositories at once on Dask: LIST holds one local path or git
    URL[@REF] per line (URLs are cloned shallowly). Writes DIR/NAME.json per repository
    and the portfolio at DIR's top; a second run redoes only what changed. Exit 0 when
    every repository was audited, 1 when some failed (the portfolio says why), 2 for a
    usage error, 3 when --compile finds no hipcc, 130 when interrupted."""
    from portcheck.fleet.run import FleetError, FleetOptions, run_fleet
    from portcheck.fleet.sources import ListError
    from portcheck.fleet.tasks import Settings

    if offload_arch and not do_compile:
        raise click.UsageError("--offload-arch goes with --compile")
    try:
        import distributed  # noqa: F401  # a dependency; checked here for a clear line
    except ImportError:
        click.echo("Error: portcheck fleet needs Dask: pip install 'distributed'", err=True)
        sys.exit(EXIT_USAGE)
    try:
        options = ScanOptions.of(
            targets=targets,
            exclude=exclude,
            ignore=ignore,
            front_end=front_end or "auto",
            rocm=rocm,
            gpu=gpu,
        )
    except ScanError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    scan_args = _fleet_scan_args(targets, exclude, ignore, front_end, file_timeout, rocm, gpu)
    archs = ""
    compile_args: list[str] = []
    if do_compile:
        archs = _offload_arch(offload_arch, options.target)
        compile_args = [*(["--std", std] if std else []), "--timeout", f"{timeout:g}"]
        for define in defines:
            compile_args += ["-D", define]
        for folder in includes:
            compile_args += ["-I", str(Path(folder).resolve())]
        compile_args += [a for e in exclude for a in ("--exclude", e)]
        compile_args += [
            a for flag, v in (("--rocm", rocm), ("--gpu", gpu)) if v for a in (flag, v)
        ]
        if scheduler is None:
            from portcheck.compile import NoToolchainError, find_toolchain

            try:
                find_toolchain()
            except NoToolchainError as exc:
                click.echo(f"Error: {exc}", err=True)
                sys.exit(EXIT_NO_TOOLCHAIN)
    settings = Settings(
        scan_args=tuple(scan_args),
        archs=archs,
        compile_args=tuple(compile_args),
        jobs=jobs,
        repo_timeout=repo_timeout,
        clone_timeout=clone_timeout,
        cache=not no_cache,
    )
    fleet_options = FleetOptions(
        output=output, settings=settings, scheduler=scheduler, workers=workers, work=work, redo=redo
    )
    progress, stop_progress = _fleet_progress()
    try:
        with _sigterm_as_interrupt():
            result = run_fleet(list_file, fleet_options, progress)
    except (ListError, FleetError) as exc:
        stop_progress()
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    finally:
        stop_progress()
    totals = result.portfolio["totals"]
    assert isinstance(totals, dict)
    shown = display_path(str(output / "portfolio.html"))
    if result.interrupted:
        click.echo(
            f"portcheck: interrupted: {totals['ok']} of {totals['repositories']} repositories "
            f"done and kept; run the same command again to go on. Portfolio so far: {shown}",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    click.echo(
        f"portcheck: {totals['repositories']} repositories: {totals['scanned']} scanned, "
        f"{totals['reused']} unchanged, {totals['failed']} failed -> {shown}",
        err=True,
    )
    if totals["failed"]:
        sys.exit(EXIT_FAIL_UNDER)


def _fleet_scan_args(
    targets: str | None,
    exclude: tuple[str, ...],
    ignore: tuple[str, ...],
    front_end: str | None,
    file_timeout: float | None,
    rocm: str | None,
    gpu: str | None,
) -> list[str]:
    """The `portcheck scan` options every repository of a fleet is scanned with."""
    args: list[str] = []
    for flag, value in (("--targets", targets), ("--front-end", front_end), ("--rocm", rocm)):
        if value:
            args += [flag, value]
    if gpu:
        args += ["--gpu", gpu]
    for pattern in exclude:
        args += ["--exclude", pattern]
    for hazard in ignore:
        args += ["--ignore", hazard]
    if file_timeout is not None:
        args += ["--file-timeout", f"{file_timeout:g}"]
    return args


def _fleet_progress() -> tuple[
    Callable[[int, int, Mapping[str, int], str], None], Callable[[], None]
]:
    """A progress bar with counts on stderr in a terminal; one line per repository
    otherwise (a CI log)."""
    if not sys.stderr.isatty():

        def log(done: int, total: int, counts: Mapping[str, int], line: str) -> None:
            click.echo(f"portcheck: [{done}/{total}] {display_path(line)}", err=True)

        return log, lambda: None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("repositories"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
    )
    state: dict[str, TaskID] = {}

    def update(done: int, total: int, counts: Mapping[str, int], line: str) -> None:
        if "task" not in state:
            bar.start()
            state["task"] = bar.add_task("", total=total)
        described = ", ".join(
            f"{counts[k]} {k}" for k in ("scanned", "reused", "failed") if counts.get(k)
        )
        bar.update(state["task"], completed=done, description=described)
        bar.console.print(display_path(line), markup=False, highlight=False)

    return update, bar.stop


@main.group("rules")
def rules_group() -> None:
    """Look up the CUDA -> HIP / ZLUDA / SCALE rule set."""


def _load_rules_or_exit():
    from portcheck.ruleset import default_rules

    try:
        return default_rules()
    except RuleError as exc:
        click.echo(f"Error: the rule set is invalid: {exc}", err=True)
        sys.exit(EXIT_USAGE)


@rules_group.command("show")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--rocm",
    "rocm",
    metavar="VERSION",
    help="Give status.hip in this ROCm release (e.g. 5.7, 6.2.1); default: the newest "
    "release the rule set knows.",
)
@click.option(
    "--gpu",
    metavar="ARCH|PRODUCT",
    help="Give each route's status on this AMD GPU: a route that cannot run on it (ZLUDA "
    "on CDNA) is unsupported there, with the reason.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules_show(names: tuple[str, ...], rocm: str | None, gpu: str | None, fmt: str) -> None:
    """Show the rule for each CUDA NAME. Exit 1 if any name is unknown."""
    try:
        profile = target_profile(None, gpu)
    except ScanError as exc:
        raise click.BadParameter(str(exc), param_hint="--gpu") from None
    loaded = _load_rules_or_exit()
    rules = loaded
    if rocm is not None:
        try:
            release = loaded.rocm_release(rocm)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--rocm") from None
        caveat = loaded.rocm_caveat(release)
        if caveat:
            click.echo(f"portcheck: {caveat}", err=True)
        rules = loaded.at_rocm(release)
    found = [rule for name in names if (rule := rules.lookup(name)) is not None]
    missing = [name for name in names if rules.lookup(name) is None]
    found = [profile.route_limits(rule) for rule in found]
    if fmt == "json":
        click.echo(json.dumps([rule.to_dict() for rule in found], indent=2))
    else:
        if rules.release is not None:
            click.echo(f"(HIP statuses in ROCm {rules.release})")
        if profile.gpu is not None:
            click.echo(f"(route statuses on {profile.gpu.name})")
        for rule in found:
            hip = rule.hip or "(no HIP equivalent)"
            click.echo(f"{rule.cuda}  [{rule.family}, {rule.kind}]  ->  {hip}")
            for target in TARGETS:
                click.echo(
                    f"  {target.value:<6} {rule.status[target].value:<12} {rule.source[target]}"
                )
            if rule.hip is not None:
                click.echo(f"  hip versions: {_hip_versions_text(rule, loaded.oldest_rocm())}")
            for key in ("since", "deprecated", "removed", "notes"):
                if getattr(rule, key):
                    click.echo(f"  {key}: {getattr(rule, key)}")
    for name in missing:
        click.echo(f"portcheck: no rule for {name!r}", err=True)
    if missing:
        sys.exit(EXIT_FAIL_UNDER)


def _hip_versions_text(rule: ApiRule, oldest: RocmRelease | None) -> str:
    """The ROCm releases of a rule's HIP equivalent, one line: "added 6.2.0, deprecated
    -, removed -" (and ", experimental"); an undated name was there from the start."""
    added = rule.hip_added or (f"{oldest} or earlier" if oldest is not None else "-")
    parts = [
        f"added {added}",
        f"deprecated {rule.hip_deprecated or '-'}",
        f"removed {rule.hip_removed or '-'}",
    ]
    if rule.experimental:
        parts.append("experimental")
    return ", ".join(parts)


@rules_group.command("search")
@click.argument("text")
@click.option("--family", help="Only this family (e.g. runtime, cublas, device).")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules_search(text: str, family: str | None, limit: int, fmt: str) -> None:
    """Find rules whose CUDA or HIP name contains TEXT. Exit 1 when nothing matches."""
    rules = _load_rules_or_exit()
    if family is not None and family not in rules.families:
        known = ", ".join(rules.families)
        raise click.BadParameter(
            f"unknown family {family!r} (known: {known})", param_hint="--family"
        )
    hits = rules.search(text, family)
    if fmt == "json":
        click.echo(json.dumps([rule.to_dict() for rule in hits[:limit]], indent=2))
    else:
        for rule in hits[:limit]:
            marks = " ".join(f"{t.value}={rule.status[t].value}" for t in TARGETS)
            click.echo(f"{rule.cuda:<40} {rule.hip or '-':<40} {rule.family:<12} {marks}")
        if len(hits) > limit:
            click.echo(f"… {len(hits) - limit} more (use --limit)")
    if not hits:
        click.echo(f"portcheck: no rule matches {text!r}", err=True)
        sys.exit(EXIT_FAIL_UNDER)


@rules_group.command("stats")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules_stats(fmt: str) -> None:
    """Count the rules per family."""
    stats = _load_rules_or_exit().stats()
    if fmt == "json":
        click.echo(json.dumps(stats, indent=2))
        return
    click.echo(
        f"{stats['total']} rules; {stats['entries_without_full_status']} without a "
        "known status on every target"
    )
    for family, count in stats["families"].items():
        click.echo(f"  {family:<20} {count}")
    click.echo(
        "where each status came from (source: read off a source; derived: by a rule; "
        "default: the family's default):"
    )
    for target, counts in stats["origins"].items():
        kinds = ", ".join(f"{kind} {count}" for kind, count in counts.items())
        click.echo(f"  {target:<6} {kinds}")
        rules = stats["derivations"][target]
        if rules:
            click.echo("         derived by " + ", ".join(f"{r} {n}" for r, n in rules.items()))
    sources = stats["sources"]
    rocm = sources["rocm"]
    if rocm["newest"] is not None:
        click.echo(f"HIP dated for ROCm {rocm['oldest'] or '?'} to {rocm['newest']}")
    if sources["snapshots"]:
        click.echo("built from:")
    for snapshot in sources["snapshots"]:
        via = f" via {snapshot['via']}" if snapshot.get("via") else ""
        date = snapshot.get("date", "")[:10]
        click.echo(f"  {snapshot['project']:<42} {snapshot['commit'][:12]}  {date}{via}")


if __name__ == "__main__":  # pragma: no cover
    main()
