"""The `instructions` the server sends at initialize: the lifecycle, then what this project has
(docs/navigation.md).

The project part names the project's workflows (a short list, capped, so a project with a
thousand jobs does not pay for them in every conversation) and, when jobs failed to load, says
so and points at the `deepwork_jobs/repair` workflow. A broken job's name is its folder's name,
so every name is shown through `quote_name` (docs/security.md): a name with a line break or a
control character is quoted and escaped, never able to add lines of its own.
"""

from __future__ import annotations

from deepwork_core.base.escaping import quote_name
from deepwork_core.jobs.discovery import Catalog

#: At most this many workflows are named; get_workflows lists them all.
MAX_NAMED_WORKFLOWS = 3
#: At most this many broken jobs are named.
MAX_NAMED_ERRORS = 5
#: The standard workflow that fixes job definitions.
REPAIR_WORKFLOW = "deepwork_jobs/repair"


def _capped(names: list[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    rest = len(names) - limit
    return shown + (f" and {rest} more" if rest > 0 else "")


def project_lines(catalog: Catalog) -> list[str]:
    """The lines describing the project's workflows and load errors."""
    workflows = [quote_name(f"{job.name}/{w.name}") for job in catalog.jobs for w in job.workflows]
    lines = []
    if workflows:
        lines.append(f"Workflows: {_capped(workflows, MAX_NAMED_WORKFLOWS)}.")
    else:
        lines.append("No workflows are defined here yet.")
    if catalog.errors:
        names = sorted(quote_name(e.job_name) for e in catalog.errors)
        broken = _capped(names, MAX_NAMED_ERRORS)
        lines.append(
            f"{len(catalog.errors)} job(s) failed to load ({broken}); get_workflows shows why. "
            f"Start the {REPAIR_WORKFLOW} workflow to fix them."
        )
    return lines


def cli_line(launch: str) -> str:
    """How to run the `deepwork` command the guidance names: the way this server was started
    (`deepwork_mcp.approvals.launch`), which works in the user's setup before a release is on
    PyPI too (`uvx --from <clone> deepwork`, or the plugins' pinned `uvx deepwork==X` found in
    wheels built from a clone); docs/platforms.md."""
    return f"CLI: `{launch} ...`."


def build_instructions(lifecycle: str, catalog: Catalog | None, launch: str | None = None) -> str:
    """`lifecycle`, the CLI line when `launch` (how this DeepWork was started) is given, then the
    project's lines (not without a catalog)."""
    head = [lifecycle] if launch is None else [lifecycle, cli_line(launch)]
    if catalog is None:
        return "\n".join(head)
    return "\n".join([*head, *project_lines(catalog)])
