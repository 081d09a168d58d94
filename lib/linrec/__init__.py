"""linrec: per-block linear recoverability (R²_lin) of transformer feed-forward blocks.

The package is layered; each module imports only from its own layer or below
(`tests/test_layers.py` checks it):

- util: `errors`, `files` (cache root, sha256 manifests, atomic writes), `threads`, `progress` (bars, or one
  line per loop under the notebook runner)
- moments: `moments` (streaming float64 statistics), `distributed` (torchrun shards, exact merge)
- fits: `ceiling` (closed-form affine fit, held-out score, reduced rank), `heldout` (per-window
  sums and the bootstrap)
- models and data: `sites` (where each FFN is), `corpora`, `fetching`, `hf`, `surgery` (FFN →
  affine module, save/load), `models` (load any model spec)
- capture: `capture` (one forward pass → statistics per block and split; one fit per block), `curves` (R²_lin
  against train tokens)
- analyses: `recoverability` (the R²_lin table), `probe`, `spectrum`, `uncertainty`, `perplexity`,
  `swap`, `controls`
- verdicts: `verdicts` (every summary and claim rule), `tables` (the results registry)
- outputs: `report`, `plots`
- entry points: `cli`, `figures` (the numbered notebooks under papermill)
"""

from linrec.errors import LinrecError

__version__ = "0.1.0"
__all__ = ["LinrecError", "__version__"]
