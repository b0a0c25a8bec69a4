"""What every phase of `bench/e2e.py` works with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from endtoend.daemon import Daemon, TomlValue
from endtoend.data import Body, Sms
from endtoend.options import Options
from filterd.bayes.model import ModelSpec


@dataclass
class Context:
    """The options, the run's temporary directory (its stores, configuration files and logs),
    the broker, the messages the scorers decide (`bodies`: the SMS test part's, or payments'),
    the SMS test part (the learner's, section 4), the scorers' model and their configuration
    beyond the defaults, and every daemon started (all stopped at the end, whatever
    happened)."""

    options: Options
    tmp: Path
    bootstrap: str
    bodies: list[Body]
    test: list[Sms]
    spec: ModelSpec  # the scorers' model's
    labels: tuple[str, ...] = ("ham", "spam")  # the model's
    # more configuration of the scorers, by section (--transactions: transactions.toml's)
    settings: Mapping[str, Mapping[str, TomlValue]] = field(default_factory=dict)
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        """The messages' texts, for the analysts' /v1/check."""
        return [str(body.get("text") or "") for body in self.bodies]

    @property
    def model(self) -> str:
        return model_name(self.options)

    @property
    def model_url(self) -> str:
        return store_url(self.tmp, self.options)

    def started(self, daemon: Daemon) -> Daemon:
        """`daemon`, started and kept to be stopped at the end."""
        self.daemons.append(daemon)
        return daemon.start()


def model_name(options: Options) -> str:
    """The name of the scorers' model (and of its store's file)."""
    return "payments" if options.transactions else "sms"


def store_url(tmp: Path, options: Options) -> str:
    """The store of the scorers' model, in the run's temporary directory."""
    return f"sqlite:///{tmp}/{model_name(options)}.db"
