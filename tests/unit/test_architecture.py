"""The shape of the code: layers, public APIs, no import cycles, bounded folders, modules and
functions.

Layers run one way between packages, `deepwork_core` <- `deepwork_review` <- `deepwork_mcp`, and
inside core between its subpackages, `base` < `jobs` < `evidence` < `state` < `gate` < `engine`
(docs/architecture.md). Another package imports core's names from their modules
(`from deepwork_core.state.sessions import Session`) or from the small top-level API, never a
private name; it imports `deepwork_review` through that package's `__all__`.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.coverage_env import python_unmeasured

PACKAGES = Path(__file__).resolve().parents[2] / "packages"
SOURCES = {
    "deepwork_core": PACKAGES / "deepwork-core" / "src" / "deepwork_core",
    "deepwork_review": PACKAGES / "deepwork-review" / "src" / "deepwork_review",
    "deepwork_mcp": PACKAGES / "deepwork-mcp" / "src" / "deepwork_mcp",
}
LAYER = {"deepwork_core": 0, "deepwork_review": 1, "deepwork_mcp": 2}
#: Packages whose modules other packages import directly (their names, not their `__all__`).
MODULE_API = {"deepwork_core"}
#: Core's subpackages, lowest first: each may import only itself and those before it.
CORE_LAYERS = ("base", "jobs", "evidence", "state", "gate", "receipts", "engine")
MAX_FOLDER_MODULES = 15

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
#: Modules allowed over the limits (none).
SIZE_ALLOWED: set[str] = set()
SIZE_CHECKED = ("deepwork_core", "deepwork_review", "deepwork_mcp")


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed source of `path`, parsed once for all the checks of this module."""
    return ast.parse(path.read_text(encoding="utf-8"))


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

    yield from visit(_tree(path), True)


def test_imports_follow_the_layers_and_the_public_apis() -> None:
    problems = []
    for package, name, path in _modules():
        for module, names, _ in _imports(path):
            top = module.split(".")[0]
            if top not in LAYER or top == package:
                continue
            if LAYER[top] > LAYER[package]:
                problems.append(f"{name} imports {module} (upward)")
            elif top in MODULE_API:
                private = [n for n in names if n.startswith("_")]
                problems += [f"{name} imports the private {module}.{n}" for n in private]
                if module == top:
                    public = set(importlib.import_module(top).__all__)
                    problems += [
                        f"{name} imports {top}.{n}, which is not in {top}.__all__"
                        for n in names
                        if n not in public
                    ]
            elif module != top:
                problems.append(f"{name} imports {module}; use `from {top} import ...`")
            else:
                public = set(importlib.import_module(top).__all__)
                problems += [
                    f"{name} imports {top}.{n}, which is not in {top}.__all__"
                    for n in names
                    if n not in public
                ]
    assert not problems, "\n".join(problems)


def _core_layer(module: str) -> int | None:
    """The rank of the core subpackage `module` belongs to (None: not in a subpackage)."""
    parts = module.split(".")
    if parts[0] != "deepwork_core" or len(parts) < 2 or parts[1] not in CORE_LAYERS:
        return None
    return CORE_LAYERS.index(parts[1])


def _core_layer_problems(imports: Iterator[tuple[str, str]]) -> list[str]:
    """`importer imports imported (upward)` for every import that climbs core's layers."""
    problems = []
    for importer, module in imports:
        own, other = _core_layer(importer), _core_layer(module)
        if own is not None and other is not None and other > own:
            problems.append(f"{importer} imports {module} (upward)")
    return problems


def test_core_subpackages_import_only_downward() -> None:
    """Every import counts here, lazy and type-only ones too: the order is one of meaning."""
    pairs = (
        (name, module)
        for package, name, path in _modules()
        if package == "deepwork_core"
        for module, _, _ in _imports(path)
    )
    problems = _core_layer_problems(pairs)
    assert not problems, "\n".join(problems)


def test_the_core_layer_check_catches_an_upward_import() -> None:
    upward = [("deepwork_core.base.errors", "deepwork_core.engine.workflow")]
    downward = [("deepwork_core.engine.workflow", "deepwork_core.base.errors")]
    assert _core_layer_problems(iter(upward)) == [
        "deepwork_core.base.errors imports deepwork_core.engine.workflow (upward)"
    ]
    assert _core_layer_problems(iter(downward)) == []


