"""`.deepwork/tmp/stack.json`: the stacks mirrored for the hooks (docs/hooks.md).

The store holds the stacks; the plugins' hook commands test for this file before starting
Python, and the hooks' light path reads it with plain `json` (`deepwork_mcp.hooks.active`). It
exists, in the format `stack.json` always had, exactly while some stack is not empty, plus the
job of the main stack's top session (`top_job`). The store never reads it.

It is rewritten only when what a hook reads changes, and without an fsync: it mirrors what
the store's transactions already made durable, so a power loss can at worst leave it at an
earlier content until the next change of a stack (docs/runtime-layout.md says what that means
for the hooks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.identifiers import AGENT_ID_PATTERN, SESSION_ID_PATTERN

_SessionId = Annotated[str, StringConstraints(pattern=SESSION_ID_PATTERN)]
_AgentId = Annotated[str, StringConstraints(pattern=AGENT_ID_PATTERN)]


class _StackFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    session_ids: list[_SessionId] = Field(default_factory=list)
    agents: dict[_AgentId, list[_SessionId]] = Field(default_factory=dict)
    #: The job of the top session of the main stack (the hooks' probe for job hooks).
    top_job: str | None = None


def write_stack_marker(
    path: Path, stacks: Mapping[str | None, Sequence[str]], top_job: str | None = None
) -> None:
    """`stack.json` as the hooks read it: the main stack under `session_ids`, each agent's under
    `agents` (omitted when none), the main top's job under `top_job` (omitted when none); no
    file when every stack is empty."""
    if any(stacks.values()):
        marker = _StackFile(
            session_ids=stacks.get(None, []),
            agents={agent: ids for agent, ids in stacks.items() if agent is not None and ids},
            top_job=top_job,
        )
        empty = {"agents"} if not marker.agents else set()
        text = marker.model_dump_json(
            indent=2, exclude=empty | ({"top_job"} if not top_job else set())
        )
        with contextlib.suppress(OSError):
            if path.read_text(encoding="utf-8") == text + "\n":
                return  # what the hooks read is unchanged
        atomic_write_text(path, text + "\n", sync_folder=False, sync=False)
    else:
        path.unlink(missing_ok=True)
