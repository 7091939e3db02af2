"""One git worktree per instance of a `isolation: worktree` fan-out (docs/fan-out.md).

Each instance works in `.deepwork/tmp/worktrees/<parent session>/<instance session>` on the branch
`deepwork/<parent session>/<instance session>`, made from the run's commit when the step begins.
When an instance is accepted, everything its worktree holds is written to git's object store as
one tree (`snapshot`), without touching the worktree or its index: that tree is what the gate
accepted. At fan-in a commit of that tree (`judged`: nothing written after the instance passed)
is merged into the run's branch, one instance at a time in item order; a conflict is undone at
once (`git merge --abort`) and reported with its files. A worktree goes when its instance is
merged or aborted, and `sweep` removes those a crash left behind.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError
from deepwork_core.base.git import run_git
from deepwork_core.base.identifiers import SESSION_ID_PATTERN
from deepwork_core.base.layout import TMP_DIR
from deepwork_core.engine.fanout.items import FanOutError
from deepwork_core.state.session_model import FanInstance
from deepwork_core.state.sessions import Session

#: Where the worktrees live, relative to the project (inside the ignored runtime folder).
WORKTREES_DIR = f"{TMP_DIR}/worktrees"
#: Git's identity for fan-in commits when the repository has none configured.
_IDENTITY = ("-c", "user.name=DeepWork", "-c", "user.email=deepwork@localhost")
SESSION_ID = re.compile(SESSION_ID_PATTERN)


@dataclass(frozen=True, slots=True)
class AcceptedTree:
    """An instance's worktree at fan-in: the tree the gate accepted (with the run's own files
    where the agent merged the run's branch in to resolve a conflict), the tree it holds now,
    and the files that differ between them (written after the instance was accepted)."""

    head: str
    tree: str
    now: str
    unjudged: list[str]


@dataclass(frozen=True, slots=True)
class Leftover:
    """A worktree folder still on disk, and why (`deepwork status`)."""

    folder: str
    reason: str


class Worktrees:
    """The git side of worktree isolation, for one project."""

    def __init__(self, project_root: Path) -> None:
        self.project_root = project_root

    def _git(
        self,
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        input_text: str | None = None,
    ) -> str:
        try:
            result = run_git(
                list(args), cwd=cwd or self.project_root, check=check, env=env,
                input_text=input_text,
            )  # fmt: skip
        except GitError as exc:
            raise FanOutError(str(exc), code=ErrorCode.GIT_FAILED) from None
        return result.stdout

    def base_commit(self) -> str:
        """The commit the worktrees start from: the run's branch as it is now."""
        return self._git("rev-parse", "HEAD").strip()

    def base_branch(self) -> str:
        """The run's branch (or commit, when detached): what a conflicted instance merges."""
        name = self._git("rev-parse", "--abbrev-ref", "HEAD").strip()
        return self.base_commit() if name == "HEAD" else name

    def place(self, parent: Session, instance: FanInstance) -> tuple[str, str]:
        """The folder and branch of an instance."""
        where = f"{parent.session_id}/{instance.session_id}"
        return f"{WORKTREES_DIR}/{where}", f"deepwork/{where}"

    def create(self, instance: FanInstance, base: str) -> None:
        """Make the instance's worktree (again, if a crash left half of one)."""
        assert instance.worktree is not None
        assert instance.branch is not None
        self.remove(instance)
        self._git("worktree", "add", "-q", "-b", instance.branch, instance.worktree, base)

    def intact(self, instance: FanInstance) -> bool:
        """True when the instance's worktree is on disk as git made it (its `.git` file is
        there); a removal interrupted part way leaves it not intact."""
        if instance.worktree is None:
            return False
        return (self.project_root / instance.worktree / ".git").is_file()

    def unmerged_commits(self, instance: FanInstance) -> bool:
        """True when the instance's branch still exists and holds commits the run's branch
        does not (gone, or already merged: False)."""
        if instance.branch is None:
            return False
        ref = f"refs/heads/{instance.branch}"
        found = run_git(["rev-parse", "--verify", "-q", ref], cwd=self.project_root, check=False)
        if found.returncode != 0:
            return False
        ancestor = run_git(
            ["merge-base", "--is-ancestor", ref, "HEAD"], cwd=self.project_root, check=False
        )
        return ancestor.returncode != 0

    def commit(self, instance: FanInstance, message: str) -> None:
        """Commit everything the instance changed in its worktree (nothing when unchanged, and
        nothing when a crash already removed the folder after committing it)."""
        folder = self.project_root / (instance.worktree or "")
        if not folder.is_dir():
            return
        self._git("add", "-A", cwd=folder)
        if self._git("status", "--porcelain", cwd=folder).strip():
            self._git(*self._identity(), "commit", "-q", "--no-verify", "-m", message, cwd=folder)

    def snapshot(self, worktree: str) -> str:
        """The tree of everything the worktree holds now (its commits, staged, unstaged and
        untracked files git does not ignore), written to git's object store; the worktree and
        its index are left as they are."""
        folder = self.project_root / worktree
        index = Path(self._git("rev-parse", "--path-format=absolute", "--git-path", "index",
                               cwd=folder).strip())  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="deepwork-index-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            if index.is_file():  # its stat data spares hashing the files that did not change
                shutil.copyfile(index, env["GIT_INDEX_FILE"])
            else:
                self._git("read-tree", "HEAD", cwd=folder, env=env)
            self._git("add", "-A", cwd=folder, env=env)
            return self._git("write-tree", cwd=folder, env=env).strip()

    def judged(self, instance: FanInstance, accepted: str | None, base: str) -> AcceptedTree:
        """What fan-in may merge of `instance`: the tree the gate `accepted` (None: not
        recorded, so everything the worktree holds), beside what it holds now. When the agent
        merged the run's branch into the worktree (to resolve a conflict), the files the run's
        branch changed since `base` are taken as they are now: they are the resolution."""
        folder = self.project_root / (instance.worktree or "")
        head = self._git("rev-parse", "HEAD", cwd=folder).strip()
        now = self.snapshot(instance.worktree or "")
        if accepted is None or accepted == now:
            return AcceptedTree(head, now, now, [])
        tree = accepted
        merged_in = self._git("merge-base", head, "HEAD").strip()
        if merged_in != base:
            listed = self._git("diff", "--name-only", "-z", "--no-renames", base, merged_in)
            tree = self._overlay(folder, accepted, now, [p for p in listed.split("\0") if p])
        listed = self._git("diff-tree", "-r", "-z", "--name-only", "--no-renames", tree, now)
        return AcceptedTree(head, tree, now, sorted(p for p in listed.split("\0") if p))

    def _overlay(self, folder: Path, tree: str, source: str, paths: list[str]) -> str:
        """`tree` with `paths` as `source` holds them (absent there: removed)."""
        if not paths:
            return tree
        entries = self._git("ls-tree", "-r", "-z", "--full-tree", source, "--", *paths, cwd=folder)
        found = {line.split("\t", 1)[1]: line for line in entries.split("\0") if line}
        gone = "0 " + "0" * len(tree)  # mode 0: remove the path
        lines = [found.get(path, f"{gone}\t{path}") for path in paths]  # ls-tree's lines as-is
        with tempfile.TemporaryDirectory(prefix="deepwork-index-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self._git("read-tree", tree, cwd=folder, env=env)
            self._git("update-index", "-z", "--index-info", cwd=folder, env=env,
                      input_text="".join(line + "\0" for line in lines))  # fmt: skip
            return self._git("write-tree", cwd=folder, env=env).strip()

    def commit_tree(self, tree: str, parent: str, message: str, at: str) -> str:
        """A commit of `tree` on `parent`, dated `at` (the same commit when made again)."""
        env = {"GIT_AUTHOR_DATE": at, "GIT_COMMITTER_DATE": at}
        args = ("commit-tree", tree, "-p", parent, "-m", message)
        return self._git(*self._identity(), *args, env=env).strip()

    def keep(self, instance: FanInstance, commit: str) -> str:
        """Keep `commit` (an instance's unjudged changes, not merged) on a branch of its own,
        which no cleanup removes; its name."""
        assert instance.branch is not None
        branch = "deepwork/unmerged/" + instance.branch.removeprefix("deepwork/")
        self._git("branch", "-f", branch, commit)
        return branch

    def merge(self, instance: FanInstance, message: str, commit: str | None = None) -> list[str]:
        """Merge `commit` (default: the instance's branch) into the run's branch; the
        conflicted files (merge undone)."""
        assert instance.branch is not None
        args = ("merge", "--no-ff", "--no-edit", "-q", "-m", message, commit or instance.branch)
        result = run_git([*self._identity(), *args], cwd=self.project_root, check=False)
        if result.returncode == 0:
            return []
        conflicted = self._git("diff", "--name-only", "--diff-filter=U").split()
        self._git("merge", "--abort", check=False)
        if not conflicted:
            detail = result.stderr.strip() or result.stdout.strip()
            raise FanOutError(
                f"merging {instance.branch} failed: {detail}", code=ErrorCode.GIT_FAILED
            )
        return conflicted

    def changed(self, worktree: str) -> list[str]:
        """The files an instance changed in its worktree (project-relative folder), relative
        to the worktree."""
        folder = self.project_root / worktree
        listed = self._git("status", "--porcelain", "-uall", "--no-renames", cwd=folder)
        return sorted(line[3:] for line in listed.splitlines() if len(line) > 3)

    def remove(self, instance: FanInstance) -> None:
        """Remove the instance's worktree and branch, whatever is left of them."""
        if instance.worktree is None or instance.branch is None:
            return
        self.remove_folder(instance.worktree)
        self._git("branch", "-q", "-D", instance.branch, check=False)

    def remove_folder(self, folder: str) -> None:
        self._git("worktree", "remove", "--force", folder, check=False)
        shutil.rmtree(self.project_root / folder, ignore_errors=True)
        self._git("worktree", "prune", check=False)

    def branches(self) -> list[str]:
        """Instance-shaped branches (`deepwork/<parent session>/<instance session>`) as the
        folders their places imply; never a workflow's own branch."""
        listed = run_git(
            ["for-each-ref", "--format=%(refname:short)", "refs/heads/deepwork/"],
            cwd=self.project_root,
            check=False,
        )
        folders = []  # outside a repository git fails and prints nothing on stdout: no branches
        for branch in listed.stdout.split():
            parts = branch.split("/")
            if len(parts) == 3 and all(SESSION_ID.fullmatch(part) for part in parts[1:]):
                folders.append(f"{WORKTREES_DIR}/{parts[1]}/{parts[2]}")
        return folders

    def remove_orphan(self, folder: str) -> None:
        """Remove a leftover instance folder and the branch its place implies."""
        self.remove_folder(folder)
        branch = "deepwork/" + folder.removeprefix(f"{WORKTREES_DIR}/")
        self._git("branch", "-q", "-D", branch, check=False)

    def on_disk(self) -> list[str]:
        """Every instance worktree folder present, project-relative."""
        root = self.project_root / WORKTREES_DIR
        if not root.is_dir():
            return []
        return sorted(
            f"{WORKTREES_DIR}/{run.name}/{one.name}"
            for run in root.iterdir()
            if run.is_dir()
            for one in run.iterdir()
            if one.is_dir()
        )

    def _identity(self) -> tuple[str, ...]:
        named = run_git(["config", "user.email"], cwd=self.project_root, check=False)
        return () if named.stdout.strip() else _IDENTITY
