#!/usr/bin/env python3
"""Re-check a random sample of rules/*.yaml against the upstream text they cite.

For each route (hip, zluda, scale) a seeded random sample of N entries is drawn, and each
sampled entry's status on that route is re-read from the source its `source`/`origin`
names, at the commit recorded there, with code of its own rather than
tools/build_rules.py's: a grep for the name in the cited file and a look at what
surrounds it (the table row and its HIP column, the ```diff section and its `-` mark, the
`implemented <= [...]` list the name sits in, the match arm that answers an attribute).
A status derived by a rule is checked by re-reading the fact the rule stands on (the base
name's line for a versioned name, the section's "unsupported" sentence, the driver calls
libcudart makes, the function named as taking a type). Curated judgements and family
defaults have no single text to re-read: they are counted as "not checkable".

Output: one line per disagreement (entry, route, recorded status, what the source says,
why), then per route the counts and the error rate (disagreements / checked entries).

Usage::

    python tools/verify_rules.py [--rules rules] [--mirrors /work/.mirror] [-n 50]
        [--seed 19] [--routes hip,zluda,scale] [--all]

Mirrors are bare git repositories at MIRRORS/<owner>+<name>/repo (the `fetch` layout); a
project whose recorded commit only a fork carries is looked up through the `via` of
rules/sources.yaml. Only the standard library and PyYAML are used.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

TARGETS = ("hip", "zluda", "scale")
OK, BAD, SKIP = "agree", "disagree", "not checkable"
# supported and partial both say "it works" (partial with a caveat): a source that shows
# the name present agrees with either; only a present/absent mismatch is an error.
WORKS = {"supported", "partial"}


@dataclass(frozen=True)
class Check:
    outcome: str  # OK, BAD or SKIP
    expected: str  # what the source says: "works", "unsupported", or "" when not checkable
    reason: str


def agree_if(recorded: str, works: bool, reason: str) -> Check:
    expected = "works" if works else "unsupported"
    good = (recorded in WORKS) == works
    return Check(OK if good else BAD, expected, reason)


# --------------------------------------------------------------------------- git


class Mirrors:
    """Bare mirrors under one folder; `via` maps a project to the fork that carries it."""

    def __init__(self, root: Path, via: dict[str, str]):
        self.root = root
        self.via = via

    def _dirs(self, project: str) -> list[Path]:
        names = [project] + ([self.via[project]] if project in self.via else [])
        return [self.root / name.replace("/", "+") / "repo" for name in names]

    @lru_cache(maxsize=4096)  # noqa: B019  (one Mirrors per run)
    def show(self, project: str, ref: str, path: str) -> str | None:
        for repo in self._dirs(project):
            if not repo.exists():
                continue
            result = subprocess.run(
                ["git", "--git-dir", str(repo), "show", f"{ref}:{path}"],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=60,
                check=False,
            )
            if result.returncode == 0:
                return result.stdout
        return None

    @lru_cache(maxsize=256)  # noqa: B019
    def files(self, project: str, ref: str, folder: str) -> tuple[str, ...]:
        for repo in self._dirs(project):
            if not repo.exists():
                continue
            result = subprocess.run(
                ["git", "--git-dir", str(repo), "ls-tree", "-r", "--name-only", ref, folder],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if result.returncode == 0:
                return tuple(result.stdout.split())
        return ()


def uncomment(text: str, strings: bool = True) -> str:
    """C/C++/Rust text without // and /* */ comments; string literals kept, or blanked
    with `strings=False` (a word in an error message declares nothing)."""
    pattern = r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/'

    def blank(match: re.Match[str]) -> str:
        return match.group(0) if strings and match.group(0)[0] == '"' else " "

    return re.sub(pattern, blank, text, flags=re.S)


def route_note(notes: str, target: str) -> str:
    """The parts of an entry's notes about one route: build_rules joins them with " | "
    and labels each route's ("ZLUDA: …"); unlabelled parts are kept."""
    labels = tuple(f"{t.upper()}:" for t in TARGETS)
    own = f"{target.upper()}:"
    return " | ".join(
        part.removeprefix(own).strip()
        for part in notes.split(" | ")
        if part.startswith(own) or not part.startswith(labels)
    )


def word(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])")


# --------------------------------------------------------------------------- checkers


