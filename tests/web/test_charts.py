"""The model page's SVG charts: well-formed XML, escaped text, finite numbers, small output."""

import math
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from filterd.evaluation import ranking
from filterd.web.charts import roc_svg, series_svg, steps_svg, thin

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(\"x\")</script> & 'q' \x00\x1b"
T0 = datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg" and root.get("role") == "img" and root.get("aria-label")
    assert root.get("viewBox", "").startswith("0 0 ")
    assert root.find(f"{NS}title") is not None
    # self-contained: nothing to fetch or run, no ids to clash with other charts on the page
    for bad in ("<script", "href", "<style", "@import", "url(", " id=", "nan", "inf"):
        assert bad not in svg.lower()
    return root


def path_points(root: ET.Element) -> list[list[tuple[float, float]]]:
    """The coordinates of the chart's line, one list per unbroken run."""
    (path,) = root.iter(f"{NS}path")
    runs = [run for run in path.get("d", "").split("M") if run.strip()]
    return [
        [(float(x), float(y)) for x, y in re.findall(r"(-?[\d.]+),(-?[\d.]+)", run)] for run in runs
    ]


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def test_every_chart_escapes_a_hostile_label() -> None:
    times = [T0, T0 + timedelta(hours=1)]
    for svg in (
        roc_svg([0, 0.5, 1], [0, 0.9, 1], tau_point=(0.5, 0.9), label=HOSTILE),
        series_svg(times, [0.5, 0.6], label=HOSTILE, target=0.55),
        series_svg([], [], label=HOSTILE),
        steps_svg(times, [1.0, 2.0], label=HOSTILE),
    ):
        root = parse(svg)
        assert "<script" not in svg and "&lt;script&gt;" in svg
        clean = HOSTILE.replace("\x00", "").replace("\x1b", "")
        title = root.find(f"{NS}title")
        assert title is not None and clean in (title.text or "")
        assert clean in (root.get("aria-label") or "")


def test_the_roc_curve_is_thinned_to_a_small_monotone_polyline() -> None:
    rng = np.random.default_rng(7)
    labels = rng.random(100_000) < 0.2
    scores = rng.normal(0.0, 1.0, labels.size) + 2.0 * labels
    fpr, tpr, _ = ranking.roc_curve(scores, labels)
    assert fpr.size > 90_000
    svg = roc_svg(fpr, tpr, tau_point=(0.3, 0.97), label="spam")
    assert len(svg) < 20_000
    (line,) = path_points(parse(svg))
    assert 300 <= len(line) <= 400
    xs, ys = [p[0] for p in line], [p[1] for p in line]
    # the first point (0, 0) bottom left, the last (1, 1) top right, monotone in between
    assert xs[0] < xs[-1] and ys[0] > ys[-1]
    assert all(a <= b for a, b in zip(xs, xs[1:])) and all(a >= b for a, b in zip(ys, ys[1:]))
    # no part of the curve is skipped: no step longer than a few pixels
    assert max(math.dist(p, q) for p, q in zip(line, line[1:])) < 5.0


def test_thin_keeps_the_ends_and_the_order() -> None:
    x = np.linspace(0.0, 1.0, 1001) ** 3
    y = np.sqrt(np.linspace(0.0, 1.0, 1001))
    picked = thin(x, y, max_points=50)
    assert len(picked) <= 50 and picked[0] == 0 and picked[-1] == 1000
    assert np.all(np.diff(picked) > 0)
    with pytest.raises(ValueError):
        thin(x, y, max_points=1)


def test_the_operating_points_sit_at_their_coordinates() -> None:
    # a two-point curve gives the plot box: (0, 0) and (1, 1) in pixels
    root = parse(roc_svg([0.0, 1.0], [0.0, 1.0], tau_point=(0.25, 0.5), previous_point=(0.5, 0.75)))
    ((x0, y0), (x1, y1)) = path_points(root)[0]

    def px(fx: float, ty: float) -> tuple[float, float]:
        return x0 + fx * (x1 - x0), y0 + ty * (y1 - y0)

    circles = [(float(c.get("cx", "")), float(c.get("cy", ""))) for c in root.iter(f"{NS}circle")]
    assert px(0.25, 0.5) == pytest.approx(circles[0], abs=0.06)  # the new τ: a circle
    squares = [
        (float(r.get("x", "")) + 3.5, float(r.get("y", "")) + 3.5)
        for r in root.iter(f"{NS}rect")
        if r.get("width") == "7.0"
    ]
    assert px(0.5, 0.75) == pytest.approx(squares[0], abs=0.06)  # the previous τ: a square
    legend = " ".join(texts(root))
    assert "new τ: FPR 0.250, recall 0.500" in legend
    assert "previous τ: FPR 0.500, recall 0.750" in legend
    # without a previous τ, neither its marker nor its legend
    alone = roc_svg([0.0, 1.0], [0.0, 1.0], tau_point=(0.25, 0.5))
    assert "previous τ" not in alone and 'width="7.0"' not in alone


def test_nan_and_infinite_points_are_left_out() -> None:
    root = parse(
        roc_svg(
            [0.0, math.nan, 0.2, 1.0],
            [0.0, 0.5, math.inf, 1.0],
            tau_point=(math.nan, 0.9),
            previous_point=(0.1, math.inf),
        )
    )
    assert [len(run) for run in path_points(root)] == [2]
    assert "τ" not in " ".join(texts(root))  # neither operating point is drawn
    times = [T0 + timedelta(hours=h) for h in range(6)]
    root = parse(series_svg(times, [0.9, 0.91, math.nan, 0.92, math.inf, 0.95], label="AUC"))
    # NaN and ∞ break the line like None; a lone point between gaps is a dot
    assert [len(run) for run in path_points(root)] == [2]
    assert len(list(root.iter(f"{NS}circle"))) == 2


def test_a_series_with_gaps_a_target_and_utc_time_labels() -> None:
    times = [T0 + timedelta(days=d) for d in range(6)]
    values = [0.97, 0.98, None, None, 0.99, 0.995]
    svg = series_svg(times, values, label="recall", y_range=(0.9, 1.0), target=0.99)
    root = parse(svg)
    assert [len(run) for run in path_points(root)] == [2, 2]
    dashed = [line for line in root.iter(f"{NS}line") if line.get("stroke-dasharray")]
    (target,) = dashed
    y99 = path_points(root)[1][0][1]  # the value 0.99 sits on the target line
    assert float(target.get("y1", "")) == pytest.approx(y99, abs=0.06)
    labels = texts(root)
    assert "2026-11-01 06:30Z" in labels and "2026-11-06 06:30Z" in labels
    assert "target 0.990" in labels and "latest 0.995" in labels
    assert {"0.900", "0.950", "1.000"} <= set(labels)  # y ticks at the range's ends and middle
    # naive times are UTC; other zones are converted; the order of the input does not matter
    naive = series_svg([t.replace(tzinfo=None) for t in times], values, label="recall")
    assert "2026-11-01 06:30Z" in naive
    shifted = [t.astimezone(timezone(timedelta(hours=1))) for t in reversed(times)]
    assert series_svg(shifted, values[::-1], label="recall", y_range=(0.9, 1.0), target=0.99) == svg


def test_no_data_yet() -> None:
    for svg in (
        series_svg([], [], label="AUC"),
        series_svg([T0, T0], [None, math.nan], label="AUC"),
        steps_svg([], [], label="τ"),
        roc_svg([], []),
    ):
        assert "no data yet" in texts(parse(svg))


def test_tau_over_its_versions_is_a_step_chart() -> None:
    times = [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=3)]
    root = parse(steps_svg(times, [-5.0, -6.0, -5.5], label="τ", until=T0 + timedelta(hours=4)))
    (line,) = path_points(root)
    # each τ holds until the next version: horizontal, then vertical, …, and on to `until`
    assert len(line) == 6
    for (xa, ya), (xb, yb) in zip(line, line[1:]):
        assert xa == xb or ya == yb
    assert line[-1][1] == line[-2][1] and line[-1][0] > line[-2][0]
    assert len(list(root.iter(f"{NS}circle"))) == 3  # one dot per version
    assert "2026-11-01 10:30Z" in texts(root)  # the axis runs to `until`


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="length"):
        roc_svg([0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="length"):
        series_svg([T0], [], label="x")
    with pytest.raises(ValueError, match="y_range"):
        series_svg([T0], [1.0], label="x", y_range=(1.0, 1.0))
    with pytest.raises(ValueError, match="width"):
        series_svg([T0], [1.0], label="x", width=0)
