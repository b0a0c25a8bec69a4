"""Small inline SVG charts for the workbench's model page: the ROC curve with the operating
points of the new and the previous τ, and time series (drift figures per window, τ over its
versions).

Every function is pure and returns one self-contained ``<svg>`` element as text, safe to embed in
HTML: every text put in is escaped (``html.escape``, and characters XML forbids are dropped),
numbers are written with fixed digits, and points that are NaN or infinite are left out (a gap
in a line). Nothing external: no CSS, scripts or fonts, no ``id`` attributes (several charts
can share one page). Each chart has ``role="img"``, an ``aria-label`` and a ``<title>``.

    roc_svg(fpr, tpr, tau_point=(0.02, 0.99), previous_point=(0.03, 0.985), label="spam")
    series_svg(times, aucs, label="AUC", y_range=(0.5, 1.0))
    series_svg(times, recalls, label="recall", target=0.99)
    steps_svg(times, taus, label="τ")
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeGuard

import numpy as np
import numpy.typing as npt

MAX_ROC_POINTS = 400
FONT = 'font-family="sans-serif"'
# XML 1.0 forbids the C0 controls other than tab, newline and return, lone surrogates and
# U+FFFE/U+FFFF: such characters in a label would make the page's SVG unparseable
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def text(value: str) -> str:
    """``value`` safe as XML/HTML text or attribute value: escaped, forbidden characters dropped.

    >>> text('<script>alert("x")</script>\\x00')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return html.escape(_NOT_XML.sub("", value), quote=True)


