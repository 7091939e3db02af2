"""Finding jobs (FORMATS.md §2) and caching what was parsed.

Folders are searched in order: the project's `.deepwork/jobs/`, the standard jobs shipped in this
package, then each additional folder. A job is an immediate sub-folder holding `job.yml`; the first
folder that has a job of a given name wins, even when that job fails to load (the user sees the
error of the job they wrote, not a silent substitute).

Parsed jobs are cached by the `job.yml` path and revalidated by its mtime and size, so listing
unchanged jobs does not parse them again, and an edited `job.yml` is seen at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from deepwork_core.errors import JobInvalidError, JobNotFoundError
from deepwork_core.identifiers import check_name
from deepwork_core.models import JobDefinition
from deepwork_core.parser import JOB_FILE, ParsedJob, parse_job_dir, summarize

STANDARD_JOBS_DIR = Path(__file__).resolve().parent / "standard_jobs"


class SourceKind(StrEnum):
    PROJECT = "project"
    STANDARD = "standard"
    ADDITIONAL = "additional"


@dataclass(frozen=True, slots=True)
class JobFolder:
    path: Path
    kind: SourceKind


@dataclass(frozen=True, slots=True)
class LoadedJob:
    """A valid job and where it came from."""

    definition: JobDefinition
    job_dir: Path
    source: JobFolder
    parsed: ParsedJob

    @property
    def name(self) -> str:
        return self.definition.name


@dataclass(frozen=True, slots=True)
class JobLoadError:
    """A job folder that failed to load (`get_workflows.errors`)."""

    job_name: str
    job_dir: Path
    error: str
    parsed: ParsedJob


@dataclass(frozen=True, slots=True)
class Catalog:
    """Every job found, in discovery order, and every job that failed to load."""

    jobs: tuple[LoadedJob, ...]
    errors: tuple[JobLoadError, ...]
    #: Changes whenever any job.yml seen by the scan changed, appeared or disappeared.
    fingerprint: int


def job_folders(project_root: Path, additional: Sequence[Path] = ()) -> list[JobFolder]:
    """The search path for `project_root` (FORMATS.md §2)."""
    folders = [
        JobFolder(project_root / ".deepwork" / "jobs", SourceKind.PROJECT),
        JobFolder(STANDARD_JOBS_DIR, SourceKind.STANDARD),
    ]
    folders.extend(JobFolder(Path(p), SourceKind.ADDITIONAL) for p in additional if str(p))
    return folders


def parse_folder_list(value: str | None) -> list[Path]:
    """Split a `:`-separated folder list (as in DEEPWORK_ADDITIONAL_JOBS_FOLDERS); skip empties."""
    if not value:
        return []
    return [Path(part.strip()) for part in value.split(os.pathsep) if part.strip()]


class JobCatalog:
    """Discovers jobs on demand with a stat-validated parse cache. Thread-safe."""

    def __init__(self, folders: Sequence[JobFolder]) -> None:
        self.folders = tuple(folders)
        self._cache: dict[Path, tuple[int, int, ParsedJob]] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_project(cls, project_root: Path, additional: Sequence[Path] = ()) -> JobCatalog:
        return cls(job_folders(project_root, additional))

    def scan(self) -> Catalog:
        """Every job of every folder (first folder wins per name)."""
        jobs: list[LoadedJob] = []
        errors: list[JobLoadError] = []
        seen: set[str] = set()
        fingerprint_parts: list[tuple[str, int, int]] = []
        for folder in self.folders:
            try:
                entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            for entry in entries:
                if entry.name in seen or not entry.is_dir():
                    continue
                job_dir = Path(entry.path)
                stat = _stat(job_dir / JOB_FILE)
                if stat is None:
                    continue
                seen.add(entry.name)
                fingerprint_parts.append((entry.path, *stat))
                self._collect(job_dir, entry.name, folder, stat, jobs, errors)
        return Catalog(tuple(jobs), tuple(errors), hash(tuple(fingerprint_parts)))

    def get(self, name: str) -> LoadedJob:
        """The job `name` as discovery resolves it.

        Raises `identifier.invalid` for a malformed name, `job.not_found`, or `job.invalid`
        (with every problem) when the winning folder's job fails to load.
        """
        check_name(name, kind="job_name")
        for folder in self.folders:
            job_dir = folder.path / name
            stat = _stat(job_dir / JOB_FILE)
            if stat is None:
                continue
            jobs: list[LoadedJob] = []
            errors: list[JobLoadError] = []
            self._collect(job_dir, name, folder, stat, jobs, errors)
            if jobs:
                return jobs[0]
            raise JobInvalidError(
                f"job {name!r} in {job_dir} failed to load: {errors[0].error}",
                errors[0].parsed.errors,
            )
        raise JobNotFoundError(
            f"no job named {name!r}; call get_workflows to see the available jobs"
        )

    def _collect(
        self,
        job_dir: Path,
        name: str,
        folder: JobFolder,
        stat: tuple[int, int],
        jobs: list[LoadedJob],
        errors: list[JobLoadError],
    ) -> None:
        parsed = self._parse(job_dir, name, stat)
        if parsed.definition is not None:
            jobs.append(LoadedJob(parsed.definition, job_dir, folder, parsed))
        else:
            errors.append(JobLoadError(name, job_dir, summarize(parsed.errors), parsed))

    def _parse(self, job_dir: Path, name: str, stat: tuple[int, int]) -> ParsedJob:
        key = job_dir / JOB_FILE
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[:2] == stat:
            return cached[2]
        parsed = parse_job_dir(job_dir, expected_name=name)
        with self._lock:
            self._cache[key] = (*stat, parsed)
        return parsed


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        result = path.stat()
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    return result.st_mtime_ns, result.st_size
