"""Where DeepWork keeps its files in a project: the one home of every runtime path and name.

Standard library only, and it imports nothing else of DeepWork, so the hooks' fast path and
`tools/render.py` (which loads this file by path) can read the same facts as the session store.
Paths are relative to the project root, in POSIX form (as git prints them).
See `docs/runtime-layout.md`.
"""

from __future__ import annotations

from typing import Final

#: The runtime folder; everything in it is ignored by git (it holds a `.gitignore` of `*`).
TMP_DIR: Final = ".deepwork/tmp"
#: The ids of the active workflow sessions, bottom to top; present only while one is active.
#: The main stack is under `STACK_MAIN_KEY`, each agent's own stack under
#: `STACK_AGENTS_KEY` (agent id -> ids; the key is absent while no agent has a workflow).
STACK_FILE: Final = "stack.json"
STACK_MAIN_KEY: Final = "session_ids"
#: ... and the job of the main stack's top session under `STACK_TOP_JOB_KEY`.
STACK_TOP_JOB_KEY: Final = "top_job"
STACK_AGENTS_KEY: Final = "agents"
#: `TMP_DIR/STACK_FILE`, the file the hooks probe to learn whether a workflow is running.
STACK_PATH: Final = f"{TMP_DIR}/{STACK_FILE}"
#: The cross-process lock held around every read-modify-write of the session state.
LOCK_FILE: Final = "state.lock"
#: A session is stored as `<SESSION_PREFIX><id><SESSION_SUFFIX>` in `TMP_DIR`.
SESSION_PREFIX: Final = "session_"
SESSION_SUFFIX: Final = ".json"
#: A state file (the stack, a session) larger than this is corrupt (`session.state_corrupt`).
MAX_STATE_BYTES: Final = 32 * 1024 * 1024
#: Self-review instructions: `quality_review_<session>_<step>.md` in `TMP_DIR`.
REVIEW_FILE_PREFIX: Final = "quality_review_"
REVIEW_FILE_SUFFIX: Final = ".md"
#: The folder of the per-session event logs (`<session_id>.jsonl`).
EVENTS_DIR: Final = f"{TMP_DIR}/events"
#: Human approval requests and decisions, `<session_id>.json`, with `approvals.lock`.
APPROVALS_DIR: Final = f"{TMP_DIR}/approvals"
#: The public keys of the human approvers the project trusts, `<name>.pub` (committed).
APPROVERS_DIR: Final = ".deepwork/approvers"
#: The receipts of completed runs, `<job>/<session>.json` (committed; docs/verify.md).
RECEIPTS_DIR: Final = ".deepwork/receipts"
#: The public keys that sign receipts: each machine's gate key and the CI keys that countersign
#: (`<name>.pub`, committed, trusted as they are on the base ref).
GATE_KEYS_DIR: Final = ".deepwork/gate_keys"
CI_KEYS_DIR: Final = ".deepwork/ci_keys"
#: A project's own calibration cases for `deepwork calibrate` (docs/quality-gate.md).
CALIBRATION_DIR: Final = ".deepwork/calibration"
#: The project's own jobs; the first folder of the job search path.
PROJECT_JOBS_DIR: Final = ".deepwork/jobs"
#: The standard jobs' folder name inside the `deepwork_core` package (the second folder).
STANDARD_JOBS_PACKAGE_DIR: Final = "standard_jobs"
#: The file that defines a job inside its folder.
JOB_FILE: Final = "job.yml"
#: The project's settings file.
CONFIG_FILE: Final = ".deepwork/config.yml"


def session_file_name(session_id: str) -> str:
    """`session_<id>.json` (the caller checks the id)."""
    return f"{SESSION_PREFIX}{session_id}{SESSION_SUFFIX}"


def review_file_name(session_id: str, step_id: str) -> str:
    """`quality_review_<session>_<step>.md` (the caller checks both names)."""
    return f"{REVIEW_FILE_PREFIX}{session_id}_{step_id}{REVIEW_FILE_SUFFIX}"


def review_file_glob(session_id: str) -> str:
    """The glob matching every self-review file of one session."""
    return f"{REVIEW_FILE_PREFIX}{session_id}_*{REVIEW_FILE_SUFFIX}"
