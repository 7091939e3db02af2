"""deepwork_core.jobs.discovery: search order, shadowing, load errors and the parse cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from deepwork_core.base.errors import InvalidIdentifierError
from deepwork_core.jobs.discovery import (
    STANDARD_JOBS_DIR,
    JobCatalog,
    JobFolder,
    SourceKind,
    job_folders,
    parse_folder_list,
)
from deepwork_core.jobs.errors import JobInvalidError, JobNotFoundError
from deepwork_core.jobs.parser import check_job_files

from tests.fixtures.corpus import SOURCES, corpus_root
from tests.fixtures.jobdata import changed, valid_job, write_job


@pytest.fixture
def folders(tmp_path: Path) -> dict[SourceKind, Path]:
    return {kind: tmp_path / kind.value for kind in SourceKind}


def _catalog(folders: dict[SourceKind, Path]) -> JobCatalog:
    return JobCatalog([JobFolder(path, kind) for kind, path in folders.items()])


def _summary_of(catalog: JobCatalog, name: str) -> str:
    return catalog.get(name).definition.summary


def test_for_project_searches_project_then_standard_then_additional(tmp_path: Path) -> None:
    extra = [tmp_path / "one", tmp_path / "two"]
    assert job_folders(tmp_path, extra) == [
        JobFolder(tmp_path / ".deepwork" / "jobs", SourceKind.PROJECT),
        JobFolder(STANDARD_JOBS_DIR, SourceKind.STANDARD),
        JobFolder(extra[0], SourceKind.ADDITIONAL),
        JobFolder(extra[1], SourceKind.ADDITIONAL),
    ]
    assert JobCatalog.for_project(tmp_path, extra).folders == tuple(job_folders(tmp_path, extra))


def test_standard_jobs_folder_ships_inside_the_package() -> None:
    assert STANDARD_JOBS_DIR.is_dir()
    assert STANDARD_JOBS_DIR.parent.parent.name == "deepwork_core"


def test_first_folder_wins_and_the_source_is_recorded(folders: dict[SourceKind, Path]) -> None:
    for kind, path in folders.items():
        write_job(path, changed(valid_job("shared"), ("summary",), f"from {kind.value}"), "shared")
    write_job(folders[SourceKind.ADDITIONAL], valid_job("extra"), "extra")
    catalog = _catalog(folders)
    scan = catalog.scan()
    assert [(job.name, job.source.kind) for job in scan.jobs] == [
        ("shared", SourceKind.PROJECT),
        ("extra", SourceKind.ADDITIONAL),
    ]
    assert scan.errors == ()
    assert _summary_of(catalog, "shared") == "from project"
    assert catalog.get("extra").job_dir == folders[SourceKind.ADDITIONAL] / "extra"


def test_a_broken_project_job_shadows_a_valid_standard_one(
    folders: dict[SourceKind, Path],
) -> None:
    write_job(
        folders[SourceKind.PROJECT], changed(valid_job("shared"), ("version",), "x"), "shared"
    )
    write_job(folders[SourceKind.STANDARD], valid_job("shared"), "shared")
    catalog = _catalog(folders)
    scan = catalog.scan()
    assert scan.jobs == ()
    (error,) = scan.errors
    assert (error.job_name, error.job_dir) == ("shared", folders[SourceKind.PROJECT] / "shared")
    assert "version" in error.error
    assert [p.code for p in error.parsed.errors] == ["job.pattern_mismatch"]
    with pytest.raises(JobInvalidError) as raised:
        catalog.get("shared")
    assert raised.value.code == "job.invalid"
    assert [p.code for p in raised.value.problems] == ["job.pattern_mismatch"]


def test_name_must_equal_folder(folders: dict[SourceKind, Path]) -> None:
    write_job(folders[SourceKind.PROJECT], valid_job("demo"), "other_name")
    (error,) = _catalog(folders).scan().errors
    assert error.job_name == "other_name"
    assert [p.code for p in error.parsed.errors] == ["job.name_mismatch"]


# Per source: (folders whose YAML name differs, invalid folders, jobs that load).
CORPUS_DISCOVERY = {
    "compat": (
        {"release_notes_job", "parallel_flow_job", "exposed_folder"},
        {"broken_job", "legacy_criteria"},
        {"one_report", "recipes", "rule_keeper", "toolkit"},
    ),
    "shared": (
        {"complex_job", "concurrent_steps_job", "exposed_step_job"},
        {"invalid_job", "spec_driven_development"},
        {
            "deepwork_jobs",
            "deepwork_reviews",
            "fruits",
            "job_with_doc_spec",
            "simple_job",
            "test_job_flow",
            "update_job_schema",
        },
    ),
}


@pytest.mark.parametrize("source", SOURCES)
def test_corpus_jobs_whose_name_differs_from_the_folder_are_load_errors(source: str) -> None:
    mismatches, invalid, loaded = CORPUS_DISCOVERY[source]
    catalog = JobCatalog([JobFolder(corpus_root(source) / "jobs", SourceKind.ADDITIONAL)])
    scan = catalog.scan()
    by_folder = {error.job_name: error for error in scan.errors}
    for folder in mismatches:
        assert [p.code for p in by_folder[folder].parsed.errors] == ["job.name_mismatch"]
    assert set(by_folder) == mismatches | invalid
    assert {job.name for job in scan.jobs} == loaded


def test_folders_without_job_yml_and_missing_folders_are_skipped(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    (jobs / "empty").mkdir(parents=True)
    (jobs / "file.yml").write_text("x: 1\n", encoding="utf-8")
    (jobs / "dir_named_job_yml" / "job.yml").mkdir(parents=True)
    write_job(jobs, valid_job("demo"), "demo")
    catalog = JobCatalog(
        [
            JobFolder(tmp_path / "missing", SourceKind.PROJECT),
            JobFolder(jobs / "file.yml", SourceKind.ADDITIONAL),
            JobFolder(jobs, SourceKind.ADDITIONAL),
        ]
    )
    scan = catalog.scan()
    assert [job.name for job in scan.jobs] == ["demo"]
    assert scan.errors == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("", []),
        ("/a", ["/a"]),
        ("/a:/b", ["/a", "/b"]),
        (":/a::/b:", ["/a", "/b"]),
        (" /a : : /b ", ["/a", "/b"]),
    ],
)
def test_parse_folder_list_skips_empty_entries(value: str | None, expected: list[str]) -> None:
    assert parse_folder_list(value) == [Path(p) for p in expected]


def test_get_rejects_bad_names_and_reports_unknown_jobs(folders: dict[SourceKind, Path]) -> None:
    catalog = _catalog(folders)
    with pytest.raises(InvalidIdentifierError):
        catalog.get("../jobs/demo")
    with pytest.raises(JobNotFoundError) as raised:
        catalog.get("ghost")
    assert raised.value.code == "job.not_found"


# --- the cache -------------------------------------------------------------------------------


def test_unchanged_jobs_are_not_parsed_again(folders: dict[SourceKind, Path]) -> None:
    write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    write_job(folders[SourceKind.PROJECT], valid_job("more"), "more")
    catalog = _catalog(folders)
    first = catalog.scan()
    assert catalog.parse_count == 2
    second = catalog.scan()
    assert catalog.parse_count == 2
    assert [a is b for a, b in zip(first.jobs, second.jobs, strict=True)] == [True, True]
    assert first.fingerprint == second.fingerprint
    demo = catalog.get("demo")
    assert catalog.get("demo") is demo
    assert catalog.parse_count == 2


def test_catalogs_of_one_process_share_each_standard_job_parsed_once(tmp_path: Path) -> None:
    standard = JobFolder(tmp_path / "standard", SourceKind.STANDARD)
    project = JobFolder(tmp_path / "project", SourceKind.PROJECT)
    write_job(standard.path, valid_job("shipped"), "shipped")
    write_job(project.path, valid_job("own"), "own")
    first, second = JobCatalog([standard, project]), JobCatalog([standard, project])
    assert second.get("shipped").parsed is first.get("shipped").parsed
    # A project's job is its own catalog's: its files may change between two servers.
    assert second.get("own").parsed is not first.get("own").parsed
    assert (first.parse_count, second.parse_count) == (2, 2)  # each catalog's own misses
    write_job(standard.path, changed(valid_job("shipped"), ("summary",), "edited"), "shipped")
    assert _summary_of(JobCatalog([standard]), "shipped") == "edited"


def test_a_scan_lists_what_the_definitions_say(folders: dict[SourceKind, Path]) -> None:
    write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    catalog = _catalog(folders)
    (listed,) = catalog.scan().jobs
    definition = catalog.get("demo").definition
    assert (listed.name, listed.summary, listed.description) == (
        definition.name,
        definition.summary,
        definition.description,
    )
    assert [(w.name, w.summary) for w in listed.workflows] == [
        (w.name, w.summary) for w in definition.workflows
    ]
    assert listed.job_dir == folders[SourceKind.PROJECT] / "demo"


def test_definitions_not_kept_are_parsed_again_on_demand(
    folders: dict[SourceKind, Path],
) -> None:
    for name in ("demo", "more"):
        write_job(folders[SourceKind.PROJECT], valid_job(name), name)
    catalog = JobCatalog([JobFolder(folders[SourceKind.PROJECT], SourceKind.PROJECT)], keep=1)
    catalog.scan()
    assert catalog.parse_count == 2
    catalog.get("demo")  # kept by the scan, which had room for one
    assert catalog.parse_count == 2
    more = catalog.get("more")
    assert catalog.parse_count == 3
    assert catalog.get("more") is more
    assert catalog.parse_count == 3
    assert catalog.get("demo").definition.name == "demo"  # pushed out by "more"
    assert catalog.parse_count == 4
    catalog.scan()
    assert catalog.parse_count == 4


def test_a_scan_does_not_push_out_the_jobs_in_use(folders: dict[SourceKind, Path]) -> None:
    for name in ("demo", "more"):
        write_job(folders[SourceKind.PROJECT], valid_job(name), name)
    catalog = JobCatalog([JobFolder(folders[SourceKind.PROJECT], SourceKind.PROJECT)], keep=1)
    in_use = catalog.get("more")
    catalog.scan()
    assert catalog.parse_count == 2
    assert catalog.get("more") is in_use
    assert catalog.parse_count == 2


def test_a_catalog_may_keep_every_definition(folders: dict[SourceKind, Path]) -> None:
    for index in range(40):
        write_job(folders[SourceKind.PROJECT], valid_job(f"job{index}"), f"job{index}")
    catalog = JobCatalog([JobFolder(folders[SourceKind.PROJECT], SourceKind.PROJECT)], keep=None)
    scan = catalog.scan()
    assert [catalog.get(job.name).name for job in scan.jobs] == [job.name for job in scan.jobs]
    assert catalog.parse_count == 40


def test_a_touched_but_unchanged_file_is_not_parsed_again(
    folders: dict[SourceKind, Path],
) -> None:
    job_dir = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    catalog = _catalog(folders)
    before = catalog.scan()
    in_use = catalog.get("demo")
    stat = (job_dir / "job.yml").stat()
    os.utime(job_dir / "job.yml", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    after = catalog.scan()
    assert catalog.get("demo") is in_use
    assert catalog.parse_count == 1
    assert after.jobs[0] is before.jobs[0]


def test_an_edited_job_is_seen_at_once(folders: dict[SourceKind, Path]) -> None:
    job_dir = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    catalog = _catalog(folders)
    before = catalog.scan()
    write_job(job_dir.parent, changed(valid_job("demo"), ("summary",), "A longer summary"))
    after = catalog.scan()
    assert after.jobs[0].summary == "A longer summary"
    assert after.fingerprint != before.fingerprint


def test_an_edited_job_in_use_is_seen_at_once(folders: dict[SourceKind, Path]) -> None:
    job_dir = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    _age(job_dir / "job.yml")
    catalog = _catalog(folders)
    assert _summary_of(catalog, "demo") == "A demo job"
    write_job(job_dir.parent, changed(valid_job("demo"), ("summary",), "A longer summary"))
    assert _summary_of(catalog, "demo") == "A longer summary"
    assert catalog.scan().jobs[0].summary == "A longer summary"
    assert catalog.parse_count == 2


def _age(job_file: Path, seconds: int = 60) -> None:
    """Move `job_file`'s mtime into the past, beyond the racy window."""
    stat = job_file.stat()
    os.utime(job_file, ns=(stat.st_atime_ns, stat.st_mtime_ns - seconds * 1_000_000_000))


