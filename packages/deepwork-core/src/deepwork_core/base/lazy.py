"""Lazy public APIs: a package names its public objects without importing their modules.

The hooks' no-op path imports `deepwork_core.base.layout` and must not pay for pydantic, so a
package's
`__init__` cannot import its submodules eagerly. It lists them instead and installs the module
`__getattr__` built here (PEP 562): `from deepwork_core import WorkflowEngine` imports
`deepwork_core.engine.workflow` on first use and caches the object in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence


def lazy_exports(package: str, homes: Mapping[str, Sequence[str]]) -> Callable[[str], object]:
    """A module `__getattr__` for `package` resolving each name in `homes` from its module."""
    module_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> object:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
