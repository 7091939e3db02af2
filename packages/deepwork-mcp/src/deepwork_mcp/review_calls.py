"""Running a reviewer call from the gate's worker threads (`blocking_review`) and a bounded
process from async code (`run_bounded_async`), both stopped with the child's process group
when cancelled: what `deepwork_mcp.reviewer` drives its runners with.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence

import anyio
import anyio.to_thread
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.process import Completed, run_bounded
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import QualityReviewTask

#: How often a running review looks whether it was cancelled.
_CANCEL_POLL_SECONDS = 0.2

#: Progress of a review: (done, total, message).
ProgressCallback = Callable[[int, int, str], Awaitable[None]]

AsyncReview = Callable[
    [Checkpoint, Sequence[QualityReviewTask], ProgressCallback | None],
    Awaitable[list[ReviewVerdict]],
]


def blocking_review(
    review: AsyncReview,
    checkpoint: Checkpoint,
    task: QualityReviewTask,
    cancelled: threading.Event,
) -> ReviewVerdict:
    """Run an adapter's async `review` of one task on an event loop of this thread, cancelled
    (its process group killed) soon after `cancelled` is set. Any runner's adapter can use it."""
    verdicts: list[ReviewVerdict] = []
    failures: list[Exception] = []

    async def run() -> None:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while not cancelled.is_set():
                    await anyio.sleep(_CANCEL_POLL_SECONDS)
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                verdicts.extend(await review(checkpoint, [task], None))
            except Exception as exc:  # raised below, as itself (not in an exception group)
                failures.append(exc)
            group.cancel_scope.cancel()

    anyio.run(run)
    if failures:
        raise failures[0]
    if not verdicts:
        raise QualityGateError("the review was cancelled", code=ErrorCode.QUALITY_GATE_ERROR)
    return verdicts[0]


async def run_bounded_async(argv: Sequence[str], **options: object) -> Completed:
    """`run_bounded` in a worker thread; cancelling the caller kills the child's group.

    On cancellation the child is stopped and reaped before the cancellation goes on, so no
    process outlives the call.
    """
    cancel, finished = threading.Event(), threading.Event()

    def call() -> Completed:
        try:
            return run_bounded(argv, cancel=cancel, **options)  # type: ignore[arg-type]
        finally:
            finished.set()

    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except BaseException:
        cancel.set()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(finished.wait)
        raise
