"""What every line of an event log is, whatever its kind (docs/navigation.md, "The event log").

A line has a header (`v`, the version of the line format; `ts`; `session_id`; `event`, the kind)
and its kind's fields. `EventLine` is the base of every kind's model: read from a log (under the
`READING` validation context) it keeps the line's key order and the keys it does not know, so
`deepwork log` shows a newer writer's line as it was written. `KnownLine` adds the header fields
every kind this version writes has; `deepwork_core.state.event_kinds` holds the kinds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PrivateAttr,
    ValidationInfo,
    model_validator,
)

from deepwork_core.base.identifiers import SessionId

#: The version written on every new line; a line without `v` is version 1.
EVENT_SCHEMA_VERSION: Final = 1
#: Keys every line has before its kind's fields.
HEADER_KEYS: Final = ("v", "ts", "session_id", "event")
#: Validation context under which a record is being read from a log line (see `EventLine`).
READING: Final = "reading an event line"


def _iso(value: datetime) -> str:
    return value.isoformat()


#: A time written as `datetime.isoformat()` (`+00:00`, not pydantic's `Z`), as lines always were.
Stamp = Annotated[datetime, PlainSerializer(_iso, return_type=str, when_used="json")]


class EventLine(BaseModel):
    """What every line has, and how a line read from a log keeps its shape for display."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: int = EVENT_SCHEMA_VERSION

    #: The line's keys in their order (empty for a record built in code).
    _line_keys: tuple[str, ...] = PrivateAttr(default=())
    #: Keys of the line the model does not know (a newer writer's), with their values.
    _unknown: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_the_line(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        reading = isinstance(info.context, dict) and info.context.get(READING) is True
        if not reading or not isinstance(data, dict):
            return handler(data)
        unknown: dict[str, Any] = {}
        if cls.model_config.get("extra") == "forbid":
            fields = cls.model_fields  # looked up once: each lookup goes through a descriptor
            unknown = {k: v for k, v in data.items() if k not in fields}
            if unknown:
                data = {k: v for k, v in data.items() if k in fields}
        record = handler(data)
        record._line_keys = (*data, *unknown)  # a JSON object's keys are strings
        record._unknown = unknown
        return record

    def __eq__(self, other: object) -> bool:
        """Same kind, same fields (and the same unknown keys); the line's key order is not
        compared, so a record read back equals the one that was written."""
        if not isinstance(other, EventLine) or type(other) is not type(self):
            return NotImplemented
        return self.model_dump() == other.model_dump() and self._unknown == other._unknown

    def as_written(self) -> dict[str, JsonValue]:
        """The record as its line had it: the same keys, in the same order.

        Keys the line did not have (defaults of fields added later) are left out. A record
        built in code gives its set fields in model order.
        """
        dumped: dict[str, JsonValue] = {
            **self.model_dump(mode="json", exclude_unset=True),
            **self._unknown,
        }
        order = [key for key in self._line_keys if key in dumped]
        order += [key for key in dumped if key not in order]
        return {key: dumped[key] for key in order}

    def details(self) -> dict[str, JsonValue]:
        """`as_written` without the header keys (`v`, `ts`, `session_id`, `event`)."""
        return {k: v for k, v in self.as_written().items() if k not in HEADER_KEYS}


class KnownLine(EventLine):
    ts: Stamp
    session_id: SessionId
