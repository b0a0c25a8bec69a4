"""filterd's settings, each declared once with its type, range and default: `Config`, whose
fields are the sections (msgspec structs, frozen), whose fields are the keys.

`load` reads them: the defaults, then a TOML file, then FILTERD_… environment variables, then
command-line flags (each overriding the one before). Every key lives in a section:
`database.url` is `[database] url = …` in the file and FILTERD_DATABASE_URL in the environment.
An unknown key, a value of the wrong type or out of range stops start-up with one message naming
the key; checks a type cannot express (a duration, the model's parameters, the HTTP credentials,
the Host allow-lists) are short functions `load` calls after. `[kafka]` is the one section of
free keys: they pass to the Kafka client, and the shell checks them
(`filterd.daemon.settings.load_settings`, the loader every command uses). Values whose key names
a secret (its last word is password, secret, token, key…) never appear in `Config.public()`.
"""

from __future__ import annotations

import os
import re
import tomllib
import urllib.parse
from collections.abc import Mapping
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args

import msgspec
from msgspec import Meta, inspect

from filterd.bayes.model import DEFAULT_SPEC, FUSION, ROBINSON_FISHER_SPEC, ModelSpec
from filterd.entities import EntitySpec
from filterd.evaluation.guardrails import MAX_AUC_DROP
from filterd.service.hosts import AllowedHosts
from filterd.tokenize import TokenizerConfig
from filterd.tokenize.limits import NumberBins

ENV_PREFIX = "FILTERD_"
# A key names a secret when its last word is one of these: sasl_plain_password, ssl_password,
# api_key, access_token. Keys about secrets are not secrets: max_token_length (a limit),
# ssl_keyfile and ssl_certfile (paths: the file holds the secret, its path does not),
# sasl_oauth_token_provider (an object given in code, never a setting's text).
SECRET_WORDS = ("password", "passphrase", "secret", "token", "key", "credentials")


class ConfigError(ValueError):
    """An invalid configuration; the message names the key."""


class Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A [section] of the configuration: its fields are the keys."""


# The kinds of value. A Meta's `description` says what a special value means: it ends the
# message of a value out of range ("must not be negative (0: off)").
AtLeastOne = Annotated[int, Meta(ge=1)]
NotNegative = Annotated[int, Meta(ge=0)]
Seconds = Annotated[float, Meta(ge=0)]
PositiveSeconds = Annotated[float, Meta(gt=0)]
Share = Annotated[float, Meta(ge=0, le=1)]
Port = Annotated[int, Meta(ge=0, le=65535)]
Hosts = list[Annotated[str, Meta(description="host names or addresses")]]
# analyst name → hash (`filterd.service.passwords`); the names and hashes are checked by `load`
Credentials = dict[str, Annotated[str, Meta(description="analyst name = hash strings")]]
# a duration such as "14d" or "12h" (`parse_duration`, checked by `load`)
Duration = str
CalibrationSource = Literal["holdout", "prequential", "adaptive"]
CALIBRATION_SOURCES: tuple[str, ...] = get_args(CalibrationSource)


class Topics(Section, frozen=True):
    messages: str = "filterd.messages"
    decisions: str = "filterd.decisions"
    feedback: str = "filterd.feedback"
    dead_letter: str = "filterd.dead-letter"


class Groups(Section, frozen=True):
    scorer: str = "filterd-scorer"
    learner: str = "filterd-learner"


class Database(Section, frozen=True):
    url: str = "sqlite:///var/filterd.db"


class ModelSettings(Section, frozen=True):
    name: str = "default"
    variant: str = DEFAULT_SPEC.variant  # one of filterd.bayes.estimators (checked by `load`)
    params: dict[str, Any] = msgspec.field(default_factory=lambda: dict(DEFAULT_SPEC.params))
    select: str = str(DEFAULT_SPEC.selection)
    min_docs: AtLeastOne = 20
    holdout_fraction: Annotated[float, Meta(ge=0, lt=1)] = 0.1
    # The feedback labels accepted; any other is dead-lettered, so that a new class is the
    # operator's decision, never a feedback record's (one made-up label would hold every
    # decision at "unknown" until it had min_docs documents). Empty: any label.
    labels: list[Annotated[str, Meta(min_length=1, description="label strings")]] = msgspec.field(
        default_factory=lambda: ["ham", "spam"]
    )

    @property
    def spec(self) -> ModelSpec:
        """The model spec these settings name (ValueError if they name none)."""
        return ModelSpec.parse(self.variant, self.params, self.select)


class Limits(Section, frozen=True):
    """The tokenizer's limits (`filterd.tokenize.TokenizerConfig`, whose defaults they are);
    `max_bytes` also bounds a record read."""

    max_bytes: AtLeastOne = TokenizerConfig.max_bytes
    max_tokens: AtLeastOne = TokenizerConfig.max_tokens
    max_token_length: AtLeastOne = TokenizerConfig.max_token_length


BinsPerDoubling = Annotated[int, Meta(ge=0, le=64)]


class AttributeSettings(Section, frozen=True):
    """How a numeric attribute becomes tokens besides its exact value
    (`filterd.tokenize.limits.NumberBins`, whose defaults they are): its log-scale bin and its
    decade."""

    bins_per_doubling: BinsPerDoubling = NumberBins.per_doubling
    # per attribute key, dotted as in the tokens ("geo.distance"): its own bins (0: none)
    bins_per_doubling_of: dict[str, BinsPerDoubling] = msgspec.field(default_factory=dict)
    decade: bool = NumberBins.decade

    @property
    def numbers(self) -> NumberBins:
        return NumberBins(
            self.bins_per_doubling, tuple(sorted(self.bins_per_doubling_of.items())), self.decade
        )


class EntitySettings(Section, frozen=True):
    """Entity memory (`filterd.entities`): which keys name entities, what is remembered of them,
    for how long. No keys: off (the default; spam has no entities)."""

    # attribute keys, dotted for a nested one, or the fields sender and tenant
    keys: list[Annotated[str, Meta(min_length=1)]] = msgspec.field(default_factory=list)
    windows: list[Duration] = msgspec.field(default_factory=lambda: ["1h", "1d", "7d", "30d"])
    amount: str = "amount"  # the attribute compared with the entity's usual ("": none)
    counterparties: dict[str, str] = msgspec.field(default_factory=dict)
    label_window: Duration = "28d"
    max_entities: AtLeastOne = 1_000_000
    max_events: AtLeastOne = 10_000

    def spec(self, target: str) -> EntitySpec:
        """The memory's spec, counting labels of `target` (ValueError for a bad value)."""
        return EntitySpec(
            keys=tuple(self.keys),
            windows=tuple(sorted(_seconds(w) for w in self.windows)),
            amount=self.amount or None,
            counterparties=tuple(sorted(self.counterparties.items())),
            label_window=_seconds(self.label_window),
            target=target,
            max_events=self.max_events,
            max_entities=self.max_entities,
        )


def _seconds(duration: str) -> int:
    return round(parse_duration(duration).total_seconds())


class DeadLetters(Section, frozen=True):
    payload_bytes: NotNegative = 65_536
    max_ratio: Annotated[float, Meta(gt=0, le=1, description="1: off")] = 0.5
    window: AtLeastOne = 1000
    max_consecutive: Annotated[int, Meta(ge=0, description="0: off")] = 1000


class Recent(Section, frozen=True):
    max_messages: Annotated[int, Meta(ge=0, description="0: keep none")] = 100_000
    max_bytes: Annotated[int, Meta(ge=0, description="0: keep none")] = 64_000_000
    ttl_seconds: Seconds = 21_600.0


class DecisionSettings(Section, frozen=True):
    target_class: str = "spam"
    target_recall: Annotated[float, Meta(gt=0, le=1)] = 0.99


class Batches(Section, frozen=True):
    poll_records: AtLeastOne = 500
    # a transaction's fixed costs (commit, lookups, the prequential write) weigh less in larger
    # batches
    feedback: AtLeastOne = 5000


class Intervals(Section, frozen=True):
    sync_seconds: Seconds = 5.0
    threshold_reload_seconds: Seconds = 1.0
    calibrate_seconds: Annotated[float, Meta(ge=0, description="0: off")] = 60.0


class Calibration(Section, frozen=True):
    """How τ is chosen (`filterd.jobs.calibrate`): by `filterd run`, the workbench, and
    `filterd calibrate`, whose options default to these."""

    source: CalibrationSource = "adaptive"
    window: Duration = "14d"
    conservative: bool = False
    # 0: ⌈1/(1−R)⌉ (filterd.evaluation.guardrails)
    min_positives: Annotated[int, Meta(ge=0, description="0: automatic")] = 0
    max_auc_drop: Annotated[float, Meta(ge=0)] = MAX_AUC_DROP
    # adaptive: each spam missed lowers the miss level by about step × (1 − R)
    step: Share = 0.1


