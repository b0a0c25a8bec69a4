"""`filterd evaluate`, `filterd tune`, `filterd synth`: measuring variants on labelled corpora."""

from __future__ import annotations

import functools
import io
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from filterd.bayes.estimators import parse_params
from filterd.bayes.model import FUSION, ROBINSON_FISHER_SPEC
from filterd.cli.common import (
    IsoTime,
    OptionError,
    config_option,
    load_config,
    model_specs,
    read_records,
)
from filterd.cli.corpus_files import write_corpus
from filterd.evaluation.corpus import Record, relabel, to_records
from filterd.evaluation.label_delay import LabelDelay
from filterd.evaluation.protocols import (
    Corpus,
    EntityReplay,
    Evaluation,
    evaluate,
    validation_split,
)
from filterd.evaluation.synth import SynthConfig, generate
from filterd.evaluation.tuning import Objective, grid_search, tune_unb_lambda
from filterd.service.config import parse_duration
from filterd.service.decide import tokenizer_of
from filterd.tokenize import TokenizerConfig

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar  # what click.progressbar returns

DEMO_MESSAGES = 5000
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])


class LabelDelayParam(click.ParamType[LabelDelay, str | LabelDelay]):
    """`--label-delay`: a number of messages (0: at once) or a duration such as 7d."""

    name = "N|DURATION"

    def convert(
        self, value: str | LabelDelay, param: click.Parameter | None, ctx: click.Context | None
    ) -> LabelDelay:
        if isinstance(value, LabelDelay):
            return value
        text = value.strip()
        try:
            return (
                LabelDelay(messages=int(text))
                if text.isdigit()
                else LabelDelay(after=parse_duration(text))
            )
        except ValueError:
            self.fail(
                f"{value!r}: give a number of messages (e.g. 1000) or a time (e.g. 7d, 12h)",
                param,
                ctx,
            )


def relabel_option(command: F) -> F:
    """--relabel OLD=NEW (repeatable), shared by the commands that read a corpus."""
    return click.option(
        "--relabel",
        "relabels",
        multiple=True,
        metavar="OLD=NEW",
        help="Rename label OLD to NEW in every record first, e.g. smishing=spam for the binary "
        "view of a corpus with more classes (several OLD may share one NEW). Repeatable.",
    )(command)


def tokenizer_options(command: F) -> F:
    """--bigrams, --osb, --char-ngrams, --char-ngram-chars N and --short-body N: the tokenizer's
    options (`TokenizerConfig`), given to the command as one `tokenizer_config` (its limits are
    the configuration's: `filterd.service.decide.tokenizer_of`)."""

    @functools.wraps(command)
    def with_config(
        *args: Any,
        bigrams: bool,
        osb: bool,
        char_ngrams: bool,
        char_ngram_chars: int,
        short_body: int,
        **kwargs: Any,
    ) -> object:
        config = TokenizerConfig(
            bigrams=bigrams,
            osb=osb,
            char_ngrams=char_ngrams,
            char_ngram_chars=char_ngram_chars,
            short_body=short_body,
        )
        return command(*args, tokenizer_config=config, **kwargs)

    options = [
        click.option("--bigrams", is_flag=True, help="Also use word bigrams."),
        click.option(
            "--osb",
            is_flag=True,
            help="Also use orthogonal sparse bigrams: each word paired with each of the next 4 "
            '("w1 w2", "w1 ~w3", "w1 ~~w4", "w1 ~~~w5"; includes --bigrams).',
        ),
        click.option(
            "--char-ngrams",
            is_flag=True,
            help="Also use the distinct character 4-grams (c4:abcd) of the first "
            "--char-ngram-chars characters of subject and body text.",
        ),
        click.option(
            "--char-ngram-chars",
            type=click.IntRange(min=4),
            default=TokenizerConfig.char_ngram_chars,
            show_default=True,
            metavar="N",
            help="Characters of subject and body text that --char-ngrams reads.",
        ),
        click.option(
            "--short-body",
            type=click.IntRange(min=0),
            default=TokenizerConfig.short_body,
            show_default=True,
            metavar="N",
            help="A body of fewer than N plain words gets the subject's words as words too "
            "(0: never).",
        ),
    ]
    wrapped: Callable[..., object] = with_config
    for option in reversed(options):
        wrapped = option(wrapped)
    return cast(F, wrapped)


