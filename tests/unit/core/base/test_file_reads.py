"""`read_bytes_file` reads what the file holds, in one read or several, and no more than asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.base.errors import FileReadError
from deepwork_core.base.fsutil import read_bytes_file


def test_a_small_file_reads_whole_under_a_large_limit(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b'{"a": 1}\n')
    assert read_bytes_file(path, limit=32 * 1024 * 1024) == b'{"a": 1}\n'


def test_a_file_larger_than_one_read_comes_back_whole(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000  # 256,000 bytes: several reads
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert read_bytes_file(path, limit=len(data)) == data


@pytest.mark.parametrize("size", [0, 1, 4096, 70_000])
def test_the_limit_is_inclusive(tmp_path: Path, size: int) -> None:
    path = tmp_path / "exact.bin"
    path.write_bytes(b"x" * size)
    assert len(read_bytes_file(path, limit=size)) == size
    if size:
        with pytest.raises(FileReadError) as caught:
            read_bytes_file(path, limit=size - 1)
        assert caught.value.code == "file.too_large"
