"""filterd's configuration: defaults, then a TOML file, then FILTERD_… environment variables,
then command-line flags (each overriding the one before).

Every key lives in a section: `database.url` is `[database] url = …` in the file and
FILTERD_DATABASE_URL in the environment. An unknown key, a value of the wrong type or out of
range stops start-up with one message naming the key. Kafka client settings not listed here
(SASL, TLS, timeouts) pass through from `[kafka]` to kafka-python unchanged; values whose
key names a secret (its last word is password, secret, token, key…) never appear in
`Config.public()`.
"""

from __future__ import annotations

import os
import re
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from filterd.bayes.model import DEFAULT_SPEC, FUSION, ModelSpec
from filterd.service.hosts import AllowedHosts

ENV_PREFIX = "FILTERD_"
# A key names a secret when its last word is one of these: sasl_plain_password, ssl_password,
# api_key, access_token. Keys about secrets are not secrets: max_token_length (a limit),
# ssl_keyfile and ssl_certfile (paths: the file holds the secret, its path does not),
# sasl_oauth_token_provider (an object given in code, never a setting's text).
SECRET_WORDS = ("password", "passphrase", "secret", "token", "key", "credentials")
# Kafka's record batch codecs (kafka-python's names), in the order of their protocol codes
COMPRESSION_TYPES = (None, "gzip", "snappy", "lz4", "zstd")
# `[kafka] client`: the Kafka client library filterd runs with (confluent: librdkafka, optional)
KAFKA_CLIENTS = ("kafka-python", "confluent")


class ConfigError(ValueError):
    """An invalid configuration; the message names the key."""


@dataclass(frozen=True)
class Topics:
    messages: str = "filterd.messages"
    decisions: str = "filterd.decisions"
    feedback: str = "filterd.feedback"
    dead_letter: str = "filterd.dead-letter"


@dataclass(frozen=True)
class Groups:
    scorer: str = "filterd-scorer"
    learner: str = "filterd-learner"


@dataclass(frozen=True)
class Database:
    url: str = "sqlite:///var/filterd.db"


@dataclass(frozen=True)
class ModelSettings:
    name: str = "default"
    variant: str = DEFAULT_SPEC.variant
    params: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_SPEC.params))
    select: str = str(DEFAULT_SPEC.selection)
    min_docs: int = 20
    holdout_fraction: float = 0.1
    # The feedback labels accepted; any other is dead-lettered, so that a new class is the
    # operator's decision, never a feedback record's (one made-up label would hold every
    # decision at "unknown" until it had min_docs documents). Empty: any label.
    labels: list[str] = field(default_factory=lambda: ["ham", "spam"])

    @property
    def spec(self) -> ModelSpec:
        """The model spec these settings name (ValueError if they name none)."""
        return ModelSpec.parse(self.variant, self.params, self.select)


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 1_000_000
    max_tokens: int = 10_000
    max_token_length: int = 40


@dataclass(frozen=True)
class DeadLetters:
    payload_bytes: int = 65_536
    max_ratio: float = 0.5
    window: int = 1000
    max_consecutive: int = 1000


@dataclass(frozen=True)
class Recent:
    max_messages: int = 100_000
    max_bytes: int = 64_000_000
    ttl_seconds: float = 21_600.0


@dataclass(frozen=True)
class DecisionSettings:
    target_class: str = "spam"
    target_recall: float = 0.99


@dataclass(frozen=True)
class Batches:
    poll_records: int = 500
    # a transaction's fixed costs (commit, lookups, the prequential write) weigh less in larger
    # batches
    feedback: int = 5000


@dataclass(frozen=True)
class Intervals:
    sync_seconds: float = 5.0
    threshold_reload_seconds: float = 1.0
    calibrate_seconds: float = 60.0  # 0: off


@dataclass(frozen=True)
class Calibration:
    source: str = "adaptive"  # holdout | prequential | adaptive (filterd.jobs.calibrate)
    window: str = "14d"
    conservative: bool = False
    min_positives: int = 0  # 0: ⌈1/(1−R)⌉ (filterd.evaluation.guardrails)
    max_auc_drop: float = 0.02
    step: float = 0.1  # adaptive: each spam missed lowers the miss level by about step × (1 − R)


@dataclass(frozen=True)
class Drift:
    window: int = 5000
    recall_margin: float = 0.02
    min_positives: int = 200


