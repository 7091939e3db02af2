"""Finding jobs (docs/job-format.md) and caching what was parsed.

Folders are searched in order: the project's `.deepwork/jobs/`, the standard jobs shipped in this
package, then each additional folder. A job is an immediate sub-folder holding `job.yml`; the first
folder that has a job of a given name wins, even when that job fails to load (the user sees the
error of the job they wrote, not a silent substitute).

What listing needs of each job (`JobListing`: name, summary, description, workflow names and
summaries) is cached by the `job.yml` path and revalidated by its stat (device, inode, size, mtime
and ctime in nanoseconds), so listing unchanged jobs does not parse them again, and an edited
`job.yml` is seen at once. Full definitions are kept only for the jobs last used through
`JobCatalog.get` (a small LRU), which parses a job again when its definition was dropped. The
standard jobs ship with the package: each is parsed once per process, for every catalog.

File timestamps are coarser than they look (a kernel tick, or a whole second on some file
systems), so two writes in one tick can leave the stat unchanged. Like git's
"racily clean" index entries, a file whose mtime was within `RACY_WINDOW_NS` of the moment we read
it is not trusted by stat alone: its bytes are read again and compared by digest (cheap next to
parsing), until its mtime is old enough to settle.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_module
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from deepwork_core.base.errors import Problem, YamlError
from deepwork_core.base.identifiers import check_name, shown
from deepwork_core.base.layout import JOB_FILE, PROJECT_JOBS_DIR, STANDARD_JOBS_PACKAGE_DIR
from deepwork_core.base.yamlio import read_limited
from deepwork_core.jobs.errors import JobInvalidError, JobNotFoundError
from deepwork_core.jobs.model import JobDefinition
from deepwork_core.jobs.parser import ParsedJob, parse_job_source, summarize

STANDARD_JOBS_DIR = Path(__file__).resolve().parent / STANDARD_JOBS_PACKAGE_DIR
#: How recent an mtime may be before a stat match alone is not trusted (see the module doc).
RACY_WINDOW_NS = 2_000_000_000

_StatKey = tuple[int, int, int, int, int]


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
    """A valid job with its full definition, and where it came from (`JobCatalog.get`)."""

    definition: JobDefinition
    job_dir: Path
    source: JobFolder
    parsed: ParsedJob

    @property
    def name(self) -> str:
        return self.definition.name


@dataclass(frozen=True, slots=True)
class WorkflowListing:
    name: str
    summary: str
    #: The agent type the workflow is handed to (0.10-format jobs), if any.
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class JobListing:
    """What listing a valid job needs (`JobCatalog.scan`); `JobCatalog.get` gives the rest."""

    name: str
    summary: str
    description: str | None
    workflows: tuple[WorkflowListing, ...]
    source: JobFolder
    #: The job folder as a string: a Path per job cost about 350 bytes.
    path: str

    @property
    def job_dir(self) -> Path:
        return Path(self.path)

    @classmethod
    def of(cls, definition: JobDefinition, source: JobFolder, path: str) -> JobListing:
        return cls(
            definition.name,
            definition.summary,
            definition.description,
            tuple(WorkflowListing(w.name, w.summary, w.agent) for w in definition.workflows),
            source,
            path,
        )


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

    jobs: tuple[JobListing, ...]
    errors: tuple[JobLoadError, ...]
    #: Changes whenever any job.yml seen by the scan changed, appeared or disappeared.
    fingerprint: int


def job_folders(project_root: Path, additional: Sequence[Path] = ()) -> list[JobFolder]:
    """The search path for `project_root` (docs/job-format.md)."""
    folders = [
        JobFolder(project_root / PROJECT_JOBS_DIR, SourceKind.PROJECT),
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
    """Discovers jobs on demand with a stat- and digest-validated parse cache. Thread-safe.

    For every job seen, the cache keeps only its listing (or its load error); full definitions
    are kept for the `keep` most recently used jobs (None: all of them), and `get` parses a job
    again when its definition was dropped. A thousand parsed job models cost about 6.5 MiB, and a
    server only ever runs a few jobs.
    """

    def __init__(self, folders: Sequence[JobFolder], *, keep: int | None = 32) -> None:
        self.folders = tuple(folders)
        #: Keyed by the job folder as a string: a Path key cost about 350 bytes per job.
        self._cache: dict[str, _CacheEntry] = {}
        #: Full definitions by job folder, least recently used first, with their job.yml digest.
        self._loaded: OrderedDict[str, tuple[bytes, LoadedJob]] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()
        self._parse_count = 0
        #: The stats of the last fully settled scan and the catalog it gave.
        self._last: tuple[tuple[tuple[str, _StatKey], ...], Catalog] | None = None

    @classmethod
    def for_project(
        cls, project_root: Path, additional: Sequence[Path] = (), *, keep: int | None = 32
    ) -> JobCatalog:
        return cls(job_folders(project_root, additional), keep=keep)

    @property
    def parse_count(self) -> int:
        """How many times this catalog parsed a job.yml (its cache misses; a standard job
        another catalog of the process parsed is taken from there), for diagnostics."""
        return self._parse_count

    def scan(self) -> Catalog:
        """Every job of every folder (first folder wins per name).

        When every `job.yml` has the stat it had at the previous scan, and every one of them was
        settled then, the previous `Catalog` object is returned as is: a repeat listing costs one
        `scandir` per folder and one `stat` per job, on plain strings.
        """
        found = self._find()
        key = tuple((path, stat) for _, _, path, stat in found)
        with self._lock:
            last = self._last
        if last is not None and last[0] == key:
            return last[1]
        jobs: list[JobListing] = []
        errors: list[JobLoadError] = []
        digest = hashlib.blake2b(digest_size=8)
        settled = True
        for folder, name, path, stat in found:
            entry, _ = self._load(path, name, folder, stat, use=False)
            settled = settled and entry.settled
            digest.update(os.fsencode(path) + b"\0" + entry.digest)
            if isinstance(entry.outcome, JobListing):
                jobs.append(entry.outcome)
            else:
                errors.append(entry.outcome)
        catalog = Catalog(tuple(jobs), tuple(errors), int.from_bytes(digest.digest(), "big"))
        with self._lock:
            # An unsettled file must be read again next time (see the module doc).
            self._last = (key, catalog) if settled else None
        return catalog

    def _find(self) -> list[tuple[JobFolder, str, str, _StatKey]]:
        """(folder, job name, job folder path, stat of its job.yml) of each job, in order."""
        found: list[tuple[JobFolder, str, str, _StatKey]] = []
        seen: set[str] = set()
        for folder in self.folders:
            try:
                with os.scandir(folder.path) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name in seen or not _is_dir(entry):
                    continue
                # Plain strings: a Path per job was most of the cost of a repeat scan.
                stat = _stat(entry.path + os.sep + JOB_FILE)
                if stat is None:
                    continue
                seen.add(entry.name)
                found.append((folder, entry.name, entry.path, stat))
        return found

    def get(self, name: str) -> LoadedJob:
        """The job `name` as discovery resolves it, with its full definition.

        Raises `identifier.invalid` for a malformed name, `job.not_found`, or `job.invalid`
        (with every problem) when the winning folder's job fails to load.
        """
        check_name(name, kind="job_name")
        for folder in self.folders:
            # The same string `scan` gets from `os.scandir`, so both share one cache entry.
            path = os.path.join(folder.path, name)  # noqa: PTH118
            stat = _stat(path + os.sep + JOB_FILE)
            if stat is None:
                continue
            entry, job = self._load(path, name, folder, stat, use=True)
            if job is not None:
                return job
            error = entry.outcome
            assert isinstance(error, JobLoadError)  # a valid job always comes with its definition
            raise JobInvalidError(
                f"job {shown(name)} in {error.job_dir} failed to load: {error.error}",
                error.parsed.errors,
            )
        raise JobNotFoundError(
            f"no job named {shown(name)}; call get_workflows to see the available jobs"
        )

    def _load(
        self, path: str, name: str, folder: JobFolder, stat: _StatKey, *, use: bool
    ) -> tuple[_CacheEntry, LoadedJob | None]:
        """The cache entry of job folder `path`, and with `use` its full definition if valid.

        `stat` must be taken before this call. A job.yml is parsed only when its content is new,
        or when `use` asks for a definition that is no longer kept.
        """
        with self._lock:
            cached = self._cache.get(path)
            loaded = self._loaded.get(path)
        valid = cached is not None and isinstance(cached.outcome, JobListing)
        if cached is not None and cached.stat == stat and cached.settled:
            if not (use and valid):
                return cached, None
            if loaded is not None and loaded[0] == cached.digest:
                self._keep_loaded(path, loaded, use=True)
                return cached, loaded[1]
        job_dir = Path(path)
        job_file = job_dir / JOB_FILE
        read_at = time.time_ns()
        try:
            raw = read_limited(job_file)
        except YamlError as exc:
            failed = ParsedJob(job_dir, None, (Problem(exc.code, exc.message, job_file),))
            error = JobLoadError(name, job_dir, summarize(failed.errors), failed)
            return _CacheEntry(stat, b"", error, settled=False), None
        digest = hashlib.blake2b(raw, digest_size=16).digest()
        settled = read_at - stat[3] > RACY_WINDOW_NS
        if cached is not None and cached.digest == digest:
            entry = _CacheEntry(stat, digest, cached.outcome, settled)
            if not (use and valid):
                with self._lock:
                    self._cache[path] = entry
                return entry, None
            if loaded is not None and loaded[0] == digest:
                with self._lock:
                    self._cache[path] = entry
                self._keep_loaded(path, loaded, use=True)
                return entry, loaded[1]
        parsed = _parse(raw, digest, job_dir, name, folder)
        job: LoadedJob | None = None
        outcome: JobListing | JobLoadError
        if parsed.definition is not None:
            job = LoadedJob(parsed.definition, job_dir, folder, parsed)
            outcome = JobListing.of(parsed.definition, folder, path)
        else:
            outcome = JobLoadError(name, job_dir, summarize(parsed.errors), parsed)
        entry = _CacheEntry(stat, digest, outcome, settled)
        with self._lock:
            self._parse_count += 1
            self._cache[path] = entry
        if job is not None:
            self._keep_loaded(path, (digest, job), use=use)
        else:
            with self._lock:
                self._loaded.pop(path, None)
        return entry, job

    def _keep_loaded(self, path: str, loaded: tuple[bytes, LoadedJob], *, use: bool) -> None:
        """Remember a full definition as the most recently used one.

        A scan (`use` false) only refreshes a definition already kept or fills free room: it
        never pushes out the definitions of the jobs being run.
        """
        with self._lock:
            kept = self._loaded
            if path in kept:
                kept[path] = loaded
                kept.move_to_end(path)
            elif use or self._keep is None or len(kept) < self._keep:
                kept[path] = loaded
                while self._keep is not None and len(kept) > self._keep:
                    kept.popitem(last=False)


#: The standard jobs parsed in this process, by job folder and job.yml digest: they ship with the
#: package and never change under a running process, so every catalog (one per server and project)
#: shares them instead of parsing them again.
_STANDARD_PARSED: dict[tuple[str, bytes], ParsedJob] = {}
_STANDARD_LOCK = threading.Lock()


def _parse(raw: bytes, digest: bytes, job_dir: Path, name: str, folder: JobFolder) -> ParsedJob:
    """`raw`, the job.yml of `job_dir`, parsed (a standard job at most once per process)."""
    key = (str(job_dir), digest)
    if folder.kind is SourceKind.STANDARD:
        with _STANDARD_LOCK:
            known = _STANDARD_PARSED.get(key)
        if known is not None:
            return known
    parsed = parse_job_source(raw, job_dir=job_dir, expected_name=name).without_lines()
    if folder.kind is SourceKind.STANDARD:
        with _STANDARD_LOCK:
            _STANDARD_PARSED[key] = parsed
    return parsed


@dataclass(frozen=True, slots=True)
class _CacheEntry:
    stat: _StatKey
    digest: bytes
    outcome: JobListing | JobLoadError
    #: The mtime was older than the read by more than RACY_WINDOW_NS: a stat match suffices.
    settled: bool


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _stat(path: str | Path) -> _StatKey | None:
    """(device, inode, size, mtime_ns, ctime_ns) of a regular file, or None."""
    try:
        result = os.stat(path)  # noqa: PTH116 - also takes the plain strings of `scan`
    except OSError:
        return None
    if not stat_module.S_ISREG(result.st_mode):
        return None
    return (result.st_dev, result.st_ino, result.st_size, result.st_mtime_ns, result.st_ctime_ns)
