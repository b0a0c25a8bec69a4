"""`filterd config …`: the shipped example files and the configuration in effect."""

from __future__ import annotations

import importlib.resources
import json
from importlib.resources.abc import Traversable

import click

from filterd.cli.common import config_option, load_config

# config/ of the source tree, installed with the package (setup.py)
EXAMPLES = "filterd.examples"
DEFAULT_EXAMPLE = "filterd.toml"


def example_files() -> dict[str, Traversable]:
    """The shipped example files by their path under config/ ("systemd/filterd@.service")."""
    found: dict[str, Traversable] = {}
    pending: list[tuple[str, Traversable]] = [("", importlib.resources.files(EXAMPLES))]
    while pending:
        prefix, folder = pending.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                if entry.name != "__pycache__":
                    pending.append((f"{prefix}{entry.name}/", entry))
            elif not entry.name.endswith((".py", ".pyc")):
                found[prefix + entry.name] = entry
    return dict(sorted(found.items()))


@click.group(name="config")
def config_group() -> None:
    """The example configuration and operations files, and the configuration in effect."""


@config_group.command(name="example")
@click.argument("name", default=DEFAULT_EXAMPLE)
@click.option("--list", "list_only", is_flag=True, help="List the shipped files instead.")
def config_example(name: str, list_only: bool) -> None:
    """Print a shipped example file (default: filterd.toml, every key with its default).

    `filterd config example > /etc/filterd/filterd.toml` starts a configuration;
    `filterd config example systemd/filterd@.service` prints a unit of the operations pack."""
    files = example_files()
    if list_only:
        click.echo("\n".join(files))
        return
    if name not in files:
        raise click.ClickException(
            f"no example {name!r}; `filterd config example --list` lists them"
        )
    click.echo(files[name].read_text(encoding="utf-8"), nl=False)


@config_group.command(name="show")
@config_option
def config_show(config_path: str | None) -> None:
    """Print the configuration in effect (file ← environment), secrets masked, as JSON; a bad
    value is one line naming its key."""
    click.echo(json.dumps(load_config(config_path).public(), indent=2, default=str))
