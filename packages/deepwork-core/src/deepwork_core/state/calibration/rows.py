"""The rows of `calibration_runs`: one per run of `deepwork calibrate`, the whole report as
JSON under the project, runner and time (store migration 6). The stats read the latest of each
runner (`latest_reports`)."""

from __future__ import annotations

import uuid

from pydantic import ValidationError

from deepwork_core.state.calibration.report import CalibrationReport
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.port import Store


def save_report(store: Store, report: CalibrationReport) -> str:
    """Keep `report` in the store; its run id."""
    run_id = uuid.uuid4().hex
    with store.write() as tx:
        tx.execute(
            "INSERT INTO calibration_runs (run_id, project_id, runner, at, report) "
            "VALUES (?, ?, ?, ?, ?)",
            (run_id, store.project.project_id, report.runner, store.now(), _json(report)),
        )
    return run_id


def latest_reports(store: Store | None) -> list[CalibrationReport]:
    """The latest report of each runner of the project in `store`, by runner name; none
    without a store. A row that does not read is `store.corrupt`."""
    if store is None:
        return []
    with store.read() as tx:
        rows = tx.execute(
            "SELECT c.report FROM calibration_runs c WHERE c.project_id = ? AND c.at = "
            "(SELECT MAX(l.at) FROM calibration_runs l WHERE l.project_id = c.project_id "
            "AND l.runner = c.runner) ORDER BY c.runner",
            (store.project.project_id,),
        )
    reports: dict[str, CalibrationReport] = {}
    for (text,) in rows:
        try:
            report = CalibrationReport.model_validate_json(text)
        except ValidationError as exc:
            raise StoreError(
                f"a calibration report in {store.display} does not read: {exc.errors()[0]['msg']}",
                code=StoreCode.STORE_CORRUPT,
            ) from None
        reports.setdefault(report.runner, report)
    return [reports[name] for name in sorted(reports)]


def _json(report: CalibrationReport) -> str:
    return report.model_dump_json(exclude_computed_fields=True)
