"""The pages are laid out by jinja2 templates, never assembled in Python strings
(docs/dashboard.md, "Escaping"): one environment, autoescaping on, undefined names an error, every
printed text escaped once, and the templates shipped in the package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jinja2
import pytest
from deepwork_mcp.dashboard import rendering
from deepwork_mcp.dashboard.pages import message_page
from markupsafe import Markup

PACKAGE = Path(rendering.__file__).parent
#: Every module that lays out a page, a fragment or the report.
PAGE_MODULES = [*sorted(PACKAGE.glob("*.py")), PACKAGE.parent / "cli" / "report.py"]
_TAG = re.compile(r"<[A-Za-z/!]")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def markup_in_strings(source: str) -> list[str]:
    """`line: text` of every string literal of `source` (f-strings included, docstrings left
    out) that holds an HTML or SVG tag."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    found = {
        node.lineno: f"{node.lineno}: {node.value[:60]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
        and _TAG.search(node.value)
    }
    return [found[line] for line in sorted(found)]


def test_the_check_finds_markup_in_f_strings_and_plain_strings() -> None:
    source = (
        '"""A docstring may say <svg>."""\n'
        'def f(x):\n    """<b> in a docstring."""\n    return f"<td>{x}</td>"\n'
        'ROW = "<tr>" + "x"\nLESS = "a < b"\n'
    )
    assert [line.split(":")[0] for line in markup_in_strings(source)] == ["4", "5"]


@pytest.mark.parametrize("module", PAGE_MODULES, ids=lambda path: path.name)
def test_no_page_module_builds_html_in_a_string(module: Path) -> None:
    found = markup_in_strings(module.read_text(encoding="utf-8"))
    assert not found, f"{module.name} builds markup in Python (use a template):\n" + "\n".join(
        found
    )


def test_one_environment_autoescapes_and_refuses_undefined_names() -> None:
    env = rendering.environment()
    assert env is rendering.environment()
    assert env.autoescape is True
    assert env.undefined is jinja2.StrictUndefined
    with pytest.raises(jinja2.UndefinedError, match="message"):
        rendering.render("message.html.j2", title="no message given")


def test_printed_text_is_escaped_once_with_control_characters_visible() -> None:
    page = message_page("T<i>", "<script>x</script> & \"q\" 'a' \x1b[2J\u202e")
    assert "<title>T&lt;i&gt; · DeepWork</title>" in page
    assert (
        "<p>&lt;script&gt;x&lt;/script&gt; &amp; &quot;q&quot; &#x27;a&#x27; \\u001b[2J\\u202e</p>"
    ) in page
    assert "&amp;lt;" not in page  # escaped once, not twice


def test_text_written_outside_a_template_is_escaped_the_same_way() -> None:
    assert rendering.text("<b>'\"&\x1b") == "&lt;b&gt;&#x27;&quot;&amp;\\u001b"
    assert isinstance(rendering.render_macro("macros.html.j2", "short_hash", "<x>"), Markup)
    assert str(rendering.render_macro("macros.html.j2", "short_hash", "<x>")) == (
        '<span class="hash" title="&lt;x&gt;">&lt;x&gt;</span>'
    )


@pytest.mark.parametrize(
    ("source", "compacted"),
    [
        ("<p>\n  <b>x</b>\n</p>\n", "<p><b>x</b></p>"),
        ("<p>a sentence\n   on two lines</p>", "<p>a sentence on two lines</p>"),
        ('<input type="text"\n  required>', '<input type="text" required>'),
        ("{% if x %}\n  <b>\n{% endif %}\nend", "{% if x %}<b>{% endif %}end"),
        ("{{ a }}\n{{ b }}", "{{ a }} {{ b }}"),
        ("a {# note #}\nb", "a {# note #}b"),
        ("<pre>{{ x }}</pre>", "<pre>{{ x }}</pre>"),
    ],
)
def test_templates_lose_their_line_breaks_next_to_tags(source: str, compacted: str) -> None:
    assert rendering.compact(source) == compacted


def test_every_template_is_package_data_and_compiles() -> None:
    folder = PACKAGE / rendering.TEMPLATES
    names = sorted(path.name for path in folder.iterdir())
    assert "layout.html.j2" in names
    assert "run.html.j2" in names
    assert all(name.endswith((".html.j2", ".svg.j2")) for name in names), names
    env = rendering.environment()
    for name in names:
        env.get_template(name)  # a syntax error would raise here
    assert sorted(env.list_templates()) == names
