"""Safe, bounded YAML reading with line numbers.

Only YAML's safe subset is ever constructed (libyaml's C parser when present). Hostile input —
malformed YAML, binary bytes, huge files, deep nesting, alias bombs — becomes a `YamlError` with a
stable code in bounded time and memory:

- `yaml.too_large`: more than `MAX_BYTES` (checked before parsing; only that much is ever read);
- `yaml.not_text`: NUL bytes, invalid UTF-8 or characters YAML does not accept;
- `yaml.syntax`: the YAML is malformed (with line and column);
- `yaml.too_complex`: nesting deeper than `MAX_DEPTH`, or more than `MAX_NODES` nodes with every
  alias expanded (a billion-laughs file stops here, long before anything expands it);
- `yaml.duplicate_key`: a mapping repeats a key (PyYAML would silently keep the last one).

The node tree is composed from the parser's event stream by an iterative loop rather than by
PyYAML's recursive composer: libyaml's C composer overflows the C stack (a segfault, not an
exception) on a file of a few hundred thousand `[`. Alongside the data we keep a map from each key
path (`("steps", 2, "outputs")`) to its 1-based line, so later checks can point at a line.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, YamlError
from deepwork_core.base.fsutil import read_bytes_file

MAX_BYTES = 1024 * 1024
#: Upper bound on nodes with aliases expanded (a billion-laughs file explodes past it).
MAX_NODES = 200_000
MAX_DEPTH = 100

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class YamlDocument:
    data: Any
    lines: Mapping[KeyPath, int] = field(default_factory=dict)

    def line_of(self, path: KeyPath) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


def read_yaml_file(path: Path) -> YamlDocument:
    """Read and parse `path` (see `parse_yaml`). An unreadable file raises `yaml.unreadable`."""
    return parse_yaml(read_limited(path))


def read_limited(path: Path) -> bytes:
    """The bytes of regular file `path` (`yaml.too_large` above `MAX_BYTES`)."""
    try:
        return read_bytes_file(path, limit=MAX_BYTES)
    except FileReadError as exc:
        code = (
            ErrorCode.YAML_TOO_LARGE
            if exc.code == ErrorCode.FILE_TOO_LARGE
            else ErrorCode.YAML_UNREADABLE
        )
        raise YamlError(exc.message, code=code) from None


def parse_yaml(raw: bytes | str) -> YamlDocument:
    """Parse one YAML document. Empty input (or only comments) gives `data=None`."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if len(raw) > MAX_BYTES:
        raise YamlError(
            f"file is larger than {MAX_BYTES // 1024} KiB; a DeepWork file is never that big",
            code=ErrorCode.YAML_TOO_LARGE,
        )
    if b"\x00" in raw:
        raise YamlError(
            "file contains NUL bytes; it is binary, not YAML", code=ErrorCode.YAML_NOT_TEXT
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlError(
            f"file is not UTF-8 text (invalid byte at offset {exc.start})",
            code=ErrorCode.YAML_NOT_TEXT,
        ) from None

    loader: yaml.SafeLoader | None = None
    try:
        loader = _Loader(text)  # the pure-Python reader already checks characters here
        node = _compose(loader)
        if node is None:
            return YamlDocument(None)
        lines: dict[KeyPath, int] = {}
        _index(node, (), lines)
        data = loader.construct_document(node)
    except yaml.reader.ReaderError as exc:
        raise YamlError(f"file is not YAML text: {exc}", code=ErrorCode.YAML_NOT_TEXT) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        where = f" at line {line}, column {mark.column + 1}" if mark else ""
        raise YamlError(
            f"invalid YAML{where}: {exc.problem or exc.context or exc}",
            code=ErrorCode.YAML_SYNTAX,
            line=line,
        ) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}", code=ErrorCode.YAML_SYNTAX) from None
    finally:
        if loader is not None:
            loader.dispose()
    return YamlDocument(data, lines)


def _too_complex(message: str, mark: Any) -> YamlError:
    line = mark.line + 1 if mark is not None else None
    where = f" (line {line})" if line is not None else ""
    return YamlError(f"{message}{where}", code=ErrorCode.YAML_TOO_COMPLEX, line=line)


#: An open collection: (node, anchor, children, summed weight of the children).
_Open = tuple[Any, str | None, list[yaml.Node], list[int]]
#: A finished node: (node, weight, anchor).
_Finished = tuple[yaml.Node, int, str | None]


