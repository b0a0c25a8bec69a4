"""What `filterd run` refuses at start-up, in one line: a database without the filterd schema
(unless told to create it), a metrics port in use."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import structlog

from filterd.daemon.supervisor import StartupError, prepare_store
from filterd.service.config import Config
from filterd.service.config import load as load_config
from filterd.store.errors import UnknownModel
from filterd.store.handle import Store


def config_for(url: str) -> Config:
    return load_config(None, environ={}, overrides={"database.url": url})


def test_a_database_without_the_schema_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "mistyped" / "filterd.db"
    with pytest.raises(StartupError) as refused:
        prepare_store(config_for(f"sqlite:///{path}"), structlog.get_logger())
    assert str(refused.value) == (
        f"sqlite:///{path}: no filterd store here: run `filterd db upgrade --db URL` first, "
        "or start with --create-store"
    )
    assert not path.exists() and not path.parent.exists()


def test_create_makes_the_store_and_the_model_and_a_second_start_needs_no_flag(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    with structlog.testing.capture_logs() as logged:
        prepare_store(
            config_for(url), structlog.get_logger(), create=True, first_start=True
        ).store.close()
        prepare_store(config_for(url), structlog.get_logger()).store.close()
    assert Store.open(url).revision() == Store.head()
    events = [e["event"] for e in logged]
    assert events == ["database schema created", "model created", "store ready", "store ready"]
    assert logged[-1]["revision"] == Store.head()


def test_only_the_first_start_creates_the_model_and_a_typo_is_told_the_models(
    tmp_path: Path,
) -> None:
    """`filterd run` creates model.name in a store that holds no model yet; a store that holds
    others refuses a name it lacks, listing them; `score` and `serve` create none."""
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    with pytest.raises(UnknownModel, match=r"which holds none yet: `filterd model create default`"):
        prepare_store(config_for(url), structlog.get_logger(), create=True)
    assert Store.open(url).model_names() == []
    prepare_store(config_for(url), structlog.get_logger(), first_start=True).store.close()
    typo = load_config(None, environ={}, overrides={"database.url": url, "model.name": "defualt"})
    with pytest.raises(UnknownModel) as refused:
        prepare_store(typo, structlog.get_logger(), first_start=True)
    assert str(refused.value) == (
        "no model named 'defualt' in the store (its models: 'default'); "
        "`filterd model create NAME` adds one"
    )
    assert Store.open(url).model_names() == ["default"]


def test_a_metrics_port_in_use_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "filterd",
                "run",
                "--db",
                url,
                "--create-store",
                "--metrics-port",
                str(port),
                "--bootstrap-servers",
                "127.0.0.1:1",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode != 0
    assert run.stderr.splitlines() == [
        f"Error: metrics port {port} is in use (observe.metrics_port): Address already in use"
    ]
    assert not (tmp_path / "filterd.db").exists()  # refused before anything else was done
