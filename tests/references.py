"""Reference outputs of the smoke profile's notebooks (tests/notebooks/*.ipynb), and the comparison that guards them.

Cells tagged `nbval-check-output` (nbval's own tag, in the cell's metadata: `# %% tags=["nbval-check-output"]` in
the jupytext source; a `# NBVAL_CHECK_OUTPUT` line in the cell, nbval's comment marker, still counts) have their
printed output — stdout and each result's text/plain — compared with the reference: text must match exactly once
paths are replaced by placeholders; numbers printed with decimals must agree to 1e-4 relative or one unit in the
last decimal (a number printed as 0.437 may read 0.438 on a machine whose float rounding differs, but not 0.440),
and a count must be equal; rows of seconds are left out. Why 1e-4: the trained baselines (notebook 03) and the
swapped models' perplexities (notebook 06) are float32 sums whose order depends on the kernel's thread count (the
runner sets it from the free CPUs) and on the CPU's vector width. Between two machines the printed statistics moved
by up to 1.6e-5 relative (03's bootstrap CI bound of r over trained gains) and 2.2e-6 (06's ΔPPL, a difference of
two perplexities near 8.7e7); 1e-4 leaves a sixfold margin and still fails any change a bug makes to a result.
Numbers below 0.1 in size are held to 1e-5 absolute instead (1e-4 of 0.1): with one kernel thread instead of two, a
bound near 0 of notebook 03's table without position 0 moved from 0.005664 to 0.005661, 3e-6 but 5e-4 relative.

A changed number fails with the cell's unified diff. The comparison reads the notebooks the notebook test has just
executed: re-executing them under `pytest --nbval-lax` would double the smoke run's cost in `make test` (it works,
slowly: `pytest -p nbval --nbval-lax tests/notebooks/` after `make smoke`, with the smoke captures in the cache).

Refresh the references after a change that moves a number on purpose (and say why in the commit):

    make references        # runs the smoke profile, then: python tests/references.py results/smoke/notebooks
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import nbformat
from nbval.plugin import find_comment_markers

HERE = Path(__file__).resolve().parent / "notebooks"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


CHECK_TAG = "nbval-check-output"  # nbval's own tag: the cell metadata a jupytext cell header carries, `# %% tags=[...]`


def checked(cell) -> bool:
    """A cell whose output is compared: tagged `nbval-check-output` in its metadata (out of the code a student reads,
    issue 90), or, in a notebook not yet moved to the tag, marked `# NBVAL_CHECK_OUTPUT` in its source."""
    tagged = CHECK_TAG in cell.get("metadata", {}).get("tags", [])
    return cell.cell_type == "code" and (tagged or ("check", True) in find_comment_markers(cell.source))


def printed(cell, paths: dict[str, str]) -> str:
    """What a checked cell showed: its stdout and each result's text/plain, with `paths` replaced by placeholders."""
    parts = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            parts.append(o.get("text", ""))
        elif o.get("output_type") in ("execute_result", "display_data") and "text/plain" in o.get("data", {}):
            if "image/png" not in o["data"]:
                parts.append(o["data"]["text/plain"] + "\n")
    text = "".join(parts)
    for path, name in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, name)
    return text


RELATIVE = 1e-4  # float32 noise between thread counts and CPUs: up to 1.6e-5 measured (module docstring)
FLOOR = 0.1  # below it, RELATIVE of 0.1 (1e-5) absolute: a bootstrap bound near 0 moved 3e-6 (5e-4 relative)
SPACES = re.compile(r"[ \t]+")  # a table pads its columns to the widest number: -0.56114 and -0.561136 shift them
TIMING = re.compile(r"^.*\bseconds.*$", re.M)  # a table row of seconds (notebook 03's summary): not a result


def _close(a: str, b: str) -> bool:
    """Two printed numbers alike: numbers printed with decimals within RELATIVE (1e-4) of each other or one unit in the
    last decimal printed; whole numbers (counts, block numbers) equal, or within 1e-6 where they are large."""
    if a == b:
        return True
    x, y = float(a), float(b)
    decimal = "." in a and "." in b
    if abs(x - y) <= (RELATIVE * max(abs(x), abs(y), FLOOR) if decimal else 1e-6 * max(abs(x), abs(y))):
        return True
    if "." not in a or "." not in b or "e" in (a + b).lower():
        return False
    decimals = max(len(s.split(".")[1]) for s in (a, b))
    return abs(x - y) <= 1.000001 * 10.0**-decimals


def same(got: str, want: str) -> bool:
    """`got` and `want` alike: the same text between numbers (runs of spaces counting as one: a table's column
    padding follows its widest number), and numbers within the tolerance above (rows of seconds left out)."""
    got, want = TIMING.sub("<seconds>", got), TIMING.sub("<seconds>", want)
    if SPACES.sub(" ", NUMBER.sub("#", got)) != SPACES.sub(" ", NUMBER.sub("#", want)):
        return False
    return all(_close(a, b) for a, b in zip(NUMBER.findall(got), NUMBER.findall(want)))


def differences(executed: Path, reference: Path, paths: dict[str, str]) -> list[str]:
    """A unified diff per checked cell whose printed output differs from the reference; [] when all agree."""
    got = [c for c in nbformat.read(str(executed), as_version=4).cells if checked(c)]
    want = [c for c in nbformat.read(str(reference), as_version=4).cells if checked(c)]
    if len(got) != len(want):
        return [f"{executed.name}: {len(got)} checked cells, the reference has {len(want)}; refresh the references"]
    out = []
    for k, (g, w) in enumerate(zip(got, want)):
        a, b = printed(g, paths), printed(w, {})
        if not same(a, b):
            diff = difflib.unified_diff(b.splitlines(), a.splitlines(), "reference", "this run", lineterm="", n=1)
            out.append(f"{executed.name}, checked cell {k + 1} ({g.source.splitlines()[1][:60]}…):\n" + "\n".join(diff))
    return out


def refresh(executed_dir: Path, paths: dict[str, str]) -> list[Path]:
    """Copy each executed notebook to tests/notebooks/ as a reference: images dropped (they are not compared and
    would make the files large), paths replaced by placeholders, papermill's timings removed."""
    HERE.mkdir(exist_ok=True)
    written = []
    for src in sorted(Path(executed_dir).glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(str(src), as_version=4)
        nb.metadata.pop("papermill", None)
        for cell in nb.cells:
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
            if cell.cell_type != "code":
                continue
            for o in cell.get("outputs", []):
                data = o.get("data", {})
                if "image/png" in data:
                    data["image/png"] = ""
                for key in ("text/plain", "text/html"):
                    if key in data:
                        for path, name in sorted(paths.items(), key=lambda kv: -len(kv[0])):
                            data[key] = data[key].replace(path, name)
                if "text" in o:
                    for path, name in sorted(paths.items(), key=lambda kv: -len(kv[0])):
                        o["text"] = o["text"].replace(path, name)
        dst = HERE / src.name
        nbformat.write(nb, str(dst))
        written.append(dst)
    return written


if __name__ == "__main__":
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "results/smoke/notebooks").resolve()
    root = Path(__file__).resolve().parents[1]
    results = folder.parent
    written = refresh(folder, {str(results): "<results>", str(root): "<root>"})
    print(f"wrote {len(written)} reference notebooks to {HERE}")
