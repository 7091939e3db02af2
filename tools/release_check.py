"""Checks that a version is ready to publish, and the release notes of a version.

    python tools/release_check.py check [--tag vX.Y.Z]   # switch on, versions, CHANGELOG, tag
    python tools/release_check.py notes [X.Y.Z]          # the CHANGELOG section of a version
    python tools/release_check.py probe DEEPWORK_EXE     # `DEEPWORK_EXE serve` lists its tools

`nox -s release_check` runs `check`, builds the wheels, installs them into a clean virtualenv
and runs `probe` with that virtualenv's Python. The release workflow
(.github/workflows/release.yml) runs the same session before it publishes anything. `check` and
`notes` need only the standard library; `probe` needs the `mcp` client, which the wheels bring.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = ("deepwork", "deepwork-core", "deepwork-review", "deepwork-mcp")
#: Rendered files whose `"version"` is the plugin's version.
MANIFESTS = (
    "plugins/claude/.claude-plugin/plugin.json",
    "plugins/gemini/gemini-extension.json",
)
#: Every rendered plugin file; a `deepwork==X.Y.Z` pin in any of them must name the version.
RENDERED = ("plugins", ".claude-plugin")
#: The tools `deepwork serve` must answer `tools/list` with (the skills teach all of them).
SERVER_TOOLS = (
    "get_workflows",
    "start_workflow",
    "finished_step",
    "abort_workflow",
    "go_to_step",
    "get_active_workflow",
    "get_review_instructions",
    "get_configured_reviews",
    "mark_review_as_passed",
)
_PIN = re.compile(r"\bdeepwork(?:-core|-review|-mcp)?==([0-9A-Za-z.+-]+)")


def project_version(root: Path = ROOT) -> str:
    """The version of the root pyproject.toml, the one version source."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def version_problems(root: Path = ROOT) -> list[str]:
    """Every place whose version differs from the root pyproject.toml's."""
    version = project_version(root)
    problems: list[str] = []
    for pyproject in [root / "pyproject.toml", *sorted(root.glob("packages/*/pyproject.toml"))]:
        text = pyproject.read_text(encoding="utf-8")
        own = str(tomllib.loads(text)["project"]["version"])
        if own != version:
            problems.append(f"{pyproject.relative_to(root)}: version {own}, expected {version}")
        problems.extend(_pin_problems(root, pyproject, text, version))
    for manifest in MANIFESTS:
        path = root / manifest
        if not path.is_file():
            problems.append(f"{manifest}: missing (run `nox -s render`)")
            continue
        own = json.loads(path.read_text(encoding="utf-8")).get("version")
        if own != version:
            problems.append(f"{manifest}: version {own}, expected {version}")
    for folder in RENDERED:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and path.suffix in {".json", ".toml", ".md"}:
                problems.extend(
                    _pin_problems(root, path, path.read_text(encoding="utf-8"), version)
                )
    lock = tomllib.loads((root / "uv.lock").read_text(encoding="utf-8"))
    locked = {p["name"]: p.get("version") for p in lock.get("package", [])}
    for name in DISTRIBUTIONS:
        if locked.get(name) != version:
            problems.append(f"uv.lock: {name} {locked.get(name)}, expected {version} (uv lock)")
    return problems


def _pin_problems(root: Path, path: Path, text: str, version: str) -> list[str]:
    return [
        f"{path.relative_to(root)}: pins {match.group(0)}, expected =={version}"
        for match in _PIN.finditer(text)
        if match.group(1) != version
    ]


def changelog_section(version: str, root: Path = ROOT) -> str | None:
    """The text under `## <version>` in CHANGELOG.md, or None when there is no such heading."""
    path = root / "CHANGELOG.md"
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    heading = re.compile(rf"^## \[?{re.escape(version)}\]?(\s|$)")
    for index, line in enumerate(lines):
        if heading.match(line):
            body = []
            for following in lines[index + 1 :]:
                if following.startswith("## "):
                    break
                body.append(following)
            return "\n".join(body).strip()
    return None


def is_released(root: Path = ROOT) -> bool:
    """`[tool.deepwork] released` of the root pyproject.toml: the texts are the PyPI ones."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return bool(data.get("tool", {}).get("deepwork", {}).get("released", False))


def switch_problems(root: Path = ROOT) -> list[str]:
    """The release switch left off: the skills would still say the version is not on PyPI."""
    if is_released(root):
        return []
    return [
        "pyproject.toml: [tool.deepwork] released is false, so the skills still say how to run "
        "DeepWork from a clone (run `python tools/version.py release`, then `nox -s render`)"
    ]


def release_problems(root: Path = ROOT, tag: str | None = None) -> list[str]:
    """What stops the current version from being released besides the switch (empty: ready)."""
    version = project_version(root)
    problems = version_problems(root)
    section = changelog_section(version, root)
    if section is None:
        problems.append(f"CHANGELOG.md: no `## {version}` section")
    elif not section:
        problems.append(f"CHANGELOG.md: the `## {version}` section is empty")
    if tag is not None and tag != f"v{version}":
        problems.append(f"tag {tag} does not name version {version} (expected v{version})")
    return problems


def probe(deepwork: str) -> list[str]:
    """Start `deepwork serve` on an empty project over stdio; return the tool names it lists."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def names(project: Path) -> list[str]:
        params = StdioServerParameters(command=deepwork, args=["serve", "--path", str(project)])
        with anyio.fail_after(60):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return sorted(tool.name for tool in (await session.list_tools()).tools)

    with tempfile.TemporaryDirectory(prefix="deepwork-release-probe-") as tmp:
        return anyio.run(names, Path(tmp))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="versions, CHANGELOG entry and tag agree")
    check.add_argument("--tag", help="the git tag being released, e.g. v1.2.3")
    notes = commands.add_parser("notes", help="print the CHANGELOG section of a version")
    notes.add_argument("version", nargs="?", help="default: the project version")
    run = commands.add_parser("probe", help="`serve` answers tools/list over stdio")
    run.add_argument("deepwork", help="path of the installed `deepwork` executable")
    args = parser.parse_args(argv)

    if args.command == "check":
        problems = [*switch_problems(), *release_problems(tag=args.tag)]
        for problem in problems:
            print(f"release_check: {problem}", file=sys.stderr)
        if not problems:
            print(f"release_check: {project_version()} is consistent and has a CHANGELOG entry")
        return 1 if problems else 0
    if args.command == "notes":
        version = args.version or project_version()
        section = changelog_section(version)
        if not section:
            print(f"release_check: no CHANGELOG.md entry for {version}", file=sys.stderr)
            return 1
        print(section)
        return 0
    listed = probe(args.deepwork)
    missing = sorted(set(SERVER_TOOLS) - set(listed))
    if missing:
        print(f"release_check: tools/list lacks {missing}; it listed {listed}", file=sys.stderr)
        return 1
    print(f"release_check: `deepwork serve` lists {len(listed)} tools over stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
