"""Model surgery: an FFN block replaced by an affine map, in place or saved to disk and loaded back.

Per block i, the FFN module (`FfnSite.module`; for Gemma-3 the `mlp`, whose output is taken
before `post_feedforward_layernorm`, so the swap replaces exactly the map that was fitted) is
replaced by `AffineFFN`, y = Wᵀx + b, built from a closed-form fit (`linrec.stats.ceiling.fit_affine`,
or a reduced-rank `linrec.stats.ceiling.LowRankFit`) computed in float64 and run in the model's dtype.
`swapped(model, {i: module})` installs swaps for the duration of a `with` block. Parameters:
params_ffn counts the FFN module's parameters (`count_params`); a dense map has d_in·d_out +
d_out, a rank-r one r·(d_in + d_out) + d_out (`params_linear`), stored as factors,
y = up(down(x)) + bias.

Saved format (`save_swapped` / `load_swapped`), one directory:

    config.json            the base model's Hugging Face config, unchanged
    tokenizer files        `tokenizer.save_pretrained`
    model.safetensors      the *swapped* model's state dict (tied tensors stored once, as
                           `safetensors.torch.save_model` does): a swapped block's FFN keys
                           (e.g. model.layers.3.mlp.gate_proj.weight) are gone; in their place
                           <path>.weight [d_out, d_in] and <path>.bias [d_out] (full rank) or
                           <path>.down [r, d_in], <path>.up [d_out, r], <path>.bias (rank r)
    linrec_swaps.json      {"format": "linrec-swaps", "version": 1, "model_type", "dtype",
                           "attn_implementation", "swaps": [{"block", "path", "d_in", "d_out",
                           "rank" (null = full), "params_ffn", "params_linear"}, …] (every map the saved
                           model holds: a save of a model read back from a save keeps its maps, and
                           "params_ffn" stays the count of the FFN each map replaced), "info": {…},
                           "files": {name: {"size", "sha256"}} of every other file,
                           "meta_sha256": sha256 of the rest of this record (`linrec.base.files.seal`)}

The target directory must be new, empty, or an earlier linrec save holding only the files its
`linrec_swaps.json` lists, unchanged since (`check_save_target`, run before any work): linrec never deletes or
overwrites a file it did not write. An earlier save is replaced in one rename once the new one is complete; the new
one is staged beside the target as `.NAME.tmp-PID-*`, removed on any exit Python sees (SIGTERM included, under
`linrec.base.files.terminate_as_exit`) and, after a SIGKILL, by the next save to that target.

`load_swapped(dir)` checks every file against its recorded sha256, builds the model from
config.json, installs an `AffineFFN` of the recorded shape at each listed path and loads
model.safetensors strictly (every key must match). Plain
`from_pretrained` on such a directory would silently re-initialise the swapped FFNs at random:
use `load_swapped`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from safetensors.torch import load_model, save_model

from linrec.base.constraints import Blocks
from linrec.base.errors import LinrecError
from linrec.base.files import (
    atomic_dir,
    check_writable_dir,
    clean_stale_tmp,
    file_digest,
    manifest,
    path_identity,
    seal,
    unseal,
    verify_manifest,
)
from linrec.inputs.hf import LoadedModel, load_tokenizer, quiet_transformers
from linrec.inputs.sites import FfnSite, find_ffn_sites
from linrec.stats.ceiling import LowRankFit

if TYPE_CHECKING:
    from linrec.stats.ceiling import AffineFit

SWAPS_FILE = "linrec_swaps.json"


WEIGHTS_FILE = "model.safetensors"


FORMAT, FORMAT_VERSION = "linrec-swaps", 1


class AffineFFN(torch.nn.Module):
    """y = Wᵀx + b in place of an FFN: dense (`weight` [d_out, d_in])
    or rank-r factors (`down` [r, d_in], `up` [d_out, r])."""

    def __init__(self, d_in: int, d_out: int, rank: int | None = None, dtype: torch.dtype = torch.float32, device=None):
        super().__init__()
        self.d_in, self.d_out, self.rank = d_in, d_out, rank
        # parameters of the FFN this map replaced, where known (a map read back by `load_swapped` carries its
        # record's; a re-save of that model records it again instead of counting the map itself)
        self.params_replaced: int | None = None
        kw = dict(dtype=dtype, device=device)
        if rank is None:
            self.weight = torch.nn.Parameter(torch.zeros(d_out, d_in, **kw), requires_grad=False)
        else:
            self.down = torch.nn.Parameter(torch.zeros(rank, d_in, **kw), requires_grad=False)
            self.up = torch.nn.Parameter(torch.zeros(d_out, rank, **kw), requires_grad=False)
        self.bias = torch.nn.Parameter(torch.zeros(d_out, **kw), requires_grad=False)

    @classmethod
    def from_fit(cls, fit: AffineFit | LowRankFit, dtype: torch.dtype = torch.float32, device=None) -> AffineFFN:
        """The module of a fitted map (float64 numbers, rounded once to `dtype`)."""
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dtype=dtype, device=device)  # noqa: E731
        if isinstance(fit, LowRankFit):
            m = cls(fit.A.shape[0], fit.B.shape[1], fit.rank, dtype, device)
            m.down.data.copy_(t(fit.A.T))
            m.up.data.copy_(t(fit.B.T))
        else:
            m = cls(fit.W.shape[0], fit.W.shape[1], None, dtype, device)
            m.weight.data.copy_(t(fit.W.T))
        m.bias.data.copy_(t(fit.b))
        return m

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rank is None:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        return torch.nn.functional.linear(torch.nn.functional.linear(x, self.down), self.up, self.bias)

    @property
    def n_params(self) -> int:
        return count_params(self)

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_out={self.d_out}, rank={'full' if self.rank is None else self.rank}"


FIRST_MODES = ("map", "ffn", "mean")


class FirstPositionSwap(torch.nn.Module):
    """An affine map on every position but each window's first, which gets its own treatment.

    Without a BOS token the first position is where these models park their attention sink,
    and its FFN output is far from the rest (notebook 04). `first="ffn"`: position 0 keeps the
    original FFN's own output (the FFN stays in the model, so nothing is saved on it);
    `first="mean"`: position 0 gets a fixed vector (the train mean of the FFN's output there).
    `affine` should be fitted on positions ≥ 1 only (`linrec.collect.capture.Capture.without_first`).

    Evaluation only: the module reads "position 0" as index 0 of the sequence it is given, which
    is right for full windows (perplexity) and wrong under KV-cached generation, where every
    step is a one-token sequence; `save_swapped` refuses it.
    """

    def __init__(self, affine: AffineFFN, first: str, ffn: torch.nn.Module | None = None, mean=None):
        super().__init__()
        if first not in ("ffn", "mean"):
            raise LinrecError(f"first must be 'ffn' or 'mean' for a position-aware swap, got {first!r}")
        if (first == "ffn") != (ffn is not None) or (first == "mean") != (mean is not None):
            raise LinrecError("first='ffn' needs the original FFN (ffn=...), first='mean' the mean vector (mean=...)")
        self.affine, self.first = affine, first
        self.ffn = ffn
        if mean is not None:
            p = affine.bias
            mean = torch.as_tensor(np.asarray(mean)).to(dtype=p.dtype, device=p.device)
            self.first_mean = torch.nn.Parameter(mean.reshape(affine.d_out).clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.affine(x)
        if x.ndim < 3 or x.shape[-2] == 0:
            return y
        if self.first == "ffn":
            y[..., 0, :] = self.ffn(x[..., :1, :])[..., 0, :]
        else:
            y[..., 0, :] = self.first_mean
        return y

    @property
    def n_params(self) -> int:
        """Parameters this swap needs: the map's, plus the kept FFN's or the mean vector's."""
        return count_params(self)

    def extra_repr(self) -> str:
        return f"first={self.first}"


def params_linear(d_in: int, d_out: int, rank: int | None = None) -> int:
    """Parameters of the affine map: d_in·d_out + d_out, or r·(d_in + d_out) + d_out at rank r."""
    return (d_in * d_out if rank is None else rank * (d_in + d_out)) + d_out


def count_params(module: torch.nn.Module) -> int:
    """Number of parameters of `module` (each tensor once)."""
    return sum(p.numel() for p in module.parameters())


def set_submodule(model: torch.nn.Module, path: str, module: torch.nn.Module) -> None:
    """Put `module` at dotted `path` inside `model`."""
    parent, _, name = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, name, module)


