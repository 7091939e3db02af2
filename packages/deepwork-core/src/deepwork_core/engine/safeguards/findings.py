"""What the audit of one checkpoint found (see `docs/evidence.md`)."""

from __future__ import annotations

from dataclasses import dataclass

from deepwork_core.evidence.audit import Audit
from deepwork_core.evidence.hashes import StaleEvidence


@dataclass(frozen=True, slots=True)
class Findings:
    """What the audit of one checkpoint found, and what follows from it."""

    audit: Audit
    note: str | None
    #: Steps with stale outputs whose reviews run again with this checkpoint.
    rereview: tuple[str, ...] = ()
    #: Feedback of a `needs_work` answer the findings alone cause; None: carry on.
    blocked: str | None = None

    @property
    def stale(self) -> list[StaleEvidence]:
        return self.audit.stale

    @property
    def undeclared(self) -> list[str]:
        return self.audit.undeclared
