"""Evidence: the SHA-256 of every output at the moment a verdict covered it (docs/evidence.md).

A checkpoint's verdict (a reviewer's pass, a self-review, an override, or acceptance of a step
without reviews) is bound to the bytes it covered: each output file, and each file of a `files`
output, gets an `OutputEvidence` record with its hash. Later checkpoints re-hash those files;
a file whose bytes differ is `StaleEvidence` and blocks the end of the workflow until its step is
reviewed again or an override acknowledges the change.

Files are read again inside the project root right before they are hashed; a path that no longer
resolves to a regular file inside the project hashes to None (the evidence is stale). Each record
also keeps the file's stat signature (`fsutil.stat_signature`): a later check re-reads a file only
when its signature moved, so checking earlier outputs costs a `stat` per file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.fsutil import path_signature, stat_signature
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.evidence.verdicts import VerdictKind

_CHUNK = 1024 * 1024


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OutputHash(_Model):
    """One file of one output, hashed now. `sha256` is None when the file is gone."""

    output: str
    step_id: str
    path: str
    sha256: str | None
    signature: str | None = None


class OutputEvidence(_Model):
    """One file of one output as a verdict covered it."""

    output: str
    step_id: str
    path: str
    sha256: str | None
    verdict: VerdictKind
    recorded_at: datetime
    override_reason: str | None = None
    #: The file's stat signature when it was hashed (a shortcut for re-checks, not evidence).
    signature: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.step_id, self.output, self.path)


class StaleEvidence(_Model):
    """A file that changed since its checkpoint. `new_sha256` None: it is gone."""

    output: str
    step_id: str
    path: str
    old_sha256: str | None
    new_sha256: str | None


class ShownOutput(_Model):
    """One file shown to a human for approval, with its hash (docs/evidence.md)."""

    output: str
    path: str
    sha256: str | None


def sha256_file(project_root: Path, relative: str) -> str | None:
    """The hex SHA-256 of the regular file `relative` inside `project_root`, else None."""
    return _hash(project_root, relative)[0]


def _hash(project_root: Path, relative: str) -> tuple[str | None, str | None]:
    """(SHA-256, stat signature taken before reading) of the file, or (None, None)."""
    try:
        resolved = resolve_inside(project_root, relative)
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (DeepWorkError, OSError):
        return None, None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, None
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest(), stat_signature(info)
    except OSError:
        return None, None
    finally:
        os.close(fd)


def hash_outputs(
    project_root: Path, by_step: Mapping[str, Mapping[str, str | list[str]]]
) -> list[OutputHash]:
    """Hash every file of the outputs, given per step as `{step: {output: path | [paths]}}`."""
    hashes: list[OutputHash] = []
    for step_id, outputs in by_step.items():
        for output, value in outputs.items():
            for path in [value] if isinstance(value, str) else value:
                digest, signature = _hash(project_root, path)
                hashes.append(
                    OutputHash(
                        output=output,
                        step_id=step_id,
                        path=path,
                        sha256=digest,
                        signature=signature,
                    )
                )
    return hashes


def bind(
    hashes: Iterable[OutputHash],
    verdict: VerdictKind,
    at: datetime,
    override_reason: str | None = None,
) -> list[OutputEvidence]:
    """Evidence records for `hashes` under one verdict."""
    return [
        OutputEvidence(
            output=item.output,
            step_id=item.step_id,
            path=item.path,
            sha256=item.sha256,
            verdict=verdict,
            recorded_at=at,
            override_reason=override_reason,
            signature=item.signature,
        )
        for item in hashes
    ]


def merge(
    current: Sequence[OutputEvidence], new: Iterable[OutputEvidence], *, steps: Iterable[str] = ()
) -> list[OutputEvidence]:
    """`current` with the records of `steps` dropped and `new` ones replacing same-key records.

    Dropping a step's records first means a re-submission that no longer lists a file of a
    `files` output leaves no evidence behind for that file.
    """
    replaced = set(steps)
    kept = {item.key: item for item in current if item.step_id not in replaced}
    for item in new:
        kept[item.key] = item
    return list(kept.values())


def find_stale(project_root: Path, evidence: Iterable[OutputEvidence]) -> list[StaleEvidence]:
    """The evidence whose file no longer has the hash its verdict covered."""
    stale: list[StaleEvidence] = []
    for item in evidence:
        if item.signature is not None and item.signature == path_signature(
            project_root / item.path
        ):
            continue  # the same inode, unwritten since it was hashed: the same bytes
        now = sha256_file(project_root, item.path)
        if now != item.sha256:
            stale.append(
                StaleEvidence(
                    output=item.output,
                    step_id=item.step_id,
                    path=item.path,
                    old_sha256=item.sha256,
                    new_sha256=now,
                )
            )
    return stale
