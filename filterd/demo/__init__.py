"""`filterd demo`: a local Kafka-protocol broker (`broker`), the store and the daemon in one
process (`runner.Demo`), fed a labelled stream (`stream`) with what it is asked to do
(`options`), its decisions compared with the truth (`scoreboard`) and the threshold
recalibrated as it goes (`calibrator`). `__all__` names the modules other packages use rather
than re-exporting their names: the runner imports the whole daemon, which the tests that need
only the local broker should not load."""

__all__ = ["broker", "options", "runner", "stream"]
