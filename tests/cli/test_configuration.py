"""`filterd config example` and `filterd config show`."""

import dataclasses
import json
import tomllib
from pathlib import Path

from click.testing import CliRunner, Result

from filterd.cli import main
from filterd.service.config import Config, load


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["config", *args], env=env)


def test_the_example_configuration_is_every_default() -> None:
    result = run("example")
    assert result.exit_code == 0, result.output
    example = tomllib.loads(result.stdout)
    assert set(example) == set(Config.__dataclass_fields__)
    defaults = dataclasses.asdict(load(None, environ={}))
    for section, values in example.items():
        for key, value in values.items():
            assert value == defaults[section][key], f"{section}.{key}"


def test_the_shipped_files_are_listed_and_printed() -> None:
    listed = run("example", "--list").stdout.split()
    assert "filterd.toml" in listed and "__init__.py" not in listed
    for name in listed:
        assert run("example", name).exit_code == 0
    missing = run("example", "nope.toml")
    assert missing.exit_code == 1 and missing.output.strip().splitlines() == [
        "Error: no example 'nope.toml'; `filterd config example --list` lists them"
    ]


def test_show_masks_secrets_and_names_a_bad_key(tmp_path: Path) -> None:
    path = tmp_path / "filterd.toml"
    path.write_text('[kafka]\nsasl_plain_password = "hunter2"\n[limits]\nmax_tokens = 7\n')
    shown = json.loads(run("show", "--config", str(path)).stdout)
    assert shown["kafka"]["sasl_plain_password"] == "***" and shown["limits"]["max_tokens"] == 7
    bad = run("show", env={"FILTERD_LIMITS_MAX_TOKENS": "many"})
    assert bad.exit_code == 1 and "FILTERD_LIMITS_MAX_TOKENS" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
