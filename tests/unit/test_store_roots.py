"""The store is opened at the composition roots and handed down (docs/architecture.md, "The
store, opened at the roots"): only the modules named here open one, and no module keeps a
registry of open stores for others to look up."""

from __future__ import annotations

import ast
import re

from tests.unit.test_architecture import _modules, _tree

#: What opens a store: core's openers, the reader that opens one once it exists, and the
#: command line's two context managers over them.
OPENERS = frozenset(
    {
        "open_store",
        "open_existing_store",
        "StoreWhenItExists",
        "project_store",
        "existing_project_store",
    }
)
#: The composition roots, and the module that defines the openers.
ROOTS = frozenset(
    {
        "deepwork_core.state.store.opening",  # the openers themselves
        "deepwork_mcp.server",  # the server: each project's store, closed with its lifespan
        "deepwork_mcp.dashboard.app",  # the dashboard app
        "deepwork_mcp.hooks.active",  # the hook process, once the stack marker says so
    }
)
#: Every command is a root of its own.
ROOT_PACKAGES = ("deepwork_mcp.cli.",)
#: The names of the registry that once answered "the store of this project root".
REGISTRY_NAMES = frozenset(
    {
        "shared_store",
        "existing_store",
        "close_shared_stores",
        "use_store_url",
        "set_default_store_url",
        "default_store_url",
    }
)
_REGISTRY = re.compile(r"(?i)^_*(\w*_)?(stores|answered|urls)$")


def _parsed(source: str | ast.Module) -> ast.Module:
    """`source` as a tree (the packages' modules come parsed once, `_tree`)."""
    return ast.parse(source) if isinstance(source, str) else source


def opener_calls(source: str | ast.Module) -> list[str]:
    """`line: name` of every call of an opener in `source`."""
    found = []
    for node in ast.walk(_parsed(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in OPENERS:
                found.append(f"{node.lineno}: {name}")
    return found


def registries(source: str | ast.Module) -> list[str]:
    """`line: name` of each module-level variable that could hold stores for a look-up (named
    like one, or annotated with `Store`), and of each function or variable named like the old
    registry's API."""
    found = []
    tree = _parsed(source)
    for node in tree.body:
        targets: list[ast.expr] = []
        annotation = ""
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets, annotation = [node.target], ast.unparse(node.annotation)
        for target in targets:
            if isinstance(target, ast.Name) and (
                _REGISTRY.match(target.id)
                or re.search(r"\bStore\b", annotation)
                or target.id in REGISTRY_NAMES
            ):
                found.append(f"{node.lineno}: {target.id}")
    for defined in ast.walk(tree):
        if isinstance(defined, ast.FunctionDef | ast.AsyncFunctionDef) and (
            defined.name in REGISTRY_NAMES
        ):
            found.append(f"{defined.lineno}: def {defined.name}")
    return found


def _is_root(name: str) -> bool:
    return name in ROOTS or name.startswith(ROOT_PACKAGES)


def test_only_the_composition_roots_open_a_store() -> None:
    problems = [
        f"{name}:{call}"
        for _, name, path in _modules()
        if not _is_root(name)
        for call in opener_calls(_tree(path))
    ]
    assert not problems, "open the store at a root and hand it down:\n" + "\n".join(problems)


def test_the_roots_named_are_real_modules_that_open_a_store() -> None:
    opening = {name for _, name, path in _modules() if opener_calls(_tree(path))}
    assert opening >= ROOTS - {"deepwork_core.state.store.opening"}, ROOTS - opening


def test_the_opener_check_catches_a_call_below_the_roots() -> None:
    source = (
        "from deepwork_core.state.store import opening\n"
        "def read(root):\n"
        "    return opening.open_existing_store(None, root)\n"
        "def write(root):\n"
        "    return open_store(None, root)\n"
    )
    assert opener_calls(source) == ["3: open_existing_store", "5: open_store"]
    assert not _is_root("deepwork_core.state.events")
    assert _is_root("deepwork_mcp.cli.status")


def test_no_module_keeps_a_registry_of_stores() -> None:
    problems = [
        f"{name}:{found}" for _, name, path in _modules() for found in registries(_tree(path))
    ]
    assert not problems, "hand the store down instead:\n" + "\n".join(problems)


def test_the_registry_check_catches_a_dict_of_stores() -> None:
    source = (
        "_stores: dict[tuple[int, str], Store] = {}\n"
        "_answered = {}\n"
        "cache: dict[str, Store] = {}\n"
        "def shared_store(root):\n"
        "    return _stores[root]\n"
        "_COSTS: dict[str, int] = {}\n"
    )
    assert registries(source) == [
        "1: _stores",
        "2: _answered",
        "3: cache",
        "4: def shared_store",
    ]
