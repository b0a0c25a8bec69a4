"""What every phase of `bench/e2e.py` works with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from endtoend.daemon import Daemon
from endtoend.data import Sms
from endtoend.options import Options
from filterd.bayes.model import ModelSpec


@dataclass
class Context:
    """The options, the run's temporary directory (its stores, configuration files and logs),
    the broker, the SMS messages the scorers decide, and every daemon started (all stopped at the
    end, whatever happened)."""

    options: Options
    tmp: Path
    bootstrap: str
    test: list[Sms]
    spec: ModelSpec  # the SMS model's
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return [r.text for r in self.test]

    def started(self, daemon: Daemon) -> Daemon:
        """`daemon`, started and kept to be stopped at the end."""
        self.daemons.append(daemon)
        return daemon.start()
