"""Additive second-moment statistics of paired rows (x, y), merged exactly across batches and shards.

For rows z = [x, y] we keep n, the mean μ and the centred cross-product matrix
M = Σ (z − μ)(z − μ)ᵀ in float64. A batch is centred on its own mean, its product is
taken, and it is merged with Chan's parallel update

    n = nₐ + n_b,   δ = μ_b − μₐ,   μ = μₐ + δ·n_b/n,   M = Mₐ + M_b + (nₐ·n_b/n)·δδᵀ,

which is exact in exact arithmetic and, unlike raw sums Σzzᵀ, loses no digits to a large mean
(a few features of LLM activations have |mean| ≫ std). From (n, μ, M) every quantity of the
affine least-squares problem follows: Σxxᵀ = Mxx + n·μxμxᵀ, and so on.

`product="float64"` (exact) takes the products in float64.
`product="float32"` (fast) takes them on the float64-centred batch in float32 and merges in
float64; its error against float64 is measured and printed by `benchmarks/capture.py`.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch

from linrec.base.errors import LinrecError

PRODUCTS = {"float64": torch.float64, "float32": torch.float32}
# Per thread (jobs on threads, `linrec.analyses.parallel.run_jobs`, must not share them): the float64 batch buffer
# reused across all Moments ({shape: tensor}) and the few symmetric matrices read most recently (`_recent_symmetric`).
_LOCAL = threading.local()


def _scratch() -> dict[tuple, torch.Tensor]:
    if not hasattr(_LOCAL, "scratch"):
        _LOCAL.scratch = {}
    return _LOCAL.scratch


def _symmetric() -> OrderedDict[int, tuple]:
    if not hasattr(_LOCAL, "symmetric"):
        _LOCAL.symmetric = OrderedDict()  # id(Moments) → (weakref, state key, read-only symmetric M)
    return _LOCAL.symmetric


def accelerated(device: torch.device | str) -> bool:
    """True for a device whose statistics stay and are solved where they live (an accelerator): the capture keeps
    every per-batch update there and the fits run there in torch. One switch for every such path, so a test can
    run them all on the CPU (`tests/collect/test_capture.py` checks them against the host paths)."""
    return torch.device(device).type != "cpu"


def panel_width(d: int) -> int:
    """Columns per panel of `upper_product` for a [d, d] accumulator: about d/8, a multiple of 16, at least 64.
    (On this project's 2-core CPU, d = 1152: 144 columns take 0.80 of the two-block product's time; 64 to 256
    columns all fall within 0.80–0.88.)"""
    return max(64, -(-d // 128) * 16)


def upper_product(M: torch.Tensor, z: torch.Tensor) -> None:
    """M += zᵀz on the upper triangle only: for each panel of w columns starting at s,
    M[s:s+w, s:] += z[:, s:s+w]ᵀ z[:, s:]. That is d²/2 + d·w/2 multiply-adds per row instead of d² (the
    lower triangle below the diagonal panels is left as it was). Products in z's dtype, accumulated
    into M's (float64); with float64 z each panel is one `addmm`."""
    d = z.shape[1]
    w = panel_width(d)
    for s in range(0, d, w):
        if z.dtype == M.dtype:
            M[s : s + w, s:].addmm_(z[:, s : s + w].T, z[:, s:])
        else:
            M[s : s + w, s:] += z[:, s : s + w].T @ z[:, s:]


