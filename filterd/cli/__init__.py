"""The `filterd` command line: one click group, commands in a module per concern."""

from __future__ import annotations

import click

from filterd import __version__
from filterd.cli.calibration import calibrate_command
from filterd.cli.configuration import config_group
from filterd.cli.daemon import run_command, score_command, topics
from filterd.cli.demo import demo_command
from filterd.cli.evaluation import evaluate_command, synth_command, tune_command
from filterd.cli.feedback import feedback
from filterd.cli.review import review
from filterd.cli.store import db, learn_command, model
from filterd.cli.web import http_group, serve_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="filterd")
def main() -> None:
    """filterd: a streaming spam and fraud filter."""


for command in (
    demo_command,
    run_command,
    score_command,
    topics,
    calibrate_command,
    evaluate_command,
    tune_command,
    synth_command,
    db,
    learn_command,
    feedback,
    review,
    model,
    config_group,
    serve_command,
    http_group,
):
    main.add_command(command)
