"""The review pipeline end to end on real repositories: messages, files, passes, formats."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest
from deepwork_core.base.errors import PathOutsideProjectError, ReviewError
from deepwork_review import passes, pipeline
from deepwork_review.formatters import CLAUDE_HEADER
from deepwork_review.instructions import FOLDER, MAX_AGE_SECONDS
from deepwork_review.passes import ReviewPasses
from deepwork_review.pipeline import (
    ReviewStatus,
    configured_rules,
    mark_review_passed,
    run_review,
)

PROMPT_RE = re.compile(r'prompt: "@([^"]+)"')


def _prompts(text: str) -> list[str]:
    return PROMPT_RE.findall(text)


def test_no_deepreview_files(make_repo) -> None:
    repo = make_repo()
    repo.write("a.py")
    run = run_review(repo.root)
    assert run.status is ReviewStatus.NO_RULES
    assert run.text == pipeline.NO_RULES


def test_no_changed_files(repo) -> None:
    run = run_review(repo.root)
    assert run.status is ReviewStatus.NO_CHANGES
    assert run.text == pipeline.NO_CHANGES


def test_given_paths_that_are_not_files_are_named(repo) -> None:
    repo.write("src/a.py")
    run = run_review(repo.root, files=["missing.py", "src"])
    assert run.status is ReviewStatus.NO_CHANGES
    assert "missing.py (not found)" in run.text
    assert "src/ (a folder" in run.text
    assert run.tasks == ()


def test_no_rule_matched(repo) -> None:
    repo.write("notes.md")
    run = run_review(repo.root)
    assert run.status is ReviewStatus.NO_MATCHES
    assert run.text == pipeline.NO_MATCHES


def test_only_invalid_rules(make_repo) -> None:
    repo = make_repo()
    repo.write(".deepreview", "broken: [\n")
    repo.write("a.py")
    run = run_review(repo.root)
    assert run.status is ReviewStatus.NO_RULES
    assert pipeline.NO_VALID_RULES in run.text
    assert ".deepreview:" in run.text


def test_claude_task_list_and_instruction_files(repo) -> None:
    repo.write("new.py", "print('hi')\n")
    repo.write("pkg/other.py")

    run = run_review(repo.root)

    assert run.status is ReviewStatus.TASKS
    lines = run.text.splitlines()
    assert lines[0] == CLAUDE_HEADER
    assert 'name: "python review of new.py"' in lines
    assert "\tdescription: Review python" in lines
    assert "\tsubagent_type: general-purpose" in lines
    prompts = _prompts(run.text)
    assert len(prompts) == 2
    assert "mark_review_as_passed" in run.text
    for prompt, task in zip(prompts, run.tasks, strict=True):
        assert prompt.startswith(".deepwork/tmp/review_instructions/")
        content = (repo.root / prompt).read_text()
        assert f"# Review: {task.title}" in content
        assert "Rule `python` from `.deepreview:1`" in content
        assert "Check the Python file." in content
        assert f"- {task.files[0]}" in content
        assert task.review_id in content
        assert "mark_review_as_passed" in content
    assert (repo.root / ".deepwork" / "tmp" / ".gitignore").read_text() == "*\n"


def test_rule_agent_and_gemini_format(repo) -> None:
    repo.write(
        "pkg/.deepreview",
        "sec:\n  description: security\n  match: {include: ['**']}\n"
        "  review:\n    strategy: matches_together\n    instructions: Look.\n"
        "    agent: {claude: security-reviewer, gemini: sec_agent}\n",
    )
    repo.write("pkg/a.py")

    claude = run_review(repo.root, platform="claude").text
    gemini = run_review(repo.root, platform="gemini").text

    assert "\tsubagent_type: security-reviewer" in claude
    assert "  agent: sec_agent" in gemini
    assert "  agent: generalist" in gemini  # the root python rule has no gemini agent
    assert "Gemini CLI sub-agents" in gemini.splitlines()[0]
    paths = re.findall(r"Read the file (\S+) and carry out", gemini)
    assert len(paths) == 2
    assert all((repo.root / path).is_file() for path in paths)


def test_unsupported_platform(repo) -> None:
    with pytest.raises(ReviewError) as caught:
        run_review(repo.root, platform="vim")
    assert caught.value.code == "review.unsupported_platform"


def test_explicit_files_skip_git_and_work_outside_git(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / ".deepreview").write_text(
        "py:\n  description: d\n  match: {include: ['**/*.py']}\n"
        "  review:\n    strategy: individual\n    instructions: Look.\n"
    )
    (root / "a.py").write_text("x")
    (root / "b.py").write_text("x")

    run = run_review(root, files=["a.py", str(root / "b.py"), "./a.py", "missing.py", ""])

    assert [task.files for task in run.tasks] == [("a.py",), ("b.py",)]
    with pytest.raises(ReviewError) as caught:
        run_review(root)
    assert caught.value.code == "review.not_a_git_repository"
    with pytest.raises(PathOutsideProjectError):
        run_review(root, files=["../elsewhere.py"])


def test_parse_problems_are_shown_and_other_rules_still_apply(repo) -> None:
    repo.write("broken/.deepreview", "x: [\n")
    repo.write("a.py")
    run = run_review(repo.root)
    assert run.status is ReviewStatus.TASKS
    assert run.text.startswith(pipeline.PROBLEMS_HEADER)
    assert "broken/.deepreview:" in run.text
    assert len(run.tasks) == 1


def test_two_concurrent_runs_keep_each_others_files(repo) -> None:
    for index in range(30):
        repo.write(f"file_{index}.py", f"{index}\n")
    results: list[str] = []
    barrier = threading.Barrier(2)

    def review() -> None:
        barrier.wait()
        results.append(run_review(repo.root).text)

    threads = [threading.Thread(target=review) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 2
    first, second = (_prompts(text) for text in results)
    assert len(first) == len(second) == 30
    assert first == second  # equal tasks, equal text: the runs share content-named files
    for prompt in first + second:
        assert (repo.root / prompt).is_file()


def test_old_run_folders_of_the_older_layout_are_pruned(repo) -> None:
    repo.write("a.py")
    base = repo.root / ".deepwork" / "tmp" / FOLDER
    old = base / "19990101T000000000000-1-aaaaaa"
    recent = base / "20000101T000000000000-1-bbbbbb"
    for folder in (old, recent):
        folder.mkdir(parents=True)
        (folder / "x.md").write_text("x")
    day_ago = time.time() - MAX_AGE_SECONDS - 60
    os.utime(old, (day_ago, day_ago))

    run_review(repo.root)

    assert not old.exists()
    assert recent.exists()


def test_a_declined_review_passes_with_its_reason(repo) -> None:
    repo.write("a.py", "a\n")
    (task,) = run_review(repo.root).tasks

    mark_review_passed(repo.root, task.review_id, "  The user wants\tthe long\nname.  ")
    mark_review_passed(repo.root, task.review_id)  # a later plain pass keeps the reason

    assert ReviewPasses(repo.root).pass_reasons() == {
        task.review_id: "The user wants the long name."
    }
    assert run_review(repo.root).status is ReviewStatus.ALL_PASSED


def test_a_long_reason_is_clipped(repo) -> None:
    repo.write("a.py", "a\n")
    (task,) = run_review(repo.root).tasks
    mark_review_passed(repo.root, task.review_id, "x" * 2000)
    reason = ReviewPasses(repo.root).pass_reasons()[task.review_id]
    assert len(reason) == passes.MAX_REASON
    assert reason.endswith("…")


def test_pass_memory(repo) -> None:
    repo.write("a.py", "a\n")
    repo.write("b.py", "b\n")
    first = run_review(repo.root)
    ids = {task.files[0]: task.review_id for task in first.tasks}

    mark_review_passed(repo.root, ids["a.py"])
    mark_review_passed(repo.root, ids["a.py"])  # marking twice is harmless

    second = run_review(repo.root)
    assert [task.files for task in second.tasks] == [("b.py",)]
    assert second.already_passed == (ids["a.py"],)
    assert "1 more review(s) already passed" in second.text

    mark_review_passed(repo.root, ids["b.py"])
    third = run_review(repo.root)
    assert third.status is ReviewStatus.ALL_PASSED
    assert third.text == pipeline.ALL_PASSED

    # an edited file comes back
    repo.write("a.py", "a, edited\n")
    fourth = run_review(repo.root)
    assert [task.files for task in fourth.tasks] == [("a.py",)]

    # an edited rule brings every review of that rule back
    rule = (repo.root / ".deepreview").read_text()
    repo.write(".deepreview", rule.replace("Check the Python file.", "Check it twice."))
    fifth = run_review(repo.root)
    assert sorted(task.files for task in fifth.tasks) == [("a.py",), ("b.py",)]


@pytest.mark.parametrize(
    "review_id", ["python--0123456789abcdef0123", "../../etc/passwd", "", "x" * 500]
)
def test_an_id_never_issued_is_refused(repo, review_id: str) -> None:
    repo.write("a.py")
    run_review(repo.root)
    with pytest.raises(ReviewError) as caught:
        mark_review_passed(repo.root, review_id)
    assert caught.value.code == "review.unknown_review_id"
    assert not (repo.root / ".deepwork" / "tmp" / "review_passes" / "passed.txt").exists()


def test_an_id_issued_by_another_project_is_refused(make_repo) -> None:
    first, second = make_repo("one"), make_repo("two")
    first.write(
        ".deepreview",
        "py:\n  description: d\n  match: {include: ['*.py']}\n"
        "  review:\n    strategy: individual\n    instructions: Look.\n",
    )
    first.write("a.py")
    (task,) = run_review(first.root).tasks
    with pytest.raises(ReviewError) as caught:
        mark_review_passed(second.root, task.review_id)
    assert caught.value.code == "review.unknown_review_id"


def test_configured_rules(repo) -> None:
    repo.write(
        "docs/.deepreview",
        "\nprose:\n  description: Prose\n  match: {include: ['**/*.md']}\n"
        "  review:\n    strategy: matches_together\n    instructions: Read.\n",
    )
    repo.write("bad/.deepreview", "nope: [\n")

    listing = configured_rules(repo.root)
    assert [(rule.name, rule.defining_file) for rule in listing.rules] == [
        ("python", ".deepreview:1"),
        ("prose", "docs/.deepreview:2"),
    ]
    assert [entry.name for entry in listing.parse_errors] == ["PARSE_ERROR"]
    assert listing.parse_errors[0].defining_file.startswith("bad/.deepreview")

    only_md = configured_rules(repo.root, only_rules_matching_files=["docs/guide.md"])
    assert [rule.name for rule in only_md.rules] == ["prose"]
    outside_scope = configured_rules(repo.root, only_rules_matching_files=["guide.md"])
    assert outside_scope.rules == ()
    assert configured_rules(repo.root, only_rules_matching_files=[]).rules == ()


def test_long_context_lists_are_written_once_and_referenced(repo) -> None:
    repo.write(
        "docs/.deepreview",
        "prose:\n  description: Prose\n  match: {include: ['**/*.md']}\n"
        "  review:\n    strategy: individual\n    instructions: Read.\n"
        "    additional_context: {unchanged_matching_files: true, all_changed_filenames: true}\n",
    )
    for index in range(60):
        repo.write(f"docs/old_{index:02}.md")
    repo.commit("docs")
    repo.write("docs/new_a.md")
    repo.write("docs/new_b.md")

    run = run_review(repo.root, files=["docs/new_a.md", "docs/new_b.md"])

    prose = [(task, path) for task, path in zip(run.tasks, run.instruction_files, strict=True)]
    assert len(prose) == 2
    for task, path in prose:
        content = (repo.root / path).read_text()
        assert task.unchanged_matching_files is not None
        assert len(task.unchanged_matching_files) == 60
        listed = re.search(r"The 60 files are listed in `([^`]+)`", content)
        assert listed is not None
        listing = (repo.root / listed.group(1)).read_text()
        assert "- docs/old_00.md\n" in listing
        assert "- docs/new_a.md\n- docs/new_b.md\n" in content  # short lists stay inline
    (_, first), (_, second) = prose
    assert re.findall(r"listed in `([^`]+)`", (repo.root / first).read_text()) == re.findall(
        r"listed in `([^`]+)`", (repo.root / second).read_text()
    )
