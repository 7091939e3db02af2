"""The verdict cache of `deepwork verify --rereview --verdict-cache DIR` (docs/verify.md,
"Verdicts kept between CI runs").

Each review task CI judged again is one file `DIR/<key>.json`, named by the gate's reuse key
(`gate.reuse.reuse_key`: the brief, the runner, the model and the SHA-256 of every file the
reviewer saw). The file holds the verdict, runner, model, criteria hash, when it was judged and
the receipt, session and step it was judged for, signed with the CI key. A later re-review of a
task with the same key takes the verdict only when the entry's signature holds for a CI key
trusted on the base ref, as a countersignature must; under `quality_gate.reuse` of the base ref
(`passes`: passed verdicts only; `all`; `off`: none taken, none written). Anything else about an
entry (unreadable, malformed, a symlink, too large, signed by a key the base ref does not trust,
content that is not what its name and the task say) makes the task be judged again, with a
note saying why: the cache never decides a verdict on its own.

Verdicts from an agent's machine (the store's `review_verdicts`) never come in here: only a
key kept in CI signs an entry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from deepwork_core.base.config import ReuseMode
from deepwork_core.base.fsutil import atomic_write_text, loads_json
from deepwork_core.base.layout import CI_KEYS_DIR
from deepwork_core.evidence.verdicts import ReusedFrom, ReviewVerdict
from deepwork_core.receipts.checks import trusted_key
from deepwork_core.receipts.keys import CiKey, signature_holds
from deepwork_core.receipts.model import canonical_bytes
from deepwork_core.receipts.repository import Repository

#: Binds a cache entry's signature to what it holds.
CACHE_LABEL: Final = "deepwork-verdict-cache-v1"
CACHE_FORMAT: Final = "deepwork-verdict-cache/1"
#: The largest entry read (docs/limits.md); real ones are a few KiB.
MAX_ENTRY_BYTES: Final = 256 * 1024
_KEY: Final = re.compile(r"[0-9a-f]{64}")


class CacheEntry(BaseModel):
    """One verdict CI judged, as its file holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["deepwork-verdict-cache/1"] = CACHE_FORMAT
    key: str
    verdict: ReviewVerdict
    runner: str
    model: str | None
    criteria_sha256: str
    judged_at: datetime
    receipt: str
    session_id: str
    step_id: str
    #: The CI key that signed it: `.deepwork/ci_keys/<signer>.pub`.
    signer: str
    ed25519: str = ""

    def signed_fields(self) -> dict[str, object]:
        return self.model_dump(mode="json", exclude={"ed25519"})

    @property
    def origin(self) -> ReusedFrom:
        return ReusedFrom(
            session_id=self.session_id, step_id=self.step_id, judged_at=self.judged_at
        )


@dataclass(frozen=True, slots=True)
class Wanted:
    """What the task being judged asks of an entry."""

    key: str
    runner: str
    model: str | None
    criteria_sha256: str
    criteria: frozenset[str]


@dataclass
class VerdictCache:
    """The folder `dir` of CI's kept verdicts, under the base ref's `quality_gate.reuse`."""

    folder: Path
    mode: ReuseMode = "passes"
    #: Why an entry was not trusted, one line each (the task was judged again).
    refused: list[str] = field(default_factory=list)
    #: Why a verdict could not be written, one line each (the re-review goes on without it).
    unwritten: list[str] = field(default_factory=list)

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def lookup(self, repo: Repository, wanted: Wanted, label: str) -> CacheEntry | None:
        """The entry a task may take, or None (a refused entry is noted in `refused`)."""
        if self.mode == "off" or not _KEY.fullmatch(wanted.key):
            return None
        path = self.path(wanted.key)
        if not os.path.lexists(path):
            return None
        entry = self._read(path)
        why = entry if isinstance(entry, str) else _mismatch(repo, entry, wanted)
        if why is not None or isinstance(entry, str):
            note = f"cache entry {path.name} not trusted ({why}); judged again"
            self.refused.append(f"{label}: {note}")
            return None
        if self.mode == "passes" and not entry.verdict.passed:
            return None
        return entry

    def keep(self, key: CiKey, entry: CacheEntry) -> None:
        """Write `entry` signed by `key` (nothing under `reuse: off`)."""
        if self.mode == "off" or not _KEY.fullmatch(entry.key):
            return
        unsigned = entry.model_copy(update={"signer": key.name, "ed25519": ""})
        signed = unsigned.model_copy(
            update={"ed25519": key.sign(unsigned.signed_fields(), CACHE_LABEL)}
        )
        target = self.path(entry.key)
        text = canonical_bytes(signed.model_dump(mode="json")).decode("ascii")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            atomic_write_text(target, text, sync_folder=False)
        except OSError as exc:
            self.unwritten.append(f"{target}: not kept ({exc.strerror or exc})")

    def _read(self, path: Path) -> CacheEntry | str:
        if path.is_symlink():
            return "a symlink"
        try:
            if not path.is_file():
                return "not a regular file"
            if path.stat().st_size > MAX_ENTRY_BYTES:
                return f"larger than {MAX_ENTRY_BYTES} bytes"
            raw = path.read_bytes()
        except OSError as exc:
            return f"unreadable: {exc.strerror or exc}"
        try:
            return CacheEntry.model_validate(loads_json(raw))
        except (ValueError, ValidationError):
            return "malformed"


def _mismatch(repo: Repository, entry: CacheEntry, wanted: Wanted) -> str | None:
    """Why `entry` may not be taken for `wanted`, or None."""
    if (entry.key, entry.runner, entry.model, entry.criteria_sha256) != (
        wanted.key,
        wanted.runner,
        wanted.model,
        wanted.criteria_sha256,
    ):
        return "its content does not match its key"
    if {r.criterion for r in entry.verdict.criteria_results} != wanted.criteria:
        return "its verdict does not judge the task's criteria"
    public = trusted_key(repo, CI_KEYS_DIR, entry.signer)
    if not isinstance(public, bytes):
        return f"signed by {entry.signer!r}, not a CI key trusted on the base ref"
    if not signature_holds(public, entry.signed_fields(), CACHE_LABEL, entry.ed25519):
        return "its signature does not hold"
    return None
