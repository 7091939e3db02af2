"""The reference in docs/ is complete, reachable from its index, and generated parts are fresh."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import AREAS, CODES, area_of

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE_SOURCES = sorted(ROOT.glob("packages/*/src/**/*.py"))

sys.path.insert(0, str(ROOT / "tools"))
import gen_errors_doc  # noqa: E402

_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A quoted string that starts with `<area>.<name>` and ends there or at a colon: a code.
_FILE_SUFFIXES = {"yml", "json", "txt", "toml", "md", "lock", "py", "mcp", "server"}


def _codes_in_sources() -> dict[str, Path]:
    pattern = re.compile(rf"""["']((?:{"|".join(AREAS)})\.[a-z_]+)["':]""")
    found: dict[str, Path] = {}
    for path in PACKAGE_SOURCES:
        for code in pattern.findall(path.read_text(encoding="utf-8")):
            if code.rsplit(".", 1)[1] not in _FILE_SUFFIXES:
                found.setdefault(code, path)
    return found


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


def test_every_code_the_packages_use_is_registered() -> None:
    unregistered = {code: str(path) for code, path in _codes_in_sources().items()}
    for code in CODES:
        unregistered.pop(code, None)
    assert unregistered == {}, (
        "add these codes to deepwork_core/base/error_codes.py, then run "
        f"{gen_errors_doc.COMMAND}: {unregistered}"
    )


def test_every_registered_code_is_used() -> None:
    unused = sorted(set(CODES) - set(_codes_in_sources()))
    assert unused == [], f"registered in deepwork_core/base/error_codes.py but never used: {unused}"


def test_every_code_belongs_to_a_described_area() -> None:
    assert {area_of(code) for code in CODES} == set(AREAS)
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*", code) for code in CODES)


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
