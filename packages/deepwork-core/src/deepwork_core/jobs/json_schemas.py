"""Checking a `json_schema` before outputs are held to it (docs/job-format.md#json-schema-outputs).

A `json_schema` comes from a job file, and a job file can be hostile. So, besides being a valid
JSON Schema, it must be safe to run: every `$ref` (`$dynamicRef`, `$recursiveRef`) must point
inside the schema itself, since nothing is ever fetched (`job.json_schema_external_ref`); no
chain of references may lead back to where it started without descending into the document, an
endless loop (`job.json_schema_ref_cycle`); and every `pattern` and `patternProperties` key must
be a regular expression the RE2 engine runs, in time linear in the text it matches
(`job.json_schema_unsupported_pattern`: no backreferences, no lookaround). `jobs validate` and
`get_workflows` report each with the file and line of the keyword.

`compile_pattern` is how a pattern is compiled everywhere: ECMA-262 escapes (`\\uFFFF`,
`\\u{1F600}`) become RE2's `\\x{...}`. The heavy libraries (jsonschema, referencing, RE2) are
imported only when a job declares a `json_schema`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deepwork_core.base.yamlio import KeyPath
from deepwork_core.jobs.errors import JobCode

if TYPE_CHECKING:
    from referencing import Resource
    from referencing._core import Resolver  # public as `Registry.resolver()`'s return type

#: Keywords whose value is one subschema applied to the same instance.
_IN_PLACE_ONE = ("not", "if", "then", "else")
#: ... a list of such subschemas; a map of them.
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas", "dependencies")
#: Keywords whose subschemas apply to a part of the instance (they descend into the document).
_CHILD_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_CHILD_LIST = ("items", "prefixItems")
_CHILD_MAP = ("properties", "patternProperties", "$defs", "definitions")
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")

#: An ECMA-262 escape RE2 spells differently, or an escaped backslash (kept as it is).
_ECMA_ESCAPE = re.compile(r"\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|\\)")


class UnsupportedPatternError(ValueError):
    """A regular expression RE2 does not accept (backreferences, lookaround, bad syntax)."""


@dataclass(frozen=True, slots=True)
class SchemaFinding:
    """A reason a `json_schema` is refused; `where` is the key path inside the schema."""

    code: JobCode
    message: str
    where: KeyPath = ()


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """`pattern` compiled by RE2 (linear-time matching); `UnsupportedPatternError` if it can't."""
    import re2  # a compiled extension; only jobs with a json_schema load it

    options = re2.Options()
    options.log_errors = False  # the server's stderr is no place for a job's typos
    translated = _ECMA_ESCAPE.sub(_translate_escape, pattern)
    try:
        return re2.compile(translated, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise UnsupportedPatternError(str(reason)) from None


def _translate_escape(match: re.Match[str]) -> str:
    digits = match.group(1) or match.group(2)
    return match.group(0) if digits is None else f"\\x{{{digits}}}"


def json_schema_findings(schema: dict[str, Any]) -> list[SchemaFinding]:
    """Every reason `schema` may not be used as an output's `json_schema`; empty when it may."""
    import jsonschema  # loaded only for jobs that use json_schema (it is large)

    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return [
            SchemaFinding(
                JobCode.JOB_INVALID_JSON_SCHEMA, f"not a valid JSON Schema: {exc.message}"
            )
        ]
    dialect: str | None = getattr(validator, "ID_OF", lambda _: None)(validator.META_SCHEMA)
    graph = _SchemaGraph(dialect)
    # The registry holds `schema` alone and retrieves nothing: no `$ref` is ever fetched.
    graph.visit(schema, (), graph.registry.resolver_with_root(graph.resource(schema)))
    cycles = graph.cycles()  # resolves the references first, which adds to `findings`
    return [*graph.findings, *cycles]


@dataclass
class _Node:
    where: KeyPath
    resolver: Resolver[Any]
    #: (target object id, key path of the reference or None for an in-place subschema)
    edges: list[tuple[int, KeyPath | None]] = field(default_factory=list)


class _SchemaGraph:
    """The subschemas of one schema and which of them apply to the same part of the document."""

    def __init__(self, dialect: str | None) -> None:
        import referencing
        import referencing.jsonschema

        self.specification = referencing.jsonschema.specification_with(
            dialect or "", default=referencing.jsonschema.DRAFT202012
        )
        self.registry: referencing.Registry[Any] = referencing.Registry()
        self.nodes: dict[int, _Node] = {}
        self.findings: list[SchemaFinding] = []
        self._refs: list[tuple[int, str, KeyPath]] = []

    def visit(self, schema: object, where: KeyPath, resolver: Resolver[Any]) -> None:
        """Record `schema` (at `where`) and everything under it."""
        if not isinstance(schema, dict) or id(schema) in self.nodes:
            return
        resolver = resolver.in_subresource(self.resource(schema))
        node = self.nodes[id(schema)] = _Node(where, resolver)
        self._check_patterns(schema, where)
        for keyword, sub, in_place in _subschemas(schema):
            if in_place and isinstance(sub[1], dict):
                node.edges.append((id(sub[1]), None))
            self.visit(sub[1], (*where, keyword, *sub[0]), resolver)
        for keyword in _REF_KEYWORDS:
            ref = schema.get(keyword)
            if isinstance(ref, str):
                self._refs.append((id(schema), ref, (*where, keyword)))

    def cycles(self) -> list[SchemaFinding]:
        """Resolve the references, then report each loop of them that never descends."""
        for source, ref, where in self._refs:
            target = self._resolve(self.nodes[source].resolver, ref, where)
            if target is not None:
                self.nodes[source].edges.append((id(target), where))
        state: dict[int, int] = {}  # 1: on the current path, 2: done
        found: list[SchemaFinding] = []
        for start in self.nodes:
            if start not in state:
                self._search(start, state, found)
        return found

    def _search(self, start: int, state: dict[int, int], found: list[SchemaFinding]) -> None:
        """Depth-first search from `start` without recursion (schemas may nest deeply)."""
        stack: list[tuple[int, Iterator[tuple[int, KeyPath | None]]]] = []
        state[start] = 1
        stack.append((start, iter(self.nodes[start].edges)))
        while stack:
            current, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                state[current] = 2
                stack.pop()
                continue
            target, ref_where = step
            if target not in self.nodes:
                continue
            if state.get(target) == 1:
                where = ref_where or self.nodes[current].where
                found.append(
                    SchemaFinding(
                        JobCode.JOB_JSON_SCHEMA_REF_CYCLE,
                        "this reference leads back to itself without descending into the "
                        "document (an endless loop); refer to a part of the schema that "
                        "applies to a property or an item instead",
                        where,
                    )
                )
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(self.nodes[target].edges)))

    def _resolve(self, resolver: Resolver[Any], ref: str, where: KeyPath) -> object | None:
        from referencing.exceptions import Unresolvable

        try:
            target: object = resolver.lookup(ref).contents
            return target
        except Unresolvable:
            pass
        if ref.startswith("#"):
            self.findings.append(
                SchemaFinding(
                    JobCode.JOB_INVALID_JSON_SCHEMA,
                    f"{_clip(ref)} does not point at a part of this schema",
                    where,
                )
            )
        else:
            self.findings.append(
                SchemaFinding(
                    JobCode.JOB_JSON_SCHEMA_EXTERNAL_REF,
                    f"{_clip(ref)} refers outside the schema; DeepWork fetches no remote or "
                    "file references: put the referred schema under `$defs` and use "
                    "'#/$defs/NAME'",
                    where,
                )
            )
        return None

    def _check_patterns(self, schema: dict[str, Any], where: KeyPath) -> None:
        patterns: list[tuple[str, KeyPath]] = []
        if isinstance(schema.get("pattern"), str):
            patterns.append((schema["pattern"], (*where, "pattern")))
        if isinstance(schema.get("patternProperties"), dict):
            patterns.extend(
                (key, (*where, "patternProperties", key)) for key in schema["patternProperties"]
            )
        for pattern, at in patterns:
            try:
                compile_pattern(pattern)
            except UnsupportedPatternError as exc:
                self.findings.append(
                    SchemaFinding(
                        JobCode.JOB_JSON_SCHEMA_UNSUPPORTED_PATTERN,
                        f"pattern {_clip(pattern)} cannot be run in linear time ({exc}); "
                        "backreferences and lookaround are not supported",
                        at,
                    )
                )

    def resource(self, schema: Mapping[str, Any]) -> Resource[Any]:
        return self.specification.create_resource(schema)


def _subschemas(schema: dict[str, Any]) -> Iterator[tuple[str, tuple[KeyPath, object], bool]]:
    """(keyword, (key path under the keyword, subschema), applies in place) of `schema`."""
    for keyword, value in schema.items():
        in_place = keyword in _IN_PLACE_ONE or keyword in _IN_PLACE_LIST or keyword in _IN_PLACE_MAP
        if keyword in _IN_PLACE_ONE or (keyword in _CHILD_ONE and isinstance(value, dict)):
            yield keyword, ((), value), in_place
        elif (keyword in _IN_PLACE_LIST or keyword in _CHILD_LIST) and isinstance(value, list):
            for index, item in enumerate(value):
                yield keyword, ((index,), item), in_place
        elif (keyword in _IN_PLACE_MAP or keyword in _CHILD_MAP) and isinstance(value, dict):
            for name, item in value.items():
                yield keyword, ((name,), item), in_place


def _clip(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 120 else shown[:120] + "…"
