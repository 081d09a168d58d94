"""Entry points: the `linrec` command, parameter profiles and the notebook runner."""
