"""The measurement's mathematics: streaming float64 moments, their exact merge across ranks, the closed-form affine fit
and its held-out score, per-window sums for the bootstrap.
"""

N_BOOT = 2000  # bootstrap resamples of every percentile interval, unless a caller names its own (and says why)
