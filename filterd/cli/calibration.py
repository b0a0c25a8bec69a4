"""`filterd calibrate`: a new threshold version from a window of feedback, with an ROC report.

The command is `filterd.jobs.calibrate.calibrate_classes` from the command line, on one of its
sources: "adaptive" (the default, `calibration.source`, as `filterd run`; with no τ yet and too
little scored on arrival, the first τ comes from the holdout), "prequential" or "holdout". Its
options default to the declared settings (`filterd.service.config`). It prints the
window, the counts, AUC, τ and its recall, specificity (ham kept), precision and expected ham
misclassification (1 − specificity) beside the previous version's; what the new τ is expected
to deliver on new traffic like the window, with a 90 % range; the adaptive miss level; and what
the previous τ delivered on the feedback scored since it was written. Then it writes the new
version unless --dry-run. A guardrail refusal is one line on stderr and exit status 1.
--plot draws the ROC (matplotlib, `pip install 'filterd[plot]'`).
"""

from __future__ import annotations

import getpass
import json
import math
import os
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import click

from filterd.cli.common import setting_type
from filterd.cli.store import (
    db_option,
    delivered_text,
    min_docs_option,
    model_option,
    open_model,
    store_errors,
)
from filterd.evaluation.calibration import Expected
from filterd.evaluation.guardrails import MIN_NEGATIVES, GuardrailError
from filterd.jobs.calibrate import CalibrationReport, calibrate_classes
from filterd.service.config import DEFAULTS, parse_duration
from filterd.service.decide import NotReady

CALIBRATION = DEFAULTS.calibration


