"""`filterd config example` and `filterd config show`."""

import json
import tomllib
from pathlib import Path

from click.testing import CliRunner, Result

from filterd.cli import main
from filterd.cli.corpus_files import write_corpus
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions
from filterd.service.config import DEFAULTS, load


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["config", *args], env=env)


def test_the_example_configuration_is_every_declared_key_with_its_default() -> None:
    result = run("example")
    assert result.exit_code == 0, result.output
    example = tomllib.loads(result.stdout)
    declared = DEFAULTS.sections()
    assert set(example) == set(declared)
    for section, keys in declared.items():
        for key, default in keys.items():
            assert key in example[section], f"{section}.{key} is missing from the example"
            assert example[section][key] == default, f"{section}.{key}"
        assert set(example[section]) == set(keys), f"[{section}] has keys nothing declares"


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


def test_the_transactions_example_configures_card_payments(tmp_path: Path) -> None:
    printed = run("example", "transactions.toml")
    assert printed.exit_code == 0, printed.output
    path = tmp_path / "transactions.toml"
    path.write_text(printed.stdout)
    config = load(path, environ={})
    assert config.decision.target_class == "fraud" and config.model.labels == ["legit", "fraud"]
    spec = config.entities.spec(config.decision.target_class)
    assert spec.keys == ("customer", "terminal") and spec.target == "fraud"
    assert spec.counterparties == (("customer", "terminal"),)
    # what it is for: `filterd evaluate … --config transactions.toml`, labels a week late
    corpus = tmp_path / "payments.jsonl"
    write_corpus(generate_transactions(TransactionConfig(customers=40, days=10)), corpus)
    evaluated = CliRunner().invoke(
        main,
        [
            "evaluate",
            str(corpus),
            "--config",
            str(path),
            "--protocol",
            "online",
            "--label-delay",
            "7d",
            "--json",
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(evaluated.stdout)["target"] == "fraud"
