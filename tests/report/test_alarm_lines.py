"""The dashboard's list of a monitor run's alarms is typed (``AlarmLine``): step, kind and message of each
alarm, the step taken from its row when the alarm has none, malformed alarms left out."""

from __future__ import annotations

import json

from collapse_probe.report.runs import AlarmLine, load_run, monitor_alarms


def test_the_alarms_of_a_monitor_run_are_alarm_lines(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"kind": "monitor"}))
    rows = [
        {"step": 1, "alarms": []},
        {"step": 2, "alarms": [{"kind": "collapse", "message": "collapsed"}, "not an alarm"]},
        {"step": 3, "alarms": [{"kind": "strategy_entropy", "step": 3, "message": "fell"}, {"step": True}]},
    ]
    (tmp_path / "monitor.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    alarms = monitor_alarms(load_run(tmp_path))
    assert alarms == [
        {"step": 2, "kind": "collapse", "message": "collapsed"},
        {"step": 3, "kind": "strategy_entropy", "message": "fell"},
    ]
    assert all(list(a) == list(AlarmLine.__annotations__) for a in alarms)
