"""config/prometheus/filterd-rules.yml: `promtool check rules`, the rules' unit tests
(`promtool test rules filterd-rules.test.yml`), each alert tested firing and quiet, and every
metric the rules read one that filterd exports. promtool comes from Debian's prometheus
package (.ci/run installs it)."""

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

PROMETHEUS = Path(__file__).resolve().parents[2] / "config" / "prometheus"
RULES = PROMETHEUS / "filterd-rules.yml"
RULE_TESTS = PROMETHEUS / "filterd-rules.test.yml"

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool is not installed (apt-get install prometheus)",
)


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *map(str, args)], capture_output=True, text=True, timeout=60)


def alerts(text: str) -> list[str]:
    return re.findall(r"^\s*- alert:\s*(\w+)\s*$", text, re.MULTILINE)


def expressions(text: str) -> list[str]:
    """The `expr` of every rule: inline, or a block scalar (>-) on the lines indented below."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if not match:
            continue
        indent, value = len(match.group(1)), match.group(2).strip()
        if value in (">-", ">", "|", "|-"):
            block = []
            for following in lines[i + 1 :]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                block.append(following.strip())
            value = " ".join(block)
        found.append(value.strip("'\""))
    return found


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts(RULES.read_text()))} rules found" in result.stdout


@needs_promtool
def test_the_rules_unit_tests_pass() -> None:
    result = promtool("test", "rules", RULE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@needs_promtool
def test_the_unit_tests_catch_a_broken_rule(tmp_path: Path) -> None:
    """A staleness alert at 6,000 s instead of 600 s no longer fires where the tests expect it."""
    text = RULES.read_text()
    assert "filterd_model_staleness_seconds > 600\n" in text
    (tmp_path / RULES.name).write_text(
        text.replace("staleness_seconds > 600", "staleness_seconds > 6000")
    )
    shutil.copy(RULE_TESTS, tmp_path)
    result = promtool("test", "rules", tmp_path / RULE_TESTS.name)
    assert result.returncode != 0
    assert "FilterdModelStale" in result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_quiet() -> None:
    tests = RULE_TESTS.read_text()
    names = alerts(RULES.read_text())
    assert len(names) == len(set(names)) >= 7
    for name in names:
        cases = re.findall(rf"alertname: {name}\n\s*exp_alerts:(.*)", tests)
        assert " []" in cases, f"no test that {name} stays quiet"
        assert "" in cases, f"no test that {name} fires"


def test_every_metric_the_rules_read_is_exported(
    metric_names: Callable[[str], set[str]], assert_exported: Callable[[set[str], str], None]
) -> None:
    text = RULES.read_text()
    exprs = expressions(text)
    assert len(exprs) == len(alerts(text))
    assert "filterd_not_ready == 1" in exprs
    assert_exported(set().union(*map(metric_names, exprs)), "the alert rules")