@dataclass(frozen=True)
class FeedbackSettings:
    # days a label event stays on the audit trail; `filterd db prune` deletes older ones
    audit_retention_days: int = 365  # 0: keep every event
    # Feedback naming a message by id that no learner can resolve yet is parked in the store and
    # tried again every `retry_seconds`; once `resolve_ttl` has passed it is dead-lettered as
    # `unresolved_message`. Also how long the decided messages' coordinates are kept.
    resolve_ttl: str = "3d"
    retry_seconds: float = 30.0

    @property
    def resolve_within(self) -> timedelta:
        """`resolve_ttl` as a duration (checked by `load`)."""
        return parse_duration(self.resolve_ttl)


@dataclass(frozen=True)
class Review:
    # Decisions queued for an analyst: those whose score is within `band` of τ (|s − τ| ≤ band;
    # 0: none), and a uniform `random_share` of all decisions (0: none), which keeps the labelled
    # sample unbiased for calibration and for measuring the filter.
    band: float = 0.1  # in log-odds, the scale of every default score: odds within ±10 % of τ's
    random_share: float = 0.002
    max_items: int = 100_000  # per model; labelled items leave first, then the oldest
    retention_days: int = 14  # `filterd db prune` deletes older items (0: keep them)
    excerpt_chars: int = 500  # of the text kept for the analyst


@dataclass(frozen=True)
class Observe:
    metrics_port: int = 9108
    # the interface /metrics, /healthz and /readyz listen on: loopback unless configured
    # ("0.0.0.0" for probes and scrapers from other hosts, e.g. in Kubernetes)
    metrics_host: str = "127.0.0.1"
    # the observe server's connections: at most this many open (never more than a quarter of the
    # open-file limit), each request whole within this many seconds of its accept
    metrics_max_connections: int = 64
    metrics_request_seconds: float = 5.0
    # the Host headers it answers, against DNS rebinding (as `http.allowed_hosts`): empty, the
    # bound address, localhost, 127.0.0.1 and [::1] on metrics_port, and any IP address when
    # bound to every interface; a scraper that names the host by a DNS name needs it listed
    metrics_allowed_hosts: list[str] = field(default_factory=list)
    log_format: str = "json"


@dataclass(frozen=True)
class Http:
    """The HTTP API (`filterd.web`): off in `filterd run` unless enabled; `filterd serve` runs it
    whatever `enabled` says."""

    enabled: bool = False
    # loopback unless configured: the API reads messages and sends labels
    host: str = "127.0.0.1"
    port: int = 8108
    # Connections: at most `max_connections` open (never more than a quarter of the open-file
    # limit; at the limit a new one closes the one that waited longest for its request), each
    # request, headers and body, whole within `request_seconds` of its accept or of the answer
    # before it (`filterd.web.server`).
    max_connections: int = 1000
    request_seconds: float = 10.0
    # Credentials, analyst name → hash (`filterd.service.passwords`): API tokens, sent as
    # `Authorization: Bearer NAME.SECRET` (`filterd http new-token NAME` makes one), and
    # passwords for HTTP basic auth (`filterd http hash-password`). The name is the analyst
    # identity the API puts on labels. Never logged.
    tokens: dict[str, str] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    # The workbench's login sessions: signed cookies that last `session_hours`. They are signed
    # with `session_secret` (FILTERD_HTTP_SESSION_SECRET; at least 32 characters), or, when it is
    # empty, with a key made at start-up: sessions then end when the process does, and the
    # processes of one deployment do not share them.
    session_secret: str = ""
    session_hours: float = 12.0
    # The Host headers answered (`filterd.service.hosts`), against DNS rebinding: names or
    # addresses, each with an optional :port. Empty: `host`, localhost, 127.0.0.1 and [::1] on
    # `port` (and any address when `host` is 0.0.0.0 or ::). Other Hosts get 400.
    allowed_hosts: list[str] = field(default_factory=list)
    # How long a label posted to the API or the workbench waits for the brokers, its turn
    # behind other labels included: then 503 (not sent) or 504 (sent, not acknowledged).
    publish_seconds: float = 5.0


# the [http] keys whose values are credentials: the names are shown, the hashes never
CREDENTIAL_KEYS = ("tokens", "users")


