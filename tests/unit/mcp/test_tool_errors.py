"""The one mapping of errors to MCP tool errors."""

from __future__ import annotations

import logging

import pytest
from deepwork_core.base.errors import DeepWorkError, OutputsError
from deepwork_core.jobs.errors import JobNotFoundError
from deepwork_mcp.tool_errors import map_tool_exception, tool_error
from fastmcp.exceptions import ToolError


def test_tool_error_text_starts_with_the_code() -> None:
    error = tool_error(OutputsError("missing required output(s): x", code="outputs.missing"))
    assert str(error) == "outputs.missing: missing required output(s): x"
    assert str(tool_error(JobNotFoundError("no job named 'a'"))).startswith("job.not_found: ")


def test_deepwork_errors_become_tool_errors() -> None:
    error = map_tool_exception("t", DeepWorkError("nothing", code="session.none_active"))
    assert str(error) == "session.none_active: nothing"


def test_tool_errors_pass_through_unchanged() -> None:
    original = ToolError("as is")
    assert map_tool_exception("t", original) is original


def test_unexpected_errors_are_logged_and_masked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="deepwork.mcp")
    try:
        raise KeyError("/private/path")
    except KeyError as exc:
        error = map_tool_exception("start_workflow", exc)
    assert str(error).startswith("internal.error: start_workflow failed unexpectedly")
    assert "/private/path" not in str(error)
    [record] = caplog.records
    assert record.exc_info is not None
    assert "KeyError" in caplog.text


def test_argument_errors_name_the_tool_and_every_bad_argument() -> None:
    from deepwork_mcp.tool_errors import argument_error
    from fastmcp.exceptions import ValidationError
    from pydantic import BaseModel
    from pydantic import ValidationError as PydanticValidationError

    class Arguments(BaseModel):
        a: int
        b: int
        c: int
        d: int
        e: int
        f: int
        g: int

    with pytest.raises(PydanticValidationError) as caught:
        Arguments.model_validate({})
    wrapped = ValidationError("bad")
    wrapped.__cause__ = caught.value
    text = str(argument_error("some_tool", wrapped))
    assert text.startswith("arguments.invalid: some_tool: a: Field required; b: ")
    assert "and 2 more" in text
