"""One pass over a corpus: the capture's settings, the capture itself, its memory plan, and learning curves."""
