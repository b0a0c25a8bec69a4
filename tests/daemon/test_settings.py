"""`load_settings`: the one loader every command uses, the `[kafka]` checks included."""

import ast
import re
import tomllib
from pathlib import Path

import msgspec
import pytest

from filterd.daemon.settings import load_settings
from filterd.demo.options import DemoOptions, demo_config
from filterd.kafka.settings import COMPRESSION_TYPES, KAFKA_CLIENTS, KAFKA_DEFAULTS, KafkaKeys
from filterd.service.config import DEFAULTS, ConfigError, declared, load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "filterd"


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("FILTERD_KAFKA_COMPRESSION_TYPE", "brotli", "kafka.compression_type: 'brotli' is not one"),
        ("FILTERD_KAFKA_BOOTSTRAP_SERVERS", '""', "kafka.bootstrap_servers: must name a"),
        ("FILTERD_KAFKA_CLIENT", "librdkafka", "kafka.client: 'librdkafka' is not one of"),
        ("FILTERD_KAFKA_BOOTSTRAP_SERVER", "h:9092", "kafka.bootstrap_server: not a setting"),
        ("FILTERD_KAFKA_BOOTSTRAP_SERVERS", "[9092]", "kafka.bootstrap_servers: expected"),
        ("FILTERD_KAFKA_CLIENT", "1", "kafka.client: 1 is not one of"),
    ],
)
def test_the_kafka_settings_are_checked_by_the_loader(variable: str, value: str, said: str) -> None:
    load(None, {variable: value})  # the service layer knows no Kafka: the key passes through
    with pytest.raises(ConfigError) as raised:
        load_settings(None, {variable: value})
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)


def test_the_demo_runs_its_own_kafka_section_through_the_same_loader(tmp_path: Path) -> None:
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


def test_no_command_loads_the_configuration_but_through_load_settings() -> None:
    """The service loader is called by `load_settings` alone: a command that called it directly
    would skip the `[kafka]` checks."""
    callers: list[str] = []
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


def test_the_kafka_keys_filterd_reads_take_their_declared_range_and_default() -> None:
    """`[kafka] client`, `compression_type` and `bootstrap_servers` are declared once
    (`KafkaKeys`): the loader takes every value of their ranges and the defaults, and the
    defaults are those a configuration without the keys runs with."""
    assert KAFKA_DEFAULTS.bootstrap_servers == DEFAULTS.kafka["bootstrap_servers"]
    assert set(DEFAULTS.kafka) <= set(KafkaKeys.__struct_fields__)
    defaults = msgspec.structs.asdict(KAFKA_DEFAULTS)
    for key, values in (("client", KAFKA_CLIENTS), ("compression_type", COMPRESSION_TYPES)):
        assert defaults[key] in values
        for value in values:
            kafka = {**DEFAULTS.kafka, key: value}
            assert load_settings(None, {}, kafka=kafka).kafka[key] == value


def test_every_declared_key_is_in_the_reference_and_the_example() -> None:
    """operations.md's configuration reference has a row for every key a struct declares, the
    `[kafka]` keys filterd reads included, and the shipped example names each `[kafka]` one."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    table = text[text.index("| key | default | meaning |") :].split("\n\n", 1)[0]
    rows = {name for line in table.splitlines() for name in re.findall(r"`(\w+\.\w+)`", line[:120])}
    keys = {f"{section}.{key}" for section, names in declared().items() for key in names}
    keys |= {f"kafka.{key}" for key in KafkaKeys.__struct_fields__}
    assert sorted(keys - rows) == []
    example = (ROOT / "config" / "filterd.toml").read_text(encoding="utf-8")
    kafka = example[example.index("[kafka]") : example.index("[topics]")]
    named = set(re.findall(r"^(?:# )?(\w+) = ", kafka, re.M))
    assert named == set(KafkaKeys.__struct_fields__)
    assert tomllib.loads(kafka)["kafka"] == DEFAULTS.kafka
