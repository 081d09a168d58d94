"""linrec.analyses.zoo: the plateau rule's numbers per run (`convergence_table`) and the runs every zoo verdict is
drawn from (`converged_runs`), as computed and as read back from a written table."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

from linrec.analyses.zoo import CONVERGENCE_COLUMNS, converged_runs, convergence_table
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


def test_converged_runs_reads_the_column_as_computed_and_as_read_back(tmp_path):
    """The runs whose `converged` is true, in order, whether the column holds booleans or the words a CSV holds
    ("False" is a non-empty string: truthy to bool(), not converged here)."""
    t = pd.DataFrame({"run": ["a", "b", "c"], "converged": [True, False, True]})
    assert converged_runs(t) == ["a", "c"]
    words = t.assign(converged=["True", "False", "True"])
    assert converged_runs(words) == ["a", "c"]
    t.to_csv(tmp_path / "runs.csv", index=False)
    assert converged_runs(pd.read_csv(tmp_path / "runs.csv")) == ["a", "c"]
    assert converged_runs(t.assign(converged=[False, False, False])) == []
