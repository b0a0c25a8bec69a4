"""The model store: statistics, feedback ledger, holdout window and thresholds in SQL."""
