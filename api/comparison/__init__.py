"""What sweeps and /v1/compare share: per-point statistics over replications, the paired
change against a baseline, the best point, effects, conclusions in words, and the table
form (JSON records or CSV)."""