@functools.lru_cache(maxsize=4)
def _upper_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.triu_indices(d)`, built once per width (a cached capture unpacks dozens of matrices of one width)."""
    return np.triu_indices(d)


_SYMMETRIC_KEEP = 4  # at most this many matrices kept (a fit holds train, test and two for a leave-out): bounded memory


def _state_key(m: Moments) -> tuple:
    return (id(m._M), m.n, m._version)


def _recent_symmetric(m: Moments) -> np.ndarray | None:
    """The symmetric M of `m` if it was built for `m`'s present state and is among the last few built."""
    kept = _symmetric()
    hit = kept.get(id(m))
    if hit is None or hit[0]() is not m or hit[1] != _state_key(m):
        return None
    kept.move_to_end(id(m))
    return hit[2]


def _remember_symmetric(m: Moments, M: np.ndarray) -> None:
    M.flags.writeable = False  # shared by every reader (Cxx, Cxy, Cyy, blocks): a copy to change it
    kept = _symmetric()
    kept[id(m)] = (weakref.ref(m), _state_key(m), M)
    kept.move_to_end(id(m))
    while len(kept) > _SYMMETRIC_KEEP:
        kept.popitem(last=False)


@dataclass
class Moments:
    """n, mean and centred cross-products of rows z = [x, y] (x: `d_in` features, y: `d_out`).

    The accumulator is a torch float64 tensor on the rows' device. Only its upper triangle is
    accumulated, as column panels (`upper_product`): about half the flops of a full zᵀz; the lower
    triangle is filled in by symmetry when read. (A BLAS syrk would do the same in one call, but
    on CPU its thread pool fights PyTorch's between forward-pass layers, so it is slower in
    practice; the panels are PyTorch's own `addmm` on any device.)
    """

    d_in: int
    d_out: int
    n: int = 0
    mean: torch.Tensor | None = None  # [d_in + d_out] float64
    _M: torch.Tensor | None = None  # [d, d] float64; its upper triangle is the valid part
    _version: int = field(default=0, init=False, repr=False, compare=False)  # bumped by every in-place change

    def __post_init__(self):
        d = self.d_in + self.d_out
        if self.mean is None:
            self.mean = torch.zeros(d, dtype=torch.float64)
        if self._M is None:
            self._M = torch.zeros(d, d, dtype=torch.float64, device=self.mean.device)

    def update(self, x: torch.Tensor, y: torch.Tensor, product: str = "float64") -> None:
        """Add rows x [..., d_in], y [..., d_out] (any float dtype, any device) to the statistics."""
        x = x.detach().reshape(-1, self.d_in)
        y = y.detach().reshape(-1, self.d_out)
        nb, d = x.shape[0], self.d_in
        if nb == 0:
            return
        if self._M.device != x.device:
            self.to(x.device)
        key = (nb, d + self.d_out, str(x.device))
        scratch = _scratch()
        buf = scratch.get(key)
        if buf is None:  # one scratch buffer per shape (and thread), shared by every block and split
            scratch.clear()
            buf = scratch[key] = torch.empty(nb, d + self.d_out, dtype=torch.float64, device=x.device)
        buf[:, :d].copy_(x)  # float64 from here on
        buf[:, d:].copy_(y)
        mb = buf.mean(dim=0)
        buf.sub_(mb)  # centred on the batch mean, in float64
        self._chan(nb, mb)  # (bumps the version: a symmetric M built before is stale)
        upper_product(self._M, buf if product == "float64" else buf.to(PRODUCTS[product]))

    def _chan(self, nb: int, mb: torch.Tensor) -> None:
        """Move the mean to the merged one and add the between-batch term (nₐ·n_b/n)·δδᵀ."""
        self._version += 1  # the symmetric M of `M` is stale from here
        na = self.n
        n = na + nb
        delta = mb - self.mean
        self.mean += delta * (nb / n)
        if na:
            self._M.addr_(delta, delta, alpha=na * nb / n)
        self.n = n

    def merge(self, other: Moments) -> Moments:
        """Fold `other` (statistics of disjoint rows) into self; returns self."""
        if (other.d_in, other.d_out) != (self.d_in, self.d_out):
            raise ValueError("cannot merge moments of different widths")
        if other.n:
            self._chan(other.n, other.mean.to(self.mean.device))
            self._M += other._M.to(self._M.device)
        return self

    def to(self, device: torch.device | str) -> Moments:
        """Move the statistics to `device` in place (the values do not change); returns self."""
        self.mean, self._M = self.mean.to(device), self._M.to(device)
        return self

    @property
    def upper(self) -> torch.Tensor:
        """The accumulated Σ (z − μ)(z − μ)ᵀ as stored: a torch tensor whose upper triangle is the valid part (what
        an all-reduce or a cache writer moves; `M` is the symmetric numpy view)."""
        return self._M

    def assign(self, other: Moments) -> Moments:
        """Take `other`'s statistics in place (e.g. the merge of every rank's part); returns self."""
        if (other.d_in, other.d_out) != (self.d_in, self.d_out):
            raise ValueError("cannot assign moments of different widths")
        self.n, self.mean, self._M = other.n, other.mean, other._M
        self._version += 1
        return self

    @classmethod
    def zeros(cls, d_in: int, d_out: int, device: torch.device | str = "cpu") -> Moments:
        """Empty statistics allocated on `device` (a capture puts each block's where its activations appear)."""
        return cls(d_in, d_out, mean=torch.zeros(d_in + d_out, dtype=torch.float64, device=device))

    @classmethod
    def of(cls, x, y) -> Moments:
        """One-shot statistics of all rows at once (float64 throughout)."""
        x = torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x
        y = torch.as_tensor(np.asarray(y)) if not isinstance(y, torch.Tensor) else y
        m = cls(x.shape[-1], y.shape[-1])
        m.update(x, y)
        return m

    @property
    def on_device(self) -> bool:
        """True when the statistics live on an accelerator: the fits and scores then run there in torch
        (`linrec.stats.ceiling`), and numpy is reached only when a result is read."""
        return accelerated(self._M.device)

    def symmetric(self) -> torch.Tensor:
        """Σ (z − μ)(z − μ)ᵀ as a symmetric float64 tensor where the statistics live: the accumulated upper triangle
        and its mirror, the same values as `M` (only copies and additions of zero)."""
        U = torch.triu(self._M)
        return U + torch.triu(U, 1).T

    # ---- views, all float64 numpy --------------------------------------------------------
    @property
    def M(self) -> np.ndarray:
        """Σ (z − μ)(z − μ)ᵀ, symmetric  [d, d] float64 numpy: the accumulated upper triangle and its mirror (a
        product's two triangles can differ in the last bit; this way the matrix is exactly symmetric, and equals
        the one the cache rebuilds from the upper triangle it stores). Returned read-only, and kept for the few
        statistics read most recently (`_recent_symmetric`): a fit reads it several times, and symmetrising
        1,153² floats each time took a third of `ceiling_table`."""
        M = _recent_symmetric(self)
        if M is None:
            M = np.triu(self._M.cpu().numpy())
            M += np.triu(M, 1).T
            _remember_symmetric(self, M)
        return M

    @property
    def mean_x(self) -> np.ndarray:
        return self.mean[: self.d_in].cpu().numpy()

    @property
    def mean_y(self) -> np.ndarray:
        return self.mean[self.d_in :].cpu().numpy()

    @property
    def Cxx(self) -> np.ndarray:
        """Centred Σ(x − μx)(x − μx)ᵀ  [d_in, d_in]."""
        return self.M[: self.d_in, : self.d_in]

    @property
    def Cxy(self) -> np.ndarray:
        """Centred Σ(x − μx)(y − μy)ᵀ  [d_in, d_out]."""
        return self.M[: self.d_in, self.d_in :]

    @property
    def Cyy(self) -> np.ndarray:
        """Centred Σ(y − μy)(y − μy)ᵀ  [d_out, d_out]."""
        return self.M[self.d_in :, self.d_in :]

    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Cxx, Cxy, Cyy) from one symmetrisation."""
        M, d = self.M, self.d_in
        return M[:d, :d], M[:d, d:], M[d:, d:]

    def is_finite(self) -> bool:
        return bool(torch.isfinite(self.mean).all() and torch.isfinite(self._M).all())

    def state(self, packed: bool = False) -> dict[str, np.ndarray]:
        """Arrays to store (float64); with `packed`, M as its upper triangle row by row ("Mu": half the bytes),
        which `from_state` rebuilds exactly (M is the mirror of its upper triangle by definition, see `M`)."""
        M = self.M
        return {
            "n": np.array(self.n, dtype=np.int64),
            "mean": self.mean.cpu().numpy(),
            **({"Mu": M[_upper_indices(len(M))]} if packed else {"M": M}),
            "dims": np.array([self.d_in, self.d_out]),
        }

    @classmethod
    def from_state(cls, s: dict) -> Moments:
        d_in, d_out = (int(v) for v in s["dims"])
        if "Mu" in s:  # the packed upper triangle, mirrored here: symmetric by construction
            d = d_in + d_out
            sym = np.zeros((d, d))
            sym[_upper_indices(d)] = s["Mu"]
            sym += np.triu(sym, 1).T
            symmetric = True
        else:
            sym = np.array(s["M"], dtype=np.float64)  # a copy: the caller keeps its array
            symmetric = np.array_equal(sym, sym.T)  # already the mirror of its upper triangle: it is `M` as is
        M = torch.from_numpy(sym.copy())  # the accumulator; `sym` itself is kept as the read-only symmetric M below
        out = cls(d_in, d_out, int(s["n"]), torch.tensor(np.asarray(s["mean"]), dtype=torch.float64), M)
        if symmetric:
            _remember_symmetric(out, sym)
        return out


def _backwards(total: Moments, part: Moments) -> tuple[int, np.ndarray, np.ndarray, float]:
    """Chan's merge run backwards: (n, mean) of the rows of `total` not in `part`, the difference δ of the two parts'
    means and the weight of δδᵀ in M (`remove_rows`)."""
    if (part.d_in, part.d_out) != (total.d_in, total.d_out) or part.n >= total.n:
        raise LinrecError(
            f"cannot remove {part.n} rows from {total.n}: the rows removed must be a strict subset of the statistics; "
            "use fewer screening windows or more tokens"
        )
    n, nb = total.n, part.n
    na = n - nb
    mu, mub = total.mean.cpu().numpy(), part.mean.cpu().numpy()
    mua = (n * mu - nb * mub) / na
    return na, mua, mub - mua, na * nb / n


def remove_rows(total: Moments, part: Moments) -> Moments:
    """Statistics of the rows of `total` that are not in `part` (Chan's merge run backwards; `part` ⊂ `total`).

    Used to leave the screening windows out of a fit (`linrec.analyses.swap`) and the windows' first positions
    out of a fit and its score (`linrec.stats.ceiling.first_position`). Statistics on an accelerator are removed
    there, in torch, and the result stays there."""
    if total.on_device:
        return _remove_rows_on_device(total, part)
    na, mua, delta, w = _backwards(total, part)
    M = total.M - part.M - w * np.outer(delta, delta)
    return Moments.from_state({"n": na, "mean": mua, "M": M, "dims": np.array([total.d_in, total.d_out])})


def _remove_rows_on_device(total: Moments, part: Moments) -> Moments:
    """`remove_rows` in torch on `total`'s device (the same formulas as `_backwards`)."""
    if (part.d_in, part.d_out) != (total.d_in, total.d_out) or part.n >= total.n:
        _backwards(total, part)  # raises the one-line error
    dev = total._M.device
    n, nb = total.n, part.n
    na = n - nb
    mub = part.mean.to(dev)
    mua = (n * total.mean - nb * mub) / na
    delta = mub - mua
    M = total.symmetric() - part.symmetric().to(dev)
    M.addr_(delta, delta, alpha=-(na * nb / n))
    return Moments(total.d_in, total.d_out, na, mua, M)


def output_sum_squares(m: Moments, without: Moments | None = None) -> float:
    """Σ_j Cyy_jj, the outputs' total centred sum of squares, of `m` (or of `remove_rows(m, without)`) from the
    accumulator's diagonal alone: no symmetrised [d, d] copy, so a share of the output variance per block is cheap."""
    d = m.d_in
    diag = torch.diagonal(m._M).cpu().numpy()[d:]
    if without is None:
        return float(diag.sum())
    _, _, delta, w = _backwards(m, without)
    return float((diag - torch.diagonal(without._M).cpu().numpy()[d:] - w * delta[d:] ** 2).sum())
