"""One pass over a corpus: the capture's settings, the capture itself, its memory plan, and learning curves.

Called, `linrec.measure(model, tokenizer, texts)` measures a model already loaded in Python (`linrec.api.measure`;
the package `linrec` makes this package callable)."""
