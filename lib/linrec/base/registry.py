"""The registry of results tables: each table's name, the notebook that writes it, its columns and what it holds.
`linrec.base.tables` writes and reads every table through it."""

from __future__ import annotations

from dataclasses import dataclass

_R2_BLOCK = (
    "model corpus block r2_lin r2_lo r2_hi r2_train r2_feature_median first_var_share r2_ex_first r2_ex_first_lo "
    "r2_ex_first_hi r2_feature_q25 r2_feature_q75 cond_gram cond_scaled rank dead_inputs d_in d_out n_train n_test "
    "n_test_windows"
)
_PROFILE_SHAPE = (  # r2_lin_summary's columns, and r2_lin_summary_other's: the same shape on the other profile
    "model n_blocks r2_min r2_max max_adjacent_jump direction_changes max_jump_disjoint direction_changes_disjoint "
    "as_extreme_as_paper r2_ex_first_min max_jump_disjoint_ex_first direction_changes_disjoint_ex_first "
    "moves_tested moves_fdr max_jump_fdr direction_changes_fdr moves_tested_ex_first moves_fdr_ex_first "
    "max_jump_fdr_ex_first direction_changes_fdr_ex_first cond_gram_median r2_ex_first_max first_token_blocks "
    "profile_tokens"
)


@dataclass(frozen=True)
class TableSpec:
    notebook: str  # the notebook that writes it
    columns: tuple[str, ...]
    about: str


def _spec(notebook: str, columns: str, about: str) -> TableSpec:
    return TableSpec(notebook, tuple(columns.split()), about)


REGIME_COLUMNS = (  # regime_summary's columns: notebook 04's spectrum_summary and the zoo's zoo_regimes
    "model n_blocks n_high_r2 n_broadly_linear n_broadly_linear_high_r2 n_first_token_concentrated "
    "n_first_token_concentrated_high_r2 n_outlier_concentrated n_outlier_concentrated_high_r2 n_nonlinear "
    "n_nonlinear_high_r2 n_unclassified n_unclassified_high_r2 concentrated_not_rank1_blocks "
    "n_broadly_linear_ex_first n_outlier_concentrated_ex_first outlier_ex_first_blocks "
    "outlier_blocks first_token_blocks unclassified_blocks outlier_first_blocks first_share_blocks massive_blocks "
    "top1_broadly_linear_blocks max_drop_ex_top8 eff_rank_out_frac_median"
)