class Drift(Section, frozen=True):
    window: Annotated[int, Meta(ge=10)] = 5000
    recall_margin: Annotated[float, Meta(ge=0, lt=1)] = 0.02
    min_positives: AtLeastOne = 200


class FeedbackSettings(Section, frozen=True):
    # days a label event stays on the audit trail; `filterd db prune` deletes older ones
    audit_retention_days: Annotated[int, Meta(ge=0, description="0: keep every event")] = 365
    # Feedback naming a message by id that no learner can resolve yet is parked in the store and
    # tried again every `retry_seconds`; once `resolve_ttl` has passed it is dead-lettered as
    # `unresolved_message`. Also how long the decided messages' coordinates are kept.
    resolve_ttl: Duration = "3d"
    retry_seconds: PositiveSeconds = 30.0
    # A decided message whose tokens take at most this many bytes (UTF-8, one byte between
    # them) keeps them with its coordinates for `resolve_ttl`, compressed: a label by id learns
    # it without reading it back from the messages topic (a card payment's are a few dozen
    # bytes; a mail's, thousands). 0: none kept.
    keep_tokens_bytes: Annotated[int, Meta(ge=0, le=65_536)] = 512

    @property
    def resolve_within(self) -> timedelta:
        """`resolve_ttl` as a duration (checked by `load`)."""
        return parse_duration(self.resolve_ttl)


class Review(Section, frozen=True):
    # Decisions queued for an analyst: those whose score is within `band` of τ (|s − τ| ≤ band;
    # 0: none), and a uniform `random_share` of all decisions (0: none), which keeps the labelled
    # sample unbiased for calibration and for measuring the filter.
    # in log-odds, the scale of every default score: odds within ±10 % of τ's
    band: Annotated[float, Meta(ge=0, description="0: no band")] = 0.1
    random_share: Share = 0.002
    # per model; labelled items leave first, then the oldest
    max_items: Annotated[int, Meta(ge=0, description="0: no queue")] = 100_000
    # `filterd db prune` deletes older items
    retention_days: Annotated[int, Meta(ge=0, description="0: keep them")] = 14
    excerpt_chars: NotNegative = 500  # of the text kept for the analyst


class Observe(Section, frozen=True):
    metrics_port: Annotated[Port, Meta(description="0: off")] = 9108
    # the interface /metrics, /healthz and /readyz listen on: loopback unless configured
    # ("0.0.0.0" for probes and scrapers from other hosts, e.g. in Kubernetes)
    metrics_host: str = "127.0.0.1"
    # the observe server's connections: at most this many open (never more than a quarter of the
    # open-file limit), each request whole within this many seconds of its accept
    metrics_max_connections: AtLeastOne = 64
    metrics_request_seconds: PositiveSeconds = 5.0
    # the Host headers it answers, against DNS rebinding (as `http.allowed_hosts`): empty, the
    # bound address, localhost, 127.0.0.1 and [::1] on metrics_port, and any IP address when
    # bound to every interface; a scraper that names the host by a DNS name needs it listed
    metrics_allowed_hosts: Hosts = []
    log_format: Literal["json", "console"] = "json"


