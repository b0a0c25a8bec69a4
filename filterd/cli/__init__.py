"""The `filterd` command line: one click group (`main`), its commands (`COMMANDS`) in a module
per concern, each imported when its command is invoked or asked for its help, not before:
`filterd --help` and `filterd --version` import neither the store (SQLAlchemy, Alembic), the
brokers' client, the HTTP server nor the numeric libraries, so that they answer at once.
`corpus_files`, the corpus files that commands (`filterd demo` among them) and bench/ read and
write, is named in `__all__` as a module, not re-exported: it loads numpy, which `filterd
--help` must not."""

from __future__ import annotations

import importlib

import click

from filterd import __version__

__all__ = ["COMMANDS", "corpus_files", "main"]

# name: ("module:attribute" of filterd.cli, what `filterd --help` says of it)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo:demo_command", "Broker, store and daemon locally, a labelled stream replayed."),
    "run": ("daemon:run_command", "The daemon: messages → decisions, feedback → store."),
    "score": ("daemon:score_command", "Decide on message lines from stdin; decisions on stdout."),
    "topics": ("topics:topics", "The Kafka topics filterd reads and writes."),
    "calibrate": (
        "calibration:calibrate_command",
        "Choose τ for a recall target; write a threshold version.",
    ),
    "evaluate": ("evaluation:evaluate_command", "Measure variants on a labelled corpus."),
    "tune": ("evaluation:tune_command", "Choose hyper-parameters on a validation share."),
    "synth": ("evaluation:synth_command", "Write a synthetic labelled corpus."),
    "db": ("db:db", "The store's schema (Alembic migrations)."),
    "learn": ("learning:learn_command", "Learn a labelled corpus into a model (idempotent)."),
    "feedback": ("feedback:feedback", "The audit trail of label events."),
    "review": ("review:review", "The review queue: decisions queued for a label."),
    "lists": ("lists:lists", "Allow, block and review lists per entity, with an expiry."),
    "rules": ("rules:rules", "Rules over attributes and entity features, with an outcome."),
    "model": ("model:model", "Models: list, create, show, stats, export, import, delete."),
    "config": (
        "configuration:config_group",
        "The shipped example files; the configuration in effect.",
    ),
    "serve": ("web:serve_command", "The workbench and the HTTP API alone."),
    "http": ("web:http_group", "Hashed credentials for [http] users and tokens."),
}


class LazyGroup(click.Group):
    """A group whose commands (`COMMANDS`) are imported when one is looked up by name; the
    list of commands in its help comes from `COMMANDS` without importing any."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[cmd_name][0].partition(":")
        command = getattr(importlib.import_module(f"filterd.cli.{module}"), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"filterd.cli.{module}.{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in sorted(COMMANDS)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="filterd")
def main() -> None:
    """filterd: a streaming spam and fraud filter."""
