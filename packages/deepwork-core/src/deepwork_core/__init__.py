"""DeepWork core: jobs, their state, the evidence that binds verdicts to files, the quality gate's
core side and the workflow engine. It never imports mcp, fastmcp, click or jinja2.

The code lives in six subpackages, each importing only those below it (docs/architecture.md):
`base` < `jobs` < `evidence` < `state` < `gate` < `engine`. Import what you need from its module
(`from deepwork_core.state.sessions import Session`); the handful of names below are the entry
points a program embedding DeepWork starts from. Each is loaded on first use, so importing this
package (or the standard-library-only `deepwork_core.base.layout`) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepwork_core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from deepwork_core.base.config import DeepWorkConfig as DeepWorkConfig
    from deepwork_core.base.config import load_config as load_config
    from deepwork_core.base.errors import DeepWorkError as DeepWorkError
    from deepwork_core.engine.workflow import WorkflowEngine as WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog as JobCatalog
    from deepwork_core.jobs.formats.convert import convert_job as convert_job
    from deepwork_core.jobs.model import JobDefinition as JobDefinition
    from deepwork_core.jobs.parser import parse_job_dir as parse_job_dir
    from deepwork_core.state.sessions import SessionStore as SessionStore

_HOMES = {
    "deepwork_core.base.config": ("DeepWorkConfig", "load_config"),
    "deepwork_core.base.errors": ("DeepWorkError",),
    "deepwork_core.engine.workflow": ("WorkflowEngine",),
    "deepwork_core.jobs.discovery": ("JobCatalog",),
    "deepwork_core.jobs.formats.convert": ("convert_job",),
    "deepwork_core.jobs.model": ("JobDefinition",),
    "deepwork_core.jobs.parser": ("parse_job_dir",),
    "deepwork_core.state.sessions": ("SessionStore",),
}

__all__ = sorted(name for names in _HOMES.values() for name in names)

__getattr__ = lazy_exports(__name__, _HOMES)
