"""One module per stage of the paper, each turning captures into tables: recoverability, probes, spectrum, corpora, the
swap study and per-token routing, the controls, the seeds experiment.
"""
