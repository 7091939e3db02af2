"""What a hook decided, before it is written in a platform's output format."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HookResult:
    """A platform-neutral hook answer.

    - `block` with `reason`: keep the agent working (after_agent), refuse the tool call
      (before_tool) or the prompt (before_prompt); the reason is what the agent (or user) reads.
    - `context`: text added to what the agent sees, without blocking anything.
    - `system_message`: text shown to the user only.
    - `stop` with `stop_reason`: end the agent's run altogether.
    """

    block: bool = False
    reason: str | None = None
    context: str | None = None
    system_message: str | None = None
    stop: bool = False
    stop_reason: str | None = None

    @property
    def empty(self) -> bool:
        return self == HookResult()


NO_OP = HookResult()


def combine(results: Iterable[HookResult]) -> HookResult:
    """Merge several answers: any block blocks, any stop stops, texts are joined in order."""
    items = list(results)
    return HookResult(
        block=any(r.block for r in items),
        reason=join_texts(r.reason for r in items if r.block),
        context=join_texts(r.context for r in items),
        system_message=join_texts(r.system_message for r in items),
        stop=any(r.stop for r in items),
        stop_reason=join_texts(r.stop_reason for r in items if r.stop),
    )


def join_texts(texts: Iterable[str | None]) -> str | None:
    """Non-blank texts, stripped, separated by a blank line (None when there are none)."""
    kept = [t.strip() for t in texts if t and t.strip()]
    return "\n\n".join(kept) if kept else None
