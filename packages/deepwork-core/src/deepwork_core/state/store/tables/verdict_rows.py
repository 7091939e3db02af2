"""The rows of `review_verdicts`: each verdict a reviewer gave, under the key of what it judged.

The key (`deepwork_core.gate.reuse.reuse_key`) is a SHA-256 over the brief, the runner, the model
and the hash of every file the reviewer saw; the row says where the verdict was judged (project,
session, step, when) and what it cost then. The table belongs to the store, not to a project:
every checkout of a shared store finds the verdicts of the others, and a project whose store is
another database finds none. A key judged again keeps the newer verdict.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, ValidationError

from deepwork_core.base.fsutil import loads_json
from deepwork_core.evidence.verdicts import ReusedFrom, ReviewVerdict
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.port import Store


class StoredVerdict(BaseModel):
    """One kept verdict and where it came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: ReviewVerdict
    project_id: str
    origin: ReusedFrom
    #: What the verdict cost when it was judged (None: the reviewer reported no cost).
    cost_usd: float | None = None


def find_verdict(store: Store, key: str) -> StoredVerdict | None:
    """The verdict kept under `key`, or None. A row that does not read is `store.corrupt`."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT verdict, project_id, session_id, step_id, judged_at, cost_usd "
            "FROM review_verdicts WHERE reuse_key = ?",
            (key,),
        )
    if not rows:
        return None
    text, project_id, session_id, step_id, judged_at, cost = rows[0]
    try:
        verdict = ReviewVerdict.model_validate(loads_json(text))
    except (ValueError, ValidationError):
        raise StoreError(
            f"the kept verdict {key[:16]}… in store {store.display} does not read",
            code=StoreCode.STORE_CORRUPT,
        ) from None
    origin = ReusedFrom(
        session_id=session_id,
        step_id=step_id,
        judged_at=datetime.fromtimestamp(float(judged_at), UTC),
    )
    cost_usd = None if cost is None else float(cost)
    return StoredVerdict(verdict=verdict, project_id=project_id, origin=origin, cost_usd=cost_usd)


def keep_verdict(
    store: Store,
    key: str,
    verdict: ReviewVerdict,
    *,
    session_id: str,
    cost_usd: float | None,
) -> None:
    """Keep `verdict` under `key`, judged now in `session_id` (the newer verdict wins)."""
    body = verdict.model_copy(update={"reused_from": None}).model_dump_json()
    values = (
        key,
        int(verdict.passed),
        body,
        store.project.project_id,
        session_id,
        verdict.step_id,
        store.now(),
        cost_usd,
    )
    with store.write() as tx:
        tx.execute(
            "INSERT INTO review_verdicts (reuse_key, passed, verdict, project_id, session_id, "
            "step_id, judged_at, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (reuse_key) DO UPDATE SET passed = excluded.passed, "
            "verdict = excluded.verdict, project_id = excluded.project_id, "
            "session_id = excluded.session_id, step_id = excluded.step_id, "
            "judged_at = excluded.judged_at, cost_usd = excluded.cost_usd",
            values,
        )
