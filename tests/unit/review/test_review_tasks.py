"""Strategies, nested scoping, additional context and review ids."""

from __future__ import annotations

from pathlib import Path

from deepwork_review.deepreview import parse_deepreview
from deepwork_review.rule_discovery import RuleCache
from deepwork_review.tasks import ContentHasher, build_tasks, is_review_id


def _rule_text(name: str, include: str, strategy: str, extra: str = "") -> str:
    return (
        f"{name}:\n  description: {name}\n  match:\n    include: [{include!r}]\n"
        f"  review:\n    strategy: {strategy}\n    instructions: Review {name}.\n{extra}"
    )


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path.resolve()
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _tasks(root: Path, sources: list[str], changed: list[str], all_files: list[str] | None = None):
    ruleset = RuleCache().load(root, sources)
    assert ruleset.problems == ()
    return build_tasks(
        ruleset.rules,
        sorted(changed),
        project_root=root,
        all_files=lambda: all_files if all_files is not None else changed,
        hasher=ContentHasher(),
    )


def test_individual_gives_one_task_per_matched_file(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {".deepreview": _rule_text("py", "**/*.py", "individual"), "a.py": "", "b/c.py": ""},
    )
    tasks = _tasks(root, [".deepreview"], ["a.py", "b/c.py", "README.md"])
    assert [task.files for task in tasks] == [("a.py",), ("b/c.py",)]
    assert tasks[0].title == "py review of a.py"


def test_matches_together_gives_one_task_with_every_match(tmp_path: Path) -> None:
    root = _project(tmp_path, {".deepreview": _rule_text("docs", "**/*.md", "matches_together")})
    tasks = _tasks(root, [".deepreview"], ["a.md", "x/b.md", "c.py"])
    assert [task.files for task in tasks] == [("a.md", "x/b.md")]
    assert tasks[0].title == "docs review of 2 files"


def test_all_changed_files_reviews_every_changed_file_when_one_matches(tmp_path: Path) -> None:
    root = _project(
        tmp_path, {".deepreview": _rule_text("all", "pyproject.toml", "all_changed_files")}
    )
    assert _tasks(root, [".deepreview"], ["a.py", "b.md"]) == []
    tasks = _tasks(root, [".deepreview"], ["a.py", "b.md", "pyproject.toml"])
    assert [task.files for task in tasks] == [("a.py", "b.md", "pyproject.toml")]


def test_nested_deepreview_files_are_scoped_to_their_folder(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            ".deepreview": _rule_text("py", "**/*.py", "individual"),
            "pkg/.deepreview": _rule_text("py", "*.py", "matches_together")
            + _rule_text("everything", "**", "all_changed_files"),
        },
    )
    changed = ["top.py", "pkg/a.py", "pkg/b.py", "pkg/deep/c.py", "pkgx/d.py"]
    tasks = _tasks(root, [".deepreview", "pkg/.deepreview"], changed)

    by_title = {task.title: task.files for task in tasks}
    # the root rule sees everything
    assert by_title["py review of top.py"] == ("top.py",)
    assert by_title["py review of pkgx/d.py"] == ("pkgx/d.py",)
    # pkg's rules match only inside pkg/, relative to pkg/ (`*.py` does not reach pkg/deep/)
    assert by_title["pkg/py review of 2 files"] == ("pkg/a.py", "pkg/b.py")
    # ... but all_changed_files, once triggered there, reviews the whole change set
    assert by_title["pkg/everything review of 5 files"] == tuple(sorted(changed))
    assert len(tasks) == 7


def test_all_changed_files_in_a_nested_rule_sees_changes_outside_its_folder(
    tmp_path: Path,
) -> None:
    root = _project(
        tmp_path, {"api/.deepreview": _rule_text("compat", "schema.json", "all_changed_files")}
    )
    assert _tasks(root, ["api/.deepreview"], ["client/call.py", "README.md"]) == []
    tasks = _tasks(root, ["api/.deepreview"], ["api/schema.json", "client/call.py"])
    assert [task.files for task in tasks] == [("api/schema.json", "client/call.py")]


def test_context_all_changed_filenames(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            ".deepreview": _rule_text(
                "py",
                "*.py",
                "individual",
                "    additional_context:\n      all_changed_filenames: true\n",
            )
        },
    )
    (task,) = _tasks(root, [".deepreview"], ["a.py", "docs/x.md"])
    assert task.all_changed_filenames == ("a.py", "docs/x.md")
    assert task.unchanged_matching_files is None


