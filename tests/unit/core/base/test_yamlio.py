"""deepwork_core.base.yamlio: safe, bounded YAML with line numbers; hostile input is a clear
error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from deepwork_core.base import yamlio
from deepwork_core.base.errors import YamlError
from deepwork_core.base.yamlio import MAX_BYTES, MAX_DEPTH, MAX_NODES, parse_yaml, read_yaml_file
from deepwork_core.jobs.parser import parse_job_dir


def _billion_laughs(levels: int = 10, width: int = 10) -> bytes:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return ("\n".join(lines) + "\n").encode()


def _code_of(raw: bytes | str) -> str:
    with pytest.raises(YamlError) as raised:
        parse_yaml(raw)
    return raised.value.code


def test_lines_of_keys_and_items() -> None:
    document = parse_yaml("a: 1\nb:\n  - x\n  - c: 2\n")
    assert document.data == {"a": 1, "b": ["x", {"c": 2}]}
    assert document.line_of(("a",)) == 1
    assert document.line_of(("b", 1, "c")) == 4
    assert document.line_of(("b", 1, "missing", 7)) == 4  # nearest known ancestor


def test_safe_scalars_and_aliases_still_work() -> None:
    document = parse_yaml("base: &b {x: 1}\ncopy: *b\nflag: yes\nn: 0x10\nwhen: 2024-01-02\n")
    assert document.data["copy"] == {"x": 1}
    assert document.data["n"] == 16
    assert document.data["flag"] is True


def test_empty_and_comment_only_input_has_no_data() -> None:
    assert parse_yaml(b"").data is None
    assert parse_yaml(b"# nothing\n\n").data is None


def test_utf8_bom_is_accepted() -> None:
    assert parse_yaml("\ufeffname: demo\n".encode()).data == {"name": "demo"}


def test_malformed_yaml_names_the_line() -> None:
    with pytest.raises(YamlError) as raised:
        parse_yaml("a: 1\nb: [1, 2\nc: 3\n")
    assert raised.value.code == "yaml.syntax"
    assert raised.value.line is not None
    assert f"line {raised.value.line}" in raised.value.message


def test_several_documents_are_rejected() -> None:
    assert _code_of("a: 1\n---\nb: 2\n") == "yaml.syntax"


def test_unsafe_tags_are_never_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    raw = f"x: !!python/object/apply:os.system ['touch {marker}']\n"
    assert _code_of(raw) == "yaml.syntax"
    assert not marker.exists()


def test_undefined_alias_is_a_syntax_error() -> None:
    assert _code_of("a: *nowhere\n") == "yaml.syntax"


def test_duplicate_keys_are_rejected_with_their_line() -> None:
    with pytest.raises(YamlError) as raised:
        parse_yaml("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert (raised.value.code, raised.value.line) == ("yaml.duplicate_key", 4)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"name: demo\x00\n", id="nul-byte"),
        pytest.param(b"name: \xff\xfe\xfd\n", id="invalid-utf8"),
        pytest.param(bytes(range(256)) * 64, id="random-binary"),
        pytest.param(b"name: \x07bell\n", id="control-character"),
    ],
)
def test_binary_content_is_not_text(raw: bytes) -> None:
    assert _code_of(raw) == "yaml.not_text"


def test_a_5_mb_file_is_refused_without_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yml"
    path.write_bytes(b"key: " + b"x" * (5 * 1024 * 1024) + b"\n")
    with pytest.raises(YamlError) as raised:
        read_yaml_file(path)
    assert raised.value.code == "yaml.too_large"
    assert _code_of(b"a: 1\n" * (MAX_BYTES // 5 + 1)) == "yaml.too_large"


def test_billion_laughs_stops_at_the_node_budget() -> None:
    raw = _billion_laughs()
    assert len(raw) < 2000  # ten levels of ten: 10**10 nodes when expanded
    with pytest.raises(YamlError) as raised:
        parse_yaml(raw)
    assert raised.value.code == "yaml.too_complex"
    assert str(MAX_NODES) in raised.value.message


def test_aliases_within_budget_are_fine() -> None:
    assert len(parse_yaml(_billion_laughs(levels=3)).data["l2"]) == 10


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"[" * 400_000 + b"]" * 400_000, id="flow-sequences"),
        pytest.param(b"{a: " * 200_000 + b"1" + b"}" * 200_000, id="flow-mappings"),
        pytest.param(
            b"".join(b" " * i + b"k:\n" for i in range(MAX_DEPTH + 50)), id="block-mappings"
        ),
    ],
)
def test_deep_nesting_is_refused(raw: bytes) -> None:
    assert len(raw) <= MAX_BYTES
    assert _code_of(raw) == "yaml.too_complex"


def test_deep_nesting_never_crashes_the_process(tmp_path: Path) -> None:
    """libyaml's own composer overflows the C stack here: a segfault, not an exception.

    Run in a child process so that a regression shows up as a clean failure of this test.
    """
    job_dir = tmp_path / "deep"
    job_dir.mkdir()
    (job_dir / "job.yml").write_bytes(b"steps: " + b"[" * 500_000 + b"]" * 500_000)
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from deepwork_core.jobs.parser import parse_job_dir
        parsed = parse_job_dir(Path({str(job_dir)!r}))
        print(parsed.problems[0].code)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "yaml.too_complex"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        pytest.param(b"x" * (5 * 1024 * 1024), "yaml.too_large", id="5mb"),
        pytest.param(_billion_laughs(), "yaml.too_complex", id="alias-bomb"),
        pytest.param(b"a: [1, 2\n" * 1000, "yaml.syntax", id="unbalanced"),
        pytest.param(b"[" * 5000 + b"]" * 5000, "yaml.too_complex", id="deep"),
    ],
)
def test_hostile_job_files_become_one_problem(tmp_path: Path, raw: bytes, code: str) -> None:
    job_dir = tmp_path / "hostile"
    job_dir.mkdir()
    (job_dir / "job.yml").write_bytes(raw)
    parsed = parse_job_dir(job_dir)
    assert [p.code for p in parsed.problems] == [code]
    assert parsed.problems[0].file == job_dir / "job.yml"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        pytest.param(b"[" * 400_000 + b"]" * 400_000, "yaml.too_complex", id="deep"),
        pytest.param(_billion_laughs(), "yaml.too_complex", id="alias-bomb"),
        pytest.param(b"a: 1\nb: [1,\n", "yaml.syntax", id="malformed"),
        pytest.param(b"x: \x07\n", "yaml.not_text", id="control-character"),
        pytest.param(b"a: 1\na: 2\n", "yaml.duplicate_key", id="duplicate-key"),
    ],
)
def test_the_pure_python_loader_is_just_as_bounded(
    monkeypatch: pytest.MonkeyPatch, raw: bytes, code: str
) -> None:
    """Without libyaml (e.g. a platform with no wheel) PyYAML's pure-Python loader is used."""
    monkeypatch.setattr(yamlio, "_Loader", yaml.SafeLoader)
    assert _code_of(raw) == code
    assert parse_yaml(b"a: [1, {b: 2}]\n").data == {"a": [1, {"b": 2}]}
