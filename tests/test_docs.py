"""The reference in docs/ is complete, reachable from its index, and generated parts are fresh."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

import pytest
from deepwork_core.base.error_areas import AREAS
from deepwork_core.base.error_codes import area_of

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE_SOURCES = sorted(ROOT.glob("packages/*/src/**/*.py"))

sys.path.insert(0, str(ROOT / "tools"))
import gen_errors_doc  # noqa: E402

_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
#: The modules where code text is written (one per family of codes); everywhere else uses
#: their members.
#: The modules that define a family of codes (their members are the codes written as text).
CODES_MODULES = {Path(inspect.getfile(family)).resolve() for family in gen_errors_doc.FAMILIES}
FAMILY_NAMES = {family.__name__ for family in gen_errors_doc.FAMILIES}


def _code_literals(source: str) -> list[str]:
    """Error codes written as text in `source` instead of as `ErrorCode` members.

    A string (or the start of an f-string) that is a code or starts with `<code>:`, and any text
    given as `code=` or assigned to `code`.
    """
    known = {code.value for code in gen_errors_doc.every_code()}
    found: dict[tuple[int, int], str] = {}
    for node in ast.walk(ast.parse(source)):
        given = _given_as_code(node)
        if given is None and isinstance(node, ast.Constant):
            given = node if str(node.value).split(":", 1)[0] in known else None
        if isinstance(given, ast.JoinedStr) or (
            isinstance(given, ast.Constant) and isinstance(given.value, str)
        ):
            found[given.lineno, given.col_offset] = f"line {given.lineno}: {ast.unparse(given)}"
    return sorted(found.values())


def _given_as_code(node: ast.AST) -> ast.expr | None:
    """The value of `code=…`, `code = …` or `x.code = …`; None for any other node."""
    if isinstance(node, ast.keyword):
        return node.value if node.arg == "code" else None
    targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
    named = any(
        (isinstance(t, ast.Name) and t.id == "code")
        or (isinstance(t, ast.Attribute) and t.attr == "code")
        for t in targets
    )
    return getattr(node, "value", None) if named else None


def _members_used(source: str) -> set[str]:
    """`Family.MEMBER` of every code member `source` refers to (`ErrorCode.GIT_FAILED`)."""
    return {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in FAMILY_NAMES
    }


def test_every_docs_page_is_listed_in_the_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = set(_LINK.findall(index))
    pages = {path.name for path in DOCS.glob("*.md")} - {"README.md"}
    missing = sorted(pages - linked)
    assert missing == [], f"docs/README.md does not link these pages: {missing}"


@pytest.mark.parametrize("page", [*sorted(p.name for p in DOCS.glob("*.md")), "../README.md"])
def test_relative_links_of_the_docs_resolve(page: str) -> None:
    source = (DOCS / page).resolve()
    targets = [t for t in _LINK.findall(source.read_text(encoding="utf-8")) if "://" not in t]
    broken = [t for t in targets if not (source.parent / t).exists()]
    assert broken == [], f"{page}: links to missing files {broken}"


def test_errors_page_is_generated_from_the_registry() -> None:
    assert (DOCS / "errors.md").read_text(encoding="utf-8") == gen_errors_doc.render(), (
        f"docs/errors.md is out of date; run: {gen_errors_doc.COMMAND}"
    )


def test_no_error_code_is_written_as_text_in_the_packages() -> None:
    literals = {
        str(path.relative_to(ROOT)): found
        for path in PACKAGE_SOURCES
        if path not in CODES_MODULES and (found := _code_literals(path.read_text(encoding="utf-8")))
    }
    assert literals == {}, (
        "use an ErrorCode member (add it to deepwork_core/base/error_codes.py with its meaning, "
        f"then run {gen_errors_doc.COMMAND}): {literals}"
    )


def test_the_literal_check_catches_codes_written_as_text() -> None:
    source = (
        'raise GitError("git failed", code="git.failed")\n'
        'raise GitError("new", code="git.brand_new")\n'
        'raise GitError("new", code=f"git.{kind}")\n'
        'message = f"job.not_found: no job {name}"\n'
        'if exc.code == "file.not_found": pass\n'
        'class E:\n    code = "session.error"\n'
        'raise GitError("fine", code=ErrorCode.GIT_FAILED)\n'
        'path = "job.yml"\n'
    )
    assert len(_code_literals(source)) == 6


def _outside_families(source: str) -> str:
    """`source` without the classes that define a family of codes: what a codes module uses
    beside its family (the error that carries its generic code, `JobInvalidError`)."""
    tree = ast.parse(source)
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ClassDef) and node.name in FAMILY_NAMES)
    ]
    return ast.unparse(tree)


def test_every_error_code_is_used() -> None:
    used: set[str] = set()
    for path in PACKAGE_SOURCES:
        source = path.read_text(encoding="utf-8")
        used |= _members_used(_outside_families(source) if path in CODES_MODULES else source)
    defined = {f"{type(code).__name__}.{code.name}": code for code in gen_errors_doc.every_code()}
    unused = sorted(code.value for name, code in defined.items() if name not in used)
    assert unused == [], f"defined in a family of codes but never used: {unused}"
    assert used <= set(defined)


def test_every_code_belongs_to_a_described_area() -> None:
    codes = gen_errors_doc.every_code()
    assert {area_of(code) for code in codes} == set(AREAS)
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*", code) for code in codes)


def test_no_code_is_in_two_families() -> None:
    values = [code.value for code in gen_errors_doc.every_code()]
    assert len(values) == len(set(values))
    families = {area_of(code): type(code) for code in gen_errors_doc.every_code()}
    mixed = [
        area
        for area in families
        if {type(c) for c in gen_errors_doc.every_code() if area_of(c) == area} != {families[area]}
    ]
    assert mixed == [], f"an area's codes belong to one family: {mixed}"


def test_the_check_command_reports_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "errors.md"
    stale.write_text("# Error codes\n", encoding="utf-8")
    monkeypatch.setattr(gen_errors_doc, "ERRORS_DOC", stale)
    monkeypatch.setattr(gen_errors_doc, "ROOT", tmp_path)
    assert gen_errors_doc.main(["check"]) == 1
    assert gen_errors_doc.main(["write"]) == 0
    assert gen_errors_doc.main(["check"]) == 0
    assert gen_errors_doc.main([]) == 2


def test_the_sources_point_at_docs_and_nothing_outside_the_repository() -> None:
    outside = re.compile(r"FORMATS\.md|RUNTIME\.md|DESIGN\.md|seed 00\d|\.\./shared|/work/shared")
    files = [*PACKAGE_SOURCES, *ROOT.glob("packages/*/*.md"), *ROOT.glob("tools/*.py")]
    hits = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line)
    ]
    assert hits == [], f"point these at a page of docs/ instead: {hits}"


def _module_file(module: str) -> Path:
    """The source of a module the glossary names (`state/sessions`: one of the core's)."""
    if module.startswith("deepwork_"):
        package, _, rest = module.partition(".")
        base = ROOT / "packages" / package.replace("_", "-") / "src" / package
        path = base / rest.replace(".", "/")
    else:
        path = ROOT / "packages/deepwork-core/src/deepwork_core" / module
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_the_glossary_names_types_its_modules_define() -> None:
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    table = page.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ")][2:]
    assert len(rows) >= 20
    words, problems = [], []
    for word, _, types, modules in rows:
        words.append(word.strip("| "))
        sources = "\n".join(
            _module_file(m).read_text(encoding="utf-8") for m in re.findall(r"`([\w./]+)`", modules)
        )
        for name in re.findall(r"`([A-Z]\w*)`", types):
            if not re.search(rf"^(class {name}\b|{name} = )", sources, re.MULTILINE):
                problems.append(f"{word.strip('| ')}: {name}")
    assert not problems, problems
    assert len(words) == len(set(words)), "a word is explained twice"
