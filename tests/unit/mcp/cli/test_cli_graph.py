"""`deepwork jobs graph`: mermaid always, SVG through Graphviz `dot` when it is installed."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_mcp.cli import cli

from tests.fixtures.workflow_project import make_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("cli_graph") / "p")


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["jobs", "graph", *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_mermaid_of_a_concurrent_workflow(project: Path) -> None:
    status, out = _run("concurrent", "--path", str(project))
    assert status == 0, out
    assert out.startswith("flowchart TD\n")
    assert 'subgraph group_1["concurrent"]' in out
    assert "s_first --> s_right" in out


def test_unknown_workflow_is_a_coded_error(project: Path) -> None:
    status, out = _run("multi", "--workflow", "gamma", "--path", str(project))
    assert status == 1
    assert "workflow.not_found" in out
    assert "alpha, beta" in out


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_svg_is_well_formed_and_names_every_step(project: Path) -> None:
    status, out = _run("concurrent", "--format", "svg", "--path", str(project))
    assert status == 0, out
    root = ET.fromstring(out)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"first", "left", "right", "last"} <= texts


def test_svg_without_graphviz_says_what_to_install(project: Path, tmp_path: Path) -> None:
    status, out = _run(
        "concurrent", "--format", "svg", "--path", str(project), env={"PATH": str(tmp_path)}
    )
    assert status == 1
    assert "graph.renderer_missing" in out
    assert "--format mermaid" in out
