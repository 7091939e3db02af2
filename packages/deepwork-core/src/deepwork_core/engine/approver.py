"""Asking a human for a step's approval while `finished_step` runs (docs/evidence.md).

A step with `approval:` waits for a person. The MCP layer can ask one through the client
(elicitation); it hands the engine an `Approver` for the call, the same way it hands a progress
reporter, and the engine records the answer and goes on in the same call. Without an approver,
or when nobody answers, the answer is `awaiting_approval` and `deepwork approve` decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from deepwork_core.engine.results import ApprovalPrompt


@dataclass(frozen=True, slots=True)
class HumanAnswer:
    """What a person decided in the client's form."""

    approved: bool
    comment: str | None
    #: The client that showed the form: `name version` from its `initialize` request.
    client: str


class Approver(Protocol):
    """Shows `prompt` to a person; their answer, or None when nobody could be asked."""

    def __call__(self, prompt: ApprovalPrompt) -> HumanAnswer | None: ...
