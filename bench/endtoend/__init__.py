"""The parts of `bench/e2e.py`, one job a module: its options (`options`), the data it sends
(`data`), the daemon as a child process (`daemon`) and what its metrics say (`metrics`), who
used the CPU (`cpu`), the decisions read back (`decisions`), analysts on the workbench
(`analysts`), the measured phases (`scorer`, `learner`, `memory`), the runs that combine them
(`runs`), what they measured (`results`) and the report (`report`)."""

__all__ = [
    "analysts",
    "context",
    "cpu",
    "daemon",
    "data",
    "decisions",
    "learner",
    "memory",
    "metrics",
    "options",
    "report",
    "results",
    "runs",
    "scorer",
]