TABLES: dict[str, TableSpec] = {
    "capture": _spec(
        "01",
        "model model_type n_blocks d_model n_train_rows n_test_rows tokens bos seconds from_cache",
        "one row per model: what the capture saw",
    ),
    "window_icc": _spec(
        "01",
        "model block resid_icc input_icc n_rows n_windows",
        "per block: the intraclass correlation within a held-out window of the map's residuals and of its inputs "
        "(linrec.studies.capture.window_icc_table); the methods table plants the largest",
    ),
    "r2_lin": _spec(
        "02",
        _R2_BLOCK,
        "per block: the closed-form ceiling, r2_lo/r2_hi its interval for the held-out R² of the fitted map "
        "(linrec.analyses.recoverability.ceiling_table)",
    ),
    "r2_lin_summary": _spec(
        "02",
        _PROFILE_SHAPE,
        "per model: the profile's shape (linrec.analyses.profile.profile_summary) on the one judging claim 1",
    ),
    "r2_lin_summary_other": _spec(
        "02",
        _PROFILE_SHAPE,
        "per model: the same shape on the other profile (the learning curve's largest size, or the capture's)",
    ),
    "r2_moves": _spec(
        "02",
        "model positions kind from_block to_block change p q counts",
        "per model: claim 1's moves, each with a paired jackknife p and BH q (linrec.analyses.profile.move_tests)",
    ),
    "r2_replicates": _spec(
        "02",
        "sample " + _R2_BLOCK,
        "per block and disjoint text sample (0: the main capture): linrec.analyses.recoverability.ceiling_table",
    ),
    "r2_replicates_summary": _spec(
        "02",
        "model n_samples samples sd_median sd_max sd_max_block ci_half_width_median n_claim1_passes replication",
        "per model: R²_lin's between-sample SD per block and claim 1 on each sample (linrec.analyses.profile."
        "replication_summary)",
    ),
    "r2_curve": _spec(
        "02",
        "model block train_tokens n_train rows_per_param r2 r2_lo r2_hi seed_sd r2_train slope fit_rmse",
        "per block and train size: held-out R²_lin, mean of split seeds, hierarchical-bootstrap CI; train_tokens = "
        "inf is the large-n estimate (linrec.collect.curves.curve_summary)",
    ),
    "curve_split": _spec("02", "model n_blocks n_lower n_outside diff_median drop_max drop_block", "other_split"),
    "r2_curve_runs": _spec(
        "02",
        "model block seed train_tokens n_train r2 r2_train cond_scaled",
        "per block, split seed and train size: held-out and in-sample R² (linrec.collect.curves.curve_table)",
    ),
    "r2_curve_overview": _spec(
        "02",
        "model n_blocks ref_tokens largest_tokens r2_ref_median r2_largest_median r2_inf_median gain_largest_median "
        "gain_largest_min gain_largest_max gain_inf_median gain_inf_max train_gap_ref_median "
        "train_gap_largest_median seed_sd_ref_median ci_width_ref_median ci_width_largest_median "
        "ci_width_inf_median fit_rmse_median rank_spearman_ref_inf",
        "per model: R²_lin from the default train size to 10× and large n (linrec.collect.curves.curve_overview)",
    ),
    "probe": _spec(
        "03",
        "model block r2_lin r2_lin_rows r2_poly gain probe_epochs probe_stop probe_converged seconds_probe cond_gram "
        "cond_scaled n_train_rows n_test_rows r2_quad gain_quad seconds_quad r2_ceiling_rows adam_reach "
        "r2_trained_adam r2_trained_sgd seconds_trained",
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
        "ci_lo90 ci_hi90 ci_lo_iid ci_hi_iid n_eff n_needed correlation "
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
        "ci_lo90 ci_hi90 ci_lo_iid ci_hi_iid n_eff n_needed correlation "
        "detectable_r n_stop_validation n_stop_flattened n_stop_max_epochs seconds_probe_total sweep_rank_min "
        "sweep_gain_median_rank_min sweep_rank_max sweep_gain_median_rank_max",
        "per model and pooled: the probe's gain, its correlation with 1 − R²_lin and the power of that test "
        "(linrec.analyses.probe_summary.probe_summary)",
    ),
    "pitfall_summary": _spec(
        "03",
        "model n_blocks budget_steps n_short share_short shortfall_median shortfall_max adam_shortfall_median "
        "sgd_shortfall_median spearman_cond_shortfall cond_lo cond_hi spearman_scaled_shortfall scaled_lo scaled_hi "
        "spearman_reach_adam reach_lo reach_hi adam_reach_median max_steps first_step n_mechanism n_reached "
        "steps_reach_well steps_reach_ill cond_well cond_ill gd_steps_well gd_steps_ill blocks_n blocks_rho_scaled "
        "blocks_scaled_min blocks_scaled_max dose_block dose_steps dose_first_step dose_kappa_min dose_kappa_max "
        "dose_steps_min dose_steps_max dose_short_min dose_short_max dose_budget dose_budget_short_min "
        "dose_budget_short_max dose_levels dose_slope dose_slope_lo dose_slope_hi dose_slope_lo90 dose_slope_hi90 "
        "dose_resid_sd ceiling_excess n_lr_edge scaled_iqr_decades short_iqr short_iqr_lo short_iqr_hi",
        "per model: claim 7a's shortfall at the practitioner's budget, claim 7b's dose–response, the real blocks' ρ "
        "and spread against it, steps to the ceiling and checks (linrec.analyses.probe_summary.pitfall_summary)",
    ),
    "pitfall_budget": _spec(
        "03",
        "model block optimizer lr step r2_val r2_test chosen lr_interior ceiling ceiling_exact ridge_alpha ridge_basis "
        "cond_gram cond_scaled kappa_steps n_outputs n_train",
        "per mechanism block, optimizer (adam, sgd; gd from the Gram spectrum), learning rate and step: R² on a "
        "seeded set of output features beside the ridge-tuned ceiling (linrec.analyses.pitfall.budget_table)",
    ),
    "pitfall_dose": _spec(
        "03",
        "model block kappa kappa_measured optimizer lr step r2_val r2_test lr_interior ceiling ridge_alpha "
        "ridge_basis ceiling_exact ceiling_exact_original",
        "per constructed κ, optimizer and step: the tuned baseline on one block's re-expressed inputs "
        "(linrec.analyses.pitfall.dose_table)",
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
        REGIME_COLUMNS,
        "per model: regimes (linrec.analyses.spectrum.regime_summary)",
    ),
    "spectrum_replicates": _spec(
        "04",
        "sample model block regime r2_lin r2_feature_median top1_var_share eff_rank_out eff_rank_explained "
        "first_var_share",
        "per block and disjoint sample of text: the regime and what decides it (linrec.analyses.spectrum.spectrum_table"
        " on notebook 02's replicate captures; sample 0 is the main capture)",
    ),
    "spectrum_replicates_summary": _spec(
        "04",
        "model samples n_samples n_broadly_linear n_outlier_concentrated outlier_blocks outlier_blocks_every_sample "
        "n_claim4_passes replication",
        "per model: the regimes and claim 4 on each sample of text (linrec.analyses.spectrum.regime_replication)",
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
    "training_onsets": _spec("08", "run onset last_step", "per run: when its profile settled (approach_to_final)"),
    "training_comparisons": _spec(
        "08",
        "kind a b step distance distance_lo distance_hi level level_lo level_hi level_floor shape shape_lo shape_hi "
        "shape_floor corr corr_lo corr_hi floor beyond_noise within_noise outcome level_outcome shape_outcome",
        "per comparison of two profiles: the raw distance, the level and the shape (linrec.claims.rules' convention), "
        "each with its paired interval against its noise floor (linrec.analyses.seeds.comparisons, "
        "linrec.claims.learned.comparison_words); level and shape intervals NaN where refreshed from the profiles",
    ),
    "training_distance_curve": _spec(
        "08",
        "kind a b step distance distance_lo distance_hi level level_lo level_hi level_floor shape shape_lo shape_hi "
        "shape_floor corr corr_lo corr_hi floor beyond_noise within_noise",
        "per pair of init seeds and checkpoint step: the distance, level and shape while training "
        "(linrec.analyses.seeds.distance_over_training)",
    ),
    "training_swap": _spec(
        "08",
        "run block r2_lin ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_ffn params_linear seconds",
        "per run's last checkpoint and block: held-out ΔPPL of swapping the block alone for its map "
        "(linrec.analyses.swap)",
    ),
    "training_swap_windows": _spec(
        "08",
        "run swap window tokens loss_base loss_swapped",
        "per run's last checkpoint, block swapped alone and held-out window: mean NLL per token, base and swapped "
        "(notebook 06's swap_windows for training_swap; linrec.analyses.swap.HeldOutSwaps.window_losses)",
    ),
    "training_verdict": _spec(
        "08",
        "word claim2a margin trained_words seed_words data_order_words text_words variant_words",
        "the seeds experiment's rule (linrec.claims.learned.seeds_verdict)",
    ),
    "zoo_runs": _spec(
        "08",
        "run layout text init_seed data_seed block_params converged plateaued learned heldout_gain heldout_drop "
        "init_heldout_loss final_heldout_loss final_heldout_ppl best_heldout_loss best_heldout_step noise_level "
        "noise_shape seconds_ceiling seconds_probe seconds_spectrum seconds_swap seconds_train from_cache "
        "seconds_capture",
        "per run of the zoo: its factors, the parameters in its blocks, the plateau rule on its held-out loss "
        "(linrec.inputs.training.plateau: converged = plateaued and learned; only converged runs reach a verdict), "
        "the measurement noise of its level and shape (linrec.analyses.factors.measurement_noise) and the seconds "
        "of training and of each measuring stage",
    ),
    "zoo_blocks": _spec(
        "08",
        "model layout text init_seed data_seed block r2_lin r2_lo r2_hi gain gain_quad probe_stop regime delta_ppl "
        "delta_lo delta_hi ppl_base",
        "per trained model of the zoo and block, at its last checkpoint: R²_lin with its interval (the fitted map's), "
        "the probe's gain, the regime, the held-out ΔPPL of swapping the block alone (linrec.analyses.zoo.block_table)",
    ),
    "zoo_distances": _spec(
        "08",
        "kind group n_pairs interval level level_lo level_hi shape shape_lo shape_hi",
        "per kind of pair of the zoo's runs (layout pairs, seed, data order, text): the mean level and shape distance "
        "with its 95 % interval (linrec.analyses.factors.distance_table)",
    ),
    "zoo_components": _spec(
        "08",
        "part factor n_runs n_pairs component component_lo component_hi share share_lo share_hi",
        "the zoo's profiles' level and shape split into layout, text, seed and residual, with delete-one-run "
        "jackknife intervals (linrec.analyses.factors.components)",
    ),
    "zoo_verdict": _spec(
        "08",
        "word claim2a shape_factor level_factor",
        "which factor sets the shape and which the level, and claim 2a from the zoo (linrec.claims.zoo.zoo_verdict)",
    ),
    "zoo_probe_summary": _spec(
        "08",
        "model n_blocks gain_median gain_max gain_min gain_quad_median quad_excess_median pearson_r p ci_lo ci_hi "
        "ci_lo90 ci_hi90 ci_lo_iid ci_hi_iid n_eff n_needed correlation "
        "detectable_r n_stop_validation n_stop_flattened n_stop_max_epochs seconds_probe_total sweep_rank_min "
        "sweep_gain_median_rank_min sweep_rank_max sweep_gain_median_rank_max",
        "per trained model of the zoo and pooled over all of them (model 'all'): claim 3's probe summary "
        "(linrec.analyses.probe_summary.probe_summary)",
    ),
    "zoo_swap_predictors": _spec(
        "08",
        "model column runs_swapped_model n_blocks n_eff n_needed spearman_rho rho_lo rho_hi rho_lo90 rho_hi90 "
        "rho_lo_iid rho_hi_iid p outcome partial_rho_depth partial_lo partial_hi partial_lo90 partial_hi90 partial_p "
        "partial_outcome n_middle middle_rho middle_lo middle_hi useful p_holm partial_p_holm",
        "per trained model of the zoo and predictor, then pooled (model 'all'): claim 6b's predictors of held-out "
        "ΔPPL (linrec.analyses.swap_summary.swap_predictors)",
    ),
    "zoo_regimes": _spec(
        "08",
        REGIME_COLUMNS,
        "per trained model of the zoo: regimes (linrec.analyses.spectrum.regime_summary)",
    ),
    "zoo_claims": _spec(
        "08",
        "claim verdict reason n_models n_blocks n_eff n_needed powered rho lo hi lo90 hi90 outcome",
        "claims 3, 4 and 6b by their own rules on every trained model's blocks pooled with a model effect "
        "(linrec.claims.zoo.pooled_table: each claim's row, linrec.claims.zoo.judge_zoo)",
    ),
    "spectrum_inputs": _spec(
        "04",
        "model descriptor spearman_rho p",
        "per model and input descriptor: ρ with R²_lin (linrec.analyses.spectrum.input_side)",
    ),
    "corpora": _spec("05", _R2_BLOCK, "per block and corpus: the ceiling"),
    "corpora_agreement": _spec(
        "05",
        "model corpus_a corpus_b n_blocks pearson_r pearson_p spearman_rho spearman_p max_abs_diff max_diff_block "
        "n_ci_disjoint n_ci_compared n_windows_a n_windows_b level level_lo level_hi shape shape_lo shape_hi "
        "level_ex_first level_lo_ex_first level_hi_ex_first shape_ex_first shape_lo_ex_first shape_hi_ex_first",
        "per model and corpus pair: correlations (linrec.analyses.uncertainty.profile_agreement); claim 2a's level "
        "and shape of corpus_a − corpus_b, 95 % CIs, ± position 0 (linrec.analyses.recoverability.corpus_pairs)",
    ),
    "corpora_verdict": _spec(
        "05",
        "model n_blocks spearman_min pearson_min corpus_depth_ratio max_abs_diff max_diff_block max_diff_corpus_a "
        "max_diff_corpus_b n_ci_disjoint n_ci_compared ci_width_median verdict n_corpora n_windows depth_share "
        "depth_lo depth_hi level_share level_lo level_hi shape_share shape_lo shape_hi level_range level_range_lo "
        "level_range_hi corpus_highest corpus_lowest n_pairs_fdr n_pairs shape_share_ex_first shape_lo_ex_first "
        "shape_hi_ex_first level_share_ex_first level_lo_ex_first level_hi_ex_first overlay_verdict",
        "per model: agreement, R²_lin's variance split into depth, level and shape with window intervals (context), "
        "and claim 5's word from corpora_agreement's level and shape (linrec.claims.corpora.corpus_verdicts)",
    ),
    "swap": _spec(
        "06",
        "model corpus block first r2_lin mse_out ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_ffn "
        "params_linear params_swap param_ratio vs_map vs_map_lo vs_map_hi n_test_tokens seconds",
        "per block and position variant: held-out ΔPPL of the swap with its paired 99 % skew-corrected jackknife "
        "interval (runs before issue 64: a 95 % interval) (linrec.analyses.swap.HeldOutSwaps.table)",
    ),
    "swap_windows": _spec(
        "06",
        "model swap window tokens loss_base loss_swapped",
        "per model, swapped set and held-out window: mean next-token NLL per token of the window, base and swapped, "
        "for every ΔPPL the swap study reports (the per-block table, the rank curve, the greedy sets; "
        "linrec.analyses.swap.HeldOutSwaps.window_losses); `swap` names the set, e.g. '3', '3:ffn', '3r16', '1+3'",
    ),
    "swap_skew": _spec(
        "06",
        "model swap n_windows delta_ppl delta_lo delta_hi jack_lo jack_hi cost_mean cost_skew pseudo_skew "
        "max_window_share own_cover own_miss_below own_miss_above",
        "per model and swapped set: how skewed the per-window costs are (cost per token: swapped − base loss; G₁ of "
        "the costs and of ΔPPL's jackknife pseudo-values; the costliest window's share of the summed cost), the "
        "swap's 99 % skew-corrected interval beside the symmetric 95 % jackknife-t, and how it fares with the set's "
        "own windows resampled (own_*: uncertainty.own_skew_check; 6a reads it) (linrec.analyses.swap.window_skew)",
    ),
    "swap_params": _spec(
        "06", "model params_ffn params_linear ffn_over_linear", "per model (linrec.analyses.swap_summary.swap_params)"
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
        "model column runs_swapped_model n_blocks n_eff n_needed spearman_rho rho_lo rho_hi rho_lo90 rho_hi90 "
        "rho_lo_iid rho_hi_iid p outcome partial_rho_depth partial_lo partial_hi partial_lo90 partial_hi90 partial_p "
        "partial_outcome n_middle middle_rho middle_lo middle_hi useful p_holm partial_p_holm",
        "per model and predictor, then every model's blocks pooled (model 'all'): ρ with held-out ΔPPL, partial ρ "
        "given depth, ρ in the middle blocks, with Fisher intervals at the effective number of blocks, equivalence "
        "outcomes, the blocks a decision needs and Holm-adjusted p (linrec.analyses.swap_summary.swap_predictors)",
    ),
    "swap_first": _spec(
        "06",
        "model block first_var_share delta_ppl_map delta_lo_map delta_hi_map delta_ppl_ffn delta_lo_ffn "
        "delta_hi_ffn delta_ppl_mean delta_lo_mean delta_hi_mean share_of_cost_at_first",
        "per first-token block: ΔPPL of each position variant (linrec.analyses.swap_summary.first_position_effect)",
    ),
    "swap_safety": _spec(
        "06",
        "model n_blocks n_high_r2 n_high_r2_costly high_r2_costly_blocks n_within_budget within_budget_blocks "
        "delta_ppl_median ppl_base",
        "per model (linrec.analyses.swap_summary.swap_safety)",
    ),
    "swap_rank_curve": _spec(
        "06",
        "model block rank factored params params_ffn param_ratio var_kept r2_lin ppl delta_ppl delta_lo delta_hi",
        "one block per model, chosen on the screening windows: reduced-rank maps",
    ),
    "routing_gates": _spec(
        "06",
        "model block target gate_auc_train gate_auc_heldout positives_train share err_routed_train err_all_train",
        "per routed block and gate target: the gates compared on train rows (linrec.analyses.routing.train_gates), "
        "with the held-out AUC beside it",
    ),
    "routing_curve": _spec(
        "06",
        "model block target share share_heldout ppl_base ppl delta_ppl delta_lo delta_hi compute_saved gate_params",
        "per routed block and share of the 0.05 grid: held-out ΔPPL of routing that share of tokens to the map (the "
        "curve stops once no resample can stay within +1 %)",
    ),
    "routing_routable": _spec(
        "06",
        "model block target routable_pct1 routable_pct1_lo routable_pct1_hi measured_to n_steps n_drops "
        "n_drops_beyond_noise max_drop monotone",
        "per routed block: the largest share within +1 % at 0.05 resolution with its interval (one-sided tests over "
        "windows), and the curve's monotonicity (linrec.analyses.routing.route_block)",
    ),
    "routing_identity": _spec(
        "06",
        "model block corpus_a corpus_b share n_types n_tokens_b r r_lo r_hi r_need r_need_lo r_need_hi r_need_lo90 "
        "r_need_hi90 rho_need rho_need_lo rho_need_hi r_need_rel r_need_rel_lo r_need_rel_hi lookup_r2 type_share",
        "per routed block and corpus pair, over token types: the mean need's r (the anchor's quantity) and the gate "
        "share's r (linrec.analyses.token_context.type_agreement)",
    ),
    "routing_split_auc": _spec(
        "06",
        "model block target part auc auc_lo auc_hi full_minus full_minus_lo full_minus_hi full_minus_lo90 "
        "full_minus_hi90 auc_train",
        "per routed block and part (full, token, context): the gate's held-out AUC with jackknife intervals "
        "(linrec.analyses.token_context.split_gates)",
    ),
    "routing_split_ppl": _spec(
        "06",
        "model block part share share_heldout ppl delta_ppl delta_lo delta_hi vs_full vs_full_lo vs_full_hi",
        "per routed block, part and share: held-out ΔPPL when that part's gate routes the share, against the full "
        "gate's (linrec.analyses.token_context.split_study)",
    ),
    "routing_anchor": _spec(
        "06",
        "model need_pairs need_context need_token need_r_median need_r_min need_r_max lookup_r2_median "
        "need_rel_r_median gate_r_median need_verdict split_blocks split_context split_token auc_full_median "
        "auc_token_median auc_context_median split_verdict",
        "per model: the anchor's 'need cannot be predicted from token identity', judged on the per-type need and on "
        "the token/context gates (linrec.claims.routing.anchor_table)",
    ),
    "routing_heal": _spec(
        "06",
        "model mode k blocks steps lr batch_size ppl_base ppl_control ppl_before ppl_after delta_before "
        "delta_before_lo delta_before_hi delta_after delta_after_lo delta_after_hi delta_after_base "
        "delta_after_base_lo delta_after_base_hi loss_end seconds outcome healed_share",
        "per model, fine-tune mode and k swapped blocks: held-out ΔPPL before and after a short fine-tune, against "
        "the same fine-tune unswapped (linrec.analyses.healing, linrec.claims.routing.heal_table)",
    ),
    "rule_hashes": _spec(
        "09",
        "claim rule_hash verdict tables_hash recorded models",
        "per claim: today's rule's hash, its verdict here, a hash of the tables it read, the date the hash (or its "
        "verdict) was first recorded here and the models measured (linrec.outputs.rule_log.record)",
    ),
    "rule_changes": _spec(
        "09",
        "claim recorded hash_before hash_after verdict_before verdict_after tables why",
        "every change of a rule's hash, or of its verdict (the evidence: hash_before = hash_after), after results "
        "were recorded here: verdicts before and after, the tables the same or not, why (linrec.outputs.rule_log)",
    ),
    "calibration": _spec(
        "09",
        "what procedure n_blocks models phi rho reps coverage95 coverage90 p_effect p_no_effect p_inconclusive "
        "setting n_windows coverage95_before before upper_covers",
        "per interval a verdict reads: each across-block correlation's 95 % and 90 % coverage and equivalence "
        "outcomes at ρ = 0, at the data's blocks and AR(1) dependence; each window interval's 95 % coverage on planted "
        "blocks at the run's held-out windows, beside the one it replaced (ΔPPL under four cost shapes and the run's "
        "own windows, with upper_covers), and the R²_lin interval's as one for a refit at the run's rows per "
        "parameter, width and residual ICC (linrec.analyses.coverage.coverage)",
    ),
    "routing_summary": _spec(
        "06",
        "model n_blocks_routed best_block best_routable_pct1 best_lo best_hi n_quarter n_monotone rho_r2_routable "
        "rho_lo rho_hi rho_lo90 rho_hi90 outcome n_eff n_needed rho_r2_swap rho_r2_swap_lo rho_r2_swap_hi "
        "identity_r_median need_r_median",
        "per model: routing's best block, and whether R²_lin predicts the routable share (linrec.analyses.routing)",
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
    "controls_random_init": _spec("07", _R2_BLOCK + " weights", "per block: trained and random-init profiles"),
    "controls_random_init_summary": _spec(
        "07",
        "model trained_r2_min trained_r2_max init_r2_min init_r2_max init_r2_spread mean_abs_trained_init "
        "spearman_trained_init init_r2_train_median trained_gap_median init_r2_test_median mean_abs_init_seeds "
        "spearman_init_seeds",
        "per model (linrec.analyses.controls.random_init_summary)",
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
        "shuffled_sd shuffled_pair_gap z_shuffled p_shuffled q_init q_shuffled stands_out below_init",
        "per block: the trained FFN against each null ensemble, z-scores, Benjamini–Hochberg q "
        "(linrec.analyses.decomposition.null_blocks)",
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
        "share_residual_hi share_weights_minus_inputs share_weights_minus_inputs_lo share_weights_minus_inputs_hi "
        "n_below_init wmi_se_jack wmi_se_windows wmi_lo wmi_hi wmi_band1",
        "per model: claim 2b's decomposition of the cross matrix with window-bootstrap intervals, and the blocks "
        "that stand out from both nulls (linrec.analyses.decomposition.decomposition)",
    ),
    "controls_decomposition_bands": _spec(
        "07",
        "model band n_entries n_pairs n_blocks wmi se_jack se_windows windows_band wmi_lo wmi_hi interval",
        "per model and cross band k: claim 2b's weights − inputs share on the entries |i − j| ≤ k with its interval "
        "over blocks and held-out windows (linrec.analyses.decomposition.band_table)",
    ),
    "controls_learned": _spec(
        "07",
        "model twin_gap trained_gap twin_degenerate effect_twin noise_twin effect_null noise_null reference effect "
        "noise",
        "per model: claim 2a, the trained profile against the untrained architecture "
        "(linrec.analyses.controls.learned_summary)",
    ),
    "controls_inputs": _spec(
        "07",
        "model block n_train n_test r2_own r2_gaussian other_block r2_other_block",
        "per block: trained FFNs on other inputs (linrec.analyses.controls.input_controls)",
    ),
    "controls_inputs_summary": _spec(
        "07",
        "model r2_own_median r2_gaussian_median n_gaussian_drop r2_next_block_median spearman_own_gaussian",
        "per model (linrec.analyses.controls.input_control_summary)",
    ),
    "controls_cross_feed": _spec(
        "07",
        "inputs_from ffn_of block r2_ffn_own_inputs r2_raw r2_recoloured",
        "per block: one model's FFNs on another's inputs (linrec.analyses.controls.cross_feed)",
    ),
    "controls_cross_feed_summary": _spec(
        "07", "inputs_from ffn_of r2_ffn_own_inputs r2_raw r2_recoloured", "per pair: medians over blocks"
    ),
}
