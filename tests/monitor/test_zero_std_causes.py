"""The monitor's zero-std groups by cause: all-success / all-fail, and simulator-caused (the simulator's
training replies of the group in one class at every turn), per step, as rows and scalars."""

from __future__ import annotations

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor import CollapseMonitor


def test_zero_std_groups_by_cause_by_hand():
    m = CollapseMonitor(partition="exact")
    # group a: both rollouts heard "no thanks" then "bye" and both failed -> zero-std, all fail, simulator-caused
    # group b: replies differ at turn 1, both succeeded -> zero-std, all success, not simulator-caused
    # group c: rewards differ -> not zero-std
    for rollout, replies in {"a0": ["no thanks", "bye"], "a1": ["no thanks", "bye"], "b0": ["yes", "ok"],
                             "b1": ["yes", "sure, why not"], "c0": ["maybe"], "c1": ["maybe"]}.items():  # fmt: skip
        for r in replies:
            m.record_turn(rollout, r)
    row = m.end_step(0, rewards=[0.0, 0.0, 1.0, 1.0, 1.0, 0.0], groups=["a", "a", "b", "b", "c", "c"],
                     rollouts=["a0", "a1", "b0", "b1", "c0", "c1"])  # fmt: skip
    z = row["zero_std"]
    assert row["zero_std_share"] == pytest.approx(2 / 3)
    assert z["zero_std_share"] == pytest.approx(2 / 3)
    assert z["all_success_share"] == pytest.approx(1 / 3) and z["all_fail_share"] == pytest.approx(1 / 3)
    assert z["simulator_caused_share"] == pytest.approx(0.5) and z["zero_std_with_replies"] == 2
    sc = m.scalars(row)
    assert sc["collapse/zero_std_sim_caused"] == pytest.approx(0.5)
    assert sc["collapse/zero_std_all_fail"] == pytest.approx(1 / 3)


def test_without_rollouts_the_cause_is_unknown_and_bad_lengths_are_refused():
    m = CollapseMonitor(partition="exact")
    row = m.end_step(0, rewards=[1.0, 1.0, 0.0, 1.0], groups=["a", "a", "b", "b"])
    assert row["zero_std"]["all_success_share"] == pytest.approx(0.5)
    assert row["zero_std"]["simulator_caused_share"] is None  # which replies belong to which reward: not said
    with pytest.raises(ConfigError, match="rollouts"):
        m.end_step(1, rewards=[1.0, 1.0], groups=["a", "a"], rollouts=["x"])
