"""Every requirement of JOBS-REQ-001 has a test marked with its id, or a written waiver.

Requirement ids come from the seed file itself (`<repo>/../shared/seeds/003_*.txt`): each
`### JOBS-REQ-001.N` section's numbered items are `JOBS-REQ-001.N.k`. Tests carry
`@pytest.mark.req("JOBS-REQ-001.N.k")`; waivers live in `tests/requirements_waivers.yml`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

TESTS = Path(__file__).resolve().parent
SEEDS = TESTS.parent.parent / "shared" / "seeds"
WAIVERS = TESTS / "requirements_waivers.yml"

_SECTION = re.compile(r"^### (JOBS-REQ-001\.\d+):")
_ITEM = re.compile(r"^(\d+)\. ")
_MARKER = re.compile(r"""req\(\s*["'](JOBS-REQ-001\.\d+\.\d+)["']\s*\)""")


def requirement_ids() -> list[str]:
    [seed] = SEEDS.glob("003_*.txt")
    ids: list[str] = []
    section: str | None = None
    for line in seed.read_text(encoding="utf-8").splitlines():
        if match := _SECTION.match(line):
            section = match.group(1)
        elif line.startswith(("## ", "### ")):
            section = None
        elif section and (match := _ITEM.match(line)):
            ids.append(f"{section}.{match.group(1)}")
    return ids


def marked_ids() -> set[str]:
    found: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        found.update(_MARKER.findall(path.read_text(encoding="utf-8")))
    return found


def waivers() -> dict[str, str]:
    data = yaml.safe_load(WAIVERS.read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict)
    return {str(key): str(value) for key, value in data.items()}


def test_the_seed_yields_the_requirement_ids() -> None:
    ids = requirement_ids()
    assert len(ids) == len(set(ids))
    assert {"JOBS-REQ-001.1.1", "JOBS-REQ-001.4.19", "JOBS-REQ-001.7.2"} <= set(ids)
    assert len(ids) == 12 + 8 + 14 + 19 + 8 + 8 + 2


def test_every_requirement_has_a_test_or_a_waiver() -> None:
    waived = waivers()
    missing = [i for i in requirement_ids() if i not in marked_ids() and i not in waived]
    assert missing == [], f"requirements with neither a test nor a waiver: {missing}"


def test_waivers_and_markers_name_real_requirements_with_reasons() -> None:
    known = set(requirement_ids())
    for requirement, reason in waivers().items():
        assert requirement in known, requirement
        assert len(reason.strip()) > 20, f"{requirement}: give a real reason"
    assert marked_ids() <= known, marked_ids() - known


@pytest.mark.req("JOBS-REQ-001.1.1")
def test_marker_is_registered(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("req").args == ("JOBS-REQ-001.1.1",)
