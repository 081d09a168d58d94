"""The results tables: one registry naming each table, the notebook that writes it, and its columns.

Every table a notebook saves goes through `save_table` and every table the report reads goes
through `load_table`, so a renamed or missing column fails where it is written, not as a wrong
sentence in the report. Columns are snake_case and numeric wherever the quantity is a number
(an interval is two columns, `ci_lo` and `ci_hi`, never a formatted string); a few columns hold
identifiers (`model`, `corpus`, `regime`, block lists such as `first_token_blocks` = "11 28").
`labelled(df)` applies the display labels, only where a table is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file

_R2_BLOCK = (
    "model corpus block r2_lin r2_lo r2_hi r2_train r2_feature_median first_var_share r2_ex_first r2_ex_first_lo "
    "r2_ex_first_hi r2_feature_q25 "
    "r2_feature_q75 cond_gram cond_scaled rank dead_inputs d_in d_out n_train n_test n_test_windows"
)


@dataclass(frozen=True)
class TableSpec:
    notebook: str  # the notebook that writes it
    columns: tuple[str, ...]
    about: str


def _spec(notebook: str, columns: str, about: str) -> TableSpec:
    return TableSpec(notebook, tuple(columns.split()), about)


TABLES: dict[str, TableSpec] = {
    "capture": _spec(
        "01",
        "model model_type n_blocks d_model n_train_rows n_test_rows tokens bos seconds from_cache",
        "one row per model: what the capture saw",
    ),
    "r2_lin": _spec(
        "02", _R2_BLOCK, "per block: the closed-form ceiling (linrec.analyses.recoverability.ceiling_table)"
    ),
    "r2_lin_summary": _spec(
        "02",
        "model n_blocks r2_min r2_max max_adjacent_jump direction_changes max_jump_disjoint direction_changes_disjoint "
        "as_extreme_as_paper r2_ex_first_min max_jump_disjoint_ex_first direction_changes_disjoint_ex_first "
        "moves_tested moves_fdr max_jump_fdr direction_changes_fdr moves_tested_ex_first moves_fdr_ex_first "
        "max_jump_fdr_ex_first direction_changes_fdr_ex_first cond_gram_median r2_ex_first_max first_token_blocks "
        "profile_tokens",
        "per model: the profile's shape (linrec.claims.profile.profile_summary), on the profile that judges claim 1 "
        "(notebook 02's `profile`)",
    ),
    "r2_lin_summary_other": _spec(
        "02",
        "model n_blocks r2_min r2_max max_adjacent_jump direction_changes max_jump_disjoint direction_changes_disjoint "
        "as_extreme_as_paper r2_ex_first_min max_jump_disjoint_ex_first direction_changes_disjoint_ex_first "
        "moves_tested moves_fdr max_jump_fdr direction_changes_fdr moves_tested_ex_first moves_fdr_ex_first "
        "max_jump_fdr_ex_first direction_changes_fdr_ex_first cond_gram_median r2_ex_first_max first_token_blocks "
        "profile_tokens",
        "per model: the same shape on the other profile (the learning curve's largest size, or the capture's)",
    ),
    "r2_moves": _spec(
        "02",
        "model positions kind from_block to_block change p q counts",
        "per model: the moves claim 1 counts on the capture's profile, each with a paired window-bootstrap p and its "
        "Benjamini–Hochberg q (linrec.claims.profile.move_tests)",
    ),
    "r2_replicates": _spec(
        "02",
        "sample " + _R2_BLOCK,
        "per block and disjoint sample of text: the ceiling (linrec.analyses.recoverability.ceiling_table; sample 0 "
        "is the "
        "main capture)",
    ),
    "r2_replicates_summary": _spec(
        "02",
        "model n_samples samples sd_median sd_max sd_max_block ci_half_width_median n_claim1_passes replication",
        "per model: R²_lin's between-sample SD per block and claim 1 on each sample (linrec.claims.profile."
        "replication_summary)",
    ),
    "r2_curve": _spec(
        "02",
        "model block train_tokens n_train rows_per_param r2 r2_lo r2_hi seed_sd r2_train slope fit_rmse",
        "per block and train size: held-out R²_lin, mean of split seeds, hierarchical-bootstrap CI; train_tokens = "
        "inf is the large-n estimate (linrec.measure.curves.curve_summary)",
    ),
    "r2_curve_runs": _spec(
        "02",
        "model block seed train_tokens n_train r2 r2_train cond_scaled",
        "per block, split seed and train size: held-out and in-sample R² (linrec.measure.curves.curve_table)",
    ),
    "r2_curve_overview": _spec(
        "02",
        "model n_blocks ref_tokens largest_tokens r2_ref_median r2_largest_median r2_inf_median gain_largest_median "
        "gain_largest_min gain_largest_max gain_inf_median gain_inf_max train_gap_ref_median "
        "train_gap_largest_median seed_sd_ref_median ci_width_ref_median ci_width_largest_median "
        "ci_width_inf_median fit_rmse_median rank_spearman_ref_inf",
        "per model: R²_lin from the default train size to 10× and to the large-n estimate (linrec.measure.curves."
        "curve_overview)",
    ),
    "probe": _spec(
        "03",
        "model block r2_lin r2_lin_rows r2_poly gain probe_epochs probe_stop probe_converged seconds_probe cond_gram "
        "cond_scaled "
        "n_train_rows n_test_rows r2_quad gain_quad seconds_quad r2_ceiling_rows adam_reach r2_trained_adam "
        "r2_trained_sgd seconds_trained",
        "per block: the rank-k bilinear probe, the closed-form quadratic on the top-k input components and the "
        "trained baselines (linrec.analyses.probe.probe_table)",
    ),
    "probe_ex_first": _spec(
        "03",
        "model block r2_lin r2_lin_rows r2_poly gain probe_epochs probe_stop probe_converged seconds_probe cond_gram "
        "cond_scaled n_train_rows n_test_rows r2_quad gain_quad seconds_quad",
        "per block: the probe and the closed-form quadratic on the stored rows at positions ≥ 1 only, around the map "
        "fitted on those rows (linrec.analyses.probe.probe_table, without_first=True; no trained baselines)",
    ),
    "probe_summary_ex_first": _spec(
        "03",
        "model n_blocks gain_median gain_max gain_min gain_quad_median quad_excess_median pearson_r p ci_lo ci_hi "
        "ci_lo90 ci_hi90 ci_lo_iid ci_hi_iid block_length correlation "
        "detectable_r n_stop_validation n_stop_flattened n_stop_max_epochs seconds_probe_total sweep_rank_min "
        "sweep_gain_median_rank_min sweep_rank_max sweep_gain_median_rank_max",
        "per model and pooled: probe_summary of probe_ex_first, claim 3 without position 0",
    ),
    "probe_ranks": _spec(
        "03",
        "model block rank r2_lin_rows r2_poly gain probe_stop probe_epochs seconds",
        "per block and rank: the probe's gain at ranks 16, 64, 256 on three blocks (linrec.analyses.probe.rank_sweep)",
    ),
    "probe_summary": _spec(
        "03",
        "model n_blocks gain_median gain_max gain_min gain_quad_median quad_excess_median pearson_r p ci_lo ci_hi "
        "ci_lo90 ci_hi90 ci_lo_iid ci_hi_iid block_length correlation "
        "detectable_r n_stop_validation n_stop_flattened n_stop_max_epochs seconds_probe_total sweep_rank_min "
        "sweep_gain_median_rank_min sweep_rank_max sweep_gain_median_rank_max",
        "per model and pooled: the probe's gain, its correlation with 1 − R²_lin and the power of that test "
        "(linrec.claims.probe.probe_summary)",
    ),
    "pitfall_summary": _spec(
        "03",
        "model n_blocks budget_steps n_short share_short shortfall_median shortfall_max adam_shortfall_median "
        "sgd_shortfall_median spearman_cond_shortfall cond_lo cond_hi spearman_scaled_shortfall scaled_lo scaled_hi "
        "spearman_reach_adam reach_lo reach_hi adam_reach_median max_steps n_mechanism n_reached steps_reach_well "
        "steps_reach_ill gd_steps_well gd_steps_ill dose_block dose_steps dose_kappa_min dose_kappa_max "
        "dose_short_min dose_short_max dose_rises",
        "per model: claim 7a's shortfall at the practitioner's budget and claim 7b's three measurements of its "
        "mechanism (linrec.claims.probe.pitfall_summary)",
    ),
    "pitfall_budget": _spec(
        "03",
        "model block optimizer lr step r2_val r2_test chosen ceiling cond_gram cond_scaled kappa_steps n_outputs "
        "n_train",
        "per mechanism block, optimizer (adam, sgd; gd from the Gram spectrum), learning rate and step: R² on a "
        "seeded set of output features (linrec.analyses.pitfall.budget_table)",
    ),
    "pitfall_dose": _spec(
        "03",
        "model block kappa kappa_measured optimizer lr step r2_val r2_test ceiling ceiling_original",
        "per constructed κ and optimizer: the tuned baseline on one block's re-expressed inputs "
        "(linrec.analyses.pitfall."
        "dose_table)",
    ),
    "spectrum": _spec(
        "04",
        "model block r2_lin r2_feature_median r2_feature_q25 r2_feature_q75 top1_var_share top8_var_share "
        "top1_var_ratio n_massive r2_ex_top1 r2_ex_top8 first_var_share r2_ex_first eff_rank_out eff_rank_explained "
        "eff_rank_in cond_gram cond_gram_test dynamic_range_in d_out regime regime_ex_first",
        "per block: ranks, outliers, first position, regime (linrec.analyses.spectrum.spectrum_table)",
    ),
    "spectrum_summary": _spec(
        "04",
        "model n_blocks n_high_r2 n_broadly_linear n_broadly_linear_high_r2 n_first_token_concentrated "
        "n_first_token_concentrated_high_r2 n_outlier_concentrated n_outlier_concentrated_high_r2 n_nonlinear "
        "n_nonlinear_high_r2 n_unclassified n_unclassified_high_r2 concentrated_not_rank1_blocks "
        "n_broadly_linear_ex_first n_outlier_concentrated_ex_first outlier_ex_first_blocks "
        "outlier_blocks first_token_blocks unclassified_blocks outlier_first_blocks first_share_blocks massive_blocks "
        "top1_broadly_linear_blocks max_drop_ex_top8 eff_rank_out_frac_median",
        "per model: regimes (linrec.claims.regimes.regime_summary)",
    ),
    "spectrum_replicates": _spec(
        "04",
        "sample model block regime r2_lin r2_feature_median top1_var_share eff_rank_out eff_rank_explained "
        "first_var_share",
        "per block and disjoint sample of text: the regime and what decides it "
        "(linrec.analyses.spectrum.spectrum_table on "
        "notebook 02's replicate captures; sample 0 is the main capture)",
    ),
    "spectrum_replicates_summary": _spec(
        "04",
        "model samples n_samples n_broadly_linear n_outlier_concentrated outlier_blocks outlier_blocks_every_sample "
        "n_claim4_passes replication",
        "per model: the regimes on each sample of text and claim 4 on each (linrec.claims.regimes.regime_replication)",
    ),
    "training_runs": _spec(
        "08",
        "run mlp init_seed data_seed d_model n_layers d_ff n_params n_params_blocks tokens_seen tokens_per_param "
        "train_tokens_available epochs final_train_loss ppl_test_final made_on seconds from_cache",
        "per trained run (linrec.inputs.training): its size, what it saw and how far it got",
    ),
    "training_profiles": _spec(
        "08",
        "run mlp init_seed data_seed step tokens_seen block r2_lin r2_lo r2_hi ppl_test train_loss n_test_windows",
        "per run, checkpoint and block: held-out R²_lin on the measuring text (linrec.analyses.seeds.checkpoint_table)",
    ),
    "training_comparisons": _spec(
        "08",
        "kind a b step distance distance_lo distance_hi corr corr_lo corr_hi floor beyond_noise within_noise outcome",
        "per comparison of two profiles: distance with its paired interval against the noise floor "
        "(linrec.analyses.seeds.comparisons, linrec.claims.learned.distance_word)",
    ),
    "training_distance_curve": _spec(
        "08",
        "kind a b step distance distance_lo distance_hi corr corr_lo corr_hi floor beyond_noise within_noise",
        "per pair of init seeds and checkpoint step: the distance while training "
        "(linrec.analyses.seeds.distance_over_training)",
    ),
    "training_swap": _spec(
        "08",
        "run block r2_lin ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_ffn params_linear seconds",
        "per run's last checkpoint and block: held-out ΔPPL of swapping the block alone for its map "
        "(linrec.analyses.swap)",
    ),
    "training_verdict": _spec(
        "08",
        "word claim2a margin trained_words seed_words data_order_words variant_words",
        "the seeds experiment's rule (linrec.claims.learned.seeds_verdict)",
    ),
    "spectrum_inputs": _spec(
        "04",
        "model descriptor spearman_rho p",
        "per model and input descriptor: ρ with R²_lin (linrec.claims.regimes.input_side)",
    ),
    "corpora": _spec("05", _R2_BLOCK, "per block and corpus: the ceiling"),
    "corpora_agreement": _spec(
        "05",
        "model corpus_a corpus_b n_blocks pearson_r pearson_p spearman_rho spearman_p max_abs_diff max_diff_block "
        "n_ci_disjoint n_ci_compared",
        "per model and corpus pair (linrec.analyses.uncertainty.profile_agreement)",
    ),
    "corpora_verdict": _spec(
        "05",
        "model n_blocks spearman_min pearson_min corpus_depth_ratio max_abs_diff max_diff_block max_diff_corpus_a "
        "max_diff_corpus_b n_ci_disjoint n_ci_compared ci_width_median verdict n_corpora n_boot depth_share depth_lo "
        "depth_hi level_share level_lo level_hi shape_share shape_lo shape_hi level_range level_range_lo "
        "level_range_hi corpus_highest corpus_lowest n_pairs_fdr n_pairs shape_share_ex_first shape_lo_ex_first "
        "shape_hi_ex_first shape_verdict",
        "per model: agreement, and R²_lin's variance split into depth, level and shape with window-bootstrap "
        "intervals (linrec.claims.corpora.corpus_verdicts, linrec.analyses.recoverability.corpus_shape_level)",
    ),
    "swap": _spec(
        "06",
        "model corpus block first r2_lin mse_out ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_ffn "
        "params_linear params_swap param_ratio vs_map vs_map_lo vs_map_hi n_test_tokens seconds",
        "per block and position variant: held-out ΔPPL of the swap with its paired 95 % interval "
        "(linrec.analyses.swap.HeldOutSwaps.table)",
    ),
    "swap_params": _spec(
        "06", "model params_ffn params_linear ffn_over_linear", "per model (linrec.claims.swap.swap_params)"
    ),
    "swap_predictor_values": _spec(
        "06",
        "model block depth_from_end r2_lin r2_ex_first mse_out err_rel_resid err_post_norm_rel_resid "
        "n_screening_rows screening_delta_ppl",
        "per block: candidate predictors of ΔPPL on the screening windows "
        "(linrec.analyses.screening.Screening.predictors)",
    ),
    "swap_predictors": _spec(
        "06",
        "model column runs_swapped_model n_blocks block_length spearman_rho rho_lo rho_hi rho_lo90 rho_hi90 "
        "rho_lo_iid rho_hi_iid p outcome partial_rho_depth partial_lo partial_hi partial_lo90 partial_hi90 partial_p "
        "partial_outcome n_middle middle_rho middle_lo middle_hi useful p_holm partial_p_holm",
        "per model and predictor: ρ with held-out ΔPPL, partial ρ given depth, ρ in the middle blocks, with "
        "moving-block intervals, equivalence outcomes and Holm-adjusted p (linrec.claims.swap.swap_predictors)",
    ),
    "swap_first": _spec(
        "06",
        "model block first_var_share delta_ppl_map delta_lo_map delta_hi_map delta_ppl_ffn delta_lo_ffn "
        "delta_hi_ffn delta_ppl_mean delta_lo_mean delta_hi_mean share_of_cost_at_first",
        "per first-token block: ΔPPL of each position variant (linrec.claims.swap.first_position_effect)",
    ),
    "swap_safety": _spec(
        "06",
        "model n_blocks n_high_r2 n_high_r2_costly high_r2_costly_blocks n_within_budget within_budget_blocks "
        "delta_ppl_median ppl_base",
        "per model (linrec.claims.swap.swap_safety)",
    ),
    "swap_rank_curve": _spec(
        "06",
        "model block rank factored params params_ffn param_ratio var_kept r2_lin ppl delta_ppl delta_lo delta_hi",
        "one block per model, chosen on the screening windows: reduced-rank maps",
    ),
    "swap_greedy": _spec(
        "06",
        "model order budget_ppl blocks_swapped n_swapped n_tried screening_ppl_base screening_ppl_final "
        "screening_delta_ppl test_ppl_base test_ppl_final test_delta_ppl test_delta_lo test_delta_hi "
        "heldout_minus_screening params_removed params_added params_model",
        "per model and order: the greedy multi-block swap, chosen on screening windows, reported held out",
    ),
    "swap_greedy_steps": _spec(
        "06", "model order block position alone tried ppl delta_ppl kept", "every block in the greedy swap's order"
    ),
    "swap_reload": _spec(
        "06", "model blocks ppl_in_memory ppl_reloaded abs_diff directory", "the saved model reloads to the same ppl"
    ),
    "swap_timings": _spec("06", "model step seconds evaluations", "seconds per step of the swap study"),
    "swap_verdict": _spec("06", "finding", "notebook 06's conclusions, one sentence per row"),
    "controls_random_init": _spec("07", _R2_BLOCK + " weights", "per block: trained and random-init profiles"),
    "controls_random_init_summary": _spec(
        "07",
        "model trained_r2_min trained_r2_max init_r2_min init_r2_max init_r2_spread mean_abs_trained_init "
        "spearman_trained_init init_r2_train_median trained_gap_median init_r2_test_median mean_abs_init_seeds "
        "spearman_init_seeds",
        "per model (linrec.claims.learned.random_init_summary)",
    ),
    "controls_weight_nulls": _spec(
        "07",
        "model block ffn draw r2",
        "per block and FFN (trained, random init, shuffled; draw = seed index), on the block's own inputs with its "
        "norm gain folded into the FFN (linrec.analyses.decomposition.inputs_or_weights)",
    ),
    "controls_null_blocks": _spec(
        "07",
        "model block r2_trained n_init init_mean init_sd init_pair_gap z_init p_init n_shuffled shuffled_mean "
        "shuffled_sd shuffled_pair_gap z_shuffled p_shuffled q_init q_shuffled stands_out",
        "per block: the trained FFN against each null ensemble, z-scores, Benjamini–Hochberg q "
        "(linrec.claims.learned.null_blocks)",
    ),
    "controls_cross_matrix": _spec(
        "07",
        "model ffn_block input_block r2",
        "per pair: FFN i (norm gain folded in) on the normalised inputs of block j "
        "(linrec.analyses.decomposition.inputs_or_weights)",
    ),
    "controls_decomposition": _spec(
        "07",
        "model n_blocks n_standout n_entries n_windows share_weights share_weights_lo share_weights_hi share_inputs "
        "share_inputs_lo share_inputs_hi share_shared share_shared_lo share_shared_hi share_residual share_residual_lo "
        "share_residual_hi share_weights_minus_inputs share_weights_minus_inputs_lo share_weights_minus_inputs_hi",
        "per model: claim 2b's decomposition of the cross matrix with window-bootstrap intervals, and the blocks "
        "that stand out from both nulls (linrec.analyses.decomposition.decomposition)",
    ),
    "controls_learned": _spec(
        "07",
        "model twin_gap trained_gap twin_degenerate effect_twin noise_twin effect_null noise_null reference effect "
        "noise",
        "per model: claim 2a, the trained profile against the untrained architecture "
        "(linrec.claims.learned.learned_summary)",
    ),
    "controls_inputs": _spec(
        "07",
        "model block n_train n_test r2_own r2_gaussian other_block r2_other_block",
        "per block: trained FFNs on other inputs (linrec.analyses.controls.input_controls)",
    ),
    "controls_inputs_summary": _spec(
        "07",
        "model r2_own_median r2_gaussian_median n_gaussian_drop r2_next_block_median spearman_own_gaussian",
        "per model (linrec.claims.learned.input_control_summary)",
    ),
    "controls_cross_feed": _spec(
        "07",
        "inputs_from ffn_of block r2_ffn_own_inputs r2_raw r2_recoloured",
        "per block: one model's FFNs on another's inputs (linrec.analyses.controls.cross_feed)",
    ),
    "controls_cross_feed_summary": _spec(
        "07", "inputs_from ffn_of r2_ffn_own_inputs r2_raw r2_recoloured", "per pair: medians over blocks"
    ),
    "controls_verdict": _spec("07", "finding", "notebook 07's conclusions, one sentence per row"),
}

LABELS = {  # display labels, applied by `labelled` where a table is shown
    "model_type": "type",
    "n_train_rows": "train rows",
    "n_test_rows": "test rows",
    "bos": "BOS per window",
    "n_blocks": "blocks",
    "r2_min": "min R²_lin",
    "r2_max": "max R²_lin",
    "max_adjacent_jump": "largest jump between adjacent blocks",
    "direction_changes": "direction changes with depth",
    "max_jump_disjoint": "largest jump, disjoint intervals",
    "direction_changes_disjoint": "direction changes, disjoint intervals",
    "cond_gram_median": "median κ(Gram)",
    "r2_ex_first_max": "max R²_lin without first tokens",
    "first_token_blocks": "first-token blocks",
    "gain_median": "median gain",
    "gain_quad_median": "median gain, closed-form quadratic (top-k components)",
    "quad_excess_median": "median quadratic gain − probe gain",
    "detectable_r": "|r| detectable (80 % power)",
    "sweep_gain_median_rank_min": "median gain, sweep's lowest rank",
    "sweep_gain_median_rank_max": "median gain, sweep's highest rank",
    "share_short": "share of blocks > 0.01 short",
    "shortfall_median": "median shortfall (best baseline)",
    "adam_shortfall_median": "median shortfall, Adam",
    "sgd_shortfall_median": "median shortfall, SGD",
    "spearman_cond_shortfall": "Spearman ρ(log κ, shortfall)",
    "spearman_reach_adam": "Spearman ρ(Adam reach, Adam shortfall)",
    "adam_reach_median": "median Adam reach",
    "spearman_scaled_shortfall": "Spearman ρ(Jacobi-scaled κ, shortfall)",
    "budget_steps": "budget (steps)",
    "n_reached": "mechanism blocks reached",
    "steps_reach_well": "steps to the ceiling, best-conditioned",
    "steps_reach_ill": "steps to the ceiling, worst-conditioned",
    "gd_steps_well": "GD steps (spectrum), best-conditioned",
    "gd_steps_ill": "GD steps (spectrum), worst-conditioned",
    "dose_short_min": "shortfall at the smallest constructed κ",
    "dose_short_max": "shortfall at the largest constructed κ",
    "gain_max": "max gain",
    "gain_min": "min gain",
    "pearson_r": "Pearson r",
    "ci_lo": "95 % CI low",
    "ci_hi": "95 % CI high",
    "n_broadly_linear": "broadly linear",
    "n_first_token_concentrated": "first-token-concentrated",
    "n_outlier_concentrated": "outlier-concentrated",
    "n_nonlinear": "nonlinear",
    "n_unclassified": "unclassified (high R²_lin, low-rank explained part)",
    "unclassified_blocks": "unclassified blocks",
    "outlier_first_blocks": "outlier-concentrated with first position ≥ 20 %",
    "outlier_blocks": "outlier-concentrated blocks",
    "outlier_ex_first_blocks": "outlier-concentrated without position 0",
    "concentrated_not_rank1_blocks": "concentrated, not rank ≈ 1",
    "first_share_blocks": "first position ≥ 50 % of output variance",
    "massive_blocks": "blocks with massive output features",
    "top1_broadly_linear_blocks": "top-1 share ≥ 0.5 yet broadly linear",
    "max_drop_ex_top8": "largest drop R²_lin → ex-top-8",
    "eff_rank_out_frac_median": "median eff. rank out / width",
    "spearman_rho": "Spearman ρ",
    "spearman_min": "min Spearman ρ over pairs",
    "pearson_min": "min Pearson r over pairs",
    "corpus_depth_ratio": "corpus/depth",
    "max_abs_diff": "largest per-block difference",
    "ci_width_median": "median CI width",
    "ffn_over_linear": "FFN / linear parameters",
    "n_high_r2": "blocks with R²_lin ≥ 0.9",
    "n_high_r2_costly": "of those, ΔPPL > +1",
    "high_r2_costly_blocks": "those blocks",
    "n_within_budget": "blocks with ΔPPL ≤ +1 (95 % CI)",
    "within_budget_blocks": "those blocks",
    "delta_ppl_median": "median ΔPPL",
    "ppl_base": "base perplexity",
    "mean_abs_trained_init": "mean |trained − init|",
    "spearman_trained_init": "Spearman ρ(trained, init seed 0)",
    "init_r2_train_median": "init seed 0: median in-sample R²",
    "init_r2_test_median": "init seed 0: median held-out R²",
    "mean_abs_init_seeds": "mean |init seed 0 − seed 1|",
    "spearman_init_seeds": "Spearman ρ(init seed 0, seed 1)",
    "init_r2_spread": "init seed 0: spread across blocks (sd)",
    "share_init_ffn": "profile variance explained by random-init FFN on trained inputs",
    "share_shuffled": "profile variance explained by shuffled FFN on trained inputs",
    "rho_inputs": "ρ(FFN_i on inputs_j, R²_lin of j), |i − j| = 1",
    "rho_weights": "ρ(FFN_i on inputs_j, R²_lin of i), |i − j| = 1",
    "r2_own_median": "median R²_lin (own inputs)",
    "r2_gaussian_median": "median R² on Gaussian inputs",
    "n_gaussian_drop": "blocks where Gaussian R² < own − 0.1",
    "r2_next_block_median": "median R² on the next block's inputs",
    "spearman_own_gaussian": "Spearman ρ(own, Gaussian)",
}


def is_block_list(column: str) -> bool:
    """Whether `column` holds block numbers as text ("11 28"; "" for none), e.g. `first_token_blocks`, not a count."""
    return column in ("blocks", "blocks_swapped") or (column.endswith("_blocks") and not column.startswith("n_"))


def labelled(df: pd.DataFrame) -> pd.DataFrame:
    """`df` for showing (never for saving): display labels for the columns that have one, and without the timing
    columns (`is_timing`), so a notebook's saved output is the same on every run that finds the same numbers."""
    return df.drop(columns=[c for c in df.columns if is_timing(c)]).rename(columns=LABELS)


