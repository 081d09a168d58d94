"""The studies: one module per stage of the paper (arXiv 2606.19379), each a `run(p)` that computes the stage's
tables and writes them, so a notebook shows the method and its findings and holds no file plumbing."""
