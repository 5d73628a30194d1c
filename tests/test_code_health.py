"""What keeps the code base honest for its next reader: the architecture page names every
module, and no type check is silenced without a reason."""

from __future__ import annotations

from conftest import REPO

PACKAGE = REPO / "portcheck"


def test_architecture_page_names_every_module():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [p for p in PACKAGE.glob("*.py") if not p.name.startswith("__")]
    packages = [p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    named = {p.name for p in modules} | {p.name + "/" for p in packages}
    missing = sorted(n for n in named if f"`{n}`" not in page and f"{n}`" not in page)
    assert not missing, f"docs/architecture.md does not describe {missing}"


def test_no_type_check_is_silenced_without_a_reason_on_its_line():
    bare = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            at = line.find("# type: ignore")
            if at < 0:
                continue
            after = line[at + len("# type: ignore") :]
            after = after.split("]", 1)[1] if after.startswith("[") else after
            if not after.strip().lstrip("#").strip():
                bare.append(f"{path.relative_to(REPO)}:{number}")
    assert not bare, f"type: ignore without a reason: {bare}"