def test_a_repeat_scan_of_settled_jobs_returns_the_same_catalog(
    folders: dict[SourceKind, Path],
) -> None:
    job_dir = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    _age(job_dir / "job.yml")
    catalog = _catalog(folders)
    first = catalog.scan()
    assert catalog.scan() is first
    write_job(job_dir.parent, changed(valid_job("demo"), ("summary",), "A later summary"))
    _age(job_dir / "job.yml")
    edited = catalog.scan()
    assert edited is not first
    assert edited.jobs[0].summary == "A later summary"
    assert edited.fingerprint != first.fingerprint


def test_a_scan_with_a_racy_file_is_not_reused(folders: dict[SourceKind, Path]) -> None:
    write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    catalog = _catalog(folders)
    first = catalog.scan()  # written just now: within the racy window
    assert catalog.scan() is not first
    assert catalog.parse_count == 1


def test_a_same_size_edit_within_one_timestamp_tick_is_seen(
    folders: dict[SourceKind, Path],
) -> None:
    """Two writes in one kernel tick leave mtime (and often ctime) unchanged.

    The second write below keeps the size and gets the first write's mtime back, as if both
    had happened within the same tick: only the content tells them apart.
    """
    job_file = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo") / "job.yml"
    catalog = _catalog(folders)
    assert _summary_of(catalog, "demo") == "A demo job"
    original = job_file.stat()
    text = job_file.read_text(encoding="utf-8")
    edited = text.replace("A demo job", "A demo jog")
    assert len(edited) == len(text)
    with job_file.open("r+", encoding="utf-8") as handle:  # in place: same inode
        handle.write(edited)
    os.utime(job_file, ns=(original.st_atime_ns, original.st_mtime_ns))
    now = job_file.stat()
    assert (now.st_ino, now.st_size, now.st_mtime_ns) == (
        original.st_ino,
        original.st_size,
        original.st_mtime_ns,
    )
    assert _summary_of(catalog, "demo") == "A demo jog"
    assert catalog.scan().jobs[0].summary == "A demo jog"


