"""The collapse alarm pools the shadowed states of recent steps, so small steps can alarm too."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from collapse_probe.monitor import CollapseMonitor
from collapse_probe.monitor._core import alarm_window

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("monitor_alarm", ROOT / "benchmarks" / "monitor_alarm.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_window_is_as_short_as_the_evidence_allows():
    assert alarm_window([[8] * 16], 0.2) == 1  # 64 held-out trials: identical replies give 0.056
    assert alarm_window([[8, 8]] * 10, 0.2) == 4  # 2 x 4 trials per step
    assert alarm_window([[20, 20]] * 10, 0.2) == 1
    assert alarm_window([[8, 8]] * 2, 0.2) == 2  # all there is
    assert alarm_window([[8, 8]] * 10, 0.05) > alarm_window([[8, 8]] * 10, 0.2)


def test_two_states_of_eight_replies_alarm_soon_after_a_collapse_and_never_before():
    bench = _bench()
    delays = []
    for seed in range(10):
        fired = bench.run(seed, 12, 6, states=2, samples=8)
        assert not [f for f in fired if f < 6], f"seed {seed}: alarm before the collapse"
        delays.append(min(f for f in fired) - 6 + 1 if fired else 99)
    assert sum(d <= 5 for d in delays) >= 8, delays


def test_no_false_alarm_over_stationary_steps_at_epsilon_0_4():
    bench = _bench()
    for seed in range(3):
        assert bench.run(1000 + seed, 100, None, states=2, samples=8) == []


def test_a_step_too_small_to_decide_is_warned_once_and_the_row_shows_the_window(caplog):
    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=8, partition="exact")
    rows = []
    with caplog.at_level(logging.WARNING, logger="collapse_probe.monitor._core"):
        for step in range(6):
            for s in range(2):
                m.record_turn(f"r{step}-{s}", "same", ["same"] * 7, turn=0)
            rows.append(m.end_step(step))
    warned = [r for r in caplog.records if "cannot raise the collapse alarm alone" in r.getMessage()]
    assert len(warned) == 1
    assert rows[0]["collapse_error_pooled"]["window"] == 1 and rows[0]["alarms"] == []
    last = rows[-1]["collapse_error_pooled"]
    assert last["window"] == 4 and last["steps"] == [2, 5] and last["n_states"] == 8
    assert [a["window"] for a in rows[-1]["alarms"] if a["kind"] == "collapse"] == [4]
    assert "steps 2–5" in rows[-1]["alarms"][0]["message"]
    assert rows[-1]["collapse_error"]["ci95"][1] > 0.2  # the step alone could not have alarmed
