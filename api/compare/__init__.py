"""Comparing runs: /v1/compare (any runs), and what sweeps share with it: per-point
statistics over replications, the paired change against a baseline, the best point,
effects, conclusions in words, and the table form (JSON records or CSV)."""
