"""The monitor's public methods validate their arguments: a ConfigError naming the argument, never a
wrong reading (a string as a list, a NaN reward left out) or a crash later in the step."""

from __future__ import annotations

import logging
import math

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collapse_probe.errors import ConfigError  # noqa: E402
from collapse_probe.integrations.monitor import CollapseMonitor  # noqa: E402
from collapse_probe.integrations.monitor._args import ROW_KEYS  # noqa: E402


@pytest.fixture
def monitor():
    return CollapseMonitor(shadow_samples=2, partition="exact", strategy_partition="exact")


BAD_CALLS = [
    ("rewards[1]", lambda m: m.end_step(0, rewards=[1.0, float("nan")])),
    ("rewards[0]", lambda m: m.end_step(0, rewards=[float("-inf")])),
    ("rewards[0]", lambda m: m.end_step(0, rewards=["0.5"])),
    ("rewards[0]", lambda m: m.record_results([{}])),
    ("rewards[0]", lambda m: m.record_results([True])),
    ("rewards:", lambda m: m.end_step(0, rewards="10")),
    ("rewards:", lambda m: m.record_results({"a": 1.0})),
    ("policy_texts:", lambda m: m.end_step(0, policy_texts="abc")),
    ("policy_texts:", lambda m: m.record_results([1.0], policy_texts="abc")),
    ("policy_texts[0]", lambda m: m.record_results([1.0], policy_texts=[3])),
    ("shadows:", lambda m: m.record_turn("r", "x", shadows="abc")),
    ("shadows[0]", lambda m: m.record_turn("r", "x", shadows=[1])),
    ("reply", lambda m: m.record_turn("r", None, shadows=["a"])),
    ("turn", lambda m: m.record_turn("r", "x", turn=-1)),
    ("rollout", lambda m: m.record_turn(["r"], "x")),
    ("groups[0]", lambda m: m.end_step(0, rewards=[1.0, 0.0], groups=[[1], [2]])),
    ("groups:", lambda m: m.record_results([1.0, 0.0], groups="ab")),
    ("groups:", lambda m: m.record_results([1.0, 0.0], groups=["a"])),
    ("groups:", lambda m: m.end_step(0, groups=["a"])),
    ("extra: 'step'", lambda m: m.end_step(0, extra={"step": 9})),
    ("extra: 'alarms'", lambda m: m.end_step(0, extra={"alarms": []})),
    ("extra:", lambda m: m.end_step(0, extra=[1])),
    ("record_policy text", lambda m: m.record_policy("r", 5)),
]


@pytest.mark.parametrize(("name", "call"), BAD_CALLS, ids=[n for n, _ in BAD_CALLS])
def test_a_bad_argument_is_refused_naming_it_and_leaves_the_step_untouched(monitor, name, call):
    monitor.record_turn("r0", "a", ["b"])
    with pytest.raises(ConfigError, match=f"monitor .*{name.replace('[', '.').replace(']', '.')}"):
        call(monitor)
    row = monitor.end_step(0, rewards=[1.0, 0.0], groups=["g", "g"])
    assert row["shadow_states"] == 1 and row["train_reward"] == 0.5  # the refused call recorded nothing


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"out": ""}, "out"), ({"out": "  "}, "out"), ({"out": 5}, "out"), ({"spool": ""}, "spool"),
     ({"on_alarm": "x"}, "on_alarm")],
)  # fmt: skip
def test_constructor_paths_and_callback_are_checked(tmp_path, monkeypatch, kwargs, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f"monitor {name}"):
        CollapseMonitor(partition="exact", **kwargs)
    assert list(tmp_path.iterdir()) == []  # nothing written into the working directory


def test_a_file_as_spool_is_refused(tmp_path):
    f = tmp_path / "spool"
    f.write_text("mine\n")
    with pytest.raises(ConfigError, match=r"monitor spool .*spool: is a file, not a directory"):
        CollapseMonitor(partition="exact", spool=f, worker=True)
    assert f.read_text() == "mine\n"


def test_numpy_rewards_and_none_are_accepted(monitor):
    np = pytest.importorskip("numpy")
    monitor.record_results(np.array([1.0, 0.0], dtype=np.float32), groups=("a", "a"))
    row = monitor.end_step(0, rewards=[np.float32(1.0), 0.0, None, 0], groups=[1, 1, 2, 2])
    assert row["train_reward"] == pytest.approx(1 / 3) and row["zero_std_share"] == 0.5


def test_the_row_keys_extra_may_not_use_are_the_rows_own(monitor):
    monitor.record_turn("r", "a", ["a"])
    row = monitor.end_step(0, rewards=[1.0], extra={"simulator": "s"})
    assert set(row) - {"simulator"} <= ROW_KEYS, sorted(set(row) - ROW_KEYS)
    assert row["simulator"] == "s"


def test_an_on_alarm_callback_that_raises_is_recorded_and_reported_once(caplog):
    calls = []

    def boom(alarm, monitor):
        calls.append(alarm["step"])
        raise RuntimeError("callback exploded")

    m = CollapseMonitor(shadow_samples=4, partition="exact", strategy_partition="exact", on_alarm=boom)
    with caplog.at_level(logging.WARNING, logger="collapse_probe.integrations.monitor._core"):
        for step in range(4):
            for r in range(6):
                m.record_turn(f"r{r}", "same", ["same", "same", "same"])
            m.end_step(step, rewards=[1.0] * 6)
    # the alarm pools the steps it needs (one step of 6 states x 4 replies cannot decide alone): every
    # alarm from the first one on calls the callback, and every failure of it is kept
    assert len(calls) >= 2 and calls == list(range(calls[0], 4))
    assert [e["step"] for e in m.alarm_callback_errors_] == calls
    assert m.alarm_callback_errors_[0]["error"] == "RuntimeError: callback exploded"
    assert caplog.text.count("callback exploded") == 1
    assert len(m.rows_) == 4  # the training loop went on


values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)  # fmt: skip


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(rewards=st.one_of(st.lists(values, max_size=6), values), groups=st.one_of(st.none(), st.lists(values, max_size=6),
       values), texts=st.one_of(st.none(), st.lists(values, max_size=3), values), shadows=st.one_of(
       st.none(), st.lists(values, max_size=3), values))  # fmt: skip
def test_fuzzed_arguments_are_accepted_as_given_or_refused(rewards, groups, texts, shadows):
    m = CollapseMonitor(shadow_samples=2, partition="exact", strategy_partition="exact")
    try:
        m.record_turn("r", "x", shadows)
    except ConfigError:
        pass
    try:
        row = m.end_step(0, rewards=rewards, groups=groups, policy_texts=texts)
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("monitor ")
        return
    # accepted: every reward was a finite number or None, and is counted
    if rewards is None:
        assert row["train_reward"] is None
        return
    good = [float(r) for r in rewards if r is not None]
    assert all(math.isfinite(r) for r in good)
    assert row["train_reward"] == (pytest.approx(sum(good) / len(good)) if good else None)
