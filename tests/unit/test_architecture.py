"""The shape of the code: layers, public APIs, no import cycles, bounded module and function size.

Layers run one way: `deepwork_core` <- `deepwork_review` <- `deepwork_mcp`. A package imports a
lower one through its public API (`from deepwork_core import X`, the names in its `__all__`), never
through its submodules, except `deepwork_core.layout`, which the hooks' fast path reads directly.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2] / "packages"
SOURCES = {
    "deepwork_core": PACKAGES / "deepwork-core" / "src" / "deepwork_core",
    "deepwork_review": PACKAGES / "deepwork-review" / "src" / "deepwork_review",
    "deepwork_mcp": PACKAGES / "deepwork-mcp" / "src" / "deepwork_mcp",
}
LAYER = {"deepwork_core": 0, "deepwork_review": 1, "deepwork_mcp": 2}
#: Lower-layer submodules another package may import directly (standard library only).
DIRECT_SUBMODULES = {"deepwork_core.layout"}

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
#: Modules allowed over the limits (none: parser.py and models.py were split by noun).
SIZE_ALLOWED: set[str] = set()
SIZE_CHECKED = ("deepwork_core", "deepwork_mcp")


def _modules() -> Iterator[tuple[str, str, Path]]:
    """(package, dotted module name, path) of every source module."""
    for package, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield package, name, path


def _imports(path: Path) -> Iterator[tuple[str, list[str], bool]]:
    """(module, imported names, at import time) of every absolute import in `path`.

    "At import time" is False inside functions and `if TYPE_CHECKING:` blocks.
    """

    def visit(node: ast.AST, eager: bool) -> Iterator[tuple[str, list[str], bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, [], eager
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                yield child.module, [alias.name for alias in child.names], eager
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            ):
                yield from visit(child, False)
            else:
                yield from visit(child, eager)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), True)


def test_imports_follow_the_layers_and_the_public_apis() -> None:
    problems = []
    for package, name, path in _modules():
        for module, names, _ in _imports(path):
            top = module.split(".")[0]
            if top not in LAYER or top == package:
                continue
            if LAYER[top] > LAYER[package]:
                problems.append(f"{name} imports {module} (upward)")
            elif module != top and module not in DIRECT_SUBMODULES:
                problems.append(f"{name} imports {module}; use `from {top} import ...`")
            elif module == top:
                public = set(importlib.import_module(top).__all__)
                submodules = {m.removeprefix(top + ".") for m in DIRECT_SUBMODULES}
                problems += [
                    f"{name} imports {top}.{n}, which is not in {top}.__all__"
                    for n in names
                    if n not in public and n not in submodules
                ]
    assert not problems, "\n".join(problems)


def test_every_public_name_resolves() -> None:
    for package in SOURCES:
        module = importlib.import_module(package)
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{package}.{name}"


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for _, name, path in _modules():
        edges = graph.setdefault(name, set())
        for module, names, eager in _imports(path):
            if eager and module.split(".")[0] in SOURCES:
                edges.add(module)
                edges.update(f"{module}.{n}" for n in names)
    graph = {name: {e for e in edges if e in graph and e != name} for name, edges in graph.items()}
    # A package's __init__ importing its own submodules is how packages work, not a cycle.
    for name, edges in graph.items():
        graph[name] = {e for e in edges if not name.startswith(e + ".")}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def _sizes() -> Iterator[tuple[str, int, list[tuple[str, int]]]]:
    for package, _, path in _modules():
        if package not in SIZE_CHECKED:
            continue
        text = path.read_text(encoding="utf-8")
        functions = [
            (node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        relative = path.relative_to(SOURCES[package].parent).as_posix()
        yield relative, len(text.splitlines()), functions


def test_modules_and_functions_stay_small() -> None:
    problems = []
    for relative, lines, functions in _sizes():
        if relative in SIZE_ALLOWED:
            continue
        if lines > MAX_MODULE_LINES:
            problems.append(f"{relative}: {lines} lines (limit {MAX_MODULE_LINES})")
        problems += [
            f"{relative}: {name}() is {length} lines (limit {MAX_FUNCTION_LINES})"
            for name, length in functions
            if length > MAX_FUNCTION_LINES
        ]
    assert not problems, "\n".join(problems)


def test_the_size_allow_list_names_real_files() -> None:
    found = {relative for relative, _, _ in _sizes()}
    assert found >= SIZE_ALLOWED


@pytest.mark.parametrize(
    "module", ["deepwork_core", "deepwork_core.layout", "deepwork_mcp.hooks.active"]
)
def test_the_hooks_light_path_imports_no_framework(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'mcp', 'fastmcp', 'yaml', 'click'))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
