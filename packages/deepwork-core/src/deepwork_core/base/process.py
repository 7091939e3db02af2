"""Bounded subprocesses: every child has a deadline, capped output and dies with its group.

This is the one place DeepWork starts and kills child processes (git, hook scripts, the
external reviewer). Each child starts in a new session (its own process group). When it runs
past its deadline, prints more than its output cap, or its caller gives up (`cancel`), the whole
group is killed with SIGKILL; processes that left the group (`setsid`) but still hold one of our
pipes are found through `/proc` and killed too, so nothing keeps us waiting. Once the child
itself has exited, left-over holders of its pipes get a short grace, then are killed the same
way. Limits are listed in docs/limits.md.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ProcessOutputError, ProcessTimeoutError

if TYPE_CHECKING:
    from _typeshed import HasFileno

#: Default cap on what a child may print, per stream.
DEFAULT_OUTPUT_LIMIT = 16 * 1024 * 1024
#: After the child exited, how long processes it left behind may keep its pipes open.
EXIT_GRACE = 1.0
#: After a kill, how long to drain the pipes before closing them regardless.
REAP_TIMEOUT = 2.0
#: How often a waiting call looks at its `cancel` event.
_POLL = 0.1
_CHUNK = 65536

#: Children still running (group id → inodes of their pipes), so a server that is being
#: stopped can kill them all, including processes that left the group but hold a pipe.
_live_groups: dict[int, set[int]] = {}
_live_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def kill_process_group(pid: int) -> None:
    """SIGKILL process group `pid` (a child started as a group leader); gone groups are fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_all_children() -> None:
    """Kill every child still running, its group and holders of its pipes (server stop)."""
    with _live_lock:
        groups = dict(_live_groups)
    for pid in groups:
        kill_process_group(pid)
    _kill_pipe_holders(set().union(*groups.values()) if groups else set())


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    cancel: threading.Event | None = None,
    idle_timeout: float | None = None,
) -> Completed:
    """Run `argv` to completion within `timeout` seconds and return its exit code and output.

    Raises `ProcessTimeoutError` (`process.timeout`) past the deadline, `ProcessOutputError`
    (`process.output_too_large`) when stdout or stderr exceeds `output_limit` bytes, and
    `ProcessTimeoutError` (`process.cancelled`) when `cancel` is set, and `ProcessTimeoutError`
    (`process.stalled`) when `idle_timeout` is given and stdout stays silent that long; in each
    case the child's
    group is killed first. `FileNotFoundError` / `PermissionError` propagate when the
    executable cannot be started.
    """
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    try:
        pump = _Pump(process, input_text, output_limit)
        with _live_lock:
            _live_groups[process.pid] = pump.inodes
        try:
            failure = pump.run(time.monotonic() + timeout, cancel, idle_timeout)
        except BaseException:
            pump.kill()
            raise
        finally:
            pump.close()
    finally:
        with _live_lock:
            _live_groups.pop(process.pid, None)
    if failure == "timeout":
        raise ProcessTimeoutError(f"{argv[0]} did not finish within {timeout:g} s and was killed")
    if failure == "cancelled":
        raise ProcessTimeoutError(f"{argv[0]} was stopped", code=ErrorCode.PROCESS_CANCELLED)
    if failure == "stalled":
        raise ProcessTimeoutError(
            f"{argv[0]} printed nothing for {idle_timeout:g} s and was killed",
            code=ErrorCode.PROCESS_STALLED,
        )
    if failure == "output":
        raise ProcessOutputError(f"{argv[0]} printed more than {output_limit} bytes and was killed")
    assert process.returncode is not None
    return Completed(tuple(argv), process.returncode, pump.text(1), pump.text(2))