@dataclass(frozen=True)
class Config:
    kafka: dict[str, Any] = field(default_factory=lambda: {"bootstrap_servers": "127.0.0.1:9092"})
    topics: Topics = Topics()
    groups: Groups = Groups()
    database: Database = Database()
    model: ModelSettings = ModelSettings()
    limits: Limits = Limits()
    dead_letter: DeadLetters = DeadLetters()
    recent: Recent = Recent()
    decision: DecisionSettings = DecisionSettings()
    batches: Batches = Batches()
    intervals: Intervals = Intervals()
    calibration: Calibration = Calibration()
    drift: Drift = Drift()
    feedback: FeedbackSettings = FeedbackSettings()
    review: Review = Review()
    observe: Observe = Observe()
    http: Http = Http()

    def public(self) -> dict[str, dict[str, Any]]:
        """The configuration with secrets masked, fit for a start-up log line."""
        out: dict[str, dict[str, Any]] = {}
        for section in fields(self):
            values = getattr(self, section.name)
            items = (
                values.items()
                if isinstance(values, dict)
                else ((f.name, getattr(values, f.name)) for f in fields(values))
            )
            out[section.name] = {k: "***" if _secret(k) and v else v for k, v in items}
        out["database"]["url"] = masked_url(out["database"]["url"])
        for key in CREDENTIAL_KEYS:
            out["http"][key] = dict.fromkeys(out["http"][key], "***")
        return out


def masked_url(url: str) -> str:
    """A database URL fit to show: its user and password, and the values of query parameters
    whose name says they are secret (`?password=`), as ***.

    >>> masked_url("postgresql://filterd:pw@db.example.net/filterd?sslmode=require&password=pw")
    'postgresql://***@db.example.net/filterd?sslmode=require&password=***'
    """
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    rest, qmark, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    if query:
        query = "&".join(
            f"{name}=***" if any(w in name.lower() for w in SECRET_WORDS) else piece
            for piece in query.split("&")
            for name in [urllib.parse.unquote_plus(piece.split("=", 1)[0])]
        )
    return f"{head}://{netloc}{slash}{path}{qmark}{query}"


def _secret(key: str) -> bool:
    """Whether a key names a secret (see SECRET_WORDS).

    >>> [k for k in ("sasl_plain_password", "ssl_keyfile", "max_token_length") if _secret(k)]
    ['sasl_plain_password']
    """
    return key.lower().rsplit("_", 1)[-1] in SECRET_WORDS