def thin(
    x: npt.ArrayLike, y: npt.ArrayLike, max_points: int = MAX_ROC_POINTS
) -> npt.NDArray[np.intp]:
    """Indices of at most ``max_points`` points of the polyline (x, y), spread evenly along its
    length: the first and the last always, the rest in order (a subsequence, so a monotone
    curve stays monotone). All indices when there are no more than ``max_points``.

    >>> thin([0, 1, 2, 3, 4, 5], [0, 0, 0, 0, 0, 0], max_points=3).tolist()
    [0, 3, 5]
    >>> thin([0.0, 1.0], [0.0, 1.0]).tolist()
    [0, 1]
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = xs.size
    if n <= max_points:
        return np.arange(n, dtype=np.intp)
    along = np.r_[0.0, np.cumsum(np.hypot(np.diff(xs), np.diff(ys)))]
    # max_points - 1 marks evenly spaced from 0 along the length, and the last point
    marks = np.linspace(0.0, along[-1], max_points)[:-1]
    picked = np.minimum(np.searchsorted(along, marks, side="left"), n - 1)
    return np.unique(np.r_[0, picked, n - 1]).astype(np.intp)


@dataclass(frozen=True)
class _Frame:
    """Data (x0..x1, y0..y1) onto the pixel box (left..right, bottom..top); outside values are
    clamped to the box."""

    x0: float
    x1: float
    y0: float
    y1: float
    left: float
    top: float
    right: float
    bottom: float

    def px(self, x: float) -> float:
        share = (x - self.x0) / (self.x1 - self.x0) if self.x1 > self.x0 else 0.5
        return self.left + min(max(share, 0.0), 1.0) * (self.right - self.left)

    def py(self, y: float) -> float:
        share = (y - self.y0) / (self.y1 - self.y0) if self.y1 > self.y0 else 0.5
        return self.bottom - min(max(share, 0.0), 1.0) * (self.bottom - self.top)

    def point(self, x: float, y: float) -> str:
        return f"{self.px(x):.1f},{self.py(y):.1f}"


def _svg(width: int, height: int, title: str, aria: str, body: list[str]) -> str:
    if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
        raise ValueError(f"width and height must be positive integers, got {width!r}, {height!r}")
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:d} {height:d}" '
            f'width="{width:d}" height="{height:d}" role="img" aria-label="{text(aria)}" {FONT} '
            'font-size="10">',
            f"<title>{text(title)}</title>",
            *body,
            "</svg>",
        ]
    )


def _label(
    x: float, y: float, value: str, anchor: str = "start", extra: str = "", fill: str = "#333"
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}"{extra}>'
        f"{text(value)}</text>"
    )


def _no_data(x: float, y: float) -> str:
    return _label(x, y, "no data yet", "middle", ' fill-opacity="0.8"')


def _lines(frame: _Frame, points: Sequence[tuple[float, float] | None], stroke: str) -> list[str]:
    """One path through the points, broken where a point is None; a lone point is a dot."""
    runs: list[list[tuple[float, float]]] = [[]]
    for p in points:
        if p is None:
            runs.append([])
        else:
            runs[-1].append(p)
    d, dots = [], []
    for run in runs:
        if len(run) == 1:
            dots.append(
                f'<circle cx="{frame.px(run[0][0]):.1f}" cy="{frame.py(run[0][1]):.1f}" r="2" '
                f'fill="{stroke}"/>'
            )
        elif run:
            d.append("M" + " L".join(frame.point(x, y) for x, y in run))
    path = (
        [f'<path d="{" ".join(d)}" fill="none" stroke="{stroke}" stroke-width="1.5"/>'] if d else []
    )
    return path + dots


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def _digits(span: float) -> int:
    """Decimals that tell three ticks over ``span`` apart (0 to 4).

    >>> _digits(1.0), _digits(0.02), _digits(2.3), _digits(100.0)
    (2, 3, 1, 0)
    """
    return 2 if span <= 0 else min(max(1 - math.floor(math.log10(span / 2)), 0), 4)


# ROC -------------------------------------------------------------------------------------------


def roc_svg(
    fpr: npt.ArrayLike,
    tpr: npt.ArrayLike,
    *,
    tau_point: tuple[float, float] | None = None,
    previous_point: tuple[float, float] | None = None,
    label: str = "",
    width: int = 360,
    height: int = 360,
    max_points: int = MAX_ROC_POINTS,
) -> str:
    """The ROC curve: x = FPR = 1 − specificity, y = recall (``ranking.roc_curve``'s points),
    with the diagonal (a random ranking), ticks 0–1 on both axes, and the operating points
    ``(fpr, recall)`` of the new τ (a filled circle) and the previous τ (a hollow square), named
    in a legend. The curve is thinned to at most ``max_points`` points (``thin``); points with a
    NaN or infinite coordinate are left out.

    >>> svg = roc_svg([0.0, 0.1, 1.0], [0.0, 0.9, 1.0], tau_point=(0.1, 0.9), label="spam")
    >>> svg.startswith("<svg") and 'role="img"' in svg and "new τ" in svg
    True
    >>> "previous τ" in svg
    False
    """
    xs, ys = np.asarray(fpr, dtype=float).ravel(), np.asarray(tpr, dtype=float).ravel()
    if xs.size != ys.size:
        raise ValueError(f"fpr and tpr differ in length: {xs.size} vs {ys.size}")
    keep = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[keep], ys[keep]
    picked = thin(xs, ys, max_points)
    xs, ys = xs[picked], ys[picked]
    left, top, right, bottom = 44.0, 24.0, width - 12.0, height - 36.0
    frame = _Frame(0.0, 1.0, 0.0, 1.0, left, top, right, bottom)
    title = f"{label}: ROC curve" if label else "ROC curve"
    body = [_label(left, 14, title, extra=' font-size="11" font-weight="bold"')]
    for i in range(6):  # grid and ticks at 0, 0.2, …, 1
        v = i / 5
        gx, gy = frame.px(v), frame.py(v)
        body += [
            f'<line x1="{gx:.1f}" y1="{top:.1f}" x2="{gx:.1f}" y2="{bottom:.1f}" stroke="#eee"/>',
            f'<line x1="{left:.1f}" y1="{gy:.1f}" x2="{right:.1f}" y2="{gy:.1f}" stroke="#eee"/>',
            _label(gx, bottom + 12, f"{v:.1f}", "middle"),
            _label(left - 4, gy + 3, f"{v:.1f}", "end"),
        ]
    body += [
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
        f'height="{bottom - top:.1f}" fill="none" stroke="#999"/>',
        f'<line x1="{frame.px(0):.1f}" y1="{frame.py(0):.1f}" x2="{frame.px(1):.1f}" '
        f'y2="{frame.py(1):.1f}" stroke="#bbb" stroke-dasharray="4 3"/>',
        _label((left + right) / 2, height - 6, "false-positive rate (1 − specificity)", "middle"),
        _label(
            12,
            (top + bottom) / 2,
            "recall",
            "middle",
            f' transform="rotate(-90 12 {(top + bottom) / 2:.1f})"',
        ),
    ]
    if xs.size:
        body += _lines(frame, list(zip(xs.tolist(), ys.tolist())), "#1f5fa8")
    else:
        body.append(_no_data((left + right) / 2, (top + bottom) / 2))
    aria = [f"{title}, {xs.size} points"]
    legend: list[tuple[str, str, tuple[float, float]]] = []
    for name, point in (("new τ", tau_point), ("previous τ", previous_point)):
        if point is not None and all(_finite(c) for c in point):
            legend.append((name, _marker(name, frame.px(point[0]), frame.py(point[1])), point))
            aria.append(f"{name} at FPR {point[0]:.3f}, recall {point[1]:.3f}")
    if legend:  # lower right, below any curve better than the diagonal
        lx, ly = right - 204, bottom - 8 - 14 * len(legend)
        body.append(
            f'<rect x="{lx:.1f}" y="{ly:.1f}" width="200.0" height="{14 * len(legend) + 4:.1f}" '
            'fill="#fff" fill-opacity="0.85" stroke="#ddd"/>'
        )
    for i, (name, mark, (x, y)) in enumerate(legend):
        body.append(mark)
        row = bottom - 12 - 14 * (len(legend) - 1 - i)
        body += [
            _marker(name, right - 196, row - 3),
            _label(right - 188, row, f"{name}: FPR {x:.3f}, recall {y:.3f}"),
        ]
    return _svg(width, height, title, "; ".join(aria), body)


def _marker(name: str, x: float, y: float) -> str:
    if name == "new τ":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#d62728" stroke="#fff"/>'
    return (
        f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7.0" height="7.0" fill="#fff" '
        'stroke="#555" stroke-width="1.5"/>'
    )


# Time series -----------------------------------------------------------------------------------


def series_svg(
    times: Sequence[datetime],
    values: Sequence[float | None],
    *,
    label: str,
    y_range: tuple[float, float] | None = None,
    target: float | None = None,
    width: int = 360,
    height: int = 120,
) -> str:
    """A line over time: ``values[i]`` at ``times[i]`` (sorted by time; naive times are UTC), a
    gap where a value is None, NaN or infinite; a dashed line at ``target``; the first and last
    time under the x axis (ISO 8601, UTC), ticks at the bottom, middle and top of ``y_range``
    (default: the values' and the target's range). Without any value: "no data yet".

    >>> t = [datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)]
    >>> svg = series_svg(t, [0.98, None], label="recall", target=0.99)
    >>> "2026-11-01 00:00Z" in svg and "stroke-dasharray" in svg
    True
    >>> "no data yet" in series_svg([], [], label="recall")
    True
    """
    return _time_chart(
        times,
        values,
        label=label,
        y_range=y_range,
        target=target,
        width=width,
        height=height,
        step=False,
        until=None,
    )


def steps_svg(
    times: Sequence[datetime],
    taus: Sequence[float | None],
    *,
    label: str,
    until: datetime | None = None,
    width: int = 360,
    height: int = 120,
) -> str:
    """A step chart of τ over its versions: ``taus[i]`` holds from ``times[i]`` (the version's
    creation) to the next version, the last one until ``until`` (if later); a dot per version.
    Otherwise as ``series_svg``.

    >>> t = [datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)]
    >>> svg = steps_svg(t, [-5.0, -6.0], label="τ")
    >>> svg.count("<circle")
    2
    """
    return _time_chart(
        times,
        taus,
        label=label,
        y_range=None,
        target=None,
        width=width,
        height=height,
        step=True,
        until=until,
    )


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _when(moment: datetime, short: bool) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%SZ" if short else "%Y-%m-%d %H:%MZ")


def _time_chart(
    times: Sequence[datetime],
    values: Sequence[float | None],
    *,
    label: str,
    y_range: tuple[float, float] | None,
    target: float | None,
    width: int,
    height: int,
    step: bool,
    until: datetime | None,
) -> str:
    if len(times) != len(values):
        raise ValueError(f"times and values differ in length: {len(times)} vs {len(values)}")
    if y_range is not None and not (all(_finite(v) for v in y_range) and y_range[0] < y_range[1]):
        raise ValueError(f"y_range must be two finite numbers, low < high; got {y_range}")
    pairs = sorted(
        ((_utc(t), float(v) if _finite(v) else None) for t, v in zip(times, values)),
        key=lambda p: p[0],
    )
    left, top, right, bottom = 44.0, 20.0, width - 12.0, height - 18.0
    shown = [v for _, v in pairs if v is not None]
    if not shown:
        return _svg(
            width,
            height,
            label,
            f"{label}: no data yet",
            [
                _label(left, 12, label, extra=' font-size="11" font-weight="bold"'),
                f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
                f'height="{bottom - top:.1f}" fill="none" stroke="#ccc"/>',
                _no_data((left + right) / 2, (top + bottom) / 2 + 3),
            ],
        )
    first, last = pairs[0][0], pairs[-1][0]
    if until is not None and _utc(until) > last:
        last = _utc(until)
    if y_range is not None:
        lo, hi = float(y_range[0]), float(y_range[1])
    else:
        known = shown + ([float(target)] if target is not None and _finite(target) else [])
        lo, hi = min(known), max(known)
        pad = (hi - lo) * 0.08 if hi > lo else max(abs(lo) * 0.05, 0.05)
        lo, hi = lo - pad, hi + pad
    frame = _Frame(first.timestamp(), last.timestamp(), lo, hi, left, top, right, bottom)
    digits = _digits(hi - lo)
    shown_digits = max(digits, 3)  # the latest value and the target: finer than the ticks
    latest = shown[-1]
    body = [
        _label(left, 12, label, extra=' font-size="11" font-weight="bold"'),
        _label(right, 12, f"latest {latest:.{shown_digits}f}", "end"),
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
        f'height="{bottom - top:.1f}" fill="none" stroke="#999"/>',
    ]
    for tick in (lo, (lo + hi) / 2, hi):
        gy = frame.py(tick)
        body += [
            f'<line x1="{left:.1f}" y1="{gy:.1f}" x2="{right:.1f}" y2="{gy:.1f}" stroke="#eee"/>',
            _label(left - 4, gy + 3, f"{tick:.{digits}f}", "end"),
        ]
    short = (last - first).total_seconds() < 3600
    body += [
        _label(left, height - 5, _when(first, short)),
        _label(right, height - 5, _when(last, short), "end"),
    ]
    if target is not None and _finite(target):
        ty = frame.py(target)
        body += [
            f'<line x1="{left:.1f}" y1="{ty:.1f}" x2="{right:.1f}" y2="{ty:.1f}" stroke="#d62728" '
            'stroke-dasharray="4 3"/>',
            _label(right - 2, ty - 3, f"target {target:.{shown_digits}f}", "end", fill="#d62728"),
        ]
    points: list[tuple[float, float] | None] = []
    previous: float | None = None
    for moment, v in pairs:
        x = moment.timestamp()
        if step and previous is not None:
            points.append((x, previous))  # the version before holds until this one
        points.append(None if v is None else (x, v))
        previous = v
    if step and previous is not None and last > pairs[-1][0]:
        points.append((last.timestamp(), previous))  # the last version holds until `until`
    body += _lines(frame, points, "#1f5fa8")
    if step:
        body += [
            f'<circle cx="{frame.px(m.timestamp()):.1f}" cy="{frame.py(v):.1f}" r="2.5" '
            'fill="#1f5fa8"/>'
            for m, v in pairs
            if v is not None
        ]
    aria = f"{label}: {len(shown)} values from {_when(first, short)} to {_when(last, short)}, " + (
        f"latest {latest:.{shown_digits}f}"
    )
    return _svg(width, height, label, aria, body)
