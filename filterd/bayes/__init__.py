"""The naive-Bayes core (pure: no I/O, no global state): vocabulary, per-document token counts,
sufficient statistics, the estimators of docs/methods.md, feature selection, the scoring model
and the online replay."""
