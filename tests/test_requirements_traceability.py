"""Every listed requirement has a test marked with its id, or a written waiver.

The requirement ids and a one-sentence paraphrase of each are listed in `docs/requirements.md`
(`- <id>: <sentence>`, one line per id). Tests carry `@pytest.mark.req("<id>")`; waivers live in
`tests/requirements_waivers.yml`. An extra test checks that the list names exactly the ids of the
original requirement text; it skips unless `../shared/seeds/003_*.txt` sits beside the clone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

TESTS = Path(__file__).resolve().parent
REQUIREMENTS = TESTS.parent / "docs" / "requirements.md"
WAIVERS = TESTS / "requirements_waivers.yml"
SEEDS = TESTS.parent.parent / "shared" / "seeds"

_ID = r"[A-Z]+(?:-[A-Z]+)*-REQ-\d+(?:\.\d+)+"
_LINE = re.compile(rf"^- ({_ID}): (\S.*)$")
_MARKER = re.compile(rf"""req\(\s*["']({_ID})["']\s*\)""")
_SEED_SECTION = re.compile(r"^### (JOBS-REQ-001\.\d+):")
_SEED_ITEM = re.compile(r"^(\d+)\. ")


def listed_requirements() -> dict[str, str]:
    """Id -> paraphrase, from docs/requirements.md; fails naming any malformed id line."""
    listed: dict[str, str] = {}
    malformed: list[str] = []
    for number, line in enumerate(REQUIREMENTS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("- ") or "REQ-" not in line:
            continue
        match = _LINE.match(line)
        if match is None:
            malformed.append(f"line {number}: {line!r}")
            continue
        requirement, sentence = match.groups()
        if requirement in listed:
            malformed.append(f"line {number}: {requirement} is listed twice")
        listed[requirement] = sentence
    assert not malformed, f"{REQUIREMENTS}: expected `- <id>: <sentence>`; got {malformed}"
    return listed


def marked_ids() -> set[str]:
    found: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        found.update(_MARKER.findall(path.read_text(encoding="utf-8")))
    return found


def waivers() -> dict[str, str]:
    data = yaml.safe_load(WAIVERS.read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict), f"{WAIVERS} must map requirement ids to reasons"
    return {str(key): str(value) for key, value in data.items()}


def test_the_list_names_each_requirement_once_with_a_sentence() -> None:
    listed = listed_requirements()
    assert {"JOBS-REQ-001.1.1", "JOBS-REQ-001.4.19", "JOBS-REQ-001.7.2"} <= set(listed)
    short = [requirement for requirement, text in listed.items() if len(text.split()) < 4]
    assert short == [], f"paraphrase these requirements in a full sentence: {short}"


def test_every_requirement_has_a_test_or_a_waiver() -> None:
    marked, waived = marked_ids(), waivers()
    missing = [i for i in listed_requirements() if i not in marked and i not in waived]
    assert missing == [], (
        f"requirements listed in {REQUIREMENTS.name} with neither a test marked "
        f"@pytest.mark.req(<id>) nor a waiver in {WAIVERS.name}: {', '.join(missing)}"
    )


def test_waivers_and_markers_name_listed_requirements_with_reasons() -> None:
    known = set(listed_requirements())
    for requirement, reason in waivers().items():
        assert requirement in known, f"{WAIVERS.name} waives unlisted {requirement}"
        assert len(reason.strip()) > 20, f"{requirement}: give a real reason"
    unknown = sorted(marked_ids() - known)
    assert unknown == [], f"tests mark requirements missing from {REQUIREMENTS.name}: {unknown}"


def test_the_list_matches_the_original_requirement_text() -> None:
    seeds = sorted(SEEDS.glob("003_*.txt")) if SEEDS.is_dir() else []
    if not seeds:
        pytest.skip(f"optional extra: no original requirement text at {SEEDS}/003_*.txt")
    original: list[str] = []
    section: str | None = None
    for line in seeds[0].read_text(encoding="utf-8").splitlines():
        if match := _SEED_SECTION.match(line):
            section = match.group(1)
        elif line.startswith(("## ", "### ")):
            section = None
        elif section and (match := _SEED_ITEM.match(line)):
            original.append(f"{section}.{match.group(1)}")
    listed = {i for i in listed_requirements() if i.startswith("JOBS-REQ-001.")}
    assert sorted(set(original) - listed) == [], "ids of the original missing from the list"
    assert sorted(listed - set(original)) == [], "listed ids the original does not have"


@pytest.mark.req("JOBS-REQ-001.1.1")
def test_marker_is_registered(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("req").args == ("JOBS-REQ-001.1.1",)
