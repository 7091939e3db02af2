"""`deepwork jobs graph JOB`: a picture of one workflow (docs/navigation.md).

Mermaid text needs nothing installed. SVG is drawn by Graphviz's `dot` program, run as a bounded
subprocess; without it the command fails with `graph.renderer_missing` and says how to get it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click
from deepwork_core import DeepWorkError, JobCatalog
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ProcessTimeoutError
from deepwork_core.base.process import run_bounded
from deepwork_core.jobs.discovery import parse_folder_list
from deepwork_core.jobs.graph import GraphRenderError, build_graph, to_dot, to_mermaid

from deepwork_mcp.cli.options import cli_error, project_option

ADDITIONAL_FOLDERS_ENV = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
#: Seconds `dot` may take to draw one workflow.
DOT_TIMEOUT = 30.0


def render_svg(dot_text: str, *, cwd: Path, timeout: float = DOT_TIMEOUT) -> str:
    """`dot_text` drawn as SVG by Graphviz's `dot` (found on PATH)."""
    dot = shutil.which("dot")
    if dot is None:
        raise GraphRenderError(
            "SVG needs Graphviz's `dot` program, which is not on PATH (install the `graphviz` "
            "package of your system, e.g. `apt-get install graphviz` or `brew install graphviz`), "
            "or use --format mermaid",
            code=ErrorCode.GRAPH_RENDERER_MISSING,
        )
    try:
        done = run_bounded([dot, "-Tsvg"], cwd=cwd, timeout=timeout, input_text=dot_text)
    except ProcessTimeoutError as exc:
        raise GraphRenderError(str(exc), code=ErrorCode.GRAPH_RENDER_FAILED) from None
    if done.returncode != 0:
        raise GraphRenderError(
            f"dot exited with status {done.returncode}: {done.stderr.strip()[:500]}",
            code=ErrorCode.GRAPH_RENDER_FAILED,
        )
    return done.stdout


@click.command("graph")
@click.argument("job_name")
@click.option("--workflow", "workflow_name", default=None, help="Default: the job's only one.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["mermaid", "svg", "dot"]),
    default="mermaid",
    show_default=True,
    help="mermaid: flowchart text; svg: drawn by Graphviz `dot`; dot: Graphviz source.",
)
@project_option
def graph(job_name: str, workflow_name: str | None, output_format: str, project: Path) -> None:
    """Draw a workflow: steps in order, concurrent groups side by side, inputs as edges."""
    project = project.resolve()
    additional = parse_folder_list(os.environ.get(ADDITIONAL_FOLDERS_ENV))
    catalog = JobCatalog.for_project(project, [p.expanduser().resolve() for p in additional])
    try:
        drawn = build_graph(catalog.get(job_name).definition, workflow_name)
        if output_format == "mermaid":
            text = to_mermaid(drawn)
        elif output_format == "dot":
            text = to_dot(drawn)
        else:
            text = render_svg(to_dot(drawn), cwd=project)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    click.echo(text, nl=not text.endswith("\n"))