class _Pump:
    """Feeds stdin and collects stdout/stderr of one child with a single `select` loop."""

    def __init__(
        self, process: subprocess.Popen[bytes], input_text: str | None, limit: int
    ) -> None:
        self.process = process
        self.limit = limit
        self.buffers: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.selector = selectors.DefaultSelector()
        self.pending = memoryview(input_text.encode("utf-8")) if input_text is not None else None
        self.inodes: set[int] = set()
        self.last_output = time.monotonic()
        assert process.stdout is not None
        assert process.stderr is not None
        for stream, key in ((process.stdout, 1), (process.stderr, 2)):
            os.set_blocking(stream.fileno(), False)
            self.inodes.add(os.fstat(stream.fileno()).st_ino)
            self.selector.register(stream, selectors.EVENT_READ, key)
        if process.stdin is not None:
            self.inodes.add(os.fstat(process.stdin.fileno()).st_ino)
            os.set_blocking(process.stdin.fileno(), False)
            self.selector.register(process.stdin, selectors.EVENT_WRITE, 0)

    def run(
        self, deadline: float, cancel: threading.Event | None, idle: float | None = None
    ) -> str | None:
        """Pump until EOF and exit; the failure (`timeout`, `cancelled`, `output`, `stalled`)
        or None. `idle`: the longest stdout may stay silent while the child runs."""
        exited_at: float | None = None
        self.last_output = time.monotonic()
        while self.selector.get_map():
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                return self._abort("cancelled")
            if idle is not None and exited_at is None and now - self.last_output >= idle:
                return self._abort("stalled")
            if now >= deadline:
                # The child itself finished in time: what is left are processes it left behind.
                return self._abort(None if self.process.poll() is not None else "timeout")
            if exited_at is None and self.process.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= EXIT_GRACE:
                return self._abort(None)
            wait = min(deadline - now, _POLL)
            for key, _ in self.selector.select(wait):
                if not self._service(key):
                    return self._abort("output")
        remaining = max(0.0, deadline - time.monotonic())
        try:
            self.process.wait(remaining)
        except subprocess.TimeoutExpired:
            return self._abort("timeout")
        return None

    def _service(self, key: selectors.SelectorKey) -> bool:
        """Move bytes for one ready pipe; False when the output cap was exceeded."""
        stream = key.fileobj
        assert not isinstance(stream, int)
        if key.data == 0:
            assert self.pending is not None
            try:
                written = os.write(stream.fileno(), self.pending[:_CHUNK])
            except BlockingIOError:
                return True
            except BrokenPipeError:
                written = len(self.pending)
            self.pending = self.pending[written:]
            if not self.pending:
                self._unregister(stream)
            return True
        try:
            chunk = os.read(stream.fileno(), _CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            self._unregister(stream)
            return True
        buffer = self.buffers[key.data]
        buffer += chunk
        if key.data == 1:
            self.last_output = time.monotonic()
        return len(buffer) <= self.limit

    def _unregister(self, stream: int | HasFileno) -> None:
        self.selector.unregister(stream)
        close = getattr(stream, "close", None)
        if close is not None:
            with contextlib.suppress(OSError):
                close()

    def _abort(self, failure: str | None) -> str | None:
        self.kill()
        return failure

    def kill(self) -> None:
        """Kill the group and any escaped holder of our pipes, then reap the child."""
        kill_process_group(self.process.pid)
        _kill_pipe_holders(self.inodes)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(REAP_TIMEOUT)

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            self._unregister(key.fileobj)
        self.selector.close()
        if self.process.returncode is None:
            kill_process_group(self.process.pid)
            self.process.wait()

    def text(self, key: int) -> str:
        return self.buffers[key].decode("utf-8", errors="replace")


def _kill_pipe_holders(inodes: set[int]) -> None:
    """SIGKILL every process of ours that still holds one of the pipes `inodes` (Linux)."""
    proc = Path("/proc")
    if not inodes or not proc.is_dir():
        return
    wanted = {f"pipe:[{inode}]" for inode in inodes}
    me, uid = os.getpid(), os.getuid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if str(fd.readlink()) in wanted:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(entry.name), signal.SIGKILL)
                    break