def _compose(loader: Any) -> yaml.Node | None:
    """Build the node tree of the single document in `loader`, iteratively and within budget.

    Each finished node gets a weight: the number of nodes it stands for with every alias
    expanded. A weight above `MAX_NODES` stops composition, so memory and time stay bounded.

    `loader` is typed `Any`: PyYAML's stubs leave the event API untyped.
    """
    loader.get_event()  # stream start
    if loader.check_event(yaml.StreamEndEvent):
        return None
    loader.get_event()  # document start
    anchors: dict[str, tuple[yaml.Node, int]] = {}
    stack: list[_Open] = []
    root: yaml.Node | None = None
    while root is None:
        finished = _on_event(loader, loader.get_event(), anchors, stack)
        if finished is not None:
            root = _attach(finished, anchors, stack)
    loader.get_event()  # document end
    if not loader.check_event(yaml.StreamEndEvent):
        event = loader.get_event()
        raise yaml.composer.ComposerError(
            "expected a single document in the stream",
            root.start_mark,
            "but found another document",
            event.start_mark,
        )
    return root


def _on_event(
    loader: Any, event: Any, anchors: dict[str, tuple[yaml.Node, int]], stack: list[_Open]
) -> _Finished | None:
    """Open a collection for a start event; return the node an event finishes, if any."""
    # Typed Any: libyaml's marks are a different class than the stubs' `yaml.Mark`.
    start_mark: Any = event.start_mark
    end_mark: Any = event.end_mark
    if isinstance(event, yaml.AliasEvent):
        target = anchors.get(event.anchor or "")
        if target is None:
            raise yaml.composer.ComposerError(
                None, None, f"found undefined alias {event.anchor!r}", start_mark
            )
        return (target[0], target[1], None)
    if isinstance(event, yaml.ScalarEvent):
        tag = event.tag
        if tag is None or tag == "!":
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        # Interned: keys, step ids and output names repeat across a thousand jobs, and the
        # models keep the very string objects the YAML gave them.
        value = sys.intern(event.value)
        scalar = yaml.ScalarNode(tag, value, start_mark, end_mark, style=event.style)
        return (scalar, 1, event.anchor)
    if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
        if len(stack) >= MAX_DEPTH:
            raise _too_complex(f"YAML nesting is deeper than {MAX_DEPTH}", start_mark)
        kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
        tag = event.tag
        if tag is None or tag == "!":
            tag = loader.resolve(kind, None, event.implicit)
        collection = kind(tag, [], start_mark, None, flow_style=event.flow_style)
        stack.append((collection, event.anchor, [], [0]))
        return None
    if isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
        collection, anchor, children, weight = stack.pop()
        collection.end_mark = end_mark
        if isinstance(collection, yaml.MappingNode):
            collection.value = list(zip(children[0::2], children[1::2], strict=True))
        else:
            collection.value = children
        return (collection, weight[0] + 1, anchor)
    # libyaml emits nothing else inside a document
    raise yaml.composer.ComposerError(None, None, f"unexpected {type(event).__name__}", start_mark)


def _attach(
    finished: _Finished, anchors: dict[str, tuple[yaml.Node, int]], stack: list[_Open]
) -> yaml.Node | None:
    """Record a finished node's anchor and add it to its parent; the root when there is none."""
    done, node_weight, anchor = finished
    if node_weight > MAX_NODES:
        raise _too_complex(
            f"YAML expands to more than {MAX_NODES} nodes (an alias bomb?)", done.start_mark
        )
    if anchor is not None:
        anchors[anchor] = (done, node_weight)
    if not stack:
        return done
    _, _, children, weight = stack[-1]
    children.append(done)
    weight[0] += node_weight
    if weight[0] > MAX_NODES:
        raise _too_complex(
            f"YAML expands to more than {MAX_NODES} nodes (an alias bomb?)", done.start_mark
        )
    return None


def _index(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    """Record the line of every key path and reject duplicate keys.

    Depth is at most `MAX_DEPTH` and the expanded size at most `MAX_NODES` (both enforced by
    `_compose`), so this walk is bounded.
    """
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Hashable] = set()
        for key_node, value_node in node.value:
            key: str | int = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            if key in seen:
                line = key_node.start_mark.line + 1
                raise YamlError(
                    f"duplicate key {key!r} at line {line}",
                    code=ErrorCode.YAML_DUPLICATE_KEY,
                    line=line,
                )
            seen.add(key)
            lines.setdefault((*path, key), key_node.start_mark.line + 1)
            _index(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _index(item, (*path, position), lines)
