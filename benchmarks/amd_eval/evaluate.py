#!/usr/bin/env python3
"""Measure portcheck's recall and precision on real CUDA code that already has AMD branches.

Sub-commands (all take --truth, default: truth.yaml next to this script):

  prepare  --src ROOT           extract every project's listed files from its fetched git dir
                                (``git archive COMMIT PATH... | tar -x``) into ROOT/<project>/
  groups   --src ROOT           list every preprocessor conditional group that has an AMD-only
                                branch in the extracted files (the selection rule of truth.yaml)
  run      --src ROOT [-n N] [--seed S] [--labels labels_baseline.yaml] [--json OUT]
                                scan each project with portcheck (JSON), print recall, findings
                                inside AMD branches, counts per slug, precision of a labelled
                                sample (if --labels) and a fresh random sample to hand-label

Only the standard library and PyYAML are used. The AMD-branch analysis is done here,
independently of portcheck: a small three-valued evaluator of #if expressions decides which
branches can only be taken when building for AMD (every macro in the project's ``amd_macros``
is treated as undefined / 0 on an NVIDIA build; every other name is unknown).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_TRUTH = HERE / "truth.yaml"

# Slug families for the lenient match: a truth place of one slug is also counted as found by
# a finding of another slug in the same family (reported separately from the strict figure).
FAMILIES = {
    "warp-size-assumption": "wave",
    "lane-mask-width": "wave",
    "unsupported-api": "api",
    "unknown-api": "api",
    "library-port": "api",
}


def family(slug: str) -> str:
    return FAMILIES.get(slug, slug)


# --------------------------------------------------------------------------------------------
# prepare: extract the listed files of each project from a fetched bare git dir
# --------------------------------------------------------------------------------------------

def prepare_project(git_dir: str, commit: str, paths: list[str], dest: Path) -> None:
    """Extract ``paths`` at ``commit`` from the bare repository ``git_dir`` into ``dest``.

    Equivalent shell:  git --git-dir=GIT_DIR archive COMMIT PATH... | tar -x -C DEST
    No network: the git dir is the one the ``fetch`` tool (or a ``git clone --bare``) brought.
    """
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", commit, "--", *paths],
        check=True, capture_output=True,
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def cmd_prepare(truth: dict, src: Path) -> None:
    for proj in truth["projects"]:
        git_dir = os.path.expandvars(proj["git_dir"])
        paths = [f["path"] for f in proj["files"]]
        prepare_project(git_dir, proj["commit"], paths, src / proj["name"])
        print(f"{proj['name']}: {len(paths)} files -> {src / proj['name']}")


# --------------------------------------------------------------------------------------------
# preprocessor: which lines are in AMD-only branches
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<id>[A-Za-z_]\w*)|"
    r"(?P<op>\|\||&&|==|!=|<=|>=|<<|>>|[()!~<>+\-*/%&|^?:,]))"
)


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            pos += 1  # skip anything odd (string/char literals in #if are vanishingly rare)
            continue
        kind = m.lastgroup
        val = m.group(kind)
        if kind == "id" and val in _ALT:  # C++ alternative tokens: and, or, not, ...
            kind, val = "op", _ALT[val]
        out.append((kind, val))
        pos = m.end()
    return out


_ALT = {"and": "&&", "or": "||", "not": "!", "bitand": "&", "bitor": "|", "xor": "^",
        "compl": "~", "not_eq": "!="}


class _Eval:
    """Three-valued evaluation of a #if expression: an int, or None for unknown."""

    BINARY = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!="], ["<", ">", "<=", ">="],
              ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]

    def __init__(self, toks, is_amd):
        self.toks, self.i, self.is_amd = toks, 0, is_amd

    def peek(self):
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def parse(self):
        v = self.ternary()
        return v

    def ternary(self):
        c = self.binary(0)
        if self.peek() == "?":
            self.take()
            a = self.ternary()
            if self.peek() == ":":
                self.take()
            b = self.ternary()
            if c is None:
                return a if a == b else None
            return a if c else b
        return c

    def binary(self, level):
        if level == len(self.BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self.BINARY[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            left = self.apply(op, left, right)
        return left

    @staticmethod
    def apply(op, a, b):
        if op == "||":
            if a or b:
                return 1 if (a not in (None, 0) or b not in (None, 0)) else None
            return None if (a is None or b is None) else 0
        if op == "&&":
            if a == 0 or b == 0:
                return 0
            return None if (a is None or b is None) else 1
        if a is None or b is None:
            return None
        try:
            return int({
                "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
                "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
                ">": lambda: a > b, "<=": lambda: a <= b, ">=": lambda: a >= b,
                "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b,
                "-": lambda: a - b, "*": lambda: a * b,
                "/": lambda: a // b, "%": lambda: a % b,
            }[op]())
        except (ZeroDivisionError, ValueError, KeyError):
            return None

    def unary(self):
        t = self.peek()
        if t in ("!", "-", "~", "+"):
            self.take()
            v = self.unary()
            if v is None:
                return None
            return {"!": int(not v), "-": -v, "~": ~v, "+": v}[t]
        return self.primary()

    def primary(self):
        if self.i >= len(self.toks):
            return None
        kind, val = self.take()
        if val == "(":
            v = self.ternary()
            if self.peek() == ")":
                self.take()
            return v
        if kind == "num":
            return int(val, 0)
        if kind == "id":
            if val == "defined":
                paren = self.peek() == "("
                if paren:
                    self.take()
                name = self.take()[1] if self.i < len(self.toks) else ""
                if paren and self.peek() == ")":
                    self.take()
                return 0 if self.is_amd(name) else None
            if self.peek() == "(":  # function-like macro call: skip its arguments
                depth = 0
                while self.i < len(self.toks):
                    v = self.take()[1]
                    depth += v == "("
                    depth -= v == ")"
                    if depth == 0:
                        break
                return None
            if val in ("true", "false"):
                return int(val == "true")
            return 0 if self.is_amd(val) else None
        return None


def eval_condition(expr: str, is_amd) -> int | None:
    try:
        return _Eval(_tokens(expr), is_amd).parse()
    except (IndexError, RecursionError):
        return None


@dataclass
class Branch:
    kind: str            # if / ifdef / ifndef / elif / else
    cond: str
    start: int           # line of the directive (1-based)
    end: int = 0         # last line of the branch body
    amd_only: bool = False


@dataclass
class Group:
    branches: list[Branch] = field(default_factory=list)
    end: int = 0         # the #endif line
    parent_amd: bool = False

    @property
    def has_amd(self) -> bool:
        return any(b.amd_only for b in self.branches) and not self.parent_amd


_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")


def _logical_lines(text: str):
    """Yield (first_line_no, directive_text) with continuations joined and comments removed."""
    lines = text.split("\n")
    i = 0
    in_block = False
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        # drop comments (good enough for directive lines)
        if in_block:
            if "*/" in line:
                line = line.split("*/", 1)[1]
                in_block = False
            else:
                continue
        line = re.sub(r"/\*.*?\*/", " ", line)
        if "/*" in line:
            line, in_block = line.split("/*", 1)[0], True
        line = re.sub(r"//.*", "", line)
        yield start + 1, i, line


def analyse(text: str, amd_patterns: list[str]):
    """Return (amd_ranges, groups): the AMD-only line ranges (inclusive, body lines plus the
    directive lines that open/close them) and every conditional group that has an AMD branch."""
    amd_re = re.compile("^(?:" + "|".join(amd_patterns) + ")$")

    def is_amd(name):
        return bool(amd_re.match(name))

    def never(name):
        return False

    def cond_of(kind, rest, pred):
        name = rest.split()[0] if rest else ""
        if kind in ("if", "elif"):
            return eval_condition(rest, pred)
        if kind in ("ifdef", "elifdef"):
            return 0 if pred(name) else None
        if kind in ("ifndef", "elifndef"):
            return 1 if pred(name) else None
        return 1  # else

    # state per open group: [some earlier branch is surely taken on NVIDIA,
    #                        ... surely taken in general (dead-code test)]
    stack: list[tuple[Group, list]] = []
    groups: list[Group] = []
    ranges: list[tuple[int, int]] = []

    def parent_amd() -> bool:
        return bool(stack) and stack[-1][0].branches[-1].amd_only

    for first, last, line in _logical_lines(text):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        kind, rest = m.group(1), m.group(2).strip()
        if kind in ("if", "ifdef", "ifndef"):
            g = Group(parent_amd=parent_amd())
            v, w = cond_of(kind, rest, is_amd), cond_of(kind, rest, never)
            # AMD-only: never taken on an NVIDIA build, but not dead code in general
            b = Branch(kind, rest, first, amd_only=g.parent_amd or (v == 0 and w != 0))
            g.branches.append(b)
            stack.append((g, [v == 1, w == 1]))
            continue
        if not stack:
            continue
        g, state = stack[-1]
        prev = g.branches[-1]
        prev.end = first - 1
        if kind in ("elif", "elifdef", "elifndef", "else"):
            v, w = cond_of(kind, rest, is_amd), cond_of(kind, rest, never)
            nv_dead = state[0] or v == 0
            gen_dead = state[1] or w == 0
            b = Branch(kind, rest, first, amd_only=g.parent_amd or (nv_dead and not gen_dead))
            g.branches.append(b)
            state[0] = state[0] or v == 1
            state[1] = state[1] or w == 1
            continue
        # endif
        g.end = first
        stack.pop()
        groups.append(g)
    for g in groups:
        for b in g.branches:
            if b.amd_only and not g.parent_amd:
                ranges.append((b.start, b.end))
    ranges.sort()
    return ranges, [g for g in groups if g.has_amd]


def in_ranges(line: int, ranges) -> bool:
    return any(a <= line <= b for a, b in ranges)


# --------------------------------------------------------------------------------------------
# scanning and scoring
# --------------------------------------------------------------------------------------------

def scan(portcheck: str, directory: Path, jobs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        env = dict(os.environ)
        env.setdefault("PORTCHECK_CACHE_DIR", tmp)
        proc = subprocess.run(
            [portcheck, "scan", str(directory), "--format", "json", "-o", str(out), "-j", str(jobs)],
            capture_output=True, text=True, env=env,
        )
        if not out.exists():
            sys.exit(f"portcheck failed on {directory} (exit {proc.returncode}):\n{proc.stderr}")
        return json.loads(out.read_text())


def load_truth(path: Path) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


def project_ranges(proj: dict, root: Path) -> dict[str, list]:
    out = {}
    for f in proj["files"]:
        p = root / proj["name"] / f["path"]
        text = p.read_text(errors="replace") if p.exists() else ""
        out[f["path"]] = analyse(text, proj["amd_macros"])[0]
    return out


def select_groups(groups: list, cap: int, seed: int) -> list:
    """The truth-set selection rule: every group with an AMD-only branch, in file order; in a
    file with more than ``cap`` such groups, a seeded random ``cap`` of them."""
    groups = sorted(groups, key=lambda g: g.branches[0].start)
    if cap and len(groups) > cap:
        groups = sorted(random.Random(seed).sample(groups, cap), key=lambda g: g.branches[0].start)
    return groups


def cmd_groups(truth: dict, src: Path, cap: int = 0, seed: int = 1, show: bool = False) -> None:
    for proj in truth["projects"]:
        for f in proj["files"]:
            p = src / proj["name"] / f["path"]
            text = p.read_text(errors="replace")
            lines = text.split("\n")
            _, groups = analyse(text, proj["amd_macros"])
            for g in select_groups(groups, cap, seed):
                desc = " | ".join(
                    f"{b.kind}{'*' if b.amd_only else ''}@{b.start}-{b.end} {b.cond[:50]}"
                    for b in g.branches)
                print(f"{proj['name']}:{f['path']}:{g.branches[0].start}-{g.end}  {desc}")
                if show:
                    for b in g.branches:
                        body = range(b.start, min(b.end, b.start + (6 if b.amd_only else 30)) + 1)
                        for n in body:
                            print(f"   {'A' if b.amd_only else 'N'}{n:5d}| {lines[n - 1][:150]}")


def _context(root: Path, path: str, line: int, width: int = 1) -> list[str]:
    try:
        lines = (root / path).read_text(errors="replace").split("\n")
    except OSError:
        return []
    lo, hi = max(1, line - width), min(len(lines), line + width)
    return [f"{'>' if n == line else ' '}{n:6d}| {lines[n - 1].rstrip()[:160]}" for n in range(lo, hi + 1)]


def cmd_run(truth: dict, src: Path, args) -> int:
    all_findings = []   # (project, finding dict, in_amd)
    recall_rows = []
    for proj in truth["projects"]:
        root = src / proj["name"]
        report = scan(args.portcheck, root, args.jobs)
        ranges = project_ranges(proj, src)
        for f in report.get("findings", []):
            in_amd = in_ranges(f["line"], ranges.get(f["path"], []))
            all_findings.append((proj["name"], f, in_amd))
        by_path = collections.defaultdict(list)
        for f in report.get("findings", []):
            by_path[f["path"]].append(f)
        for place in proj.get("places", []):
            cands = [f for f in by_path.get(place["path"], [])
                     if abs(f["line"] - place["line"]) <= args.window]
            strict = [f for f in cands if f["slug"] == place["slug"]]
            fam = [f for f in cands if family(f["slug"]) == family(place["slug"])]
            recall_rows.append((proj["name"], place, strict, fam))

    # ---- recall
    def pct(a, b):
        return f"{a}/{b} = {100.0 * a / b:.1f}%" if b else f"{a}/0"

    print("== Recall (truth places with a finding within ±%d lines)" % args.window)
    per_proj = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for name, place, strict, fam in recall_rows:
        c = per_proj[name]
        c[0] += 1
        c[1] += bool(strict)
        c[2] += bool(fam)
        if place["slug"].startswith("other:"):
            c[3] += 1
        c[4] += any(f.get("amd_alternative") for f in fam)
    tot = [sum(c[i] for c in per_proj.values()) for i in range(5)]
    for name, c in list(per_proj.items()) + [("ALL", tot)]:
        print(f"  {name:14s} places {c[0]:3d}  strict {pct(c[1], c[0])}  family {pct(c[2], c[0])}"
              f"  (excl. {c[3]} 'other:' places: family {pct(c[2], c[0] - c[3])})"
              f"  found with amd_alternative: {c[4]}")
    # places expected to carry amd_alternative
    exp_alt = [(p, fam) for _, p, _, fam in recall_rows if p.get("amd_alternative")]
    print(f"  places expecting amd_alternative: {len(exp_alt)}; found at all: "
          f"{sum(bool(f) for _, f in exp_alt)}; found with amd_alternative=true: "
          f"{sum(any(x.get('amd_alternative') for x in f) for _, f in exp_alt)}")
    missed = collections.Counter(p["slug"] for _, p, _, fam in recall_rows if not fam)
    print("  missed places by expected slug:", dict(missed.most_common()))
    if args.verbose:
        for name, place, strict, fam in recall_rows:
            if not fam:
                print(f"    MISS {name}/{place['path']}:{place['line']} {place['slug']} — {place.get('note', '')}")

    # ---- findings inside AMD branches
    inside = [(n, f) for n, f, a in all_findings if a]
    print(f"\n== Findings inside AMD-only branches (should be 0): {len(inside)} of {len(all_findings)}")
    c = collections.Counter(f["slug"] for _, f in inside)
    print("  by slug:", dict(c.most_common()))
    for n, f in inside[: args.show_inside]:
        print(f"    {n}/{f['path']}:{f['line']} {f['slug']}")

    # ---- counts per slug
    print("\n== Findings per slug (all projects)")
    per = collections.Counter(f["slug"] for _, f, _ in all_findings)
    alt = collections.Counter(f["slug"] for _, f, _ in all_findings if f.get("amd_alternative"))
    for slug, n in per.most_common():
        print(f"  {slug:24s} {n:5d}   amd_alternative: {alt.get(slug, 0)}")
    per_p = collections.Counter(n for n, _, _ in all_findings)
    print("  per project:", dict(per_p))

    # ---- precision on a labelled sample
    if args.labels:
        labels = yaml.safe_load(open(args.labels))
        rows = labels.get("labels", [])
        right = sum(r["label"] == "right" for r in rows)
        wrong = sum(r["label"] == "wrong" for r in rows)
        print(f"\n== Precision of the labelled sample {args.labels}: right {right}, wrong {wrong}: "
              f"{pct(right, right + wrong)}")
        current = {(n, f["path"], f["line"], f["slug"]): f for n, f, _ in all_findings}

        def fixed_by_mark(r: dict) -> bool:
            """A false alarm whose only fault was a missing amd_alternative mark is fixed
            when the finding now carries it (the contract: listed, not scored)."""
            key = (r["project"], r["path"], r["line"], r["slug"])
            wants_mark = ("amd_alternative should be true" in r.get("reason", "")
                          or r.get("pattern", "") in AMD_MARK_PATTERNS)
            return wants_mark and bool(current[key].get("amd_alternative"))

        still = [r for r in rows if r["label"] == "wrong"
                 and (r["project"], r["path"], r["line"], r["slug"]) in current
                 and not fixed_by_mark(r)]
        gone_right = [r for r in rows if r["label"] == "right"
                      and (r["project"], r["path"], r["line"], r["slug"]) not in current]
        print(f"  labelled-wrong findings still reported: {len(still)}/{wrong}; "
              f"labelled-right findings no longer reported: {len(gone_right)}/{right}")
        if args.verbose:
            for r in still:
                print(f"    still wrong: {r['project']}/{r['path']}:{r['line']} {r['slug']} — {r.get('reason', '')}")
            for r in gone_right:
                print(f"    gone right:  {r['project']}/{r['path']}:{r['line']} {r['slug']} — {r.get('reason', '')}")
        reasons = collections.Counter(r.get("pattern", "?") for r in rows if r["label"] == "wrong")
        print("  false-alarm patterns:", dict(reasons.most_common()))

    # ---- fresh sample to hand-label
    if args.sample:
        rng = random.Random(args.seed)
        pool = sorted(all_findings, key=lambda t: (t[0], t[1]["path"], t[1]["line"], t[1]["slug"]))
        pick = rng.sample(pool, min(args.sample, len(pool)))
        print(f"\n== Random sample of {len(pick)} findings (seed {args.seed}) to hand-label")
        for n, f, a in pick:
            flag = " [IN AMD BRANCH]" if a else ""
            alt_s = " amd_alternative" if f.get("amd_alternative") else ""
            print(f"\n- {n}/{f['path']}:{f['line']}  {f['slug']}{alt_s}{flag}  fp={f.get('fingerprint', '')}")
            print(f"  {f['message'][:200]}")
            for ln in _context(src / n, f["path"], f["line"]):
                print("  " + ln)
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{"project": n, "in_amd_branch": a, **f} for n, f, a in all_findings], indent=1))
    return 0


