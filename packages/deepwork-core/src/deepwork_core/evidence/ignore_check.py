"""A long-lived `git check-ignore --stdin` helper: asks git's ignore rules about many paths
without a new process each time (the change watch's questions, docs/evidence.md)."""

from __future__ import annotations

import errno
import os
import select
import subprocess
import time
from pathlib import Path

from deepwork_core.base.git import git_env

#: Bound of one exchange with the `git check-ignore` helper.
IGNORE_TIMEOUT = 5.0


class IgnoreChecker:
    """One `git check-ignore --stdin -z -v -n` process in `root`, started on first use and again
    after it failed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None

    def check(self, paths: list[str]) -> set[str] | None:
        """Which of `paths` git ignores; None when git could not tell (the helper is stopped)."""
        if not paths:
            return set()
        try:
            process = self._process()
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(b"".join(os.fsencode(p) + b"\0" for p in paths))
            process.stdin.flush()
            fields = _read_fields(process.stdout.fileno(), 4 * len(paths))
        except (OSError, subprocess.SubprocessError, TimeoutError):
            self.close()
            return None
        ignored: set[str] = set()
        for i, path in enumerate(paths):
            source, _line, pattern = fields[4 * i : 4 * i + 3]
            if source and not pattern.startswith("!"):  # a `!` pattern matched: not ignored
                ignored.add(path)
        return ignored

    def _process(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self.close()
            self.process = subprocess.Popen(
                ["git", "check-ignore", "--stdin", "-z", "-v", "-n"],
                cwd=self.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(),
            )
        return self.process

    def close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            _stop(process)


def _read_fields(fd: int, count: int) -> list[str]:
    """`count` NUL-terminated fields from `fd`, within `IGNORE_TIMEOUT`."""
    deadline = time.monotonic() + IGNORE_TIMEOUT
    data = b""
    while data.count(b"\0") < count:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("git check-ignore did not answer")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise OSError(errno.EPIPE, "git check-ignore ended")
        data += chunk
    return [os.fsdecode(field) for field in data.split(b"\0")[:count]]


def _stop(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()
    if process.poll() is None:
        process.kill()
    process.wait()
