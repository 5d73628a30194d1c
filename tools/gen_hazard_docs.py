#!/usr/bin/env python3
"""Write docs/rules/<slug>.md for every hazard, CUDA and Python, and docs/rules/README.md,
from the hazard catalogue (rules/hazards.yaml).

Run after editing the catalogue: `python tools/gen_hazard_docs.py`. The test suite fails
when the pages on disk differ from what this would write.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from portcheck.checks import catalogue  # noqa: E402
from portcheck.checks.docs import render_hazard_doc, render_index  # noqa: E402


def main() -> None:
    out = ROOT / "docs" / "rules"
    out.mkdir(parents=True, exist_ok=True)
    specs = catalogue()
    for slug, spec in specs.items():
        (out / f"{slug}.md").write_text(render_hazard_doc(spec))
    (out / "README.md").write_text(render_index(specs))
    print(f"wrote {len(specs)} hazard pages to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
