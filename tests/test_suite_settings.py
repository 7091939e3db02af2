"""The test suite's own settings hold: a per-test timeout, more of it for `slow` tests, and
strict xfail (pyproject.toml's [tool.pytest.ini_options], tests/conftest.py), and bytecode is
written whatever the shell says."""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import SLOW_TIMEOUT_S


def test_a_test_has_the_default_timeout_and_xfail_is_strict(request: pytest.FixtureRequest) -> None:
    assert float(request.config.getini("timeout")) == 120
    assert request.node.get_closest_marker("timeout") is None
    assert request.config.getini("xfail_strict") is True


@pytest.mark.slow
def test_a_slow_test_gets_the_slow_timeout(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None
    assert marker.args == (SLOW_TIMEOUT_S,)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_timeout_of_its_own_wins(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None
    assert marker.args == (900,)


def test_the_suite_and_what_it_starts_write_bytecode() -> None:
    """Set in a shell or not, `PYTHONDONTWRITEBYTECODE` reaches no process of the suite."""
    assert sys.dont_write_bytecode is False
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