def test_context_unchanged_matching_files_uses_the_same_globs(tmp_path: Path) -> None:
    rule = _rule_text(
        "docs",
        "docs/**/*.md",
        "matches_together",
        "    additional_context:\n      unchanged_matching_files: true\n",
    ).replace("['docs/**/*.md']", "['docs/**/*.md']\n    exclude: ['docs/drafts/**']")
    files = {
        "pkg/.deepreview": rule,
        "pkg/docs/a.md": "",
        "pkg/docs/deep/b.md": "",
        "pkg/docs/deep/c.txt": "",
        "pkg/docs/drafts/d.md": "",
        "docs/outside.md": "",
    }
    root = _project(tmp_path, files)
    (task,) = _tasks(
        root,
        ["pkg/.deepreview"],
        ["pkg/docs/a.md"],
        all_files=[*files, "pkg/docs/gone.md"],
    )
    assert task.files == ("pkg/docs/a.md",)
    # `**/` is zero or more folders, excludes apply, other folders and missing files do not count
    assert task.unchanged_matching_files == ("pkg/docs/deep/b.md",)


def test_review_ids_are_deterministic_and_change_with_rule_or_content(tmp_path: Path) -> None:
    root = _project(
        tmp_path, {".deepreview": _rule_text("py", "*.py", "individual"), "a.py": "one\n"}
    )

    def review_id() -> str:
        ruleset = RuleCache().load(root, [".deepreview"])
        (task,) = build_tasks(
            ruleset.rules, ["a.py"], project_root=root, all_files=list, hasher=ContentHasher()
        )
        return task.review_id

    first = review_id()
    assert is_review_id(first)
    assert first.startswith("py--")
    assert review_id() == first

    (root / "a.py").write_text("two\n")
    second = review_id()
    assert second != first

    (root / ".deepreview").write_text(
        _rule_text("py", "*.py", "individual").replace("Review py.", "Look harder.")
    )
    assert review_id() not in {first, second}


def test_hasher_does_not_follow_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    link = tmp_path / "link"
    link.symlink_to(outside)
    hasher = ContentHasher()
    before = hasher.digest(str(link))
    outside.write_text("changed secret")
    assert ContentHasher().digest(str(link)) == before
    assert hasher.digest(str(tmp_path / "missing")).startswith("missing:")


def test_rule_without_match_gives_no_task(tmp_path: Path) -> None:
    root = _project(tmp_path, {".deepreview": _rule_text("py", "*.py", "individual")})
    assert _tasks(root, [".deepreview"], ["a.md"]) == []
    assert parse_deepreview(root, ".deepreview").rules[0].scope.folder == ""


def test_gate_rule_tasks_take_a_steps_outputs_as_the_change_set(tmp_path: Path) -> None:
    from deepwork_core.gate.quality import QualityReviewTask
    from deepwork_review.gate import gate_rule_tasks

    root = _project(
        tmp_path,
        {
            ".deepreview": _rule_text("docs", "**/*.md", "individual")
            + _rule_text("whole", "*.json", "all_changed_files"),
            "out/a.md": "a",
            "out/b.md": "b",
            "data.json": "{}",
        },
    )
    assert gate_rule_tasks(root, [], "write") == []
    tasks = gate_rule_tasks(root, ["out/a.md", "./out/b.md"], "write")
    assert all(isinstance(task, QualityReviewTask) for task in tasks)
    assert [(t.step_id, t.run_each, t.files) for t in tasks] == [
        ("write", ".deepreview:docs", ["out/a.md"]),
        ("write", ".deepreview:docs", ["out/b.md"]),
    ]
    assert list(tasks[0].criteria) == ["docs"]
    assert tasks[0].criteria == {"docs": "docs\n\nReview docs."}
    assert tasks[0].guidance is None
    tasks = gate_rule_tasks(root, ["out/a.md", "data.json"], "write")
    assert (".deepreview:whole", ["data.json", "out/a.md"]) in [
        (t.run_each, t.files) for t in tasks
    ]


def test_gate_rule_tasks_carry_the_context_a_rule_asks_for_as_guidance(tmp_path: Path) -> None:
    from deepwork_review.gate import gate_rule_tasks

    extra = (
        "    additional_context:\n      all_changed_filenames: true\n"
        "      unchanged_matching_files: true\n"
    )
    root = _project(
        tmp_path,
        {
            ".deepreview": _rule_text("docs", "**/*.md", "matches_together", extra),
            "out/a.md": "a",
            "old.md": "old",
            "data.json": "{}",
        },
    )
    [task] = gate_rule_tasks(root, ["out/a.md", "data.json"], "write")
    assert task.files == ["out/a.md"]
    assert task.guidance == (
        "All outputs of the step: data.json, out/a.md\n"
        "Unchanged files the rule matches (read for context): old.md"
    )