def test_the_architecture_page_describes_each_subpackage_in_order() -> None:
    page = (PACKAGES.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    headings = [line[4:].strip() for line in page.splitlines() if line.startswith("### ")]
    assert headings == list(CORE_LAYERS)
    order = " < ".join(f"`{name}`" for name in CORE_LAYERS)
    assert order in page


def test_the_architecture_page_names_every_core_module_in_its_section() -> None:
    page = (PACKAGES.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    sections = page.split("\n### ")[1:]
    text_of = {section.split("\n", 1)[0].strip(): section for section in sections}
    missing = []
    for layer in CORE_LAYERS:
        folder = SOURCES["deepwork_core"] / layer
        for path in sorted(folder.rglob("*.py")):
            if path.name != "__init__.py" and f"`{path.stem}`" not in text_of[layer]:
                missing.append(f"{layer}: {path.stem}")
    assert not missing, "docs/architecture.md does not name: " + ", ".join(missing)


def test_core_is_all_in_its_subpackages() -> None:
    root = SOURCES["deepwork_core"]
    loose = sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")
    folders = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    assert loose == []
    assert folders == sorted(CORE_LAYERS)


def test_no_source_folder_holds_too_many_modules() -> None:
    problems = []
    for root in SOURCES.values():
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
            if len(modules) > MAX_FOLDER_MODULES:
                problems.append(f"{folder.relative_to(PACKAGES)}: {len(modules)} modules")
    assert not problems, "\n".join(problems)


#: The one name a program's entry point may share: `main` of a module run as a program.
ENTRY_POINT = "main"


def _is_program(tree: ast.Module, module: str) -> bool:
    """Whether `module` is run as a program: it calls `main` under `if __name__ == "__main__":`
    or is the console script of pyproject.toml (`deepwork = "deepwork_mcp.cli:main"`)."""
    return module == "deepwork_mcp.cli" or any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body
    )


def _names_defined_twice(modules: Iterator[tuple[str, ast.Module]]) -> dict[str, list[str]]:
    """Each public module-level function or class name defined in more than one module, with
    those modules (a program's `main` excepted)."""
    homes: dict[str, list[str]] = {}
    for module, tree in modules:
        for node in tree.body:
            if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name.startswith("_"):
                continue
            if node.name == ENTRY_POINT and _is_program(tree, module):
                continue
            homes.setdefault(node.name, []).append(module)
    return {name: where for name, where in homes.items() if len(where) > 1}


def test_every_public_function_and_class_name_is_defined_once() -> None:
    twice = _names_defined_twice((name, _tree(path)) for _, name, path in _modules())
    assert not twice, twice


def test_the_name_check_catches_a_function_or_class_defined_twice() -> None:
    first = ast.parse("def listing(): ...\nclass Item: ...\ndef _own(): ...\ndef main(): ...")
    second = ast.parse("async def listing(): ...\ndef Item(): ...\ndef _own(): ...")
    program = ast.parse("def main(): ...\nif __name__ == '__main__':\n    main()")
    twice = _names_defined_twice(iter([("a", first), ("b", second), ("c", program)]))
    assert twice == {"listing": ["a", "b"], "Item": ["a", "b"]}
    assert _names_defined_twice(iter([("a", first), ("b", ast.parse("def main(): ..."))])) == {
        "main": ["a", "b"]
    }


def test_every_public_name_resolves() -> None:
    for package in SOURCES:
        module = importlib.import_module(package)
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{package}.{name}"


def _import_graph(eager_only: bool) -> dict[str, set[str]]:
    """Module -> the source modules it imports (at import time only, or anywhere)."""
    graph: dict[str, set[str]] = {}
    for _, name, path in _modules():
        edges = graph.setdefault(name, set())
        for module, names, eager in _imports(path):
            if (eager or not eager_only) and module.split(".")[0] in SOURCES:
                edges.add(module)
                edges.update(f"{module}.{n}" for n in names)
    graph = {name: {e for e in edges if e in graph and e != name} for name, edges in graph.items()}
    # A package's __init__ importing its own submodules is how packages work, not a cycle.
    return {
        name: {e for e in edges if not name.startswith(e + ".") and not _init_of(e, name)}
        for name, edges in graph.items()
    }


def _init_of(package: str, module: str) -> bool:
    """True when `package` is a package whose folder holds `module` (`a.b` for `a.b.c`)."""
    return module.startswith(package + ".")


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target, [*path, target])
                if found is not None:
                    return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found is not None:
                return found
    return None


