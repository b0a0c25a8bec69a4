from pathlib import Path

import pytest

from filterd.service.config import Config, ConfigError, load

SHIPPED = Path(__file__).resolve().parents[2] / "config" / "filterd.toml"


def test_the_shipped_file_documents_exactly_the_defaults() -> None:
    assert load(SHIPPED, environ={}) == Config()


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text(
        '[decision]\ntarget_recall = 0.95\n[model]\nvariant = "twcnb"\nparams = { alpha = 0.5 }\n'
    )
    env = {
        "FILTERD_DECISION_TARGET_RECALL": "0.999",
        "FILTERD_DATABASE_URL": "postgresql://db/x",
        "FILTERD_KAFKA_SASL_MECHANISM": "PLAIN",
        "FILTERD_CONFIG": str(path),
    }
    config = load(path, env, {"model.select": "local:6:alo", "model.name": None})
    assert config.decision.target_recall == 0.999  # the environment over the file
    assert (config.model.variant, config.model.params, config.model.select) == (
        "twcnb",
        {"alpha": 0.5},
        "local:6:alo",
    )
    assert config.database.url == "postgresql://db/x" and config.model.name == "default"
    assert config.kafka == {"bootstrap_servers": "127.0.0.1:9092", "sasl_mechanism": "PLAIN"}


