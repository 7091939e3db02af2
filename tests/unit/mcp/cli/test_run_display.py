"""What `deepwork run` shows while its agent works (docs/headless.md): plain event lines in CI
and wherever the output is not a terminal; on a terminal a live status line under them, cleared
before each new line and at the end."""

from __future__ import annotations

import io

import pytest
from deepwork_mcp.cli.headless.display import CLEAR, Display, is_live


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "environ", "live"),
    [
        (_Terminal(), {}, True),
        (_Terminal(), {"CI": "true"}, False),
        (_Terminal(), {"TERM": "dumb"}, False),
        (io.StringIO(), {}, False),
    ],
)
def test_the_display_is_live_only_on_a_terminal_outside_ci(
    stream: io.StringIO, environ: dict[str, str], live: bool
) -> None:
    assert is_live(stream, environ) is live


def test_plain_lines_carry_no_status() -> None:
    out = io.StringIO()
    display = Display(out, live=False)
    display.status("run | step prep | 3 s")
    display.line("started  job=prepped")
    display.close()
    assert out.getvalue() == "started  job=prepped\n"


def test_the_live_status_stays_under_the_lines_and_is_cleared_at_the_end() -> None:
    out = _Terminal()
    display = Display(out, live=True)
    display.status("step prep | 1 s")
    display.line("step_finished  step_ids=['prep']")
    display.status("step sign | 2 s")
    display.close()
    first, second = "/ step prep | 1 s", "- step sign | 2 s"
    assert out.getvalue() == (
        f"{CLEAR}{first}{CLEAR}step_finished  step_ids=['prep']\n{first}{CLEAR}{second}{CLEAR}"
    )
