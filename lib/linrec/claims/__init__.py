"""The rules that turn tables into verdicts, one module per group of claims, and the registry of results tables."""
