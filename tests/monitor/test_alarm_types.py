"""The typed alarm (:class:`~collapse_probe.integrations.monitor.Alarm`) and pooled interval describe what a monitor
row really holds: every key a raised alarm has is declared, every required one is there."""

from __future__ import annotations

from collapse_probe.integrations.monitor import Alarm, AlarmCallbackError, CollapseMonitor, PooledInterval


def _keys_fit(obj: dict, typed: type) -> bool:
    return set(typed.__required_keys__) <= set(obj) <= set(typed.__annotations__)


def test_a_collapse_alarm_and_its_pooled_interval_are_what_their_types_declare():
    seen: list[Alarm] = []

    def on_alarm(alarm: Alarm, monitor: CollapseMonitor) -> None:
        seen.append(alarm)
        raise RuntimeError("the user's callback failed")

    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=8, partition="exact", on_alarm=on_alarm)
    rows = []
    for step in range(6):
        for s in range(2):
            m.record_turn(f"r{step}-{s}", "same", ["same"] * 7, turn=0)
        rows.append(m.end_step(step))
    assert seen and seen == m.alarms_
    for alarm in seen:
        assert _keys_fit(alarm, Alarm) and alarm["kind"] == "collapse" and alarm["view"] == "meaning"
    for row in rows:
        assert _keys_fit(row["collapse_error_pooled"], PooledInterval)
    errors = m.alarm_callback_errors_
    assert errors and all(_keys_fit(e, AlarmCallbackError) and e["alarm"] == "collapse" for e in errors)
