"""The change watch: which files were written since a snapshot, without a `git status`.

A `git status` of a repository of 10,000 files costs tens of milliseconds; the scope guard needs
one at every checkpoint. A `ChangeWatch` asks the kernel (Linux inotify) to report every change
under the project instead, so a checkpoint only looks at the files written since its step began
(docs/evidence.md, "The change watch").

The watch is a shortcut, never the judge: `touched_since` answers None, and the scope guard runs
`git status` as before, whenever the watch cannot be trusted:

- it is not running (not Linux, not a plain git work tree, a nested repository, too many folders
  for the kernel's watch limit) or was started after the snapshot it is asked about;
- the kernel's event queue overflowed, a folder was moved or renamed, or the project folder
  itself went away;
- git's own files changed (a commit, `git add`, a checkout: anything that moves HEAD or the
  index) or a `.gitignore` / `.gitattributes` changed (in the project or a folder above it);
- the ignore rules changed and a folder the watch left alone because git ignored it could not
  be checked again (it stops vouching until it could: a folder git no longer ignores is then
  watched like any other, its files counted as written);
- a touched file needs git's view that the watch does not hold (an ignore check that fails, a
  file marked assume-unchanged or skip-worktree).

The kernel queues an event before the write that caused it returns, so reading the queue at a
checkpoint sees every change made before the call: there is no delay to wait out. Like git's own
file-system monitor, the watch does not see writes through a shared memory mapping, nor changes
made by another machine on a network file system. Events are read only when a snapshot is taken
or compared; nothing runs in the background.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
import weakref
from pathlib import Path

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.git import run_git
from deepwork_core.base.layout import TMP_DIR
from deepwork_core.evidence.git_index import IndexEntry, read_index
from deepwork_core.evidence.ignore_check import IgnoreChecker
from deepwork_core.evidence.ignore_rules import IgnoreRules
from deepwork_core.evidence.inotify import (
    IN_CREATE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    Handles,
    add_watch,
    decode,
    open_inotify,
    read_queue,
)

#: Folders one watch follows at most; a larger tree keeps using `git status`.
MAX_FOLDERS = 50_000
#: Touched paths remembered at most before the watch starts over (the next check runs git).
MAX_TOUCHED = 100_000
#: Paths one ignore check asks git about at most (more: `git status` instead).
MAX_IGNORE_CHECK = 500
_RULE_FILES = frozenset({".gitignore", ".gitattributes"})
_RUNTIME = TMP_DIR + "/"


class ChangeWatch:
    """Watches one project folder in a git work tree. Thread-safe; `start` before use."""

    def __init__(self, project_root: Path, *, global_excludes: Path | None = None) -> None:
        """`global_excludes`: the user's ignore file when `core.excludesFile` is not set (git's
        default, `$XDG_CONFIG_HOME/git/ignore`); unknown, every new file is asked of git."""
        self.root = project_root.resolve()
        self._global_excludes = global_excludes
        self._rule_files: set[Path] = set()
        self._rules: IgnoreRules | None = None
        self._ident = secrets.token_hex(6)
        self._lock = threading.Lock()
        self._setup_lock = threading.Lock()
        self._handles = Handles(IgnoreChecker(self.root))
        self._live = False
        self._dirs: dict[int, str] = {}  # watch descriptor -> project-relative folder ("" top)
        self._git_dirs: dict[int, Path] = {}  # watch descriptor -> a folder of git's own
        self._rule_dirs: dict[int, str] = {}  # watch descriptor -> the ignore file named there
        #: Folders not watched because git ignored them, asked again when the rules may have
        #: moved (`_recheck`): one git stops ignoring must be watched from then on.
        self._unwatched: set[str] = set()
        self._recheck = False
        self._epoch = 1
        self._valid_from = 1  # tokens of an earlier epoch are not trusted
        self._touched: dict[str, int] = {}
        self._index: dict[str, IndexEntry] = {}
        self._index_stale = False
        self._excludes_known = False
        self._ignored: dict[str, bool] = {}  # path -> whether git ignores it, as last asked
        self._ignore = self._handles.ignore
        weakref.finalize(self, self._handles.release)

    # --- life -----------------------------------------------------------------------------

    def start(self) -> bool:
        """Set the watch up (one walk of the tree and three git calls); True when it is live.

        Safe to run in a thread of its own: until it is done the scope guard uses `git status`.
        """
        with self._setup_lock:
            if self._live or self._handles.fd >= 0:
                return self._live
            try:
                ready = self._set_up()
            except (OSError, subprocess.SubprocessError, ValueError, DeepWorkError):
                ready = False
            with self._lock:
                if ready:
                    self._live = True
                else:
                    self._close_fd()
            return ready

    def close(self) -> None:
        """Stop watching (the scope guard goes back to `git status`)."""
        with self._lock:
            self._live = False
            self._close_fd()
            self._ignore.close()

    @property
    def live(self) -> bool:
        return self._live

    # --- the scope guard's questions --------------------------------------------------------

    def mark(self) -> str | None:
        """A token for a snapshot being taken now, or None when the watch cannot vouch for the
        changes after it. Call it before reading the repository."""
        with self._lock:
            if not self._drain():
                return None
            if self._index_stale:
                try:
                    self._load_index()
                except (OSError, ValueError, DeepWorkError):
                    self._live = False  # the guard goes on with `git status` alone
                    return None
            return self._issue()

    def touched_since(self, token: str | None) -> tuple[set[str], str] | None:
        """The project-relative files written since the snapshot of `token`, and the token of
        a snapshot taken now; None when only `git status` can tell."""
        ident, _, epoch_text = (token or "").partition(":")
        if ident != self._ident or not epoch_text.isdigit():
            return None
        epoch = int(epoch_text)
        with self._lock:
            if not self._drain() or epoch < self._valid_from or self._index_stale:
                return None
            touched = {path for path, seen in self._touched.items() if seen > epoch}
            return touched, self._issue()

    def index_entry(self, path: str) -> IndexEntry | None:
        """The index's (mode, object id) of a tracked file; None when it is not tracked."""
        with self._lock:
            return self._index.get(path)

    def ignored(self, paths: list[str]) -> set[str] | None:
        """Which `paths` git ignores; None when the check failed (ask `git status`). Answers
        are kept until the ignore rules may have changed."""
        with self._lock:
            if self._rules is None:
                self._rules = IgnoreRules(self._rule_files, complete=self._excludes_known)
            unknown = [path for path in paths if path not in self._ignored]
            self._ignored.update((p, False) for p in unknown if not self._rules.may_ignore(p))
            ask = [path for path in unknown if path not in self._ignored]
            if len(ask) > MAX_IGNORE_CHECK:
                return None
            answer = self._ignore.check(ask)
            if answer is None:
                return None
            if len(self._ignored) + len(ask) > MAX_TOUCHED:
                self._ignored.clear()
            self._ignored.update((path, path in answer) for path in ask)
            return {path for path in paths if self._ignored.get(path, path in answer)}

    # --- inside ---------------------------------------------------------------------------

    def _issue(self) -> str:
        token = f"{self._ident}:{self._epoch}"
        self._epoch += 1
        return token

    def _reset(self) -> None:
        """Forget what was seen: no earlier token is trusted any more."""
        self._touched.clear()
        self._ignored.clear()
        self._rules = None  # read the ignore files again
        self._ignore.close()  # and a fresh `git check-ignore` reads the rules and index again
        self._recheck = bool(self._unwatched)  # and asks again about the folders left alone
        self._valid_from = self._epoch  # a token issued from now on is trusted again

    def _set_up(self) -> bool:
        if not sys.platform.startswith("linux"):
            return False
        shown = run_git(["rev-parse", "--show-toplevel", "--absolute-git-dir"], cwd=self.root)
        top, git_dir = (Path(line) for line in shown.stdout.splitlines()[:2])
        if git_dir != top / ".git" or not git_dir.is_dir():
            return False  # a linked work tree or a separate git folder: not followed
        listed = run_git(
            ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
            cwd=self.root,
        ).stdout
        ignored = {entry.rstrip("/") for entry in listed.split("\0") if entry.endswith("/")}
        self._load_index()
        rule_folders = self._note_rule_files(top, git_dir)
        self._handles.fd = open_inotify()
        if self._handles.fd < 0:
            return False
        for folder, name in rule_folders:
            self._rule_dirs[self._add(folder, None)] = name
        self._add_git_folder(git_dir, recursive=False)
        for below in ("refs", "logs", "info"):
            self._add_git_folder(git_dir / below, recursive=True)
        return self._watch_tree("", ignored, skip_git=top == self.root) is not None

    def _note_rule_files(self, top: Path, git_dir: Path) -> list[tuple[Path, str]]:
        """The ignore files above the project, git's own and the user's (the tree's own are
        noted as the tree is walked); the folders outside the project to watch for a change of
        one, each with the name of its ignore file."""
        above = [folder for folder in self.root.parents if folder.is_relative_to(top)]
        self._rule_files.update(folder / ".gitignore" for folder in above)
        watched = [(folder, ".gitignore") for folder in above]
        self._rule_files.add(git_dir / "info" / "exclude")
        configured = run_git(["config", "--path", "--get", "core.excludesFile"], cwd=self.root,
                             check=False).stdout.strip()  # fmt: skip
        excludes = Path(configured) if configured else self._global_excludes
        self._excludes_known = excludes is not None
        if excludes is not None:
            excludes = excludes if excludes.is_absolute() else self.root / excludes
            self._rule_files.add(excludes)
            if excludes.parent.is_dir() and not excludes.parent.is_relative_to(self.root):
                watched.append((excludes.parent, excludes.name))
        return watched

    def _add_git_folder(self, folder: Path, *, recursive: bool) -> None:
        """Watch a folder of git's own (HEAD, the index, refs, reflogs, excludes): any change
        there means git's view moved."""
        if not folder.is_dir():
            return
        for found, _, _ in os.walk(folder) if recursive else [(str(folder), [], [])]:
            self._git_dirs[self._add(Path(found), None)] = Path(found)

    def _watch_tree(self, relative: str, ignored: set[str], *, skip_git: bool) -> list[str] | None:
        """Watch `relative` and the folders below it (not ignored ones); return the files found
        there, or None when the tree cannot be watched (a nested repository, too many folders)."""
        files: list[str] = []
        for current, dirnames, filenames in os.walk(self.root / relative):
            rel = Path(current).relative_to(self.root).as_posix()
            rel = "" if rel == "." else rel
            if ".git" in dirnames or ".git" in filenames:
                if not (skip_git and rel == "" and ".git" in dirnames):
                    return None  # a nested repository or submodule: git's view is its own
                dirnames.remove(".git")
            self._unwatched.update(_join(rel, d) for d in dirnames if _join(rel, d) in ignored)
            dirnames[:] = [d for d in dirnames if not _skipped(_join(rel, d), ignored)]
            if len(self._dirs) >= MAX_FOLDERS:
                return None
            self._add(Path(current), rel)
            files.extend(_join(rel, name) for name in filenames)
            if ".gitignore" in filenames:
                self._rule_files.add(Path(current) / ".gitignore")
        return files

    def _add(self, folder: Path, relative: str | None) -> int:
        wd = add_watch(self._handles.fd, folder)
        if relative is not None:
            self._dirs[wd] = relative
        return wd

    def _load_index(self) -> None:
        self._index, self._index_stale = read_index(self.root), False

    def _drain(self) -> bool:
        """Read the queued events into the touched set; False when the watch is not live."""
        if not self._live:
            return False
        pending: list[str] = []
        try:
            for data in read_queue(self._handles.fd):
                self._events(data, pending)
        except OSError:
            self._live = False
            return False
        for folder in pending:
            self._new_folder(folder)
        if len(self._touched) > MAX_TOUCHED:
            self._reset()
        if self._recheck and self._live:
            return self._cover_unignored()
        return self._live

    def _events(self, data: bytes, new_folders: list[str]) -> None:
        for wd, mask, name in decode(data):
            if mask & IN_Q_OVERFLOW or wd in self._git_dirs:
                self._reset()
                self._git_event(wd, mask, name)
                continue
            if wd in self._rule_dirs:
                if name == self._rule_dirs[wd] or mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                    self._reset()  # an ignore file above the project, or the user's, changed
                continue
            folder = self._dirs.get(wd)
            if folder is None:
                continue  # a folder no longer watched
            if mask & IN_IGNORED:
                del self._dirs[wd]
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                if folder == "":
                    self._live = False  # the project folder itself went away
                continue
            path = _join(folder, name)
            if path.startswith(_RUNTIME) or path == TMP_DIR:
                continue
            if mask & IN_ISDIR:
                if mask & IN_MOVED_FROM:
                    self._reset()  # its files moved without an event each
                elif mask & (IN_CREATE | IN_MOVED_TO):
                    new_folders.append(path)
                continue
            if name in _RULE_FILES:
                self._rule_files.add(self.root / path)
                self._reset()
            self._touched[path] = self._epoch

    def _git_event(self, wd: int, mask: int, name: str) -> None:
        """git's view moved: reload the index before trusting the watch again, and follow a
        new folder of refs."""
        self._index_stale = True
        git_folder = self._git_dirs.get(wd)
        if git_folder is not None and mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
            try:
                self._add_git_folder(git_folder / name, recursive=True)
            except OSError:
                self._live = False

    def _new_folder(self, relative: str) -> None:
        """A folder appeared: watch it unless git ignores it, and count its files as touched."""
        answer = self._ignore.check([relative + "/"])
        if answer is None:
            self._unwatched.add(relative)  # asked again before the watch vouches again
            self._reset()
            return
        if answer:
            self._unwatched.add(relative)
            return
        self._new_folder_files(relative)

    def _new_folder_files(self, relative: str) -> None:
        """Watch a folder git does not ignore and count its files as touched."""
        try:
            files = self._watch_tree(relative, set(), skip_git=False)
        except OSError:
            files = None
        if files is None:
            self._live = False  # a nested repository, or too large: git status from now on
            return
        for path in files:
            self._touched[path] = self._epoch
        for path in files:
            if path.rsplit("/", 1)[-1] in _RULE_FILES:
                self._reset()

    def _cover_unignored(self) -> bool:
        """The ignore rules may have moved: watch each folder left alone that git no longer
        ignores, counting its files as written. False (vouch for nothing yet) when git could
        not say; the next question asks again."""
        folders = sorted(self._unwatched)
        if len(folders) > MAX_IGNORE_CHECK:
            self._live = False  # too many to ask at each change of the rules: git status
            return False
        answer = self._ignore.check([folder + "/" for folder in folders])
        if answer is None:
            return False
        self._recheck = False
        for folder in folders:
            if folder + "/" in answer:
                continue
            self._unwatched.discard(folder)
            self._new_folder_files(folder)
        return self._live

    def _close_fd(self) -> None:
        self._handles.close_fd()
        self._dirs.clear()
        self._git_dirs.clear()
        self._rule_dirs.clear()


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _skipped(relative: str, ignored: set[str]) -> bool:
    return relative in ignored or relative == TMP_DIR or relative.startswith(_RUNTIME)
