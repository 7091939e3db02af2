"""Writing the receipt of a completed run into the project (docs/verify.md).

When a run completes, the engine hands its session id to `ReceiptWriter.write`: the receipt is
built from the run's session and event log, signed with the machine's gate key and written
atomically to `.deepwork/receipts/<job>/<session>.json`; the first time a gate key signs in a
project its public half is listed as `.deepwork/gate_keys/<name>.pub`. Writing never fails the
completion: what went wrong is said in the answer (`ReceiptNote.error`) and `deepwork receipt
SESSION` writes it again. Only a completed run has a receipt (`receipt.not_completed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.identifiers import SessionId, resolve_inside
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.receipts.build import RunLog, build_body
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.receipts.definition import job_definition
from deepwork_core.receipts.keys import RECEIPT_LABEL, GateKey, ReceiptError
from deepwork_core.receipts.model import GateSignature, Receipt, receipt_path
from deepwork_core.state.sessions import SessionStatus, SessionStore


@dataclass(frozen=True, slots=True)
class ReceiptNote:
    """What became of one run's receipt: where it is and which key signed it, or why not."""

    session_id: SessionId
    #: Project-relative path of the receipt; None when none was written.
    path: str | None = None
    #: The gate key that signed (`.deepwork/gate_keys/<key>.pub`).
    key: str | None = None
    #: The key's `.pub` file, when this write listed it in the project (commit it too).
    listed_key: str | None = None
    #: `<code>: <message>` when no receipt was written.
    error: str | None = None


class ReceiptWriter:
    """Writes the receipts of one project's completed runs, signed with `gate_key`."""

    def __init__(
        self,
        project_root: Path,
        catalog: JobCatalog,
        sessions: SessionStore,
        gate_key: GateKey,
        version: str | None = None,
    ) -> None:
        """`version`: the DeepWork version the receipt names (default: this one's)."""
        self.project_root = project_root.resolve()
        self.catalog = catalog
        self.sessions = sessions
        self.gate_key = gate_key
        self.version = version or _version()

    def write(self, session_id: SessionId) -> ReceiptNote:
        """Write the receipt of the completed run `session_id`; the note says how it went."""
        try:
            return self._write(session_id)
        except DeepWorkError as exc:
            return ReceiptNote(session_id, error=f"{exc.code}: {exc.message}")
        except OSError as exc:
            code = ReceiptCode.RECEIPT_WRITE_FAILED
            return ReceiptNote(session_id, error=f"{code}: {exc.strerror or exc}")

    def receipt(self, session_id: SessionId) -> Receipt:
        """The signed receipt of the completed run `session_id` (not written)."""
        session = self.sessions.load(session_id)
        if session.status is not SessionStatus.COMPLETED:
            raise ReceiptError(
                f"session {session_id} is {session.status.value}: only a completed run has a "
                "receipt",
                code=ReceiptCode.RECEIPT_NOT_COMPLETED,
            )
        job = self.catalog.get(session.job_name)
        workflow = job.definition.workflows_by_name[session.workflow_name]
        steps = [job.definition.step(step_id) for step_id in workflow.step_ids]
        log = RunLog.read(self.sessions.store, session, self.sessions.load)
        definition = job_definition(self.project_root, job, workflow.name, log.sources())
        body = build_body(session, steps, job.definition.scope_guard, definition, log, self.version)
        signed = self.gate_key.sign(body.model_dump(mode="json"), RECEIPT_LABEL)
        return Receipt(body=body, signature=GateSignature(key=self.gate_key.name, ed25519=signed))

    def _write(self, session_id: SessionId) -> ReceiptNote:
        receipt = self.receipt(session_id)
        relative = receipt_path(receipt.body.job, session_id)
        target = resolve_inside(self.project_root, relative, what="receipt")
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, receipt.text().decode("ascii"))
        listed = self._list_key()
        return ReceiptNote(session_id, relative, receipt.signature.key, listed)

    def _list_key(self) -> str | None:
        """Write the gate key's `.pub` into the project unless it is there; its path if written."""
        relative = self.gate_key.pub_path
        line = self.gate_key.public_line()
        target = resolve_inside(self.project_root, relative, what="gate key listing")
        try:
            if target.read_text(encoding="ascii") == line:
                return None
        except (OSError, UnicodeDecodeError):
            pass
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, line)
        return relative


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("deepwork-core")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without metadata
        return "unknown"


def commit_advice(notes: list[ReceiptNote]) -> str | None:
    """What the completion answer tells the agent about the run's receipts."""
    written = [n for n in notes if n.path]
    failed = [n for n in notes if n.error]
    parts = []
    if written:
        files = [n.path for n in written] + [n.listed_key for n in written if n.listed_key]
        parts.append(
            f"Commit the receipt with the outputs: git add {' '.join(f for f in files if f)} "
            "(`deepwork verify` checks it in CI)."
        )
        if any(n.listed_key for n in written):
            parts.append(
                "The gate key's .pub is new: it is trusted once merged into the base branch."
            )
    parts += [f"No receipt was written for {n.session_id}: {n.error}" for n in failed]
    return " ".join(parts) or None
