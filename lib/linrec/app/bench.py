"""The renderer of docs/performance.md's block, `benchmarks/performance.py`: a script of the project, not part of the
package, loaded from the project folder by its path (`linrec report --bench` and a default figures run call it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from linrec.base.errors import LinrecError

PERFORMANCE_SCRIPT = Path("benchmarks") / "performance.py"


def performance_script(root: str | Path) -> ModuleType:
    """`root`/benchmarks/performance.py as a module; one line naming the fix where the file is missing."""
    path = Path(root) / PERFORMANCE_SCRIPT
    if not path.is_file():
        raise LinrecError(f"{path} not found; restore it from git (git checkout -- {PERFORMANCE_SCRIPT.as_posix()})")
    spec = importlib.util.spec_from_file_location("linrec_benchmarks_performance", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