def _spec_of(name: str) -> TableSpec:
    if name not in TABLES:
        raise LinrecError(f"no results table is called '{name}'; registered: {', '.join(TABLES)}")
    return TABLES[name]


# Every float of a results table is written with 12 significant digits: more than any number here carries (the
# float64 statistics agree with lstsq to 1e-9 at best), fewer than the 17 at which summation order shows, so a rerun
# that reproduces the numbers writes the same bytes.
FLOAT_FORMAT = "%.12g"


# What records how a run went rather than what it found: seconds, and whether a capture came from the cache. These
# columns are written apart, to `<results_dir>/timings/<name>.csv` with the columns that name each row, so a rerun
# that reproduces every number leaves the results tables byte for byte as they were and only timings/ changes. A
# table made of nothing else (`TIMING_TABLES`) goes there whole.
TIMINGS_DIR = "timings"
TIMING_TABLES = ("swap_timings",)
ROW_KEYS = (
    "model",
    "run",
    "corpus",
    "block",
    "rank",
    "first",
    "step",
)  # the columns that name a row, where a table has them


def is_timing(column: str) -> bool:
    """Whether `column` records the run rather than a result: `seconds`, `seconds_*`, `from_cache`."""
    return column in ("seconds", "from_cache") or column.startswith("seconds_")