def test_another_variant_named_alone_takes_its_own_default_parameters(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text('[model]\nvariant = "mnb"\n')
    assert load(path, environ={}).model.params == {}
    assert load(None, {"FILTERD_MODEL_VARIANT": "twcnb"}).model.params == {}
    assert load(None, {}).model.params == Config().model.params != {}


def test_the_fusion_variant_named_alone_drops_the_default_parameters_and_selection() -> None:
    config = load(None, {"FILTERD_MODEL_VARIANT": "fusion"})
    assert (config.model.params, config.model.select, str(config.model.spec)) == (
        {},
        "none",
        "fusion",
    )
    with pytest.raises(ConfigError, match="model.select: fusion takes no parameters, selection"):
        load(None, {"FILTERD_MODEL_VARIANT": "fusion", "FILTERD_MODEL_SELECT": "local:6"})


@pytest.mark.parametrize(
    "text, env, named",
    [
        ("[model]\nvariant = 'svm'\n", {}, "model.variant"),
        ("[model]\nmin_docs = 'many'\n", {}, "model.min_docs"),
        ("[modle]\nvariant = 'mnb'\n", {}, "unknown section 'modle'"),
        ("[model]\nvarient = 'mnb'\n", {}, "unknown key 'model.varient'"),
        ("", {"FILTERD_DECISION_TARGET_RECALL": "1.5"}, "decision.target_recall"),
        ("", {"FILTERD_OBSERVE_METRICS_PORT": "http"}, "FILTERD_OBSERVE_METRICS_PORT"),
        ("[model]\nselect = 'local:x'\n", {}, "model.select"),
        (
            "[model]\nparams = { beta = 1 }\n",
            {},
            "model.params.beta: robinson_fisher has no parameter 'beta'",
        ),
        (
            "[model]\nvariant = 'mnb'\nparams = { alpha = 'abc' }\n",
            {},
            "model.params.alpha: invalid value for mnb parameter 'alpha': 'abc' "
            "(must be a number > 0)",
        ),
        (
            "[model]\nvariant = 'mnb'\nparams = { alpha = -1 }\n",
            {},
            "model.params.alpha: .* -1 (must be a number > 0)",
        ),
        (
            "[model]\nvariant = 'pcn'\nparams = { A = 'foo' }\n",
            {},
            "model.params.A: .* 'foo' (must be a number > 0 or min)",
        ),
        (
            "[model]\nvariant = 'unb'\nparams = { lam = [1, 2, 3] }\n",
            {},
            "model.params.lam: .* 3 values for 2 classes (spam, not spam)",
        ),
        ("", {"FILTERD_MODEL_PARAMS": "{ s = 0 }"}, "model.params.s: .* 0 (must be a number > 0)"),
        ("[decision\n", {}, "not valid TOML"),
        (
            "[kafka]\ncompression_type = 'brotli'\n",
            {},
            "kafka.compression_type: 'brotli' is not one of",
        ),
        ("", {"FILTERD_HTTP_SESSION_SECRET": "short"}, "http.session_secret: must be at least 32"),
        ("[http]\nsession_hours = 0\n", {}, "http.session_hours"),
        ("[http]\nmax_connections = 0\n", {}, "http.max_connections: must be at least 1"),
        ("", {"FILTERD_HTTP_REQUEST_SECONDS": "0"}, "http.request_seconds: must be positive"),
        ("[observe]\nmetrics_max_connections = 0\n", {}, "observe.metrics_max_connections"),
        ("[observe]\nmetrics_request_seconds = -1\n", {}, "observe.metrics_request_seconds"),
        ("[observe]\nmetrics_allowed_hosts = [1]\n", {}, "observe.metrics_allowed_hosts"),
        ('[observe]\nmetrics_allowed_hosts = ["a b"]\n', {}, "observe.metrics_allowed_hosts"),
        ("[http]\npublish_seconds = 0\n", {}, "http.publish_seconds"),
    ],
)
def test_an_invalid_configuration_names_the_key(
    tmp_path: Path, text: str, env: dict[str, str], named: str
) -> None:
    path = tmp_path / "f.toml"
    path.write_text(text)
    pattern = named.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    with pytest.raises(ConfigError, match=pattern):
        load(path, env)


def test_secrets_are_masked_in_what_gets_logged() -> None:
    config = load(
        None,
        {
            "FILTERD_KAFKA_SASL_PLAIN_PASSWORD": "hunter2",
            "FILTERD_DATABASE_URL": "postgresql://u:pw@h/db",
        },
    )
    shown = config.public()
    assert shown["kafka"]["sasl_plain_password"] == "***" and "hunter2" not in str(shown)
    assert shown["database"]["url"] == "postgresql://***@h/db"
    assert config.kafka["sasl_plain_password"] == "hunter2"  # the client still gets it


def test_secrets_are_keys_that_name_one_not_keys_about_one() -> None:
    config = load(
        None,
        {
            "FILTERD_KAFKA_SSL_PASSWORD": "hunter2",
            "FILTERD_KAFKA_SASL_OAUTH_TOKEN": "t0k",
            "FILTERD_KAFKA_SSL_KEYFILE": "/etc/filterd/client.key",
            "FILTERD_LIMITS_MAX_TOKEN_LENGTH": "50",
        },
    )
    shown = config.public()
    assert shown["kafka"]["ssl_password"] == shown["kafka"]["sasl_oauth_token"] == "***"
    assert shown["kafka"]["ssl_keyfile"] == "/etc/filterd/client.key"  # a path, not the key
    assert shown["limits"]["max_token_length"] == 50  # a limit on tokens, not a token
    assert "hunter2" not in str(shown) and "t0k" not in str(shown)


def test_a_secret_from_the_environment_stays_text_whatever_it_looks_like() -> None:
    config = load(
        None,
        {"FILTERD_KAFKA_SASL_PLAIN_PASSWORD": "123456", "FILTERD_KAFKA_REQUEST_TIMEOUT_MS": "5000"},
    )
    assert config.kafka["sasl_plain_password"] == "123456"
    assert config.kafka["request_timeout_ms"] == 5000  # other keys as TOML reads them


def test_valid_model_parameters_load_as_the_model_takes_them(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text("[model]\nvariant = 'unb'\nparams = { lam = [1e-5, 1e-3] }\n")
    assert load(path, {}).model.spec.params == {"lam": [1e-5, 1e-3]}  # λ of the target, the rest
    path.write_text("[model]\nvariant = 'mnb'\nparams = { alpha = 1 }\n")
    assert str(load(path, {}).model.spec).startswith("mnb(alpha=1)")


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "nope.toml", {})


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://u:hunter2@h/db", "postgresql://***@h/db"),
        ("postgresql://h/db?password=hunter2&user=u", "postgresql://h/db?password=***&user=u"),
        (
            "postgresql+psycopg://h/db?sslpassword=hunter2",
            "postgresql+psycopg://h/db?sslpassword=***",
        ),
        ("sqlite:///var/filterd.db", "sqlite:///var/filterd.db"),
    ],
)
def test_a_password_in_the_database_url_never_shows(url: str, shown: str) -> None:
    config = load(None, {"FILTERD_DATABASE_URL": url})
    assert config.public()["database"]["url"] == shown and "hunter2" not in str(config.public())
    assert config.database.url == url  # the driver still gets it
