"""linrec: per-block linear recoverability (R²_lin) of transformer feed-forward blocks.

Stages, one module each (numbered like the notebooks that use them):
`models` (load a frozen LM) → `sites` (where each block's FFN is) → `corpora` (token windows)
→ `capture` (one forward pass, additive float64 statistics per block) → `ceiling`
(exact closed-form affine map and held-out R²_lin) and `robust` (bootstrap intervals, profile
agreement) → `probe` (bilinear residual probe, trained baselines), `spectrum` (ranks, outliers,
regimes), `swap` (FFN → affine map: ΔPPL, reduced rank, save/reload), `controls` (random init,
input distribution, cross feeding) → `plots` (the figures), `report` (the reproduction report),
`run` (the notebooks under papermill).
"""

from linrec.errors import LinrecError

__version__ = "0.1.0"
__all__ = ["LinrecError", "__version__"]
