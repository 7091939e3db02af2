"""The dashboard's templates and the one jinja2 environment that renders them (docs/dashboard.md).

Every page, every fragment the pages refresh and `deepwork report --html` is laid out by a
template of `templates/` (package data); the Python around them only computes what they show.
The environment is built once per process, with autoescaping on and undefined names an error
(`StrictUndefined`).

Every value a template prints has its non-printable characters made visible
(`deepwork_core.base.escaping`, the environment's `finalize`) and is then HTML-escaped by
autoescaping (`<`, `>`, `&` and both quotes), so a goal holding `<script>` shows as those
characters and nothing from a run is ever run. Only markup the templates make themselves (a
macro's output) and the stylesheet constant print as they are. A page spells an escaped quote
`&#x27;` or `&quot;`, as `text` does for the few texts written outside a template.

Templates are written one element a line. As a template is loaded, a run of whitespace holding a
line break is dropped where it touches a tag (a `>` before it, a `<` after it, or a `{% %}` or
`{# #}` delimiter on either side) and becomes one space anywhere else (a sentence or a tag's
attributes wrapped over two lines), so a page carries no indentation.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import cache
from html import escape
from typing import Final
from urllib.parse import quote

from deepwork_core.base.escaping import printable
from deepwork_core.state.event_pages import bounded_count_text
from deepwork_core.state.usage.pair import cost_text, count_text, token_parts, tokens_text
from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.ext import Extension
from markupsafe import Markup

from deepwork_mcp.dashboard.assets import STYLESHEET

#: Where the templates are, inside this package.
TEMPLATES: Final = "templates"
_LINE_BREAK: Final = re.compile(r"\s*\n\s*")
_TAG_BEFORE: Final = (">", "%}", "#}")
_TAG_AFTER: Final = ("<", "{%", "{#")


def text(value: object) -> str:
    """Untrusted text as HTML outside a template: control characters visible, markup characters
    escaped, as a template prints it."""
    return escape(printable(str(value), keep="\n\t"))


def _shown(value: object) -> object:
    """What a template prints of `value` (the environment's `finalize`): markup the templates
    made, as it is; anything else as text with its non-printable characters made visible, which
    autoescaping then escapes."""
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return value if value.isprintable() else printable(value, keep="\n\t")
    if isinstance(value, int | float):  # a number has nothing to hide
        return value
    return printable(str(value), keep="\n\t")


def _respelled(html: str) -> str:
    """`html` with the quotes autoescaping wrote as `&#39;` and `&#34;` spelled `&#x27;` and
    `&quot;`, as `text` (and `html.escape`) writes them. Escaped text never holds those two
    spellings otherwise: its own `&` became `&amp;`."""
    return str(html).replace("&#39;", "&#x27;").replace("&#34;", "&quot;")


def compact(source: str) -> str:
    """`source` with its line breaks dropped next to tags and made one space elsewhere."""

    def join(found: re.Match[str]) -> str:
        start, end = found.span()
        if start == 0 or end == len(source):
            return ""
        if source.endswith(_TAG_BEFORE, 0, start) or source.startswith(_TAG_AFTER, end):
            return ""
        return " "

    return _LINE_BREAK.sub(join, source)


class _Compact(Extension):
    """Loads every template through `compact`."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return compact(source)


#: Inline code in a sentence of the read model: text between two backticks.
_INLINE_CODE: Final = re.compile(r"`([^`\n]+)`")


def code_parts(value: object) -> list[tuple[str, bool]]:
    """A sentence written with Markdown's inline code (the timeline's "`plan` submitted
    `plan.md`") cut into its parts, each with whether it is code: the text between a pair of
    backticks is, the rest is not (an unpaired backtick stays a backtick). The template writes
    a code part in `<code>`; both are escaped as every printed value is."""
    shown = str(value)
    parts: list[tuple[str, bool]] = []
    end = 0
    for found in _INLINE_CODE.finditer(shown):
        if found.start() > end:
            parts.append((shown[end : found.start()], False))
        parts.append((found.group(1), True))
        end = found.end()
    if end < len(shown):
        parts.append((shown[end:], False))
    return parts


def _stamp(value: datetime) -> str:
    """`2026-11-23 10:00:00 UTC`."""
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _moment(stamp: float) -> datetime:
    """A store's timestamp (seconds since the epoch) as a time."""
    return datetime.fromtimestamp(stamp, UTC)


def _path_part(value: str) -> str:
    """`value` quoted to be one segment of a URL's path or one query value."""
    return quote(value, safe="")


@cache
def environment() -> Environment:
    """The process's one environment (templates are compiled once, on first use)."""
    env = Environment(
        loader=PackageLoader("deepwork_mcp.dashboard", TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=_shown,
        extensions=[_Compact],
        auto_reload=False,
    )
    env.filters.update(
        count=count_text,
        bounded=bounded_count_text,
        cost_text=cost_text,
        code_parts=code_parts,
        token_parts=token_parts,
        tokens_text=tokens_text,
        isoformat=datetime.isoformat,
        moment=_moment,
        path_part=_path_part,
        stamp=_stamp,
        strftime=datetime.strftime,
    )
    env.globals["stylesheet"] = Markup(STYLESHEET)  # noqa: S704 - this package's constant
    return env


def render(template: str, **context: object) -> str:
    """The text of `template` (a name under `templates/`) laid out with `context`."""
    return _respelled(environment().get_template(template).render(context))


def render_macro(template: str, macro: str, *args: object) -> Markup:
    """What the macro `macro` of `template` lays out for `args`."""
    shown = getattr(environment().get_template(template).module, macro)(*args)
    if not isinstance(shown, Markup):  # pragma: no cover - autoescaped macros return Markup
        raise TypeError(f"{template}: {macro} did not return markup")
    return Markup(_respelled(shown))  # noqa: S704 - the macro's own, autoescaped output