def _inside_folders(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The edges between modules of one folder (a subpackage, or a package's top level)."""
    return {
        name: {e for e in edges if e.rpartition(".")[0] == name.rpartition(".")[0]}
        for name, edges in graph.items()
    }


def test_no_import_cycles() -> None:
    cycle = _find_cycle(_import_graph(eager_only=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_circle_inside_a_folder_even_through_lazy_imports() -> None:
    """Imports inside functions or `if TYPE_CHECKING:` count too: a circle between the modules
    of one folder means they are one module in pieces (docs/architecture.md)."""
    cycle = _find_cycle(_inside_folders(_import_graph(eager_only=False)))
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_circle_check_catches_a_lazy_circle() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "q.d": {"p.a"}}
    assert _find_cycle(_inside_folders(graph)) == ["p.a", "p.b", "p.c", "p.a"]
    assert _find_cycle(_inside_folders({"p.a": {"q.b"}, "q.b": {"p.a"}})) is None


def test_the_tools_scripts_do_not_import_each_other_in_a_cycle() -> None:
    """tools/ scripts import siblings by name (tools/ is sys.path[0]); none may come back round."""
    tools = PACKAGES.parent / "tools"
    scripts = {path.stem: path for path in tools.glob("*.py")}
    graph = {
        name: {module for module, _, _ in _imports(path) if module in scripts and module != name}
        for name, path in scripts.items()
    }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            step == goal or (step not in seen and reaches(step, goal, seen | {step}))
            for step in graph[start]
        )

    cycles = sorted(name for name in graph if reaches(name, name, {name}))
    assert not cycles, f"tools/ scripts importing each other back: {cycles}"


def _sizes() -> Iterator[tuple[str, int, list[tuple[str, int]]]]:
    for package, _, path in _modules():
        if package not in SIZE_CHECKED:
            continue
        text = path.read_text(encoding="utf-8")
        functions = [
            (node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
            for node in ast.walk(_tree(path))
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


@functools.cache
def _loaded_by(module: str) -> tuple[str, ...]:
    """Every module a fresh interpreter holds after `import <module>` (one process per module
    and test process: the checks below read the same import). Coverage does not measure it:
    the test processes run the same module-level code."""
    code = f"import json, sys, {module}\nprint(json.dumps(sorted(sys.modules)))\n"
    result = python_unmeasured(code)
    assert result.returncode == 0, result.stderr
    return tuple(json.loads(result.stdout))


@pytest.mark.parametrize(
    "module", ["deepwork_core", "deepwork_core.base.layout", "deepwork_mcp.hooks.active"]
)
def test_the_hooks_light_path_imports_no_framework(module: str) -> None:
    heavy = [
        m
        for m in _loaded_by(module)
        if m.split(".")[0] in ("pydantic", "mcp", "fastmcp", "yaml", "click")
    ]
    assert not heavy, heavy


@pytest.mark.parametrize("module", ["deepwork_mcp.server", "deepwork_mcp.cli.group"])
def test_the_dashboard_stays_behind_its_own_command(module: str) -> None:
    """Nothing the MCP server (or the CLI's entry) imports pulls in the dashboard
    (docs/dashboard.md): it adds nothing to the server's import time."""
    loaded = [
        m
        for m in _loaded_by(module)
        if m.startswith("deepwork_mcp.dashboard")
        or m in ("deepwork_mcp.cli.dashboard", "deepwork_mcp.cli.report")
    ]
    assert not loaded, loaded


#: The template engine the dashboard's pages and `report --html` are rendered with.
TEMPLATE_ENGINE = ("jinja2", "markupsafe")


@pytest.mark.parametrize(
    "module", ["deepwork_mcp.server", "deepwork_mcp.cli.serve", "deepwork_mcp.cli.group"]
)
def test_the_server_never_imports_the_template_engine(module: str) -> None:
    """`deepwork serve` loads no jinja2: only the dashboard and `report` render templates
    (tests/integration/test_store_imports.py checks a serving server too)."""
    loaded = [m for m in _loaded_by(module) if m.split(".")[0] in TEMPLATE_ENGINE]
    assert not loaded, loaded


def test_only_the_dashboard_imports_the_template_engine() -> None:
    problems = [
        f"{name} imports {imported}"
        for _, name, path in _modules()
        if not name.startswith("deepwork_mcp.dashboard")
        for imported, _, _ in _imports(path)
        if imported.split(".")[0] in TEMPLATE_ENGINE
    ]
    assert not problems, "\n".join(problems)


def test_only_the_dashboard_commands_import_the_dashboard() -> None:
    allowed = {"deepwork_mcp.cli.dashboard", "deepwork_mcp.cli.report"}
    problems = [
        f"{name} imports {imported}"
        for package, name, path in _modules()
        if package == "deepwork_mcp"
        and not name.startswith("deepwork_mcp.dashboard")
        and name not in allowed
        for imported, _, _ in _imports(path)
        if imported.startswith("deepwork_mcp.dashboard")
    ]
    assert not problems, "\n".join(problems)
