"""`start_workflow` refuses a 0.10-format workflow whose required start parameters are missing
(`inputs.missing`, docs/job-format.md); a 0.9-format job and a nested workflow still list them
without a value."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import InputsError
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.workflow_project import make_project, write_job

JOB = """\
name: intake
summary: "Take in a request"
step_arguments:
  - name: customer
    description: "Who asked, by name"
    type: string
  - name: brief
    description: "The request as a file"
    type: file_path
  - name: deadline
    description: "When it is due"
    type: string
  - name: answer.md
    description: "The answer"
    type: file_path
  - name: part.md
    description: "One part"
    type: file_path
workflows:
  main:
    summary: "Answer a request"
    steps:
      - name: read
        instructions: "Read the brief."
        inputs:
          customer: {}
          brief: {}
          deadline:
            required: false
        outputs:
          answer.md: {}
  outer:
    summary: "Answer, then run a part nested"
    steps:
      - name: start
        instructions: "Start."
        inputs:
          deadline:
            required: false
        outputs:
          answer.md: {}
      - name: nested
        sub_workflow:
          workflow_name: inner
  inner:
    summary: "Write one part for a customer"
    steps:
      - name: part
        instructions: "Write part.md."
        inputs:
          customer: {}
        outputs:
          part.md: {}
"""


@pytest.fixture
def engine(tmp_path: Path, make_store: Callable[..., Store]) -> WorkflowEngine:
    root = make_project(tmp_path / "project")
    write_job(root, "intake", JOB)
    (root / "brief.md").write_text("the brief\n")
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(make_store(root), root))


def missing(engine: WorkflowEngine, inputs: dict[str, object] | None) -> str:
    with pytest.raises(InputsError) as caught:
        engine.start("g", "intake", "main", inputs=inputs)
    assert caught.value.code == ErrorCode.INPUTS_MISSING
    assert engine.stack() == []  # nothing was started
    return caught.value.message


def test_each_missing_required_parameter_is_named_with_its_description(
    engine: WorkflowEngine,
) -> None:
    message = missing(engine, None)
    assert "customer (Who asked, by name)" in message
    assert "brief (The request as a file)" in message
    assert "deadline" not in message  # optional
    assert "Ask the user" in message
    assert "customer" in missing(engine, {"brief": "brief.md"})
    assert "customer" not in missing(engine, {"customer": "Ann"})


def test_a_blank_value_is_no_value(engine: WorkflowEngine) -> None:
    message = missing(engine, {"customer": "  ", "brief": []})
    assert "customer (" in message
    assert "brief (" in message


def test_the_required_parameters_given_the_workflow_starts(engine: WorkflowEngine) -> None:
    started = engine.start("g", "intake", "main", inputs={"customer": "Ann", "brief": "brief.md"})
    values = {item.name: (item.value, item.paths) for item in started.brief.inputs}
    assert values == {
        "customer": ("Ann", []),
        "brief": (None, ["brief.md"]),
        "deadline": (None, []),
    }


def test_a_nested_workflow_lists_a_parameter_its_parent_lacks(engine: WorkflowEngine) -> None:
    engine.start("g", "intake", "outer")
    (engine.project_root / "answer.md").write_text("answer\n")
    nested = engine.finish({"answer.md": "answer.md"}).brief
    assert nested is not None
    assert nested.step_id == "part"
    [customer] = nested.inputs
    assert (customer.name, customer.value, customer.paths) == ("customer", None, [])


def test_a_job_in_the_09_format_still_starts_without_its_parameters(
    engine: WorkflowEngine,
) -> None:
    started = engine.start("g", "three_step", "main")
    [topic] = started.brief.inputs
    assert (topic.name, topic.value) == ("topic", None)
