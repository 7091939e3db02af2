"""DeepWork Reviews: `.deepreview` rules turned into review tasks for changed files.

The names in `__all__` are the public API the MCP package imports, each loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepwork_core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from deepwork_review.formatters import (
        PLATFORMS as PLATFORMS,
    )
    from deepwork_review.gate import (
        GateRules as GateRules,
    )
    from deepwork_review.gate import (
        rule_review_tasks as rule_review_tasks,
    )
    from deepwork_review.pipeline import (
        ConfiguredRule as ConfiguredRule,
    )
    from deepwork_review.pipeline import (
        configured_rules as configured_rules,
    )
    from deepwork_review.pipeline import (
        mark_review_passed as mark_review_passed,
    )
    from deepwork_review.pipeline import (
        open_review_rules as open_review_rules,
    )
    from deepwork_review.pipeline import (
        run_review as run_review,
    )
    from deepwork_review.rule_discovery import (
        rule_file_problems as rule_file_problems,
    )

#: Module → the public names it defines; imported on first use (see `deepwork_core.base.lazy`).
_HOMES = {
    "deepwork_review.formatters": ("PLATFORMS",),
    "deepwork_review.gate": ("GateRules", "rule_review_tasks"),
    "deepwork_review.pipeline": (
        "ConfiguredRule",
        "configured_rules",
        "mark_review_passed",
        "open_review_rules",
        "run_review",
    ),
    "deepwork_review.rule_discovery": ("rule_file_problems",),
}

__all__ = [
    "PLATFORMS",
    "ConfiguredRule",
    "GateRules",
    "configured_rules",
    "mark_review_passed",
    "open_review_rules",
    "rule_file_problems",
    "rule_review_tasks",
    "run_review",
]

__getattr__ = lazy_exports(__name__, _HOMES)
