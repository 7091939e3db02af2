"""Safe, bounded YAML reading with line numbers.

Only YAML's safe subset is ever constructed (libyaml's C parser when present). Hostile input —
malformed YAML, binary bytes, huge files, deep nesting, alias bombs — becomes a `YamlError` with a
stable code in bounded time and memory. Alongside the data we keep a map from each key path
(`("steps", 2, "outputs")`) to its 1-based line, so later checks can point at a line.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from deepwork_core.errors import YamlError

MAX_BYTES = 1024 * 1024
#: Upper bound on nodes visited with aliases expanded (a billion-laughs file explodes past it).
MAX_NODES = 200_000
MAX_DEPTH = 100

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class YamlDocument:
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, path: KeyPath) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


def read_yaml_file(path: Path) -> YamlDocument:
    """Read and parse `path` (see `parse_yaml`). A missing file raises `yaml.unreadable`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise YamlError(f"cannot read {path}: {exc.strerror}", code="yaml.unreadable") from None
    return parse_yaml(raw)


def parse_yaml(raw: bytes | str) -> YamlDocument:
    """Parse one YAML document. Empty input gives `data=None`."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if len(raw) > MAX_BYTES:
        raise YamlError(
            f"file is larger than {MAX_BYTES // 1024} KiB; a DeepWork file is never that big",
            code="yaml.too_large",
        )
    if b"\x00" in raw:
        raise YamlError("file contains NUL bytes; it is binary, not YAML", code="yaml.not_text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlError(
            f"file is not UTF-8 text (byte {exc.start})", code="yaml.not_text"
        ) from None

    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise YamlError(
                f"invalid YAML{where}: {exc.problem or exc}", code="yaml.syntax"
            ) from None
        except yaml.YAMLError as exc:
            raise YamlError(f"invalid YAML: {exc}", code="yaml.syntax") from None
        except RecursionError:
            raise YamlError("YAML nesting is too deep", code="yaml.too_complex") from None
        if node is None:
            return YamlDocument(None)
        lines: dict[KeyPath, int] = {}
        _index(node, (), lines, [0])
        try:
            data = loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise YamlError(f"invalid YAML value: {exc}", code="yaml.syntax") from None
        except RecursionError:
            raise YamlError("YAML nesting is too deep", code="yaml.too_complex") from None
    finally:
        loader.dispose()
    return YamlDocument(data, lines)


def _index(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], visited: list[int]) -> None:
    """Record key lines and enforce the node and depth budgets (aliases counted expanded)."""
    visited[0] += 1
    if visited[0] > MAX_NODES:
        raise YamlError(
            f"YAML expands to more than {MAX_NODES} nodes (an alias bomb?)", code="yaml.too_complex"
        )
    if len(path) > MAX_DEPTH:
        raise YamlError("YAML nesting is too deep", code="yaml.too_complex")
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Hashable] = set()
        for key_node, value_node in node.value:
            key: str | int = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            if key in seen:
                raise YamlError(
                    f"duplicate key {key!r} at line {key_node.start_mark.line + 1}",
                    code="yaml.duplicate_key",
                )
            seen.add(key)
            lines.setdefault((*path, key), key_node.start_mark.line + 1)
            _index(value_node, (*path, key), lines, visited)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _index(item, (*path, position), lines, visited)
