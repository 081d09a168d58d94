"""One rank of the 2-rank gloo runs in tests/stats/test_distributed.py (run under torchrun; not a test itself).

argv: OUT_DIR KIND:BLOCKS_PER_PASS … [-- LINREC ARGS …]. With `-- ARGS`, the rank first runs `linrec ARGS` (the
command line's own `main`, which joins the process group as `torchrun -m linrec …` does; a non-zero exit ends the
rank with it). Then, for each tiny model KIND, every rank captures its share of the windows (its row sample into
OUT_DIR/KIND/rows) and rank 0 saves the merged statistics and held-out sums to OUT_DIR/KIND.npz. One launch does both,
because each rank's start (torch and transformers imported) costs more than everything it runs here."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from helpers import make_tiny_model, tiny_tokenizer, tiny_windows  # noqa: E402
from linrec.app.cli import main  # noqa: E402
from linrec.collect.capture import run_capture  # noqa: E402
from linrec.collect.config import CaptureConfig  # noqa: E402
from linrec.inputs.hf import LoadedModel  # noqa: E402
from linrec.stats.distributed import init_from_env, world  # noqa: E402

argv = sys.argv[1:]
specs, cli_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
out_dir = Path(specs.pop(0))
if cli_args:
    code = main(cli_args)
    if code:
        sys.exit(code)
init_from_env("cpu")  # a no-op where the command line has joined the group already
tok = tiny_tokenizer()
for spec in specs:
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