def installed(model: torch.nn.Module, site: FfnSite) -> torch.nn.Module:
    """The module at `site`'s FFN path in `model` now: its FFN, or what a swap put there since the site was found."""
    if site.ffn_in is not site.ffn_out:
        return site.module  # an FFN that spans two modules: its one-line error
    return model.get_submodule(site.path)


@contextlib.contextmanager
def swapped(model: torch.nn.Module, swaps: Mapping[int, torch.nn.Module], sites: list[FfnSite] | None = None):
    """Within the block, FFN block i of `model` is `swaps[i]`;
    the originals (what each path held on entry) are put back on exit, exceptions included. `sites`: the model's
    FFN sites, where the caller has them (`LoadedModel.sites`)."""
    sites = find_ffn_sites(model) if sites is None else sites
    if swaps:  # the API's and the command line's rule and words (linrec.base.constraints.Blocks)
        Blocks(below=len(sites)).check("blocks", sorted(swaps))
    originals: list[tuple[str, torch.nn.Module]] = []
    try:
        for i, module in swaps.items():
            original = installed(model, sites[i])
            originals.append((sites[i].path, original))
            set_submodule(model, sites[i].path, module)
        yield model
    finally:
        for path, original in reversed(originals):
            set_submodule(model, path, original)


def replaced_params(module: torch.nn.Module) -> int:
    """Parameters of the original FFN at a site that holds `module`: its own count, or, for a map a save installed
    (`AffineFFN.params_replaced`), the count of the FFN it replaced."""
    recorded = getattr(module, "params_replaced", None) if isinstance(module, AffineFFN) else None
    return int(recorded) if recorded is not None else count_params(module)


