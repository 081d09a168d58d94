"""What a reader sees: the report, the claims in words, the notebooks' findings and the figures."""
