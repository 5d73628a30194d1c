"""portcheck: how portable is CUDA code to AMD GPUs (HIP, ZLUDA, SCALE)?

import portcheck
report = portcheck.scan("path/to/repo")
print(report.scores, len(report.uses))
print(report.to_json())
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Public names and the module each lives in. They are imported on first use (PEP 562), so
# `portcheck --version` or a scan answered from the cache does not load what it never runs.
_EXPORTS = {
    "ApiRule": "portcheck.model",
    "Finding": "portcheck.model",
    "Kernel": "portcheck.model",
    "Report": "portcheck.model",
    "Severity": "portcheck.model",
    "Skipped": "portcheck.model",
    "Span": "portcheck.model",
    "Status": "portcheck.model",
    "Target": "portcheck.model",
    "Use": "portcheck.model",
    "RuleError": "portcheck.ruleset",
    "RuleSet": "portcheck.ruleset",
    "load_rules": "portcheck.ruleset",
    "ScanError": "portcheck.scan",
    "scan": "portcheck.scan",
}

__all__ = [
    "ApiRule",
    "Finding",
    "Kernel",
    "Report",
    "RuleError",
    "RuleSet",
    "ScanError",
    "Severity",
    "Skipped",
    "Span",
    "Status",
    "Target",
    "Use",
    "__version__",
    "load_rules",
    "scan",
]

if TYPE_CHECKING:
    from portcheck.model import (
        ApiRule,
        Finding,
        Kernel,
        Report,
        Severity,
        Skipped,
        Span,
        Status,
        Target,
        Use,
    )
    from portcheck.ruleset import RuleError, RuleSet, load_rules
    from portcheck.scan import ScanError, scan


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'portcheck' has no attribute {name!r}")
    loaded = import_module(module)
    # Importing portcheck.scan binds the submodule as `portcheck.scan`, over the function
    # of that name: bind every name this module exports, not only the one asked for.
    for other, where in _EXPORTS.items():
        if where == module:
            globals()[other] = getattr(loaded, other)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
