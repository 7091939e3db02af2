"""The exit codes of `deepwork run` and `deepwork wait`, documented and stable
(docs/headless.md, "Exit codes")."""

from __future__ import annotations

from enum import IntEnum


class RunExit(IntEnum):
    #: The run completed (`deepwork wait`: the decision was made).
    COMPLETE = 0
    #: A DeepWork error (its code is printed).
    ERROR = 1
    #: Bad usage (click's own).
    USAGE = 2
    #: Parked for a person (`deepwork wait`: still waiting at the timeout).
    PARKED = 3
    #: The quality gate cannot go on: its attempts or the review budget ran out, or its
    #: reviewer's CLI is missing.
    EXHAUSTED = 4
    #: The agent failed, hung or timed out.
    AGENT_FAILED = 5
