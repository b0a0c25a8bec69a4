"""`filterd serve` (the HTTP API alone) and `filterd http …` (its credentials).

`filterd serve` runs the API of `filterd.web` against the store and brokers of the
configuration, without scoring or learning: for deployments that keep it apart from the
scorers. It keeps its own copy of the model, loaded and synced from the store as a scorer's
(`ModelState`), so its checks give the scores the scorers give. `filterd http hash-password`
and `filterd http new-token NAME` make the hashes `[http] users` and `[http] tokens` hold.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

import click
import structlog
from structlog.typing import FilteringBoundLogger

from filterd.cli.common import broker_override, config_option, load_config, setting_type
from filterd.cli.daemon import (
    check_store_file,
    create_store_option,
    db_override,
    loaded_model,
    log_format_override,
    metrics_port_override,
    model_override,
)
from filterd.observe.health import Health
from filterd.observe.logs import configure_logging
from filterd.observe.metrics import Metrics
from filterd.observe.server import CannotListen, start_observe_server
from filterd.service.config import Config, masked_url
from filterd.service.decide import tokenizer_of
from filterd.service.passwords import SCHEMES, hash_secret
from filterd.store import database
from filterd.web.auth import new_token
from filterd.web.serving import Api

REFRESH_SECONDS = 0.2  # how often the model is looked at; ModelState syncs at its own intervals
# /healthz: the loop that syncs the model, stalled when a sync hangs this long; /readyz: the API
SYNC_LOOP, STALL_SECONDS, API = "model sync", 60.0, "http api"


@click.command(name="serve")
@config_option
@db_override
@model_override
@broker_override
@click.option(
    "--host", "http__host", metavar="ADDRESS", help="Interface to listen on (overrides http.host)."
)
@click.option(
    "--port", "http__port", type=setting_type("http.port"), help="Port (overrides http.port)."
)
@metrics_port_override
@log_format_override
@create_store_option
def serve_command(config_path: str | None, create_store: bool, **overrides: object) -> None:
    """Serve the HTTP API alone (whatever http.enabled says), until SIGTERM or Ctrl-C.

    It checks messages with the model in the store, synced as a scorer syncs it, and sends
    labels to the feedback topic; the daemons score and learn. /metrics, /healthz and /readyz
    answer on observe.metrics_port, as for `filterd run`."""
    config = load_config(config_path, **overrides)
    check_store_file(config, writes=create_store)
    configure_logging(config.observe.log_format)
    log: FilteringBoundLogger = structlog.get_logger("filterd").bind(model=config.model.name)
    metrics, health = Metrics(), Health()
    try:
        observe = start_observe_server(config.observe, metrics, health)
    except CannotListen as error:
        raise click.ClickException(str(error)) from None
    log.info(
        "starting the http api",
        config=config.public(),
        metrics_port=observe.port if observe else None,
        database=masked_url(database.database_url(config.database.url)),
    )
    try:
        _serve(config, log, create_store, metrics, health)
    finally:
        if observe is not None:
            observe.stop()
    log.info("stopped", exit_status=0)


def _serve(
    config: Config, log: FilteringBoundLogger, create_store: bool, metrics: Metrics, health: Health
) -> None:
    """Load the model, listen, and answer until SIGTERM or SIGINT. Readiness in `health`: the
    store and the model (`ModelState`), and the API listening; liveness: the model's sync."""
    health.set_ready(API, False, "not listening yet")
    state = loaded_model(config, log, create_store, metrics, health)
    api = Api(config, state.model, state, tokenizer_of(config), log, metrics)
    try:
        api.start()
    except OSError as error:
        api.stop()
        raise click.ClickException(
            f"cannot listen on {config.http.host}:{config.http.port} "
            f"(http.host, http.port): {error.strerror or error}"
        ) from None
    health.set_ready(API, True)
    health.register_loop(SYNC_LOOP, STALL_SECONDS)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # the model is loaded and synced here, as the scorer's loop does between batches; a store
    # outage leaves the API checking with the last model (ModelState logs it, /readyz says it)
    while not stop.is_set():
        state.refresh()
        health.beat(SYNC_LOOP)
        stop.wait(REFRESH_SECONDS)
    log.info("stopping the http api")
    health.set_ready(API, False, "stopping")
    api.stop()
    state.model.store.close()


@click.group(name="http")
def http_group() -> None:
    """Credentials of the HTTP API: hashes for [http] users and [http] tokens."""


@http_group.command(name="hash-password")
@click.option("--scheme", type=click.Choice(SCHEMES), default="scrypt", show_default=True)
def hash_password(scheme: str) -> None:
    """Read a password (prompted, or the first line of stdin) and print its salted hash, for
    `[http] users = {NAME = "HASH"}`."""
    if sys.stdin.isatty():
        secret = click.prompt("password", hide_input=True, confirmation_prompt=True, err=True)
    else:
        secret = sys.stdin.readline().rstrip("\r\n")
    if not secret:
        raise click.ClickException("an empty password: nothing hashed")
    click.echo(hash_secret(secret, scheme))


@http_group.command(name="new-token")
@click.argument("name")
@click.option("--scheme", type=click.Choice(SCHEMES), default="scrypt", show_default=True)
def new_token_command(name: str, scheme: str) -> None:
    """Make an API token for analyst NAME: prints the token (give it to the analyst; it is shown
    only now) and the line for `[http] tokens`."""
    if not name or ":" in name or "\x00" in name:
        raise click.ClickException("an analyst name is 1–200 characters without ':'")
    token = new_token(name)
    click.echo(f"token: {token}")
    click.echo(f'[http] tokens: "{name}" = "{hash_secret(token, scheme)}"')
