"""The naive-Bayes core (pure: no I/O, no global state): token keys (`vocab`), per-document
token counts (`features`), sufficient statistics (`statistics`), the estimators of
docs/methods.md (`estimators`), feature selection (`selection`), the scoring model (`model`),
the online replay (`replay`) and the fusion of estimators (`fusion`). `__all__` names these
modules rather than re-exporting their names: importing them all here would load SciPy (for
`model`) into every user of one, such as the store's use of `vocab`."""

__all__ = [
    "arrays",
    "estimators",
    "features",
    "fusion",
    "model",
    "replay",
    "selection",
    "statistics",
    "vocab",
]
