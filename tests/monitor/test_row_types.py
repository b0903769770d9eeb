"""The monitor's row as written matches its declared type (MonitorRow), the caller's extra fields after
the row's own."""

from __future__ import annotations

import json
from typing import NotRequired, get_origin, get_type_hints

from collapse_probe.integrations.monitor import CollapseMonitor, MonitorRow
from collapse_probe.integrations.monitor._core import (
    AccumulatedError,
    IntervalFigures,
    PooledInterval,
    ResponseEntropy,
    StrategyEntropy,
)
from collapse_probe.integrations.monitor._sequential import CollapseTestState


def _keys(typed: type) -> tuple[set[str], set[str]]:
    """(required keys, all keys) of a TypedDict, read from its annotations (the module postpones them)."""
    hints = get_type_hints(typed, include_extras=True)
    return {k for k, t in hints.items() if get_origin(t) is not NotRequired}, set(hints)


def test_a_row_holds_the_declared_fields_then_the_extra_ones(tmp_path):
    m = CollapseMonitor(partition="exact", strategy_partition="exact", out=tmp_path / "m")
    m.record_turn("r0", "[DONATE $1]", ["[DONATE $1]", "[DONATE $2]"])
    m.record_turn("r1", "[DONATE $2]", ["[DONATE $2]", "[DONATE $2]"])
    row = m.end_step(0, rewards=[1.0, 0.0], groups=["t", "t"], policy_texts=["hi", "hello"],
                     extra={"simulator": "scripted"})  # fmt: skip
    m.close()
    required, declared = _keys(MonitorRow)
    assert required <= set(row)
    assert [k for k in row if k not in declared] == ["simulator"] and list(row)[-1] == "simulator"
    assert {"alarms", "monitor_seconds", "zero_std", "collapse_error_pooled", "collapse_error_alarm_test"} <= set(row)
    assert set(row["collapse_error"]) == _keys(IntervalFigures)[0]
    blocks = {"response_entropy": ResponseEntropy, "strategy_entropy": StrategyEntropy,
              "accumulated_collapse_error": AccumulatedError}  # fmt: skip
    for key, typed in blocks.items():
        assert set(row[key] or {}) == _keys(typed)[1], key
    pooled = row.get("collapse_error_pooled")
    assert pooled is not None and set(pooled) == _keys(PooledInterval)[1]
    test = row.get("collapse_error_alarm_test")
    assert test is not None and set(test) == _keys(CollapseTestState)[1]
    # the row returned is the row written, and a resumed monitor reads it back as it was
    (line,) = (tmp_path / "m" / "monitor.jsonl").read_text().splitlines()
    assert json.loads(line) == row
    again = CollapseMonitor(partition="exact", strategy_partition="exact", out=tmp_path / "m")
    assert again.rows_ == [row]
    again.close()
