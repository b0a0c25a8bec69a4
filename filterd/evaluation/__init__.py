"""Measuring models on labelled data, as pure functions of data: ranking measures (`ranking`),
recall-targeted thresholds (`calibration`) and their guardrails (`guardrails`), corpora as
records (`corpus`; their files are `filterd.cli.corpus_files`), the split and online protocols
(`protocols`), tuning (`tuning`), synthetic streams (`synth`) and hostile records (`hostile`).
`__all__` names these modules rather than re-exporting their names: the protocols and tuning
load the whole naive-Bayes core and SciPy's optimiser, which the daemon's use of `calibration`
should not pay for."""

__all__ = [
    "calibration",
    "corpus",
    "guardrails",
    "hostile",
    "protocols",
    "ranking",
    "synth",
    "tuning",
]