@click.command(name="evaluate")
@click.argument("corpus", required=False, type=click.Path(dir_okay=True))
@click.option(
    "--demo",
    is_flag=True,
    help=f"Evaluate on a synthetic corpus of {DEMO_MESSAGES} messages made on the fly.",
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME[+sow]",
    help="Estimator (mnb, pcn, centroid, cnb, wcnb, twcnb, ova, unb, wmnb, pnbc, robinson_fisher) "
    "or fusion; +sow for set-of-words mode. Repeat for a table. Default: the configuration's "
    "[model] (built in: fusion).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="[VARIANT.]KEY=VALUE",
    help="Estimator parameter, e.g. alpha=0.1, pcn.A=min, unb.lam=1e-5. Repeatable.",
)
@click.option(
    "--select",
    "selections",
    multiple=True,
    metavar="SPEC",
    help="none | ir | local:N[:alo|mi|or[:MIN]] | global:N[:alo|mi|or]. Repeat for a table. "
    "Default: none with --variant, else the configured model's.",
)
@click.option(
    "--protocol",
    type=click.Choice(["split", "online"]),
    default="split",
    show_default=True,
    help="split: train/test; online: TREC immediate-feedback replay in `order`.",
)
@click.option(
    "--label-delay",
    "label_delay",
    type=LabelDelayParam(),
    default="0",
    metavar="N|DURATION",
    help="Online: labels arrive N messages late, or a time late by the messages' ts "
    "(e.g. 7d, 12h). Default: at once.",
)
@click.option(
    "--report-from",
    "report_from",
    type=IsoTime(),
    metavar="TS",
    help="Online: learn from the whole stream, measure only the messages sent from TS on "
    "(ISO 8601, e.g. 2018-05-01 or 2018-05-01T00:00:00Z; without a zone, UTC).",
)
@click.option("--target", help="Target class (default: spam for two-label corpora).")
@relabel_option
@tokenizer_options
@config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per row on stdout.")
def evaluate_command(
    corpus: str | None,
    demo: bool,
    variants: tuple[str, ...],
    params: tuple[str, ...],
    selections: tuple[str, ...],
    protocol: str,
    label_delay: LabelDelay,
    report_from: datetime | None,
    target: str | None,
    relabels: tuple[str, ...],
    tokenizer_config: TokenizerConfig,
    config_path: str | None,
    as_json: bool,
) -> None:
    """Measure variants on a labelled CORPUS (.jsonl or .jsonl.gz, or a folder holding
    messages.jsonl[.gz]; see shared/corpora/README.md). A line is a message and its label:
    its attributes, sender, subject and ts are read as the daemon reads them.

    Two labels (or a --target) make a binary task, its target the configuration's
    decision.target_class when it is one of the two; more labels a multi-class one; --relabel
    merges labels first, e.g. `--relabel smishing=spam` scores sms-smishing as spam vs ham.
    Messages are read within the configuration's [limits], as the daemon reads them."""
    if (corpus is None) == (not demo):
        raise click.UsageError("give a CORPUS file or --demo (not both)")
    if protocol != "online" and (not label_delay.immediate or report_from is not None):
        raise click.UsageError("--label-delay and --report-from go with --protocol online")
    config = load_config(config_path)
    specs = model_specs(variants, params, selections, config.model.spec)
    if config.entities.keys and protocol != "online":
        raise click.UsageError("[entities] are remembered in the online protocol only")
    records = _records(corpus, relabels)
    labels = {label for r in records for label in r.labels}
    if target is None and len(labels) == 2 and config.decision.target_class in labels:
        target = config.decision.target_class  # the class the daemon would decide for
    entities = None
    if config.entities.keys:
        spec_of = config.entities.spec(target or config.decision.target_class)
        entities = EntityReplay(spec_of, label_delay)
    # each spec reads the tokens its views need (`tokenizer_of`): one tokenization per set
    by_tokenizer: dict[TokenizerConfig, Corpus] = {}
    rows = []
    for spec in specs:
        tokenizer = tokenizer_of(config, tokenizer_config, [spec])
        tokenized = by_tokenizer.get(tokenizer.config)
        if tokenized is None:
            with _progress(records, "tokenizing") as bar:
                tokenized = Corpus.tokenize(
                    records, tokenizer, progress=lambda it: bar, entities=entities
                )
            by_tokenizer[tokenizer.config] = tokenized
        try:
            with _progress(
                range(len(records)), f"{spec} {protocol}", enabled=protocol == "online"
            ) as bar:
                result = evaluate(
                    tokenized,
                    spec,
                    protocol,
                    target,
                    progress=lambda it: _follow(it, bar),
                    delay=label_delay,
                    report_from=report_from,
                )
        except ValueError as error:
            raise click.ClickException(str(error)) from None
        rows.append(result)
        if as_json:
            click.echo(json.dumps(result.as_dict()))
    if not as_json:
        click.echo(format_table(rows))


