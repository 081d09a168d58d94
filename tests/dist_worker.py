"""One rank of the 2-rank gloo capture in tests/test_distributed.py (run under torchrun; not a test itself).

argv: OUT_DIR KIND:BLOCKS_PER_PASS … — for each tiny model KIND every rank captures its share of the windows (its
row sample into OUT_DIR/KIND/rows) and rank 0 saves the merged statistics and held-out sums to OUT_DIR/KIND.npz."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from helpers import make_tiny_model, tiny_tokenizer, tiny_windows  # noqa: E402
from linrec.inputs.hf import LoadedModel  # noqa: E402
from linrec.measure.capture import run_capture
from linrec.measure.config import CaptureConfig  # noqa: E402
from linrec.stats.distributed import init_from_env, world  # noqa: E402

out_dir = Path(sys.argv[1])
init_from_env("cpu")
tok = tiny_tokenizer()
for spec in sys.argv[2:]:
    kind, per_pass = spec.split(":")
    loaded = LoadedModel(model=make_tiny_model(kind), tokenizer=tok, name="tiny", identity="tiny", source="test")
    c = run_capture(
        loaded,
        tiny_windows(tok, tokens=2048),
        CaptureConfig("t", sample_rows=300),
        out_dir / kind,
        batch_size=3,
        progress=False,
        blocks_per_pass=int(per_pass) or None,
    )
    if world()[0] == 0:
        arrays = {}
        for b in range(c.n_blocks):
            for s in ("train", "test"):
                for pre, st in (("", c.stats), ("first/", c.first)):
                    arrays.update({f"{pre}{s}/{b}/{k}": v for k, v in st[s][b].state().items()})
            arrays.update({f"heldout/{b}/{k}": v for k, v in c.heldout[b].state().items()})
        np.savez(out_dir / f"{kind}.npz", **arrays)
