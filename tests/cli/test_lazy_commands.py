"""`filterd --help` and `--version` import no command's module: neither the store's libraries,
the HTTP server, the brokers' client nor the numeric ones (each command's module is imported
when the command is invoked, or asked for its help)."""

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from filterd.cli import COMMANDS, main

HEAVY = (
    "sqlalchemy",
    "alembic",
    "scipy",
    "numpy",
    "starlette",
    "uvicorn",
    "jinja2",
    "kafka",
    "filterd.store",
    "filterd.web",
)

PROBE = """
import sys
from filterd.cli import main
try:
    main([{option!r}], prog_name="filterd")
except SystemExit as exit:
    assert exit.code == 0, exit.code
print(" ".join(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_import_no_heavy_library(option: str) -> None:
    probe = PROBE.format(option=option, heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stderr.strip() == ""
    assert result.stdout.strip()  # it did print the help, or the version


def test_the_help_lists_every_command_and_each_command_gives_its_own() -> None:
    listed = CliRunner().invoke(main, ["--help"]).stdout
    for name, (_, summary) in COMMANDS.items():
        assert f"  {name} " in listed and summary in listed
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.name == name
        own = CliRunner().invoke(main, [name, "--help"])
        assert own.exit_code == 0 and own.stdout.startswith(f"Usage: main {name} ")
    assert CliRunner().invoke(main, ["nope"]).exit_code == 2


def test_the_daemon_the_api_and_the_topics_commands_start_without_scipy_stats() -> None:
    """scipy.stats, the slowest of their imports, is imported when a confidence bound or a rank
    is first computed, not when `filterd run`, `serve` or `topics` start."""
    probe = (
        "import sys, filterd.daemon.supervisor, filterd.web.serving, filterd.cli.topics\n"
        "print(' '.join(m for m in sys.modules if m.startswith('scipy.stats')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == ""


def test_the_daemon_and_the_topics_commands_start_without_scipy_or_the_workbench() -> None:
    """scipy (a Fisher model's χ² tails) is imported when a Fisher model first scores, and the
    workbench's routes and pages when `[http] enabled` makes them: `filterd run` is ready
    sooner, and `filterd topics` needs neither."""
    probe = (
        "import sys, filterd.cli.daemon, filterd.cli.topics\n"
        "print(' '.join(m for m in sys.modules"
        " if m.split('.')[0] in ('scipy', 'jinja2') or m.startswith('filterd.web.app')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == ""