def save_swapped(
    model: torch.nn.Module,
    tokenizer,
    swaps: Mapping[int, AffineFFN],
    directory: str | Path,
    info: dict | None = None,
    sites: list[FfnSite] | None = None,
) -> Path:
    """Write the model with `swaps` installed to `directory` (format: module docstring); returns the directory.

    Swaps compose: a model that already holds affine maps (one `load_swapped` read back) is saved with those maps and
    `swaps` on top, all of them in the record (a block in `swaps` that already holds a map gets the new one), so a
    re-swapped save loads to the logits of the model it was written from; with no `swaps`, a model that holds maps
    already (`linrec.analyses.fitted.Fit.swapped_model`) is saved as it is. `sites`: the model's FFN sites, where the
    caller has them (`LoadedModel.sites`)."""

    sites = find_ffn_sites(model) if sites is None else sites
    if not swaps and not any(isinstance(installed(model, s), AffineFFN) for s in sites):  # `linrec.api`'s swapped
        raise LinrecError("nothing to save: no block is swapped; choose blocks (--blocks) or raise --budget-ppl")
    positional = [i for i, m in swaps.items() if isinstance(m, FirstPositionSwap)]
    if positional:
        raise LinrecError(
            f"blocks {positional}: a position-aware swap (--first ffn/mean) is for evaluation only, it cannot tell "
            "position 0 apart under KV-cached generation; save with --first map"
        )
    not_affine = [i for i, m in swaps.items() if not isinstance(m, AffineFFN)]
    if not_affine:
        raise LinrecError(f"blocks {not_affine}: only AffineFFN swaps can be saved; build them with AffineFFN.from_fit")
    if swaps:  # the API's and the command line's rule and words (linrec.base.constraints.Blocks)
        Blocks(below=len(sites)).check("blocks", sorted(swaps))
    now = [installed(model, s) for s in sites]
    earlier = {i: m for i, m in enumerate(now) if isinstance(m, AffineFFN) and i not in swaps}
    entries = []
    for i in sorted({*swaps, *earlier}):
        m = swaps.get(i, earlier.get(i))
        entries.append(
            {
                "block": i,
                "path": sites[i].path,
                "d_in": m.d_in,
                "d_out": m.d_out,
                "rank": m.rank,
                "params_ffn": replaced_params(now[i]),
                "params_linear": m.n_params,
            }
        )
    dtype = next(model.parameters()).dtype
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "model_type": model.config.model_type,
        "dtype": str(dtype).removeprefix("torch."),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "swaps": entries,
        "info": info or {},
    }
    directory = Path(directory)
    replace = check_save_target(directory)
    with atomic_dir(directory, replace=replace) as tmp, swapped(model, swaps, sites):
        model.config.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        save_model(model, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
        meta["files"] = manifest(tmp)
        (tmp / SWAPS_FILE).write_text(seal(meta))  # with its own checksum: an edited record is not trusted
    return directory


def check_save_target(directory: str | Path) -> bool:
    """Refuse (one line) a save target linrec must not write; True if it is an earlier linrec save to replace.

    Allowed: a new path in a writable directory, an empty directory, or an earlier save holding nothing but the
    files its `linrec_swaps.json` lists, each with the sha256 recorded there (and the record's own checksum intact).
    Anything else (a file, a symbolic link, a folder, a hidden file, a listed file edited since, `.`) is refused
    before any work, and nothing is deleted. Leftover staging folders of this target from a killed save
    (`.NAME.tmp-PID-*` beside it, their process gone) are removed.
    """
    directory = Path(directory)
    fix = "choose a new or empty directory for --save"
    if directory.is_symlink():
        raise LinrecError(f"--save {directory} is a symbolic link; give the directory itself, or {fix}")
    if directory.exists() and not directory.is_dir():
        raise LinrecError(f"--save {directory} is a file, not a directory; {fix}")
    parent = directory.resolve().parent
    check_writable_dir(parent, "the directory above --save", fix)
    clean_stale_tmp(parent, directory.resolve().name)
    if not directory.exists():
        return False
    entries = sorted(directory.iterdir())
    if not entries:
        return True  # empty: nothing of the user's is lost
    marker = directory / SWAPS_FILE
    listed = _save_record(marker)
    if listed is None and (marker.is_file() or marker.is_symlink()):  # the record itself is what cannot be trusted
        raise LinrecError(
            f"--save {directory} holds a {SWAPS_FILE} that was edited or damaged since linrec wrote it (or is a "
            f"symbolic link), so linrec cannot tell which files are its own and never deletes them: {fix}"
        )
    if listed is None:
        raise LinrecError(
            f"--save {directory} holds files linrec did not write (e.g. {entries[0].name}); "
            f"linrec never deletes them: {fix}"
        )
    for p in entries:
        what = None
        if p.is_symlink():
            what = f"a symbolic link, {p.name}"
        elif p.is_dir():
            what = f"a folder, {p.name}"
        elif p.name == SWAPS_FILE:
            continue
        elif p.name not in listed:
            what = f"other files added (e.g. {p.name})"
        elif problem := verify_manifest(directory, {p.name: listed[p.name]}):
            what = f"{p.name} changed since linrec wrote it ({problem})"
        if what is not None:
            raise LinrecError(
                f"--save {directory} is an earlier linrec save with {what}; linrec never deletes or overwrites "
                f"what it did not write: {fix}"
            )
    return True


def _swaps_record(marker: Path) -> dict | None:
    """The `linrec_swaps.json` record of a save, or None if there is none, it does not parse, or it was changed
    since linrec wrote it (a save written since records carry their own checksum, `linrec.base.files.seal`, is
    checked)."""
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        meta = json.loads(marker.read_text())
        if isinstance(meta, dict) and "meta_sha256" in meta:
            meta = unseal(marker)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _save_record(marker: Path) -> dict | None:
    """The {file: {"size", "sha256"}} record of an earlier save (`_swaps_record`'s "files"), or None."""
    files = (_swaps_record(marker) or {}).get("files")
    return files if isinstance(files, dict) else None


def saved_blocks(directory: str | Path) -> list[int]:
    """The blocks a save holds affine maps at (its record's), sorted; [] for a folder without an intact record."""
    return sorted(int(s["block"]) for s in (_swaps_record(Path(directory) / SWAPS_FILE) or {}).get("swaps", []))


def swapped_identity(directory: str | Path) -> str:
    """Cache identity of a saved swapped model, checked on every lookup (a cache hit included): the save must be
    intact, its record unedited and every file it lists with the sha256 recorded there (else the one line
    `load_swapped` gives), and the identity is the sha256 of every file in the folder, as for any local model
    (`linrec.base.files.path_identity`). Digests are remembered (`linrec.base.files.file_digest`): a rerun costs
    one stat per file, and a file changed in place, its size and mtime put back, is hashed again."""
    directory = Path(directory).expanduser()
    meta_file = directory / SWAPS_FILE
    meta = _swaps_record(meta_file)
    if meta is None or meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        raise LinrecError(_not_intact(meta_file))
    problem = verify_manifest(directory, meta.get("files"), digest=file_digest)
    if problem:
        raise LinrecError(_damaged(directory, problem))
    return path_identity(directory)


def _not_intact(meta_file: Path) -> str:
    return (
        f"{meta_file} is not an intact {FORMAT} version {FORMAT_VERSION} record (unreadable, another version, or "
        "edited by hand); save the model again with this linrec"
    )


def _damaged(directory: Path, problem: str) -> str:
    return f"the saved model in {directory} is damaged ({problem}); save it again with linrec swap --save"


def load_swapped(directory: str | Path, device: str = "cpu", tokenizer: bool = True) -> LoadedModel:
    """The model saved by `save_swapped`: built from its config, affine modules installed, weights loaded strictly.

    `tokenizer=False` leaves the saved tokenizer unread (`LoadedModel.tokenizer` None) for a caller that feeds
    token ids it already has: parsing Gemma-3's 262k-entry tokenizer takes 3.4 of the 4.4 s of its reload."""

    directory = Path(directory)
    meta_file = directory / SWAPS_FILE
    if not meta_file.is_file() or not (directory / WEIGHTS_FILE).is_file():
        raise LinrecError(
            f"{directory} is not a swapped model (needs {SWAPS_FILE} and {WEIGHTS_FILE}); "
            "write one with linrec swap --save"
        )
    meta = _swaps_record(meta_file)  # a record edited by hand no longer vouches for the files
    if meta is None or meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        raise LinrecError(
            f"{meta_file} is not an intact {FORMAT} version {FORMAT_VERSION} record (unreadable, another version, or "
            "edited by hand); save the model again with this linrec"
        )
    problem = verify_manifest(directory, meta.get("files"))
    if problem:
        raise LinrecError(
            f"the saved model in {directory} is damaged ({problem}); save it again with linrec swap --save"
        )
    dtype = getattr(torch, meta["dtype"])
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.initialization import no_init_weights

    with quiet_transformers():
        config = AutoConfig.from_pretrained(str(directory))
        kw = {"attn_implementation": meta["attn_implementation"]} if meta.get("attn_implementation") else {}
        with no_init_weights():  # every weight is loaded strictly below: drawing random ones first only costs time
            model = AutoModelForCausalLM.from_config(config, **kw).to(dtype)
        model.tie_weights()  # what the skipped init would also have done (a tied head shares the embedding)
    sites = find_ffn_sites(model)
    for s in meta["swaps"]:
        i = s["block"]
        if not 0 <= i < len(sites) or sites[i].path != s["path"]:
            raise LinrecError(
                f"{meta_file}: block {i} at {s['path']} does not match this config's model; "
                "the directory is inconsistent, save it again"
            )
        affine = AffineFFN(s["d_in"], s["d_out"], s["rank"], dtype)
        affine.params_replaced = s.get("params_ffn")
        set_submodule(model, s["path"], affine)
        sites[i] = replace(sites[i], ffn_in=affine, ffn_out=affine)  # as `find_ffn_sites` would find it now
    try:
        load_model(model, str(directory / WEIGHTS_FILE), strict=True)
    except RuntimeError as err:
        raise LinrecError(
            f"{directory / WEIGHTS_FILE} does not match {SWAPS_FILE} ({' '.join(str(err).split())[:200]}); "
            "save the model again"
        ) from None
    model.eval().requires_grad_(False).to(device)
    tok = load_tokenizer(directory) if tokenizer and (directory / "tokenizer_config.json").exists() else None
    if tok is not None and getattr(tok, "pad_token", None) is None and getattr(tok, "eos_token", None) is not None:
        tok.pad_token = tok.eos_token
    blocks = [s["block"] for s in meta["swaps"]]
    loaded = LoadedModel(
        model=model,
        tokenizer=tok,
        name=str(directory),
        identity=swapped_identity(directory),
        source="swapped",
        notes=[f"FFN blocks {blocks} replaced by affine maps"],
    )
    loaded.sites = sites
    return loaded