class Http(Section, frozen=True):
    """The HTTP API (`filterd.web`): off in `filterd run` unless enabled; `filterd serve` runs it
    whatever `enabled` says."""

    enabled: bool = False
    # loopback unless configured: the API reads messages and sends labels
    host: Annotated[str, Meta(min_length=1, description="127.0.0.1: loopback only")] = "127.0.0.1"
    port: Annotated[Port, Meta(description="0: any free port")] = 8108
    # Connections: at most `max_connections` open (never more than a quarter of the open-file
    # limit; at the limit a new one closes the one that waited longest for its request), each
    # request, headers and body, whole within `request_seconds` of its accept or of the answer
    # before it (`filterd.web.server`).
    max_connections: AtLeastOne = 1000
    request_seconds: PositiveSeconds = 10.0
    # Credentials, analyst name → hash (`filterd.service.passwords`): API tokens, sent as
    # `Authorization: Bearer NAME.SECRET` (`filterd http new-token NAME` makes one), and
    # passwords for HTTP basic auth (`filterd http hash-password`). The name is the analyst
    # identity the API puts on labels. Never logged.
    tokens: Credentials = {}
    users: Credentials = {}
    # The workbench's login sessions: signed cookies that last `session_hours`. They are signed
    # with `session_secret` (FILTERD_HTTP_SESSION_SECRET; at least 32 characters), or, when it is
    # empty, with a key made at start-up: sessions then end when the process does, and the
    # processes of one deployment do not share them.
    session_secret: str = ""
    session_hours: Annotated[float, Meta(gt=0, le=24 * 30)] = 12.0
    # The Host headers answered (`filterd.service.hosts`), against DNS rebinding: names or
    # addresses, each with an optional :port. Empty: `host`, localhost, 127.0.0.1 and [::1] on
    # `port` (and any address when `host` is 0.0.0.0 or ::). Other Hosts get 400.
    allowed_hosts: Hosts = []
    # How long a label posted to the API or the workbench waits for the brokers, its turn
    # behind other labels included: then 503 (not sent) or 504 (sent, not acknowledged).
    publish_seconds: Annotated[float, Meta(gt=0, le=60)] = 5.0


# the [http] keys whose values are credentials: the names are shown, the hashes never
CREDENTIAL_KEYS = ("tokens", "users")
SESSION_SECRET_CHARS = 32


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every setting: one field per section. `Config()` is the defaults (`DEFAULTS`)."""

    # free keys, passed to the Kafka client (checked by `filterd.kafka.settings.check`)
    kafka: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"bootstrap_servers": "127.0.0.1:9092"}
    )
    topics: Topics = Topics()
    groups: Groups = Groups()
    database: Database = Database()
    model: ModelSettings = ModelSettings()
    limits: Limits = Limits()
    attributes: AttributeSettings = AttributeSettings()
    entities: EntitySettings = EntitySettings()
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

    def sections(self) -> dict[str, dict[str, Any]]:
        """Each section's keys and values, as a dict of dicts."""
        return {
            name: dict(values) if isinstance(values, dict) else msgspec.structs.asdict(values)
            for name, values in msgspec.structs.asdict(self).items()
        }

    def public(self) -> dict[str, dict[str, Any]]:
        """The configuration with secrets masked, fit for a start-up log line."""
        out = {
            name: {k: "***" if _secret(k) and v else v for k, v in values.items()}
            for name, values in self.sections().items()
        }
        out["database"]["url"] = masked_url(out["database"]["url"])
        for key in CREDENTIAL_KEYS:
            out["http"][key] = dict.fromkeys(out["http"][key], "***")
        return out


DEFAULTS = Config()  # the declared defaults, for code that needs one without a configuration


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
    ({"section.key": value}, e.g. from CLI flags; None values are ignored). Each value is
    checked against its declaration as it is read; the `[kafka]` keys are the shell's to check
    (`filterd.daemon.settings.load_settings`)."""
    environ = os.environ if environ is None else environ
    values: dict[str, dict[str, Any]] = {"kafka": dict(DEFAULTS.kafka)}
    if path is not None:
        for section, keys in _read(Path(path)).items():
            if not isinstance(keys, dict):
                raise ConfigError(f"{path}: {section!r} must be a [section] of keys")
            for key, value in keys.items():
                _set(values, section, key, value, f"{path}: {section}.{key}")
    for name, text in environ.items():
        if name.startswith(ENV_PREFIX) and name != ENV_PREFIX + "CONFIG":
            section, key = _split_variable(name)
            where = f"environment variable {name} ({section}.{key})"
            _set(values, section, key, text, where, from_text=True)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            section, _, key = dotted.partition(".")
            _set(values, section, key, value, f"option {dotted}")
    config = _model_defaults(msgspec.convert(values, Config))
    _check(config)
    return config


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the configuration ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML ({error})") from None


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


# --- reading one value against its declaration -------------------------------------------------


@cache
def declared() -> dict[str, dict[str, inspect.Type]]:
    """Each section's keys and their declared types (msgspec's view of them); `kafka` has none."""
    sections: dict[str, dict[str, inspect.Type]] = {}
    for section in cast(inspect.StructType, inspect.type_info(Config)).fields:
        kind = section.type
        keys = kind.fields if isinstance(kind, inspect.StructType) else ()
        sections[section.name] = {key.name: key.type for key in keys}
    return sections


@cache
def _section_types() -> dict[str, type[Section]]:
    return {
        field.name: field.type
        for field in msgspec.structs.fields(Config)
        if isinstance(field.type, type) and issubclass(field.type, Section)
    }


def _split_variable(name: str) -> tuple[str, str]:
    rest = name[len(ENV_PREFIX) :].lower()
    for section in declared():
        if rest.startswith(section + "_"):
            return section, rest[len(section) + 1 :]
    return rest, ""


def _set(
    values: dict[str, dict[str, Any]],
    section: str,
    key: str,
    value: Any,
    where: str,
    from_text: bool = False,
) -> None:
    """values[section][key] = `value`, checked against its declaration (ConfigError naming the
    key if it has none or does not fit it); `from_text`: an environment variable's text."""
    sections = declared()
    if section not in sections:
        raise ConfigError(f"{where}: unknown section {section!r} (sections: {', '.join(sections)})")
    if section == "kafka":  # the one section of free keys: passed through to the client
        # a secret is text whatever it looks like: a password "123456" is not a number
        values["kafka"][key] = _from_text(value) if from_text and not _secret(key) else value
        return
    keys = sections[section]
    if key not in keys:
        raise ConfigError(f"{where}: unknown key '{section}.{key}' (keys: {', '.join(keys)})")
    kind = _kind(keys[key])
    if from_text and kind is not str:
        value = _from_text(value)
    try:
        checked = msgspec.convert({key: value}, _section_types()[section])
    except msgspec.ValidationError:
        raise _unfit(section, key, value, where) from None
    values.setdefault(section, {})[key] = getattr(checked, key)


