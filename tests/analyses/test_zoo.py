"""linrec.analyses.zoo: the plateau rule's numbers per run (`convergence_table`); the runs every zoo verdict is drawn
from (`converged_runs`) are tested in tests/claims/test_zoo.py."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from linrec.analyses.zoo import CONVERGENCE_COLUMNS, convergence_table
from linrec.inputs.plateau import Plateau


def _run(rule):
    return SimpleNamespace(plateau=lambda: rule)


def test_the_convergence_table_states_the_rule_per_run_and_a_run_without_evaluations_is_not_converged():
    """Each run's row is its plateau rule's (`Plateau.row`: gain, drop, the final held-out loss and its perplexity,
    the best evaluation); a run trained without held-out evaluations cannot be shown converged: False, numbers
    NaN."""
    done = Plateau(init_loss=8.0, start_step=80, start_loss=4.02, final_step=100, final_loss=4.0, best_step=100,
                   best_loss=4.0)  # fmt: skip
    flat = Plateau(8.0, 80, 8.0, 100, 8.0, 0, 8.0)  # learning rate 0: flat from step 0
    t = convergence_table({"a": _run(done), "b": _run(flat), "c": _run(None)}).set_index("run")
    assert list(t.columns) == CONVERGENCE_COLUMNS
    assert t.loc["a", "converged"] and t.loc["a", "final_heldout_ppl"] == np.exp(4.0)
    assert t.loc["a", "heldout_gain"] == (4.02 - 4.0) / 4.02 and t.loc["a", "heldout_drop"] == 0.5
    assert t.loc["b", "plateaued"] and not t.loc["b", "learned"] and not t.loc["b", "converged"]
    assert not t.loc["c", "converged"] and np.isnan(t.loc["c", "final_heldout_loss"])


def _measured(name: str, r2: list, r2_train: list, swap_r2: list, deltas: dict) -> dict:
    """One run's `measure_final` tables, planted: the ceiling's held-out R²_lin `r2` beside its in-sample `r2_train`
    and its positions-≥-1 R² (each different), the swap table with the variants' rows first and a held-out R²_lin
    of its own (`swap_r2`, on the swap study's report windows), the ΔPPL of each variant `deltas[first]`."""
    blocks = range(len(r2))
    ceiling = pd.DataFrame({"model": name, "block": blocks, "r2_lin": r2, "r2_lo": np.subtract(r2, 0.01),
                            "r2_hi": np.add(r2, 0.01), "r2_train": r2_train,
                            "r2_ex_first": np.add(r2, 0.05)})  # fmt: skip
    probe = pd.DataFrame({"model": name, "block": blocks, "gain": 0.01, "gain_quad": 0.02, "probe_stop": "validation"})
    spectrum = pd.DataFrame({"model": name, "block": blocks, "regime": "broadly linear"})
    swap = pd.concat([pd.DataFrame({"model": name, "block": blocks, "first": first, "r2_lin": swap_r2,
                                    "delta_ppl": d, "delta_lo": np.subtract(d, 0.1), "delta_hi": np.add(d, 0.1),
                                    "ppl_base": 50.0}) for first, d in deltas.items()], ignore_index=True)  # fmt: skip
    return {"ceiling": ceiling, "probe": probe, "spectrum": spectrum, "swap": swap}


def test_the_per_block_table_reads_the_held_out_r2_and_the_plain_map_swap():
    """Guards which numbers the zoo's per-block table (`block_table`, what claims 1, 6a and 6b's zoo rows and Figure
    8b read) takes: R²_lin is the ceiling's held-out R²_lin (not its in-sample `r2_train`, not the positions-≥-1
    `r2_ex_first`, not the swap table's own R²_lin on the report windows), with the ceiling's interval; the ΔPPL
    is the plain affine swap's (`first` = "map", the variant every swap verdict reads: `linrec.claims.swap._map_rows`)
    even where the position-aware variants come first in the swap table, one row per block; the run's layout, text
    and seeds from its configuration. Planted: the swap's rows unfiltered (three rows a block, the "ffn" ΔPPL
    first) fails; the filter on "ffn" fails; R²_lin taken from the swap table fails."""
    from types import SimpleNamespace

    from linrec.analyses.zoo import BLOCK_COLUMNS, block_table

    measured = {
        "gpt2-i0": _measured("gpt2-i0", [0.8, 0.6, 0.7], [0.9, 0.85, 0.88], [0.5, 0.4, 0.45],
                             {"ffn": [0.3, 0.2, 0.1], "mean": [0.6, 0.5, 0.4], "map": [1.5, 2.5, 3.5]}),
        "llama-i1": _measured("llama-i1", [0.55, 0.65, 0.75], [0.7, 0.75, 0.8], [0.3, 0.35, 0.2],
                              {"map": [4.0, 5.0, 6.0]}),  # a run without variants: its rows as they are
    }  # fmt: skip
    configs = [SimpleNamespace(name="llama-i1", layout="llama", text="web", init_seed=1, data_seed=0),
               SimpleNamespace(name="gpt2-i0", layout="gpt2", text="wiki", init_seed=0, data_seed=2)]  # fmt: skip
    t = block_table(measured, configs)
    assert list(t.columns) == BLOCK_COLUMNS and len(t) == 6
    g = t[t["model"] == "gpt2-i0"].set_index("block")
    assert g["r2_lin"].tolist() == [0.8, 0.6, 0.7] and g["r2_lo"].tolist() == pytest.approx([0.79, 0.59, 0.69])
    assert g["delta_ppl"].tolist() == [1.5, 2.5, 3.5] and g["delta_hi"].tolist() == pytest.approx([1.6, 2.6, 3.6])
    assert (g["layout"] == "gpt2").all() and (g["text"] == "wiki").all() and (g["data_seed"] == 2).all()
    ll = t[t["model"] == "llama-i1"].set_index("block")
    assert ll["r2_lin"].tolist() == [0.55, 0.65, 0.75] and ll["delta_ppl"].tolist() == [4.0, 5.0, 6.0]
    assert (ll["layout"] == "llama").all() and (ll["init_seed"] == 1).all()
    without = {
        k: {**m, "swap": m["swap"][m["swap"]["first"] == "map"].drop(columns="first")} for k, m in measured.items()
    }  # a swap table written without the variants' column
    assert block_table(without, configs).equals(t)


def test_the_noise_table_names_each_runs_level_and_shape_noise():
    """`noise_table`: one row per run in order, its `measurement_noise` level and shape in their own columns (the
    decomposition reads them back by name: `linrec.analyses.factors.components`), and each stage's seconds. Planted:
    level and shape swapped fails."""
    from linrec.analyses.zoo import noise_table

    measured = {"a": {"noise": {"level": 1e-4, "shape": 3e-5}, "seconds": {"ceiling": 1.0, "swap": 2.0}},
                "b": {"noise": {"level": 2e-4, "shape": 5e-5}, "seconds": {"ceiling": 1.5, "swap": 2.5}}}  # fmt: skip
    t = noise_table(measured)
    assert t["run"].tolist() == ["a", "b"]
    assert t["noise_level"].tolist() == [1e-4, 2e-4] and t["noise_shape"].tolist() == [3e-5, 5e-5]
    assert t["seconds_swap"].tolist() == [2.0, 2.5] and t["seconds_ceiling"].tolist() == [1.0, 1.5]
