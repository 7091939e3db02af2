"""The kernel's side of the change watch: Linux inotify(7) through libc (docs/evidence.md).

What `deepwork_core.evidence.watch` asks of the kernel, and nothing of git or the scope guard:
the event bits it watches for, a non-blocking inotify descriptor, adding a folder to it, the
events one read returns, and the descriptor a watch holds open.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from deepwork_core.evidence.ignore_check import IgnoreChecker

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x01000000, 0x02000000, 0x40000000
#: What every watched folder reports: any write, move, creation or deletion in it, or of it.
WATCH_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
    | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
)  # fmt: skip
_EVENT = struct.Struct("iIII")
#: Bytes one read of the queue takes at the most.
_READ_SIZE = 256 * 1024


def open_inotify() -> int:
    """A new non-blocking inotify descriptor (negative when the kernel refuses one)."""
    return int(_libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))


def add_watch(fd: int, folder: Path) -> int:
    """Watch `folder` on `fd`; its watch descriptor. Raises OSError when the kernel refuses."""
    wd = int(_libc().inotify_add_watch(fd, os.fsencode(folder), WATCH_MASK))
    if wd < 0:
        raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
    return wd


def read_queue(fd: int) -> Iterator[bytes]:
    """Every block of events queued on `fd` now; stops when the queue is empty. Raises
    OSError when the descriptor can no longer be read."""
    while True:
        try:
            yield os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return


def decode(data: bytes) -> Iterator[tuple[int, int, str]]:
    """(watch descriptor, event bits, name in the folder) of each event in `data`."""
    offset = 0
    while offset < len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        offset += _EVENT.size
        name = os.fsdecode(data[offset : offset + length].rstrip(b"\0"))
        offset += length
        yield wd, mask, name


class Handles:
    """What a watch holds open (released when the watch is closed or collected)."""

    def __init__(self, ignore: IgnoreChecker) -> None:
        self.fd = -1
        self.ignore = ignore

    def close_fd(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def release(self) -> None:
        self.close_fd()
        self.ignore.close()


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        _LIBC = libc
    return _LIBC