# the Python type of each kind of declared value, and its name in a message
_KINDS: dict[type[inspect.Type], type] = {
    inspect.IntType: int,
    inspect.FloatType: float,
    inspect.StrType: str,
    inspect.LiteralType: str,
    inspect.BoolType: bool,
    inspect.ListType: list,
    inspect.DictType: dict,
}
_KIND_NAMES: dict[type, str] = {dict: "table"}


def _kind(declaration: inspect.Type) -> type:
    while isinstance(declaration, inspect.Metadata):
        declaration = declaration.type
    return _KINDS[type(declaration)]


def _unfit(section: str, key: str, value: Any, where: str) -> ConfigError:
    """Why `value` does not fit section.key: its type (naming where it came from), or its
    range (as the declaration states it)."""
    kind = _kind(declared()[section][key])
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError:
        name = _KIND_NAMES.get(kind, kind.__name__)
        return ConfigError(f"{where}: expected {name}, got {value!r}")
    return ConfigError(f"{section}.{key}: {requirement(declared()[section][key])}")


def requirement(declaration: inspect.Type) -> str:
    """What a declared value must be, in words.

    >>> requirement(inspect.type_info(Annotated[float, Meta(gt=0, le=1, description="1: off")]))
    'must be in (0, 1] (1: off)'
    """
    note = None
    while isinstance(declaration, inspect.Metadata):
        note = note or (declaration.extra_json_schema or {}).get("description")
        declaration = declaration.type
    words = _must(declaration)
    return f"{words} ({note})" if note else words


def _must(kind: inspect.Type) -> str:
    if isinstance(kind, inspect.IntType | inspect.FloatType):
        return _range(kind)
    if isinstance(kind, inspect.LiteralType):
        *first, last = map(str, kind.values)
        return f"must be {', '.join(first)} or {last}"
    if isinstance(kind, inspect.ListType):
        return f"must be a list of {_noun(kind.item_type)}"
    if isinstance(kind, inspect.DictType):
        return f"must be a table of {_noun(kind.value_type)}"
    if isinstance(kind, inspect.StrType) and kind.min_length:
        return "must not be empty"
    return f"must be a {_kind(kind).__name__}"


def _noun(kind: inspect.Type) -> str:
    if isinstance(kind, inspect.Metadata):
        return str((kind.extra_json_schema or {}).get("description") or _noun(kind.type))
    return f"{_kind(kind).__name__} values"


