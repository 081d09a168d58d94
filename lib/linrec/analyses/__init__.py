"""One module per stage of the paper, each turning captures into tables: recoverability, probes, spectrum, corpora, the
swap study and per-token routing, the controls, the seeds experiment.
"""

# seeded train windows every choice of a swap study is made on (`linrec.analyses.swap.SwapStudy`, `linrec swap`),
# unless a profile says otherwise: the default profile's (params/default.yaml)
SCREENING_WINDOWS = 4