# Label patterns whose finding is right once it carries amd_alternative: true.
AMD_MARK_PATTERNS = {
    "project-macro-in-disjunctive-guard",
    "nvidia-switch-unrecognised",
    "missed-amd-path",
    "amd-alternative-missed-amd-arch-macro-sibling",
    "arch-compare-nested-in-nvidia-only-branch",
    "nvidia-only-via-non-hip-macro-not-recognised",
    "nvidia-only-workaround-branch-defined-cuda-arch",
    "nvidia-only-branch-excluding-hip",
    "amd-alternative-missed-selector-macro",
    "amd-alternative-missed-selector-macro-paren-on-next-line",
    "nvidia-only-branch-cudart-version-undefined-on-hip",
    "nvidia-only-via-if-constexpr",
    "nvidia-only-via-project-macro-defined-for-amd",
    "amd-type-alias",
    "amd-defined-helper",
    "arch-branch-with-stub",
    "per-gpu-macro-as-defined",
    "sibling-group-alternative",
    "constant-used-only-in-nvidia-branches",
    "arch-branch-with-amd-sibling",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["prepare", "groups", "run"])
    ap.add_argument("--truth", type=Path, default=DEFAULT_TRUTH)
    ap.add_argument("--src", type=Path, default=Path("/tmp/eval-src"))
    ap.add_argument("--portcheck", default=str(HERE.parents[1] / ".venv" / "bin" / "portcheck"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-n", "--sample", type=int, default=0, help="random findings to print")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--labels", type=Path)
    ap.add_argument("--json", help="write every finding (with in_amd_branch) to this file")
    ap.add_argument("--show-inside", type=int, default=0)
    ap.add_argument("--cap", type=int, default=4, help="groups: at most this many per file")
    ap.add_argument("--seed-groups", type=int, default=1, help="groups: seed of the per-file pick")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    truth = load_truth(args.truth)
    if args.command == "prepare":
        cmd_prepare(truth, args.src)
    elif args.command == "groups":
        cmd_groups(truth, args.src, args.cap, args.seed_groups, args.verbose)
    else:
        return cmd_run(truth, args.src, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