class Duration(click.ParamType[timedelta, str | timedelta]):
    name = "DURATION"

    def convert(
        self, value: str | timedelta, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


@click.command(name="calibrate")
@db_option
@model_option
@click.option(
    "--target-class",
    "target_classes",
    multiple=True,
    default=(DEFAULTS.decision.target_class,),
    show_default=True,
    help="The class the threshold is for; repeat for several (one-vs-rest).",
)
@click.option(
    "--all-classes", is_flag=True, help="One threshold per class of the model, one-vs-rest."
)
@click.option(
    "--target-recall",
    type=setting_type("decision.target_recall"),
    default=DEFAULTS.decision.target_recall,
    show_default=True,
)
@click.option(
    "--window",
    type=Duration(),
    help="The feedback of this long before now, e.g. 14d, 12h, 30m (default: "
    f"{CALIBRATION.window}), for every source: holdout items by feedback time, prequential "
    "scores by the time they were scored.",
)
@click.option(
    "--last",
    type=click.IntRange(1),
    metavar="N",
    help="The last N instead (holdout items by feedback time, scores by the time scored).",
)
@click.option(
    "--source",
    type=setting_type("calibration.source"),
    default=CALIBRATION.source,
    show_default=True,
    help="holdout: the holdout items re-scored with the current model. prequential: the scores "
    "feedback got when it arrived, before it was learned (recorded by `filterd run`). adaptive "
    "(what `filterd run` does): the prequential scores, τ chosen for a miss level moved by the "
    "misses of the previous τ since it was written (with no τ yet, the first may come from the "
    "holdout).",
)
@click.option(
    "--step",
    type=setting_type("calibration.step"),
    default=CALIBRATION.step,
    show_default=True,
    help="adaptive: each spam missed lowers the miss level by about step × (1 − R).",
)
@click.option(
    "--conservative",
    is_flag=True,
    help="τ whose one-sided Clopper–Pearson lower bound on recall reaches the target.",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Of the conservative bound.",
)
@click.option(
    "--min-positives",
    type=click.IntRange(1),
    metavar="K",
    help="Positives the window needs (default: ⌈1/(1−R)⌉, 100 for R = 1).",
)
@click.option(
    "--min-negatives",
    type=click.IntRange(1),
    default=MIN_NEGATIVES,
    show_default=True,
    help="Negatives the window needs.",
)
@click.option(
    "--max-auc-drop",
    type=setting_type("calibration.max_auc_drop"),
    default=CALIBRATION.max_auc_drop,
    show_default=True,
    help="Refuse when AUC fell by more than this against the previous version.",
)
@min_docs_option
@click.option("--force", is_flag=True, help="Override the guardrails; recorded in the version row.")
@click.option("--dry-run", is_flag=True, help="Report; write nothing.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE.png",
    help="Draw the ROC with the chosen and the previous operating point.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per target class.")
def calibrate_command(
    url: str | None,
    name: str,
    target_classes: tuple[str, ...],
    all_classes: bool,
    target_recall: float,
    window: timedelta | None,
    last: int | None,
    source: str,
    step: float,
    conservative: bool,
    confidence: float,
    min_positives: int | None,
    min_negatives: int,
    max_auc_drop: float,
    min_docs: int,
    force: bool,
    dry_run: bool,
    plot: str | None,
    as_json: bool,
) -> None:
    """Choose τ for a recall target on a window of feedback (--source) and write a new
    threshold version; report what it is expected to deliver and what the previous τ did."""
    if window is not None and last is not None:
        raise click.UsageError("give --window or --last, not both")
    if plot:
        _check_plot_path(plot)  # fail before anything is written
    with store_errors():
        try:
            reports = calibrate_classes(
                open_model(url, name, writes=not dry_run),
                None if all_classes else target_classes,
                target_recall,
                window=None if last else window or parse_duration(CALIBRATION.window),
                last=last,
                conservative=conservative,
                confidence=confidence,
                min_positives=min_positives,
                min_negatives=min_negatives,
                max_auc_drop=max_auc_drop,
                min_docs=min_docs,
                force=force,
                dry_run=dry_run,
                created_by=_created_by(),
                source=source,
                step=step,
            )
        except GuardrailError as error:
            hint = ""
            if source != "holdout" and "too_few_positives" in error.reasons:
                hint = " (scores on arrival are recorded by `filterd run` as feedback comes in)"
            raise click.ClickException(str(error) + hint) from None
        except NotReady as error:
            raise click.ClickException(f"model {name!r} is not ready: {error}") from None
    for report in reports:
        click.echo(json.dumps(report.as_dict()) if as_json else render(report, source))
    if plot:
        plot_roc(reports, plot)
        click.echo(f"ROC drawn to {plot}", err=True)


def _created_by() -> str:
    try:
        return f"filterd calibrate ({getpass.getuser()})"
    except (KeyError, OSError):  # no login name in some containers
        return "filterd calibrate"


# --- the text report --------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f} %"


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _window(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:  # both or neither: an empty window has no bounds
        return "empty"
    span = end - start
    days = span.total_seconds() / 86400
    length = f"{days:.1f} days" if days >= 1 else f"{span.total_seconds() / 3600:.1f} hours"
    return f"{start:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} UTC ({length})"


def _range(e: Expected) -> str:
    """The interval in percent, to one decimal unless that would blur it."""
    digits = 1 if e.high - e.low >= 0.01 else 2
    return f"{100 * e.low:.{digits}f}–{100 * e.high:.{digits}f} %"


def render(r: CalibrationReport, source: str | None = None) -> str:
    """The short report: this run beside the previous version, what τ is expected to deliver,
    and what the previous τ delivered since it was written. `source`: the one asked for, when
    the report's differs (adaptive's first τ may come from the holdout)."""
    mode = f"conservative, {r.confidence:.0%} lower bound" if r.conservative else "exact"
    p = r.previous
    window = f"window ({r.source}) {_window(r.window_start, r.window_end)}"
    lines = [
        f"model {r.model!r}, target {r.target_class!r}, recall ≥ {r.target_recall:g} ({mode})",
        f"{window}: {r.n_pos} positives, {r.n_neg} negatives",
        "",
        f"{'':24}{'this run':>14}{f'previous (v{p.version})' if p else 'no previous':>18}",
    ]
    rows = [
        ("AUC", _num(r.auc), _num(None if p is None else p.auc)),
        ("τ", f"{r.tau:.4g}", "–" if p is None else f"{p.tau:.4g}"),
        ("recall", _pct(r.recall), _pct(None if p is None else p.recall)),
        ("specificity (ham kept)", _pct(r.specificity), _pct(None if p is None else p.specificity)),
        ("precision", _pct(r.precision), _pct(None if p is None else p.precision)),
        (
            "ham misclassified",
            _pct(r.ham_misclassification),
            _pct(None if p is None else p.ham_misclassification),
        ),
        (
            "positives / negatives",
            f"{r.n_pos} / {r.n_neg}",
            "–" if p is None else f"{p.n_pos} / {p.n_neg}",
        ),
    ]
    if r.recall_lower_bound is not None:
        rows.insert(3, (f"recall, {r.confidence:.0%} lower bound", _pct(r.recall_lower_bound), ""))
    lines += [f"  {label:22}{now:>14}{before:>18}" for label, now, before in rows]
    e, s = r.expected_recall, r.expected_specificity
    lines.append(
        f"expected on new traffic like the window: recall {_pct(e.mean)} "
        f"({100 * e.confidence:.0f} % range {_range(e)}), specificity {_pct(s.mean)} ({_range(s)})"
    )
    if source is not None and source != r.source:
        lines.append(
            "no τ yet and too little feedback scored on arrival: "
            f"the first τ is from the {r.source}"
            + ("; the adaptive level starts from the next" if source == "adaptive" else "")
        )
    if r.level is not None:
        lines.append(
            f"adaptive level: τ chosen for recall {_pct(1 - r.level)} "
            f"(miss level {r.level:.4g}; target {r.target_recall:g})"
        )
    if r.weights is not None:
        bias, *rest = r.weights
        lines.append(
            f"fusion weights (τ applies to their combination): bias {bias:.3g}, "
            f"components {' '.join(f'{w:.3g}' for w in rest)}"
        )
    if r.previous_here is not None:
        h = r.previous_here
        here = f"recall {_pct(h.recall)}, specificity {_pct(h.specificity)}"
        lines.append(f"previous τ on this window: {here}")
    if p is not None:
        d = r.in_force
        since = (
            delivered_text(d, r.target_class, _pct)
            if d.n_pos or d.n_neg
            else "no feedback scored since it was written"
        )
        lines.append(f"previous τ (v{p.version}) since it was written: {since}")
    for message in r.overridden:
        lines.append(f"FORCED past: {message}")
    lines.append(
        "dry run: nothing written"
        if r.version is None
        else f"wrote threshold version {r.version}" + (" (forced)" if r.forced else "")
    )
    return "\n".join(lines)


# --- the plot -------------------------------------------------------------------------------


def _matplotlib() -> None:
    """Set matplotlib up for files (the Agg backend), or a one-line error without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # the import that fails without a usable matplotlib
    except ImportError:
        raise click.ClickException("--plot needs matplotlib: pip install 'filterd[plot]'") from None


def _check_plot_path(path: str) -> None:
    """A one-line error unless matplotlib can draw to `path`: a format it writes, in a directory
    that exists and can be written to."""
    _matplotlib()
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        raise click.ClickException(
            f"--plot {path}: not an image format matplotlib writes "
            f"(give a file name ending in one of: {', '.join(f'.{f}' for f in sorted(formats))})"
        )
    directory = Path(path).resolve().parent
    if not directory.is_dir() or not os.access(directory, os.W_OK):
        raise click.ClickException(f"--plot {path}: cannot write to directory {directory}")


def plot_roc(reports: Sequence[CalibrationReport], path: str) -> None:
    """ROC per target class: all of it (linear) and the high-recall corner (log FPR), with
    the chosen and the previous operating points and the recall target."""
    _matplotlib()
    import matplotlib.pyplot as plt

    fig, (whole, corner) = plt.subplots(1, 2, figsize=(12, 6), layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(reports):
        colour = colours[i % len(colours)]
        fpr, tpr, _ = r.roc
        label = f"{r.target_class} (AUC {r.auc:.4f})" if len(reports) > 1 else f"AUC {r.auc:.4f}"
        who = f"{r.target_class}: " if len(reports) > 1 else ""
        chosen = f"{who}τ = {r.tau:.3g}: recall {r.recall:.3f}, FPR {r.ham_misclassification:.2%}"
        points = [(1 - r.specificity, r.recall, chosen, "o")]
        if r.previous is not None and r.previous_here is not None:  # both or neither
            h = r.previous_here
            before = (
                f"{who}previous τ (v{r.previous.version}) = {h.tau:.3g} on this window: "
                f"recall {h.recall:.3f}, FPR {1 - h.specificity:.2%}"
            )
            points.append((1 - h.specificity, h.recall, before, "s"))
        for ax in (whole, corner):
            # Lines, not steps, between ROC points: a tie across the classes is a diagonal.
            ax.plot(fpr, tpr, color=colour, lw=1.6, label=label)
            for x, y, text, marker in points:
                ax.plot(
                    [x],
                    [y],
                    marker=marker,
                    ms=9,
                    mfc="none" if marker == "s" else colour,
                    mec=colour if marker == "o" or who else "black",
                    mew=1.8,
                    ls="none",
                    label=text if ax is corner else None,
                )
    target = reports[0].target_recall
    for ax in (whole, corner):
        ax.axhline(
            target,
            color="tab:red",
            ls="--",
            lw=1,
            label=f"recall target {target:g}" if ax is corner else None,
        )
        ax.set_xlabel("false positive rate (1 − specificity: ham misclassified)")
        ax.set_ylabel("recall (target class caught)")
        ax.grid(True, which="both", alpha=0.3)
    whole.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    whole.set(xlim=(0, 1), ylim=(0, 1.005), title="ROC")
    # Log FPR down to one negative's worth, linear below it, so the FPR = 0 points stay in view.
    n_neg = min(r.n_neg for r in reports)
    linthresh = 1 / n_neg
    corner.set_xscale("symlog", linthresh=linthresh, linscale=1.0)
    corner.set_xlim(0, 1)
    decades = [10.0**k for k in range(math.ceil(math.log10(linthresh) - 1e-9), 1)]
    corner.set_xticks([0.0, *decades], ["0"] + [f"{d:g}" for d in decades])
    low = min(
        [target - 4 * (1 - target) if target < 1 else 0.95]
        + [min(r.recall, r.previous_here.recall if r.previous_here else 1) for r in reports]
    )
    corner.set_ylim(max(0.0, low - max(0.01, 0.1 * (1 - low))), 1.002)
    corner.set_title("high-recall corner (log FPR)")
    # Below the panels: inside, it would hide whichever corner the curve or a point is in.
    fig.legend(*corner.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=9)
    r = reports[0]
    counts = (
        f", {r.n_pos} positives / {r.n_neg} negatives, AUC {r.auc:.4f}" if len(reports) == 1 else ""
    )
    fig.suptitle(
        f"model {r.model!r}, target {', '.join(repr(x.target_class) for x in reports)}: "
        f"{r.source} {_window(r.window_start, r.window_end)}{counts}"
    )
    try:
        fig.savefig(path, dpi=120)
    except OSError as error:
        raise click.ClickException(f"--plot {path}: {error.strerror or error}") from None
    finally:
        plt.close(fig)
