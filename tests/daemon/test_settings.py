"""`load_settings`: the one loader every command uses, the `[kafka]` checks included."""

import ast
from pathlib import Path

import pytest

from filterd.daemon.settings import load_settings
from filterd.demo.options import DemoOptions, demo_config
from filterd.service.config import ConfigError, load

PACKAGE = Path(__file__).resolve().parents[2] / "filterd"


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("FILTERD_KAFKA_COMPRESSION_TYPE", "brotli", "kafka.compression_type: 'brotli' is not one"),
        ("FILTERD_KAFKA_BOOTSTRAP_SERVERS", '""', "kafka.bootstrap_servers: must name a"),
        ("FILTERD_KAFKA_CLIENT", "librdkafka", "kafka.client: 'librdkafka' is not one of"),
        ("FILTERD_KAFKA_BOOTSTRAP_SERVER", "h:9092", "kafka.bootstrap_server: not a setting"),
    ],
)
def test_the_kafka_settings_are_checked_by_the_loader(variable, value, said):
    load(None, {variable: value})  # the service layer knows no Kafka: the key passes through
    with pytest.raises(ConfigError) as raised:
        load_settings(None, {variable: value})
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)


def test_the_demo_runs_its_own_kafka_section_through_the_same_loader(tmp_path):
    path = tmp_path / "filterd.toml"
    path.write_text("[kafka]\nbootstrap_server = 'typo:9092'\n[review]\nband = 0.5\n")
    options = DemoOptions(config_path=path, workbench_port=18108, workbench_password="pw")
    config = demo_config(options, tmp_path, "127.0.0.1:1234", ["ham", "spam"])
    assert config.kafka["bootstrap_servers"] == "127.0.0.1:1234"
    assert "bootstrap_server" not in config.kafka and config.review.band == 0.5
    assert (config.http.enabled, config.http.port, list(config.http.users)) == (
        True,
        18108,
        ["demo"],
    )
    path.write_text("[review]\nband = -1\n")
    with pytest.raises(ConfigError, match="^review.band: must not be negative"):
        demo_config(options, tmp_path, "127.0.0.1:1234", ["ham", "spam"])


def test_no_command_loads_the_configuration_but_through_load_settings():
    """The service loader is called by `load_settings` alone: a command that called it directly
    would skip the `[kafka]` checks."""
    callers = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "filterd.service.config"
                and any(alias.name == "load" for alias in node.names)
            ):
                callers.append(path.relative_to(PACKAGE).as_posix())
    assert callers == ["daemon/settings.py"]