def load(
    path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Defaults ← the TOML file at `path` (if any) ← FILTERD_SECTION_KEY variables ← `overrides`
    ({"section.key": value}, e.g. from CLI flags; None values are ignored)."""
    environ = os.environ if environ is None else environ
    config = Config()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the configuration ({error.strerror})") from None
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path}: not valid TOML ({error})") from None
        for section, values in data.items():
            if not isinstance(values, dict):
                raise ConfigError(f"{path}: {section!r} must be a [section] of keys")
            for key, value in values.items():
                config = _set(config, section, key, value, f"{path}: {section}.{key}")
    for name, raw in environ.items():
        if name.startswith(ENV_PREFIX) and name != ENV_PREFIX + "CONFIG":
            section, key = _split_variable(name)
            config = _set(config, section, key, raw, f"environment variable {name}", from_text=True)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            section, _, key = dotted.partition(".")
            config = _set(config, section, key, value, f"option {dotted}")
    if config.model.variant != DEFAULT_SPEC.variant and config.model.params == DEFAULT_SPEC.params:
        # the default's parameters belong to the default variant: another variant named without
        # parameters takes its own defaults rather than failing on the default's
        config = replace(config, model=replace(config.model, params={}))
    if config.model.variant == FUSION and config.model.select == str(DEFAULT_SPEC.selection):
        # likewise the default's selection: the fusion's components bring their own
        config = replace(config, model=replace(config.model, select="none"))
    _check(config)
    return config


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> timedelta:
    """A duration such as 14d, 12h, 30m, 90s, 2w, or a sum such as 1d12h; else ValueError."""
    compact = text.strip().lower().replace(" ", "")
    parts = _PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(
            f"{text!r} is not a duration: use a number and s, m, h, d or w, e.g. 14d, 12h, 30m"
        )
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r}: the window must be longer than zero")
    return timedelta(seconds=seconds)


def _split_variable(name: str) -> tuple[str, str]:
    rest = name[len(ENV_PREFIX) :].lower()
    for section in (f.name for f in fields(Config)):
        if rest.startswith(section + "_"):
            return section, rest[len(section) + 1 :]
    return rest, ""


def _set(
    config: Config, section: str, key: str, value: Any, where: str, from_text: bool = False
) -> Config:
    sections = {f.name: f for f in fields(Config)}
    if section not in sections:
        raise ConfigError(f"{where}: unknown section {section!r} (sections: {', '.join(sections)})")
    if section == "kafka":  # the one section of free keys: passed through to the client
        # a secret is text whatever it looks like: a password "123456" is not a number
        value = _from_text(value) if from_text and not _secret(key) else value
        return replace(config, kafka={**config.kafka, key: value})
    current = getattr(config, section)
    known = {f.name: f for f in fields(current)}
    if key not in known:
        raise ConfigError(f"{where}: unknown key '{section}.{key}' (keys: {', '.join(known)})")
    default = getattr(type(current)(), key)
    return replace(
        config, **{section: replace(current, **{key: _typed(value, default, where, from_text)})}
    )


def _typed(value: Any, default: Any, where: str, from_text: bool) -> Any:
    kind = type(default)
    if from_text and kind is not str:
        value = _from_text(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is dict and isinstance(value, str):
        raise ConfigError(f"{where}: expected a table of parameters, got a string")
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}")
    return value


def _from_text(text: str) -> Any:
    """An environment value as TOML would read it (numbers, booleans, tables), else the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _check(config: Config) -> None:
    from filterd.bayes.estimators import (  # late: keeps `load` cheap to import
        ESTIMATORS,
        ParamError,
    )

    def require(ok: bool, key: str, message: str) -> None:
        if not ok:
            raise ConfigError(f"{key}: {message}")

    m = config.model
    require(
        m.variant in ESTIMATORS or m.variant == FUSION,
        "model.variant",
        f"unknown variant {m.variant!r} ({', '.join([*ESTIMATORS, FUSION])})",
    )
    try:
        # The daemon decides on the target-vs-rest view: per-class parameters (UNB's λ) give
        # one value, or two (the target's, the rest's).
        target = config.decision.target_class
        m.spec.check_classes((target, f"not {target}"))
    except ParamError as error:
        raise ConfigError(f"model.params.{error.name}: {error}") from None
    except ValueError as error:  # the parameters are fine: the selection is not
        raise ConfigError(f"model.select: {error}") from None
    require(m.min_docs >= 1, "model.min_docs", "must be at least 1")
    require(0.0 <= m.holdout_fraction < 1.0, "model.holdout_fraction", "must be in [0, 1)")
    require(
        0.0 < config.decision.target_recall <= 1.0, "decision.target_recall", "must be in (0, 1]"
    )
    for key in ("max_bytes", "max_tokens", "max_token_length"):
        require(getattr(config.limits, key) >= 1, f"limits.{key}", "must be at least 1")
    d = config.dead_letter
    require(d.payload_bytes >= 0, "dead_letter.payload_bytes", "must not be negative")
    require(0.0 < d.max_ratio <= 1.0, "dead_letter.max_ratio", "must be in (0, 1] (1: off)")
    require(d.window >= 1, "dead_letter.window", "must be at least 1")
    require(d.max_consecutive >= 0, "dead_letter.max_consecutive", "must not be negative (0: off)")
    r = config.recent
    for key in ("max_messages", "max_bytes"):
        require(getattr(r, key) >= 0, f"recent.{key}", "must not be negative (0: keep none)")
    require(r.ttl_seconds >= 0, "recent.ttl_seconds", "must not be negative")
    require(
        all(isinstance(x, str) and x for x in m.labels),
        "model.labels",
        "must be a list of label strings",
    )
    for key in ("poll_records", "feedback"):
        require(getattr(config.batches, key) >= 1, f"batches.{key}", "must be at least 1")
    for key in ("sync_seconds", "threshold_reload_seconds", "calibrate_seconds"):
        require(getattr(config.intervals, key) >= 0, f"intervals.{key}", "must not be negative")
    try:
        parse_duration(config.calibration.window)
    except ValueError as error:
        raise ConfigError(f"calibration.window: {error}") from None
    require(
        config.calibration.source in ("holdout", "prequential", "adaptive"),
        "calibration.source",
        "must be holdout, prequential or adaptive",
    )
    require(0 <= config.calibration.step <= 1, "calibration.step", "must be in [0, 1]")
    require(
        config.calibration.min_positives >= 0,
        "calibration.min_positives",
        "must not be negative (0: automatic)",
    )
    require(
        config.calibration.max_auc_drop >= 0, "calibration.max_auc_drop", "must not be negative"
    )
    require(config.drift.window >= 10, "drift.window", "must be at least 10")
    require(0 <= config.drift.recall_margin < 1, "drift.recall_margin", "must be in [0, 1)")
    require(config.drift.min_positives >= 1, "drift.min_positives", "must be at least 1")
    require(
        config.feedback.audit_retention_days >= 0,
        "feedback.audit_retention_days",
        "must not be negative (0: keep every event)",
    )
    try:
        parse_duration(config.feedback.resolve_ttl)
    except ValueError as error:
        raise ConfigError(f"feedback.resolve_ttl: {error}") from None
    require(config.feedback.retry_seconds > 0, "feedback.retry_seconds", "must be positive")
    q = config.review
    require(q.band >= 0, "review.band", "must not be negative (0: no band)")
    require(0 <= q.random_share <= 1, "review.random_share", "must be in [0, 1]")
    require(q.max_items >= 0, "review.max_items", "must not be negative (0: no queue)")
    require(q.retention_days >= 0, "review.retention_days", "must not be negative (0: keep them)")
    require(q.excerpt_chars >= 0, "review.excerpt_chars", "must not be negative")
    require(
        0 <= config.observe.metrics_port <= 65535,
        "observe.metrics_port",
        "must be a port number (0 = off)",
    )
    require(
        config.observe.metrics_max_connections >= 1,
        "observe.metrics_max_connections",
        "must be at least 1",
    )
    require(
        config.observe.metrics_request_seconds > 0,
        "observe.metrics_request_seconds",
        "must be positive",
    )
    require(
        config.observe.log_format in ("json", "console"),
        "observe.log_format",
        "must be json or console",
    )
    o = config.observe
    _check_hosts(
        "observe.metrics_allowed_hosts", o.metrics_allowed_hosts, o.metrics_host, o.metrics_port
    )
    _check_http(config.http)
    require(
        bool(config.kafka.get("bootstrap_servers")),
        "kafka.bootstrap_servers",
        "must name at least one broker",
    )
    client = config.kafka.get("client", KAFKA_CLIENTS[0])
    require(
        client in KAFKA_CLIENTS,
        "kafka.client",
        f"{client!r} is not one of {', '.join(KAFKA_CLIENTS)}",
    )
    compression = config.kafka.get("compression_type")
    require(
        compression in COMPRESSION_TYPES,
        "kafka.compression_type",
        f"{compression!r} is not one of {', '.join(map(str, COMPRESSION_TYPES))}",
    )


def _check_hosts(key: str, hosts: object, host: str, port: int) -> None:
    """An allow-list of Host headers (`filterd.service.hosts`): a list of names or addresses."""
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise ConfigError(f"{key}: must be a list of host names or addresses")
    try:
        AllowedHosts.of(hosts, host, port)
    except ValueError as error:
        raise ConfigError(f"{key}: {error}") from None


def _check_http(http: Http) -> None:
    """[http]: a port, and credentials whose names can be told apart from their secrets and
    whose hashes parse (the message names the key, never the hash)."""
    from filterd.service.passwords import parse_hash  # late: keeps `load` cheap to import

    if not 0 <= http.port <= 65535:
        raise ConfigError("http.port: must be a port number (0: any free port)")
    if not http.host:
        raise ConfigError("http.host: must name an interface (127.0.0.1: loopback only)")
    if http.session_secret and len(http.session_secret) < 32:
        raise ConfigError(
            "http.session_secret: must be at least 32 characters (or empty: a key made at start-up)"
        )
    if http.max_connections < 1:
        raise ConfigError("http.max_connections: must be at least 1")
    if http.request_seconds <= 0:
        raise ConfigError("http.request_seconds: must be positive")
    if not 0 < http.session_hours <= 24 * 30:
        raise ConfigError("http.session_hours: must be in (0, 720]")
    _check_hosts("http.allowed_hosts", http.allowed_hosts, http.host, http.port)
    if not 0 < http.publish_seconds <= 60:
        raise ConfigError("http.publish_seconds: must be in (0, 60]")
    for key in CREDENTIAL_KEYS:
        for name, hashed in getattr(http, key).items():
            where = f"http.{key}.{name}"
            # basic auth splits user:password at the first colon; NUL cannot be stored
            if not name or ":" in name or "\x00" in name or len(name) > 200:
                raise ConfigError(f"{where}: an analyst name is 1–200 characters without ':'")
            if not isinstance(hashed, str):
                raise ConfigError(f"{where}: expected a hash string, got {type(hashed).__name__}")
            try:
                parse_hash(hashed)
            except ValueError as error:
                raise ConfigError(f"{where}: {error}") from None