def _range(kind: inspect.IntType | inspect.FloatType) -> str:
    """A numeric range in words: "must be at least 1", "must be in (0, 1]"."""
    low = (kind.ge, "[") if kind.ge is not None else (kind.gt, "(") if kind.gt is not None else None
    high = (
        (kind.le, "]") if kind.le is not None else (kind.lt, ")") if kind.lt is not None else None
    )
    if low and high:
        if (kind.ge, kind.le) == (0, 65535):
            return "must be a port number"
        return f"must be in {low[1]}{low[0]:g}, {high[0]:g}{high[1]}"
    if low:
        if low[0] == 0:
            return "must not be negative" if kind.ge is not None else "must be positive"
        return f"must be at least {low[0]:g}" if kind.ge is not None else f"must exceed {low[0]:g}"
    if high:
        return (
            f"must be at most {high[0]:g}" if kind.le is not None else f"must be below {high[0]:g}"
        )
    return f"must be a {'float' if isinstance(kind, inspect.FloatType) else 'int'}"


def _from_text(text: str) -> Any:
    """An environment value as TOML would read it (numbers, booleans, tables), else the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


# --- what a type cannot express ------------------------------------------------------------------


def _model_defaults(config: Config) -> Config:
    """Robinson–Fisher named without parameters or a selection is filterd's
    (`ROBINSON_FISHER_SPEC`: s, x and the clues it reads), as it was the default model before the
    fusion; every other variant takes its own defaults."""
    m = config.model
    rf = ROBINSON_FISHER_SPEC
    if m.variant == rf.variant and not m.params and m.select == str(DEFAULT_SPEC.selection):
        m = msgspec.structs.replace(m, params=dict(rf.params), select=str(rf.selection))
    return msgspec.structs.replace(config, model=m)


def _check(config: Config) -> None:
    """The checks that span keys or parse a value: the model, the durations, the Host
    allow-lists and [http]."""
    _check_model(config)
    for key, text in (
        ("calibration.window", config.calibration.window),
        ("feedback.resolve_ttl", config.feedback.resolve_ttl),
    ):
        try:
            parse_duration(text)
        except ValueError as error:
            raise ConfigError(f"{key}: {error}") from None
    try:
        config.entities.spec(config.decision.target_class)
    except ValueError as error:
        raise ConfigError(f"entities: {error}") from None
    o = config.observe
    _check_hosts(
        "observe.metrics_allowed_hosts", o.metrics_allowed_hosts, o.metrics_host, o.metrics_port
    )
    _check_http(config.http)


def _check_model(config: Config) -> None:
    """A variant filterd has, whose parameters and selection fit it and the decision's classes."""
    from filterd.bayes.estimators import (  # late: keeps `load` cheap to import
        ESTIMATORS,
        ParamError,
    )

    m = config.model
    if m.variant not in ESTIMATORS and m.variant != FUSION:
        known = ", ".join([*ESTIMATORS, FUSION])
        raise ConfigError(f"model.variant: unknown variant {m.variant!r} ({known})")
    if m.variant == FUSION and m.params:
        raise ConfigError(
            f"model.params: the fusion takes no parameters (given: {', '.join(m.params)}): it "
            "combines fixed components; parameters are for a variant named with them"
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


def _check_hosts(key: str, hosts: list[str], host: str, port: int) -> None:
    """An allow-list of Host headers (`filterd.service.hosts`): names or addresses."""
    try:
        AllowedHosts.of(hosts, host, port)
    except ValueError as error:
        raise ConfigError(f"{key}: {error}") from None


def _check_http(http: Http) -> None:
    """[http]: a session secret long enough, and credentials whose names can be told apart from
    their secrets and whose hashes parse (the message names the key, never the hash)."""
    from filterd.service.passwords import parse_hash  # late: keeps `load` cheap to import

    if http.session_secret and len(http.session_secret) < SESSION_SECRET_CHARS:
        raise ConfigError(
            f"http.session_secret: must be at least {SESSION_SECRET_CHARS} characters "
            "(or empty: a key made at start-up)"
        )
    _check_hosts("http.allowed_hosts", http.allowed_hosts, http.host, http.port)
    for key in CREDENTIAL_KEYS:
        for name, hashed in getattr(http, key).items():
            where = f"http.{key}.{name}"
            # basic auth splits user:password at the first colon; NUL cannot be stored
            if not name or ":" in name or "\x00" in name or len(name) > 200:
                raise ConfigError(f"{where}: an analyst name is 1–200 characters without ':'")
            try:
                parse_hash(hashed)
            except ValueError as error:
                raise ConfigError(f"{where}: {error}") from None