def test_a_fixed_job_leaves_the_error_list(folders: dict[SourceKind, Path]) -> None:
    broken = changed(valid_job("demo"), ("version",), "x")
    job_dir = write_job(folders[SourceKind.PROJECT], broken, "demo")
    catalog = _catalog(folders)
    assert [e.job_name for e in catalog.scan().errors] == ["demo"]
    write_job(job_dir.parent, valid_job("demo"))
    scan = catalog.scan()
    assert (scan.errors, [j.name for j in scan.jobs]) == ((), ["demo"])


def test_new_and_deleted_jobs_change_the_scan(folders: dict[SourceKind, Path]) -> None:
    catalog = _catalog(folders)
    empty = catalog.scan()
    job_dir = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    added = catalog.scan()
    assert [job.name for job in added.jobs] == ["demo"]
    (job_dir / "job.yml").unlink()
    removed = catalog.scan()
    assert removed.jobs == ()
    assert len({empty.fingerprint, added.fingerprint}) == 2
    assert removed.fingerprint == empty.fingerprint


# --- memory of the cache ---------------------------------------------------------------------


def test_cached_jobs_drop_their_line_map_but_problems_keep_lines(
    folders: dict[SourceKind, Path],
) -> None:
    job_dir = write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    write_job(folders[SourceKind.PROJECT], changed(valid_job("bad"), ("version",), "x"), "bad")
    catalog = _catalog(folders)
    scan = catalog.scan()
    demo = catalog.get("demo")
    assert demo.parsed.lines == {}
    assert [p.line for p in scan.errors[0].parsed.problems] == [2]
    (job_dir / "steps" / "second.md").unlink()
    (problem,) = check_job_files(demo.parsed)
    assert (problem.key, problem.line) == ("steps[1].instructions_file", _line_of(job_dir, 1))


def _line_of(job_dir: Path, step: int) -> int:
    """The line of the `step`-th `instructions_file:` in job_dir/job.yml."""
    lines = (job_dir / "job.yml").read_text(encoding="utf-8").splitlines()
    found = [n for n, text in enumerate(lines, 1) if "instructions_file:" in text]
    return found[step]


def test_models_with_the_same_given_fields_share_one_fields_set(
    folders: dict[SourceKind, Path],
) -> None:
    write_job(folders[SourceKind.PROJECT], valid_job("demo"), "demo")
    write_job(folders[SourceKind.PROJECT], valid_job("more"), "more")
    catalog = _catalog(folders)
    demo, more = (catalog.get(job.name).definition for job in catalog.scan().jobs)
    assert demo.model_fields_set is more.model_fields_set
    assert demo.steps[0].model_fields_set is more.steps[0].model_fields_set
    copy = demo.model_copy(update={"description": "changed"})
    assert "description" in copy.model_fields_set
    assert demo.model_fields_set == more.model_fields_set
