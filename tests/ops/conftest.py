"""The operations pack in config/ (systemd units, Prometheus rules, Grafana dashboard) checked
with the real tools where this machine has them, and against the metrics filterd exports.

exported_metrics        every sample name filterd's registry exposes (filterd_messages_total, …)
assert_exported(used, where)  fails naming the metrics `where` reads that filterd does not export
metric_names(expr)      the metric names a PromQL expression reads
"""

import re
from collections.abc import Callable

import pytest

from filterd.observe.metrics import Metrics

# the sample names Prometheus scrapes for each metric type (prometheus_client's exposition)
SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
    "info": ("_info",),
}

# PromQL words that are not metric names: keywords, binary operators, literals
PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}
LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")


def exported_names() -> set[str]:
    names: set[str] = set()
    for family in Metrics().registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def promql_metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression: identifiers outside strings, label matchers,
    ranges and label lists that are not functions or keywords.

    >>> sorted(promql_metric_names('sum by (role) (rate(a_total{x="b_c"}[5m])) / on (job) b > 1e3'))
    ['a_total', 'b']
    """
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings (label values, Grafana variables)
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges and subqueries
    expr = LABEL_LISTS.sub("", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", expr):
        function = expr[match.end() :].lstrip().startswith("(")
        if not function and match.group().lower() not in PROMQL_WORDS:
            names.add(match.group())
    return names


@pytest.fixture(scope="session")
def exported_metrics() -> set[str]:
    return exported_names()


@pytest.fixture(scope="session")
def metric_names() -> Callable[[str], set[str]]:
    return promql_metric_names


@pytest.fixture
def assert_exported(exported_metrics: set[str]) -> Callable[[set[str], str], None]:
    def check(used: set[str], where: str) -> None:
        missing = used - exported_metrics - {"up"}  # up: Prometheus's own, per scrape target
        assert not missing, f"{where} reads metrics filterd does not export: {sorted(missing)}"

    return check