class Verifier:
    def __init__(self, rules_dir: Path, mirrors: Mirrors):
        self.mirrors = mirrors
        self.entries: dict[str, dict[str, Any]] = {}  # name -> entry (+ "family")
        self.sources: dict[str, dict[str, dict[str, str]]] = {}  # family -> id -> body
        for path in sorted(rules_dir.glob("*.yaml")):
            doc = yaml.load(path.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", None))
            if not isinstance(doc, dict) or "entries" not in doc:
                continue
            family = doc["family"]
            self.sources[family] = {k: dict(v) for k, v in (doc.get("sources") or {}).items()}
            for entry in doc["entries"]:
                self.entries[entry["cuda"]] = {**entry, "family": family}
        zluda = next(
            (b for s in self.sources.values() for b in s.values() if b["project"] == "vosen/ZLUDA"),
            None,
        )
        self.zluda_ref = zluda["ref"] if zluda else None
        scale = next(
            (
                b
                for s in self.sources.values()
                for b in s.values()
                if b["project"] == "spectral-compute/scale-docs"
            ),
            None,
        )
        self.scale_ref = scale["ref"] if scale else None

    # ---- dispatch

    def check(self, name: str, target: str) -> Check:
        entry = self.entries[name]
        recorded = entry["status"][target]
        source = str(entry["source"][target])
        origin = str((entry.get("origin") or {}).get(target, ""))
        note = route_note(str(entry.get("notes") or ""), target)
        if recorded == "unknown":
            return Check(SKIP, "", "status unknown")
        if origin == "source" or (not origin and not source.startswith("inferred:")):
            body = self.sources[entry["family"]].get(source)
            if body is None:
                return Check(BAD, "", f"source id {source!r} not declared in the family file")
            return self.check_source(entry, target, recorded, body, source)
        rule = origin.removeprefix("derived:")
        method = getattr(self, "derived_" + rule.replace("-", "_"), None)
        if method is None:
            return Check(SKIP, "", f"{origin or 'no origin'}: no single text to re-read")
        return method(entry, target, recorded, source, note)

    def text(self, body: dict[str, str]) -> str | None:
        return self.mirrors.show(body["project"], body["ref"], body["path"])

    def check_source(
        self,
        entry: dict[str, Any],
        target: str,
        recorded: str,
        body: dict[str, str],
        source_id: str,
    ) -> Check:
        path = body.get("path")
        if not path:  # a web page (a vendor's documentation), not a file of a mirror
            return Check(SKIP, "", f"cites a page, not a file ({body.get('url', source_id)})")
        name = entry["cuda"]
        if ", " in path or (path.endswith("/") and "redscale_wrappers" not in path):
            return Check(SKIP, "", f"cites several files ({path})")
        if "docs/reference/tables/" in path or "docs/tables/" in path:
            return self.hipify_table(entry, recorded, body)
        if path == "src/CUDA2HIP.cpp":
            return self.hipify_include(name, recorded, body)
        if "/include/hip/" in "/" + path:  # clr's hipamd/include/hip/…, HIP's include/hip/…
            return self.hip_header(entry, recorded, body)
        if path == "zluda/src/lib.rs" or re.fullmatch(r"zluda_\w+/src/lib\.rs", path):
            return self.zluda_list(name, recorded, body)
        if path == "zluda/src/impl/device.rs":
            return self.zluda_device_attribute(name, recorded, body)
        if path == "zluda/src/impl/driver.rs":
            return self.zluda_launch_attribute(name, recorded, body)
        if "/apidiff/api-" in path:
            return self.scale_page(name, recorded, body)
        if path.startswith("redscale_wrappers/"):
            return self.scale_wrapper(name, recorded, body)
        if "/changelogs/" in path:
            text = self.text(body)
            if text is None:
                return Check(BAD, "", f"{path} not found at {body['ref'][:12]}")
            if word(name).search(text):
                return agree_if(recorded, True, f"named in {path}")
            if source_id != "scale_changelog":  # a curator's reading of a release's notes
                return Check(SKIP, "", f"a curated citation of {path}")
            return agree_if(recorded, False, f"not named in {path}")
        return Check(SKIP, "", f"a curated citation of {path}")

    # ---- HIP

    def hipify_table(self, entry: dict[str, Any], recorded: str, body: dict[str, str]) -> Check:
        text = self.text(body)
        name = entry["cuda"]
        if text is None:
            return Check(BAD, "", f"{body['path']} not found")
        header: list[str] = []
        for line in text.splitlines():
            cells = [c.strip().strip("*`").strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|**CUDA**"):
                header = cells
            elif line.startswith("|`") and cells and cells[0] == name and header:
                # the HIP equivalent: cuDNN's route is MIOpen (ROC or MIOPEN column)
                groups = ("ROC", "MIOPEN", "HIP") if "CUDNN" in body["path"] else ("HIP",)
                column = next(header.index(g) for g in groups if g in header)
                hip = cells[column]
                removed = cells[column + 4] if len(cells) > column + 4 else ""
                works = bool(hip) and not removed
                why = f"HIPIFY's row gives {hip or 'no HIP name'}" + (
                    f", removed in {removed}" if removed else ""
                )
                if not works and recorded in WORKS and entry.get("hip") and entry["hip"] != hip:
                    return Check(
                        SKIP, "", why + f"; the entry's {entry['hip']} comes from elsewhere"
                    )
                return agree_if(recorded, works, why)
        # The tables list every API of their library, with or without a HIP name: a name
        # with no row at all is one HIPIFY does not know, which gives it no HIP equivalent.
        return agree_if(recorded, False, f"no row for {name} in {body['path']}")

    def hipify_include(self, name: str, recorded: str, body: dict[str, str]) -> Check:
        text = self.text(body) or ""
        found = re.search(r'\{"' + re.escape(name) + r'",\s*\{"', text) is not None
        return agree_if(
            recorded, found, "HIPIFY's include map " + ("lists" if found else "lacks") + " it"
        )

    def hip_header(self, entry: dict[str, Any], recorded: str, body: dict[str, str]) -> Check:
        text = self.text(body)
        # a member (cooperative_groups::grid_group::sync) is declared by its last name
        spelling = (entry.get("hip") or entry["cuda"]).rsplit("::", 1)[-1]
        if text is None:
            return Check(BAD, "", f"{body['path']} not found at {body['ref'][:12]}")
        found = bool(word(spelling).search(uncomment(text, strings=False)))
        where = f"{body['path'].rsplit('/', 1)[-1]} ({body.get('note', '')})"
        return agree_if(recorded, found, f"{spelling} {'in' if found else 'not in'} {where}")

    # ---- ZLUDA

    def zluda_lists(self, text: str) -> dict[str, str]:
        """Name -> the macro of the `macro <= [ ... ]` list it sits in."""
        found: dict[str, str] = {}
        for match in re.finditer(r"(\w+|\(\w+\s*\|\s*\w+\))\s*<=\s*\[([^\]]*)\]", uncomment(text)):
            for name in re.findall(r"\b\w+\b", match.group(2)):
                found.setdefault(name, match.group(1))
        return found

    def zluda_list(self, name: str, recorded: str, body: dict[str, str]) -> Check:
        text = self.text(body)
        if text is None:
            return Check(BAD, "", f"{body['path']} not found")
        lists = self.zluda_lists(text)
        if not lists or not re.fullmatch(r"\w+", name):
            return Check(SKIP, "", f"a curated citation of {body['path']}")
        # cuDNN's _v7/_v8 names are APIs of their own, not ABI aliases of the base name
        exact = "zluda_dnn" in body["path"]
        base = name if exact else re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", name)
        candidates = [
            n
            for n in lists
            if n == name or (not exact and re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", n) == base)
        ]
        if not candidates:
            return agree_if(recorded, False, f"not in any list of {body['path']}")
        macro = lists[candidates[0]]
        return agree_if(
            recorded, macro != "unimplemented", f"in the `{macro}` list of {body['path']}"
        )

    def zluda_implemented(self) -> set[str]:
        if self.zluda_ref is None:
            return set()
        names: set[str] = set()
        for path in ["zluda/src/lib.rs"] + [
            f"{d}/src/lib.rs"
            for d in (
                "zluda_blas",
                "zluda_blaslt",
                "zluda_sparse",
                "zluda_fft",
                "zluda_dnn",
                "zluda_ml",  # NVML: `unimplemented_fn <= [...]` beside `implemented_fn`
            )
        ]:
            text = self.mirrors.show("vosen/ZLUDA", self.zluda_ref, path) or ""
            for n, macro in self.zluda_lists(text).items():
                if not macro.startswith("unimplemented"):
                    names.add(re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", n))
        return names

    def zluda_device_attribute(self, name: str, recorded: str, body: dict[str, str]) -> Check:
        code = uncomment(self.text(body) or "")
        words = name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        spaced = "[" + " ".join(words.split("_")) + "]"
        found = (
            re.search(r"CUdevice_attribute::" + re.escape(name) + r"\b", code) is not None
            or spaced in code
            or re.search(r"\b" + re.escape(words) + r"\s*=>", code) is not None
        )
        return agree_if(recorded, found, f"{'answered' if found else 'not answered'} in device.rs")

    def zluda_launch_attribute(self, name: str, recorded: str, body: dict[str, str]) -> Check:
        code = uncomment(self.text(body) or "")
        start = code.find("fn launch_kernel_ex")
        named = start >= 0 and name in code[start : start + 3000]
        if named:
            good = recorded == "partial"
            return Check(
                OK if good else BAD,
                "partial",
                "the one attribute launch_kernel_ex lets through (with its default value)",
            )
        return agree_if(recorded, False, "launch_kernel_ex rejects every other attribute")

    # ---- SCALE

    def scale_lines(self, text: str, name: str) -> tuple[list[tuple[bool, str]], str | None]:
        """(present?, section) of every declaration line naming `name`, and the sentence
        of its section when that section holds no declaration."""
        found: list[tuple[bool, str]] = []
        section, in_block = "", False
        pattern = re.compile(
            r"(?:(?<!\w)(?:enum|struct|union|class|#define)\s+" + re.escape(name) + r"\b)"
            r"|(?:\b" + re.escape(name) + r"\s*\()"
            r"|(?:\btypedef\b.*\b" + re.escape(name) + r"\s*;)"
            r"|(?:\btypedef\b.*\(\s*\*\s*" + re.escape(name) + r"\s*\))"
        )
        for line in text.splitlines():
            if line.startswith("#") and not in_block:
                section = re.sub(r"^#+\s*\[?[\d.]*\s*", "", line).split("](")[0].strip(" ]")
            elif line.startswith("```"):
                in_block = not in_block
            elif in_block and pattern.search(line):
                found.append((not line.startswith("-"), section))
        return found, None

    def scale_page(self, name: str, recorded: str, body: dict[str, str]) -> Check:
        text = self.text(body)
        if text is None:
            return Check(BAD, "", f"{body['path']} not found")
        lines, _ = self.scale_lines(text, name)
        if not lines:
            return Check(BAD, "", f"{name} is not listed on {body['path'].rsplit('/', 1)[-1]}")
        present = [s for ok, s in lines if ok]
        section = lines[0][1]
        if present:
            return agree_if(recorded, True, f"listed without '-' under '{section}'")
        # a type marked '-' differs from NVIDIA's: partial is the honest reading too
        if recorded == "partial":
            return Check(OK, "differs", f"marked '-' under '{section}' (declaration differs)")
        return agree_if(recorded, False, f"marked '-' under '{section}'")

    def scale_wrapper(self, name: str, recorded: str, body: dict[str, str]) -> Check:
        folder = body["path"]
        files = self.mirrors.files(body["project"], body["ref"], folder)
        if name.endswith((".h", ".hpp", ".cuh")):  # a header: is the wrapper shipping it?
            found = any(f.rsplit("/", 1)[-1] == name for f in files)
            return agree_if(recorded, found, f"{'a' if found else 'no'} {name} under {folder}")
        text = "".join(
            uncomment(self.mirrors.show(body["project"], body["ref"], f) or "")
            for f in files
            if f.endswith((".h", ".hpp", ".cpp", ".cu"))
        )
        if word(name).search(text):
            return agree_if(recorded, True, f"declared under {folder}")
        # the wrappers' macros: BLAS_API(S, s, gemm, …) declares cublasSgemm(_v2),
        # C_CU_CXX_UNPACK(Dn, getrf, …) cusolverDn{S,D,C,Z}getrf, SPARSE_API(S, s, op …)
        stem = re.sub(r"_v2$", "", name)
        m = re.fullmatch(r"(cublas|cusparse|cusolverDn)([SDCZH])(\w+)", stem)
        if m:
            prefix, letter, op = m.groups()
            macro = rf"\w+\(\s*{letter}\s*,\s*\w+\s*,\s*{re.escape(op)}\b"
            if prefix == "cusolverDn":
                macro = rf"C_CU_CXX_UNPACK\(\s*Dn\s*,\s*{re.escape(op)}\b"
            if re.search(macro, text):
                return agree_if(recorded, True, f"declared by a wrapper macro under {folder}")
        m = re.fullmatch(r"(cublas|cusparse)(\w+)", stem)
        if m and re.search(rf"\w+_API\w*\(\s*{re.escape(m.group(2))}\b", text):
            return agree_if(recorded, True, f"declared by a wrapper macro under {folder}")
        return agree_if(recorded, False, f"not declared under {folder}")

    # ---- derived

    def derived_versioned_name(self, entry, target, recorded, source, note) -> Check:
        match = re.search(r"versioned name of (\w+)|declares only (\w+)", note)
        if not match:
            return Check(SKIP, "", "no base name in the notes")
        base = match.group(1) or match.group(2)
        body = self.sources[entry["family"]].get(source)
        if body is None:
            return Check(SKIP, "", "no page recorded")
        if target == "scale" and "apidiff" in body["path"]:
            check = self.scale_page(base, recorded, body)
            return Check(check.outcome, check.expected, f"base {base}: {check.reason}")
        check = self.scale_wrapper(base, "supported", body)
        return Check(
            OK if recorded == "partial" and check.outcome == OK else BAD,
            "partial",
            f"base {base}: {check.reason}",
        )

    def derived_section_unsupported(self, entry, target, recorded, source, note) -> Check:
        body = self.sources[entry["family"]].get(source)
        match = re.search(r"the section '([^']+)'", note)
        if body is None or not match:
            return Check(SKIP, "", "no page or section recorded")
        text = self.text(body) or ""
        title = match.group(1)
        block = re.search(
            r"^##[^\n]*" + re.escape(title) + r"[^\n]*\n```diff\n(.*?)```", text, re.S | re.M
        )
        if not block:
            return Check(BAD, "unsupported", f"no section '{title}' on the page")
        lines = [ln for ln in block.group(1).splitlines() if ln.strip()]
        whole = bool(lines) and all(ln.startswith("-") for ln in lines)
        listed, _ = self.scale_lines(text, entry["cuda"])
        if any(ok for ok, _s in listed):
            return agree_if(recorded, True, f"listed as present although '{title}' is unsupported")
        return agree_if(recorded, not whole, f"'{title}' is marked missing as a whole")

    def derived_absent_from_wrapper(self, entry, target, recorded, source, note) -> Check:
        body = self.sources[entry["family"]].get(source)
        if body is None:
            # the family rule's reason names the folder
            folder = re.search(r"\((redscale_wrappers/[^,)\s]+)", source)
            if not folder:
                return Check(SKIP, "", "no wrapper folder recorded")
            body = {
                "project": "spectral-compute/scale-library-wrappers",
                "ref": self._wrapper_ref(),
                "path": folder.group(1),
            }
        return self.scale_wrapper(entry["cuda"], recorded, body)

    def _wrapper_ref(self) -> str:
        for sources in self.sources.values():
            for body in sources.values():
                if body["project"] == "spectral-compute/scale-library-wrappers":
                    return body["ref"]
        return "HEAD"

    def derived_runtime_to_driver(self, entry, target, recorded, source, note) -> Check:
        match = re.search(r"calls ([\w, ]+?)(?:[,;] implemented|; ZLUDA|, implemented|$)", source)
        same = re.search(r"same-named driver call (\w+)", source)
        if same:
            calls = [same.group(1)]
        elif match:
            calls = [c.strip() for c in match.group(1).split(",") if c.strip()]
        elif "without a driver call" in source:
            return Check(SKIP, "", "handled inside libcudart")
        else:
            return Check(SKIP, "", "no driver calls recorded")
        implemented = self.zluda_implemented()
        have = [c for c in calls if re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", c) in implemented]
        expected = "supported" if len(have) == len(calls) else "partial" if have else "unsupported"
        good = expected == recorded
        return Check(
            OK if good else BAD,
            expected,
            f"ZLUDA implements {len(have)}/{len(calls)} of {', '.join(calls)}",
        )

    def derived_type_use(self, entry, target, recorded, source, note) -> Check:
        name = entry["cuda"]
        if target == "scale" or "prototype as SCALE" in note or "only runtime calls" in note:
            body = self.sources[entry["family"]].get(source)
            if body is None or "apidiff" not in body["path"]:
                return Check(SKIP, "", "no page recorded")
            text = self.text(body) or ""
            # a prototype's parameters and its return type (the line minus its own name)
            takers = [
                (not ln.startswith("-"), ln)
                for ln in text.splitlines()
                if "(" in ln
                and not ln.lstrip("- ").startswith(("typedef", "#"))
                and word(name).search(re.sub(r"\w+\s*\(", "(", ln, count=1))
            ]
            if not takers:
                return Check(BAD, "", f"no prototype on the page takes {name}")
            if target == "scale":
                return agree_if(
                    recorded, any(ok for ok, _ in takers), f"{len(takers)} prototypes take it"
                )
            taker = re.search(r"taken by (\w+)", note)
            if taker and taker.group(1) not in self.entries:
                return Check(SKIP, "", f"{taker.group(1)} has no entry of its own")
            if taker:
                served = self.entries[taker.group(1)]["status"]["zluda"]
                return agree_if(recorded, served in WORKS, f"{taker.group(1)} is {served} on ZLUDA")
            return agree_if(recorded, False, "only calls ZLUDA does not serve take it")
        # ZLUDA's bindings: the function named as taking it must be implemented and name it
        taker = re.search(r"(?:taken or returned by|taken by) (\w+)", note)
        if recorded in WORKS:
            if not taker:
                return Check(SKIP, "", "no function named")
            function = taker.group(1)
            implemented = (
                re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", function) in self.zluda_implemented()
            )
            return Check(
                OK if implemented else BAD,
                "works",
                f"{function} {'is' if implemented else 'is not'} implemented",
            )
        # unsupported: no implemented function's binding mentions the type directly
        takers = self.zluda_binding_users(name)
        served = sorted(takers & self.zluda_implemented())
        return agree_if(
            recorded,
            bool(served),
            f"implemented functions whose bindings name it: {', '.join(served[:3]) or 'none'}",
        )

    @lru_cache(maxsize=1)  # noqa: B019
    def _zluda_signatures(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.zluda_ref is None:
            return found
        for path in self.mirrors.files("vosen/ZLUDA", self.zluda_ref, "cuda_macros/src/"):
            text = uncomment(self.mirrors.show("vosen/ZLUDA", self.zluda_ref, path) or "")
            for fn, sig in re.findall(r"\bfn\s+(\w+)\s*(\([^;{]*?\)[^;{]*);", text, re.S):
                found[re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", fn)] = found.get(fn, "") + sig
        return found

    def zluda_binding_users(self, name: str) -> set[str]:
        pattern = word(name)
        return {fn for fn, sig in self._zluda_signatures().items() if pattern.search(sig)}

    def derived_enum_consumer(self, entry, target, recorded, source, note) -> Check:
        match = re.search(r"its enum(?: type)? (\w+)", note)
        if not match:
            return Check(SKIP, "", "no enum named")
        owner = match.group(1)
        if target == "scale":
            body = self.sources[entry["family"]].get(source)
            if body is None:
                return Check(SKIP, "", "no page recorded")
            lines, _ = self.scale_lines(self.text(body) or "", owner)
            if not lines:
                return Check(BAD, "", f"enum {owner} not listed")
            present = any(ok for ok, _ in lines)
            if present:
                return agree_if(recorded, True, f"enum {owner} listed as present")
            # flagged as differing: supported (old enumerator) or partial both read "works"
            return Check(
                OK if recorded in WORKS else BAD,
                "works (caveat)",
                f"enum {owner} flagged as differing",
            )
        if entry["family"] == "runtime" and owner in self.entries:
            # a runtime enum follows the runtime calls whose prototypes take it: re-check
            # the enum's own entry and compare
            check = self.check(owner, target)
            if check.outcome == SKIP:
                return Check(SKIP, "", f"enum {owner}: {check.reason}")
            owner_works = self.entries[owner]["status"][target] in WORKS
            works = owner_works if check.outcome == OK else not owner_works
            return agree_if(recorded, works, f"enum {owner}: {check.reason}")
        # ZLUDA: the enum type follows the functions whose bindings take it
        takers = self.zluda_binding_users(owner)
        base = owner.removesuffix("_enum")
        takers |= self.zluda_binding_users(base) | self.zluda_binding_users(base + "_enum")
        served = sorted(takers & self.zluda_implemented())
        if not served and recorded in WORKS and "taken or returned by" in note:
            function = re.search(r"taken or returned by (\w+)", note)
            ok = (
                function is not None
                and re.sub(r"(_v\d+)?$", "", function.group(1)) in self.zluda_implemented()
            )
            return Check(
                OK if ok else BAD,
                "works",
                f"enum {owner} reaches {function.group(1) if function else '?'} through a "
                "struct or typedef",
            )
        return agree_if(
            recorded,
            bool(served),
            f"implemented functions taking {owner}: {', '.join(served[:3]) or 'none'}",
        )

    def derived_driver_counterpart(self, entry, target, recorded, source, note) -> Check:
        match = re.search(r"driver counterpart (\w+)", note)
        if not match or match.group(1) not in self.entries:
            return Check(SKIP, "", "no counterpart named")
        counterpart = self.entries[match.group(1)]
        status = counterpart["status"][target]
        good = status == recorded
        return Check(OK if good else BAD, status, f"the driver's {match.group(1)} is {status}")

    def derived_ptx_lowering(self, entry, target, recorded, source, note) -> Check:
        match = re.search(r"compiles to PTX ([\w., ]+?)(?: \(as |, which|;|$)", note)
        if not match or self.zluda_ref is None:
            return Check(SKIP, "", "no PTX recorded")
        parser = self.mirrors.show("vosen/ZLUDA", self.zluda_ref, "ptx_parser/src/lib.rs") or ""
        opcodes = {i.strip().split(".")[0] for i in match.group(1).split(",") if i.strip()}
        heads = set(re.findall(r"^    ([a-z][a-z0-9_]*)[.{\s<]", parser, re.M))
        missing = sorted(o for o in opcodes if o not in heads)
        why = f"parser rules exist for {len(opcodes) - len(missing)}/{len(opcodes)} opcodes"
        if missing:
            why += f" (none for {', '.join(missing)})"
        if not missing and recorded not in WORKS:
            # every opcode has some rule; a modifier may still be refused: look no closer
            return Check(SKIP, "", why + "; a modifier decides")
        return agree_if(recorded, not missing, why)


# --------------------------------------------------------------------------- driver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="rules", help="the rule folder (default rules)")
    parser.add_argument("--mirrors", default="/work/.mirror", help="folder of bare mirrors")
    parser.add_argument("-n", type=int, default=50, help="entries sampled per route")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--routes", default=",".join(TARGETS))
    parser.add_argument("--all", action="store_true", help="print agreements too")
    args = parser.parse_args(argv)
    rules_dir = Path(args.rules)
    sources = yaml.safe_load((rules_dir / "sources.yaml").read_text("utf-8"))
    via = {s["project"]: s["via"] for s in sources.get("snapshots", []) if s.get("via")}
    verifier = Verifier(rules_dir, Mirrors(Path(args.mirrors), via))
    names = sorted(verifier.entries)
    rng = random.Random(args.seed)
    totals: dict[str, Counter[str]] = {}
    for target in args.routes.split(","):
        sample = rng.sample(names, min(args.n, len(names)))
        counts: Counter[str] = Counter()
        for name in sample:
            entry = verifier.entries[name]
            check = verifier.check(name, target)
            counts[check.outcome] += 1
            origin = (entry.get("origin") or {}).get(target, "?")
            if check.outcome == BAD or args.all:
                status = entry["status"][target]
                print(
                    f"{check.outcome:<13} {target:<5} {name:<44} recorded {status:<11}"
                    f" source says {check.expected or '-':<11} [{origin}] {check.reason}"
                )
        totals[target] = counts
    print()
    print(f"seed {args.seed}, {args.n} entries per route, rules from {rules_dir}")
    for target, counts in totals.items():
        checked = counts[OK] + counts[BAD]
        rate = counts[BAD] / checked if checked else 0.0
        print(
            f"{target:<6} checked {checked:>3} (agree {counts[OK]}, disagree {counts[BAD]}), "
            f"not checkable {counts[SKIP]:>3}; error rate {rate:.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
