"""config/grafana/filterd-dashboard.json: valid JSON Grafana can import, its data source a
variable, and every metric its panels query one that filterd exports."""

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DASHBOARD = Path(__file__).resolve().parents[2] / "config" / "grafana" / "filterd-dashboard.json"


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every query of every panel."""
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def test_the_data_source_is_a_variable(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        sources = [panel["datasource"], *(t["datasource"] for t in panel["targets"])]
        assert all(s == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"} for s in sources), panel[
            "title"
        ]


def test_panels_are_well_formed(dashboard: dict[str, Any]) -> None:
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        assert all(t["expr"].strip() for t in panel["targets"]), panel["title"]
    # no two panels overlap
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        g = panel["gridPos"]
        cell = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & cell, f"{panel['title']} overlaps another panel"
        cells |= cell


def test_every_queried_metric_is_exported(
    dashboard: dict[str, Any],
    metric_names: Callable[[str], set[str]],
    assert_exported: Callable[[set[str], str], None],
) -> None:
    used = set().union(*(metric_names(expr) for _title, expr in queries(dashboard)))
    assert_exported(used, "the Grafana dashboard")


def test_every_exported_metric_has_a_panel(
    dashboard: dict[str, Any], metric_names: Callable[[str], set[str]], exported_metrics: set[str]
) -> None:
    used = set().union(*(metric_names(expr) for _title, expr in queries(dashboard)))
    families = {
        name.removesuffix("_bucket") for name in exported_metrics if name.endswith("_bucket")
    }
    shown = {
        name
        for name in exported_metrics
        if name in used or any(name.startswith(f) and f + "_bucket" in used for f in families)
    }
    assert not exported_metrics - shown, f"no panel shows {sorted(exported_metrics - shown)}"


def test_the_metric_check_can_fail(
    metric_names: Callable[[str], set[str]], exported_metrics: set[str]
) -> None:
    used = metric_names(
        'sum by (outcome) (rate(filterd_mesages_total{job=~"$job"}[$__rate_interval]))'
    )
    assert used == {"filterd_mesages_total"}
    assert used - exported_metrics == used


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_every_query_is_valid_promql(dashboard: dict[str, Any], tmp_path: Path) -> None:
    """promtool parses each query, as a recording rule, with Grafana's variables filled in."""
    variables = {"$__rate_interval": "5m", "$job": ".*", "$instance": ".*"}
    rules = []
    for i, (title, expr) in enumerate(queries(dashboard)):
        for variable, value in variables.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, f"{title}: a variable the dashboard does not define"
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    path = tmp_path / "queries.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))  # YAML ⊃ JSON
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