@click.command(name="tune")
@click.argument("corpus", required=False, type=click.Path(dir_okay=True))
@click.option("--demo", is_flag=True, help="Tune on the synthetic demo corpus.")
@click.option(
    "--variant",
    metavar="NAME[+sow]",
    help="Default: robinson_fisher with filterd's parameters and selection (the fusion's first "
    "component; the fusion learns its weights from the feedback, with nothing to tune).",
)
@click.option(
    "--param", "params", multiple=True, metavar="KEY=VALUE", help="Fixed estimator parameters."
)
@click.option(
    "--select",
    "selection",
    metavar="SPEC",
    help="Default: none with --variant, else robinson_fisher's "
    f"({ROBINSON_FISHER_SPEC.selection}).",
)
@click.option(
    "--grid",
    "grids",
    multiple=True,
    metavar="KEY=V1,V2,...",
    help="Values to try: estimator parameters or select (e.g. alpha=0.01,0.1,1 or "
    "select=local:4:alo,local:8:or). Without --grid, unb tunes its per-class λ by differential "
    "evolution.",
)
@click.option(
    "--objective",
    type=click.Choice(["auc", "spec_at_full_recall", "macro_f1"]),
    default=None,
    help="What to maximize on the validation share "
    "(default: macro_f1 for λ and multi-class, else auc).",
)
@click.option("--target", help="Target class (default: spam for two-label corpora).")
@relabel_option
@config_option
@click.option("--json", "as_json", is_flag=True)
def tune_command(
    corpus: str | None,
    demo: bool,
    variant: str | None,
    params: tuple[str, ...],
    selection: str | None,
    grids: tuple[str, ...],
    objective: Objective | None,
    target: str | None,
    relabels: tuple[str, ...],
    config_path: str | None,
    as_json: bool,
) -> None:
    """Choose hyper-parameters on a validation share of the training part, then measure the
    choice on the test part."""
    if (corpus is None) == (not demo):
        raise click.UsageError("give a CORPUS file or --demo (not both)")
    (spec,) = model_specs((variant,) if variant else (), params, (selection,) if selection else ())
    if spec.variant == FUSION:
        raise OptionError("fusion has nothing to tune: its weights are learned from the feedback")
    grid: dict[str, Sequence[object]] = {}
    for item in grids:
        key, sep, values = item.partition("=")
        if not sep or not values:
            raise OptionError(f"--grid {item!r} is not KEY=V1,V2,...")
        grid[key] = (
            values.split(",")
            if key == "select"
            else [_grid_value(spec.variant, key, v) for v in values.split(",")]
        )
    if not grid and spec.variant != "unb":
        raise click.UsageError(
            "give at least one --grid (only unb has a default search: its per-class λ)"
        )
    tokenizer = tokenizer_of(load_config(config_path), specs=[spec])
    records = _records(corpus, relabels)
    tokenized = Corpus.tokenize(records, tokenizer)
    try:
        stats, batch, truth, target = validation_split(tokenized, target)
        chosen_objective: Objective = objective or (
            "macro_f1" if target is None or not grid else "auc"
        )
        if grid:
            tuned = grid_search(stats, batch, truth, spec, grid, chosen_objective, target)
        else:
            if chosen_objective != "macro_f1":
                raise click.UsageError("unb's λ search maximizes macro_f1 (Kikuchi & Ozono)")
            tuned = tune_unb_lambda(stats, batch, truth, spec, target)
        before, after = (
            evaluate(tokenized, spec, "split", target),
            evaluate(tokenized, tuned.spec, "split", target),
        )
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        click.echo(
            json.dumps(
                {
                    "best": str(tuned.spec),
                    "params": dict(tuned.spec.params),
                    "objective": chosen_objective,
                    "validation": tuned.value,
                    "test_before": before.as_dict(),
                    "test_after": after.as_dict(),
                },
                default=str,
            )
        )
        return
    for candidate, value in tuned.tried:
        click.echo(f"  {candidate!s:40s} validation {chosen_objective} {value:.4f}")
    click.echo(f"best: {tuned.spec} (validation {chosen_objective} {tuned.value:.4f})\n")
    click.echo(format_table([before, after]))