def result_columns(name: str) -> tuple[str, ...]:
    """The columns of table `name` that its `<name>.csv` holds: the registered ones, timings left out (a table made
    of timings keeps them all, in timings/)."""
    spec = _spec_of(name)
    return spec.columns if name in TIMING_TABLES else tuple(c for c in spec.columns if not is_timing(c))


def table_path(name: str, results_dir: str | Path) -> Path:
    """Where table `name`'s results live: `<results_dir>/<name>.csv` (`timings/<name>.csv` for a timing table)."""
    return timings_path(name, results_dir) if name in TIMING_TABLES else Path(results_dir) / f"{name}.csv"


def timings_path(name: str, results_dir: str | Path) -> Path:
    """Where table `name`'s timing columns live: `<results_dir>/timings/<name>.csv`."""
    return Path(results_dir) / TIMINGS_DIR / f"{name}.csv"


def save_table(df: pd.DataFrame, name: str, results_dir: str | Path) -> Path:
    """Write `df` as results table `name` (CSV, columns in registry order, floats to 12 significant digits); its
    timing columns go to `timings/<name>.csv` beside the row-naming columns (`ROW_KEYS`).

    Its columns must be exactly the registered ones: a renamed or extra column fails here."""
    spec = _spec_of(name)
    got = list(df.columns)
    if set(got) != set(spec.columns) or len(got) != len(spec.columns):
        extra, missing = sorted(set(got) - set(spec.columns)), sorted(set(spec.columns) - set(got))
        raise LinrecError(
            f"table '{name}' (notebook {spec.notebook}): unexpected columns {extra}, missing {missing}; update "
            "linrec.claims.tables.TABLES"
        )
    path = table_path(name, results_dir)
    kept = list(result_columns(name))
    with atomic_file(path) as tmp:
        df[kept].to_csv(tmp, index=False, float_format=FLOAT_FORMAT)
    timing = [c for c in spec.columns if c not in kept]
    if timing:
        keys = [c for c in kept if c in ROW_KEYS]
        with atomic_file(timings_path(name, results_dir)) as tmp:
            df[keys + timing].to_csv(tmp, index=False, float_format=FLOAT_FORMAT)
    return path


def load_table(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """Results table `name` from `results_dir` (its result columns; `load_timings` has the rest), or None if its
    notebook has not written it.

    A table without its registered columns (written by an older linrec) is an error naming its notebook."""
    spec = _spec_of(name)
    path = table_path(name, results_dir)
    if not path.exists():
        return None
    df = pd.read_csv(
        path,
        keep_default_na=True,
        dtype={c: str for c in spec.columns if is_block_list(c)},
    )
    missing = sorted(set(result_columns(name)) - set(df.columns))
    if missing:
        raise LinrecError(
            f"{path} lacks columns {missing}: it was written by an older linrec; rerun notebook {spec.notebook}"
        )
    df = df[list(result_columns(name))].copy()  # a file from before the timings moved out still has them: left out here
    for c in df.columns:
        if is_block_list(c):
            df[c] = df[c].fillna("")
    return df


def load_timings(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """The timing columns of table `name` with the columns that name its rows (`timings/<name>.csv`), or None."""
    path = timings_path(name, results_dir)
    return pd.read_csv(path) if path.exists() else None
