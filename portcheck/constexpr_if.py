"""Compile-time branches of C++ code: `if constexpr (…) {…} else {…}`.

Owns: turning each `if constexpr` of a file into conditional branches of the same shape as
the preprocessor's (`portcheck.preproc.Branch`), so that the project's facts can tell which
of them an AMD build compiles. A platform split is often written this way instead of with
`#if`: `constexpr bool kInLds = MY_HIP && …; if constexpr (kInLds) … else …` — the `else`
is then NVIDIA-only code with an AMD alternative, as an `#else` after `#if MY_HIP` is.

A branch's test is written for the preprocessor evaluator: the function's local constants
are replaced by their initialisers (`Context.value`'s substitution), and type tests
(`std::is_same_v<T, float>`) are decided where an enclosing `if constexpr` fixes the type,
else left unknown. Two different type spellings are taken for different types unless the
file declares one an alias (`using real_t = float;`).
"""

from __future__ import annotations

import re
from typing import Any

from portcheck.checks import Context
from portcheck.preproc import Branch, mask_comments_and_strings, names_in

IF_CONSTEXPR = re.compile(rb"\bif\s+constexpr\b")
TYPE_NAME = r"[A-Za-z_][\w:]*(?:\s*\*)?"
TYPE_TEST = re.compile(
    rf"(?:std\s*::\s*)?is_same(?:_v\s*<\s*(?P<a>{TYPE_NAME})\s*,\s*(?P<b>{TYPE_NAME})\s*>"
    rf"|\s*<\s*(?P<c>{TYPE_NAME})\s*,\s*(?P<d>{TYPE_NAME})\s*>\s*::\s*value)"
)
# A type test nothing here decides: a name no build defines, so it evaluates as unknown.
UNDECIDED = "__portcheck_undecided_type_test__"
GROUP_BASE = 1 << 20  # group ids apart from the preprocessor's


class _Types:
    """What the enclosing `if constexpr` branches say of the template's types: a name is
    known to be one type, or known not to be some."""

    def __init__(self, aliases: set[str]) -> None:
        self.aliases = aliases
        self.known: dict[str, str] = {}
        self.excluded: dict[str, frozenset[str]] = {}

    def under(self, name: str, spelled: str, holds: bool) -> _Types:
        inner = _Types(self.aliases)
        inner.known, inner.excluded = dict(self.known), dict(self.excluded)
        if holds:
            inner.known[name] = spelled
        else:
            inner.excluded[name] = inner.excluded.get(name, frozenset()) | {spelled}
        return inner

    def same(self, a: str, b: str) -> str:
        """'1', '0' or UNDECIDED for `is_same<a, b>`."""
        if a == b:
            return "1"
        for name, other in ((a, b), (b, a)):
            if other in self.excluded.get(name, ()):
                return "0"
            known = self.known.get(name)
            if known is not None:
                if known == other:
                    return "1"
                if known not in self.aliases and other not in self.aliases:
                    return "0"
        return UNDECIDED


def _spelled(text: str) -> str:
    return " ".join(text.replace("std::", "").split())


def _type_test(condition: str) -> tuple[str, str] | None:
    """(template name, type) for a condition that is exactly `is_same<name, type>`."""
    match = TYPE_TEST.fullmatch(condition.strip().strip("()").strip())
    if match is None:
        return None
    a, b = (match.group("a"), match.group("b")) if match.group("a") else (match["c"], match["d"])
    return _spelled(a), _spelled(b)


def _rewrite(condition: str, types: _Types) -> str:
    def decide(match: re.Match[str]) -> str:
        if match.group("a"):
            a, b = match.group("a"), match.group("b")
        else:
            a, b = match.group("c"), match.group("d")
        return types.same(_spelled(a), _spelled(b))

    return TYPE_TEST.sub(decide, condition)


ALIAS = re.compile(rb"\busing\s+([A-Za-z_]\w*)\s*=|\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*;")


def constexpr_branches(ctx: Context) -> tuple[Branch, ...]:
    """The branches of every `if constexpr` in the file, with tests the project can
    evaluate (see the module docstring); none when the file has no `if constexpr`."""
    # The substring test first: a regex that starts with `\b` is tried at every position.
    if ctx.root is None or b"constexpr" not in ctx.data or IF_CONSTEXPR.search(ctx.data) is None:
        return ()
    aliases = {(m.group(1) or m.group(2)).decode() for m in ALIAS.finditer(ctx.data)}
    found: list[Branch] = []
    masked = mask_comments_and_strings(ctx.data)
    for match in IF_CONSTEXPR.finditer(masked):  # the statements found from their text
        node = ctx.root.descendant_for_byte_range(match.start(), match.start() + 2)
        while node is not None and node.type != "if_statement":
            node = node.parent
        if node is None or node.start_byte != match.start() or not _is_constexpr_if(node):
            continue
        found.extend(_branches_of(ctx, node, _enclosing_types(node, aliases), len(found)))
    found.sort(key=lambda b: b.start_byte)
    return tuple(found)


def _is_constexpr_if(node: Any) -> bool:
    return node.type == "if_statement" and any(c.type == "constexpr" for c in node.children)


def _enclosing_types(node: Any, aliases: set[str]) -> _Types:
    """What the `if constexpr` type tests around `node` say of the template's types."""
    tests: list[tuple[str, str, bool]] = []
    child, parent = node, node.parent
    while parent is not None and parent.type != "function_definition":
        if _is_constexpr_if(parent):
            condition = parent.child_by_field_name("condition")
            typed = (
                _type_test((condition.text or b"").decode("utf-8", "replace"))
                if condition
                else None
            )
            consequence = parent.child_by_field_name("consequence")
            if typed is not None:
                holds = consequence is not None and consequence.id == child.id
                tests.append((typed[0], typed[1], holds))
        child, parent = parent, parent.parent
    types = _Types(aliases)
    for name, spelled, holds in reversed(tests):
        types = types.under(name, spelled, holds)
    return types


def _branches_of(ctx: Context, node: Any, types: _Types, count: int) -> list[Branch]:
    """The consequence (and the alternative, if any) of one `if constexpr`."""
    condition = node.child_by_field_name("condition")
    raw = (condition.text or b"").decode("utf-8", "replace").strip() if condition else ""
    substituted = _with_locals(ctx, raw, node.start_byte) if raw else None
    test = _rewrite(substituted, types) if substituted is not None else UNDECIDED
    group = GROUP_BASE + count
    directive = " ".join(f"if constexpr {raw}".split())
    branches = []
    for field, holds in (("consequence", True), ("alternative", False)):
        part = node.child_by_field_name(field)
        if part is None:
            continue
        branches.append(
            Branch(
                group,
                part.start_point[0] + 1,
                part.end_point[0] + 1,
                part.start_byte,
                part.end_byte,
                () if holds else (test,),
                test if holds else None,
                directive if holds else "else",
            )
        )
    return branches


def _with_locals(ctx: Context, condition: str, offset: int) -> str | None:
    """Context._with_locals, asked only when the function initialises one of the
    condition's names before it (most conditions read template parameters only)."""
    fn_start = max((f.start for f in ctx.functions if f.start <= offset < f.end), default=0)
    initialised = {m.decode() for m in INITIALISED.findall(ctx.data, fn_start, offset)}
    if names_in(condition) & initialised:
        return ctx._with_locals(condition, offset)
    return condition


INITIALISED = re.compile(rb"\b([A-Za-z_]\w*)\s*(?:=(?!=)|\{)")