def _grid_value(variant: str, key: str, text: str) -> object:
    try:
        return parse_params(variant, {key: text})[key]
    except ValueError as error:
        raise OptionError(f"--grid: {error}") from None


@click.command(name="synth")
@click.argument("path", type=click.Path())
@click.option(
    "--messages", "n_messages", type=click.IntRange(min=1), default=DEMO_MESSAGES, show_default=True
)
@click.option("--spam-share", type=click.FloatRange(0.001, 0.999), default=0.15, show_default=True)
@click.option("--drift", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def synth_command(path: str, n_messages: int, spam_share: float, drift: float, seed: int) -> None:
    """Write a synthetic labelled corpus to PATH (.jsonl or .jsonl.gz).

    Its ids are synth-TAG-000001, synth-TAG-000002, …, where TAG (8 hex digits) names the
    options: the same options write the same corpus, other options other ids, so that two
    corpora learned into one store do not relabel each other's messages."""
    config = SynthConfig(
        n_messages=n_messages,
        class_priors={"ham": 1 - spam_share, "spam": spam_share},
        drift=drift,
        seed=seed,
    )
    try:
        write_corpus(generate(config), path)
    except OSError as error:
        raise click.ClickException(f"{path}: {error.strerror or error}") from None
    click.echo(f"wrote {n_messages} messages to {path} (ids synth-{config.tag}-…)", err=True)


# --- helpers ---------------------------------------------------------------------------------


def _demo_records() -> list[Record]:
    return to_records(generate(SynthConfig(n_messages=DEMO_MESSAGES)))


def _records(corpus: str | None, relabels: Sequence[str]) -> list[Record]:
    """The records of CORPUS (the demo corpus if None) with --relabel applied."""
    mapping = relabel_mapping(relabels)
    records = _demo_records() if corpus is None else read_records(corpus)
    if not mapping:
        return records
    labels = {label for r in records for label in r.labels}
    for old in mapping:
        if old not in labels:
            raise OptionError(
                f"--relabel {old}={mapping[old]}: no record has the label {old!r} ({_some(labels)})"
            )
    return relabel(records, mapping)


def _some(labels: set[str]) -> str:
    ordered = sorted(labels)
    return ", ".join(ordered[:8]) + (", …" if len(ordered) > 8 else "")


def relabel_mapping(items: Sequence[str]) -> dict[str, str]:
    """{OLD: NEW} from --relabel OLD=NEW values, or an OptionError naming the bad one."""
    mapping: dict[str, str] = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise OptionError(f"--relabel {item!r} is not OLD=NEW (two non-empty labels)")
        if mapping.setdefault(old, new) != new:
            raise OptionError(f"--relabel {item!r}: {old!r} is already mapped to {mapping[old]!r}")
    return mapping


def _progress(items: Sequence[T], label: str, enabled: bool = True) -> ProgressBar[T]:
    """A progress bar on stderr (silent when disabled or when stderr is not a terminal: click
    would still print its label there, a line that pipes and logs do not want)."""
    shown = enabled and sys.stderr.isatty()
    return click.progressbar(items, label=label, file=sys.stderr if shown else io.StringIO())


def _follow(items: Iterable[T], bar: ProgressBar[int]) -> Iterator[T]:
    for item in items:
        bar.update(1)
        yield item


COLUMNS = [
    ("variant", "variant", "{}"),
    ("select", "select", "{}"),
    ("protocol", "protocol", "{}"),
    ("n_train", "train", "{}"),
    ("n_test", "test", "{}"),
    ("auc", "AUC", "{:.4f}"),
    ("one_minus_auc_pct", "(1-AUC)%", "{:.3f}"),
    ("average_precision", "AP", "{:.3f}"),
    ("spec_at_full_recall", "spec@R=1", "{:.3f}"),
    ("recall_at_fpr_1pct", "R@FPR1%", "{:.3f}"),
    ("recall_at_fpr_0_1pct", "R@FPR.1%", "{:.3f}"),
    ("lam_pct", "lam%", "{:.2f}"),
    ("accuracy", "acc", "{:.4f}"),
    ("macro_f1", "macroF1", "{:.4f}"),
    ("messages_per_second", "msg/s", "{:,.0f}"),
]


def format_table(rows: Sequence[Evaluation]) -> str:
    """A plain-text table, one row per evaluation."""
    cells = [[title for _, title, _ in COLUMNS]]
    for row in rows:
        values = row.as_dict()
        cells.append(
            ["-" if values[key] is None else fmt.format(values[key]) for key, _, fmt in COLUMNS]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(c.rjust(w) if i > 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in cells
    )
