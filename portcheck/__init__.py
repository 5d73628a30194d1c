"""portcheck: how portable is CUDA code to AMD GPUs (HIP, ZLUDA, SCALE)?

import portcheck
report = portcheck.scan("path/to/repo")
print(report.scores, len(report.uses))
print(report.to_json())
"""

__version__ = "0.1.0"

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
