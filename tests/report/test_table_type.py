"""Every table a report or the dashboard shows is a typed ``Table``: exactly ``columns`` and ``rows``, one
cell per column in every row."""

from __future__ import annotations

from collapse_probe.core._records import ConversationRecord
from collapse_probe.pipelines.crossplay import CrossplayConfig, crossplay_results
from collapse_probe.report._layout import Table, label_table
from collapse_probe.report.crossplay_plots import crossplay_table, labels_table
from collapse_probe.report.monitor_plots import alarm_table


def _is_table(t: object) -> bool:
    return (
        isinstance(t, dict)
        and set(t) == set(Table.__annotations__)
        and all(len(row) == len(t["columns"]) for row in t["rows"])
    )


def test_the_tables_are_what_their_type_declares():
    assert _is_table(alarm_table([{"step": 3, "alarms": [{"kind": "collapse", "message": "m", "step": 3}]}]))
    names = ["scripted:" + "a" * 40, "scripted:" + "b" * 40]
    assert _is_table(label_table(names, ["a…", "b…"], "policy"))
    recs = [ConversationRecord.make(policy="p", simulator="s", task_id=f"t{t}", reward=float(t % 2)) for t in range(3)]
    results = crossplay_results(recs, CrossplayConfig(policies=["p"], simulators=["s"], tasks=3, rollouts=1))
    results["benchmark"] = "p4g"
    assert _is_table(crossplay_table(results))
    assert labels_table(results) is None or _is_table(labels_table(results))
