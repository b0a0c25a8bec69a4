from pathlib import Path

import pytest
from msgspec import inspect

from filterd.bayes.model import ROBINSON_FISHER_SPEC, ModelSpec
from filterd.service.config import Config, ConfigError, declared, load
from filterd.service.decide import tokenizer_of

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


def test_the_default_model_is_the_fusion() -> None:
    config = load(None, {})
    assert (config.model.params, config.model.select, str(config.model.spec)) == (
        {},
        "none",
        "fusion",
    )
    with pytest.raises(ConfigError, match="model.select: fusion takes no parameters, selection"):
        load(None, {"FILTERD_MODEL_SELECT": "local:6"})
    with pytest.raises(
        ConfigError, match=r"model.params: the fusion takes no parameters \(given: s\)"
    ):
        load(None, {"FILTERD_MODEL_PARAMS": "{ s = 0.1 }"})


def test_robinson_fisher_named_alone_is_filterds(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text('[model]\nvariant = "robinson_fisher"\n')
    assert load(path, environ={}).model.spec == ROBINSON_FISHER_SPEC
    # named with its parameters or a selection, it takes what it is given
    path.write_text('[model]\nvariant = "robinson_fisher"\nparams = { s = 0.1 }\n')
    assert load(path, environ={}).model.spec == ModelSpec.parse("robinson_fisher", {"s": 0.1})
    named = load(None, {"FILTERD_MODEL_VARIANT": "robinson_fisher", "FILTERD_MODEL_SELECT": "ir"})
    assert named.model.spec == ModelSpec.parse("robinson_fisher", {}, "ir")


def test_another_variant_named_alone_takes_its_own_default_parameters(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text('[model]\nvariant = "mnb"\n')
    assert load(path, environ={}).model.params == {}
    assert load(None, {"FILTERD_MODEL_VARIANT": "twcnb"}).model.params == {}


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
            "[model]\nvariant = 'robinson_fisher'\nparams = { beta = 1 }\n",
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
        (
            "",
            {"FILTERD_MODEL_VARIANT": "robinson_fisher", "FILTERD_MODEL_PARAMS": "{ s = 0 }"},
            "model.params.s: .* 0 (must be a number > 0)",
        ),
        ("[decision\n", {}, "not valid TOML"),
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


def _outside(kind: inspect.IntType | inspect.FloatType) -> float | None:
    """A value just outside a declared numeric range (None when it has no bound)."""
    if kind.ge is not None:
        return kind.ge - 1
    if kind.gt is not None:
        return kind.gt
    if kind.le is not None:
        return kind.le + 1
    return kind.lt


BOUNDED = [
    (section, key, _outside(kind))
    for section, keys in declared().items()
    for key, declaration in keys.items()
    for kind in [declaration.type if isinstance(declaration, inspect.Metadata) else declaration]
    if isinstance(kind, inspect.IntType | inspect.FloatType) and _outside(kind) is not None
]


@pytest.mark.parametrize(("section", "key", "value"), BOUNDED)
def test_every_declared_range_stops_start_up_with_one_line_naming_the_key(
    section: str, key: str, value: float
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(None, {}, {f"{section}.{key}": value})
    assert str(raised.value).startswith(f"{section}.{key}: must ")
    assert "\n" not in str(raised.value)


def test_a_range_message_says_what_a_special_value_means() -> None:
    with pytest.raises(
        ConfigError, match=r"^intervals.calibrate_seconds: must not be negative \(0: off\)$"
    ):
        load(None, {"FILTERD_INTERVALS_CALIBRATE_SECONDS": "-1"})
    with pytest.raises(ConfigError, match=r"^observe.log_format: must be console or json$"):
        load(None, {"FILTERD_OBSERVE_LOG_FORMAT": "xml"})


def test_a_value_of_the_wrong_type_names_where_it_came_from(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text("[batches]\npoll_records = 2.5\n")
    with pytest.raises(
        ConfigError, match=rf"^{path}: batches.poll_records: expected int, got 2.5$"
    ):
        load(path, {})
    with pytest.raises(ConfigError, match=r"^option model.params: expected table, got 'x'$"):
        load(None, {}, {"model.params": "x"})
    with pytest.raises(
        ConfigError,
        match=r"^environment variable FILTERD_BATCHES_FEEDBACK \(batches.feedback\): expected int",
    ):
        load(None, {"FILTERD_BATCHES_FEEDBACK": "many"})
    with pytest.raises(ConfigError, match="^model.labels: must be a list of label strings$"):
        load(None, {"FILTERD_MODEL_LABELS": '["spam", ""]'})


def test_number_bins_are_configured_per_attribute_for_every_tokenizer(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text("[attributes]\nbins_per_doubling_of = { amount = 4, age = 0 }\ndecade = true\n")
    config = load(path, environ={})
    message = {"attributes": {"amount": 57.16, "age": 40, "fee": 3}}
    tokens = tokenizer_of(config)(message).tokens
    assert tokens == [
        "amount=57.16",
        "amount~1e1",
        "amount~2^5.75",
        "age=40",
        "age~1e1",
        "fee=3",
        "fee~1e0",
        "fee~2^1.5",
    ]
    assert "amount~2^5.5" in tokenizer_of(Config())(message).tokens  # the default: 2 per doubling
    path.write_text("[attributes]\nbins_per_doubling_of = { amount = 100 }\n")
    with pytest.raises(ConfigError, match="attributes.bins_per_doubling_of"):
        load(path, environ={})
