"""The collapse alarm: a run-wide sequential test (small steps add up; a false alarm anywhere in a run
has chance ≤ 1 − level), and the pooled window that describes the recent steps."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from collapse_probe.integrations.monitor import CollapseMonitor
from collapse_probe.integrations.monitor._core import alarm_window

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


def test_runs_at_the_threshold_rarely_alarm_and_collapses_alarm_fast():
    """The benchmark's own check, small: 1,000 steps at ε = ε* = 0.2 (the run-wide guarantee's edge) and a
    collapse to [.98, .02] at 2 states x 8 replies (measured at 400 seeds: 0.003 and 0.925)."""
    r = _bench().check(60, 2, 8, collapse_at=30, stationary=1000)
    assert r["false"] <= 0.05, r
    assert r["alarmed_within"] >= 0.8 and r["early"] == 0, r


def test_the_alarm_is_the_run_wide_test_and_the_row_shows_it_and_the_window():
    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=8, partition="exact")
    rows = []
    for step in range(6):
        for s in range(2):
            m.record_turn(f"r{step}-{s}", "same", ["same"] * 7, turn=0)
        rows.append(m.end_step(step))
    first = rows[0]["collapse_error_alarm_test"]
    assert first["bet"] == 0.0 and first["e_value"] == 1.0 and rows[0]["alarms"] == []  # nothing to bet from yet
    assert rows[0]["collapse_error_pooled"]["window"] == 1
    tests = [r["collapse_error_alarm_test"] for r in rows]
    assert [t["looks"] for t in tests] == [1, 2, 3, 4, 5, 6]
    assert all(b["e_value"] > a["e_value"] for a, b in zip(tests[1:], tests[2:], strict=False))
    fired = [r["step"] for r in rows if r["alarms"]]
    assert fired and all(r["collapse_error_alarm_test"]["e_value"] >= 20 for r in rows if r["alarms"])
    alarm = rows[fired[0]]["alarms"][0]
    assert alarm["kind"] == "collapse" and alarm["threshold"] == 20 and "run-wide test" in alarm["message"]
    assert rows[-1]["collapse_error_pooled"]["window"] == 4


def test_a_resumed_run_continues_the_test_from_its_last_row(tmp_path):
    def feed(m, steps):
        return [m.end_step(step) for step in steps if not m.record_turn(f"r{step}", "a", ["a"] * 7, turn=0)]

    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=8, partition="exact", out=tmp_path / "run")
    rows = feed(m, range(3))
    m.close()
    again = CollapseMonitor(shadow_fraction=1.0, shadow_samples=8, partition="exact", out=tmp_path / "run")
    more = feed(again, [2, 3])  # the trainer repeats step 2 after its checkpoint
    again.close()
    assert more[0]["collapse_error_alarm_test"]["looks"] == 3  # continues from step 1's row, not from scratch
    assert more[0]["collapse_error_alarm_test"]["started"] > rows[1]["collapse_error_alarm_test"]["started"]
    assert more[1]["collapse_error_alarm_test"]["looks"] == 4


def test_the_benchmark_s_fast_path_is_the_monitor_s_alarm():
    """``run_test`` (the alarm's test fed the draws directly, what the benchmark's large numbers use) fires
    at exactly the steps ``run`` (through CollapseMonitor) does."""
    bench = _bench()
    for seed in range(3):
        fired = bench.run(seed, 14, 6, states=2, samples=8)
        assert fired and fired == bench.run_test(seed, 14, 6, states=2, samples=8)
