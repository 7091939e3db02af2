"""deepwork_core never imports mcp, fastmcp, click or jinja2 (the layering rule)."""

from __future__ import annotations

import subprocess
import textwrap

from tests.fixtures.coverage_env import python_unmeasured

BLOCKED = ("mcp", "fastmcp", "click", "jinja2")

_SCRIPT = textwrap.dedent(
    """
    import importlib
    import pkgutil
    import sys

    BLOCKED = {blocked!r}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"deepwork_core must not import {{name}}")
            return None

    sys.meta_path.insert(0, Blocker())
    for name in BLOCKED:
        sys.modules.pop(name, None)

    {body}
    """
)


def _run(body: str) -> subprocess.CompletedProcess[str]:
    script = _SCRIPT.format(blocked=BLOCKED, body=textwrap.dedent(body))
    # Unmeasured: every module it imports, the test processes import too.
    return python_unmeasured(script, timeout=120)


def test_every_core_module_imports_with_the_frameworks_blocked() -> None:
    result = _run(
        """
        import deepwork_core
        names = [deepwork_core.__name__]
        for info in pkgutil.walk_packages(deepwork_core.__path__, "deepwork_core."):
            names.append(info.name)
        for name in names:
            importlib.import_module(name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
        print(len(names))
        """
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 10  # every module was found and imported


def test_the_blocker_really_blocks() -> None:
    result = _run(
        """
        import click
        """
    )
    assert result.returncode != 0
    assert "must not import click" in result.stderr
