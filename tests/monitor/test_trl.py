"""The TRL adapter for real: GRPOTrainer runs (tiny policy) with the monitor on and off."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from collapse_probe.core._resources import package_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIVERSE = f"scripted:{package_path('data', 'scripted', 'p4g_donor_diverse.json')}"
COLLAPSED = f"scripted:{package_path('data', 'scripted', 'p4g_donor_collapsed_cause.json')}"
# the diverse donor's ε is 0.65 without a cause keyword in the message and 0.6 with one, so the mean
# over a step's states lies in [0.6, 0.65]; the collapsed donor's ε is 0.05 everywhere
TRUTH = (0.6, 0.65)


def _example():
    spec = importlib.util.spec_from_file_location("trl_grpo_monitor", ROOT / "examples" / "trl_grpo_monitor.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(out: Path, *extra: str) -> None:
    args = ["--policy", "tiny", "--tasks", "4", "--generations", "2", "--max-completion-length", "8",
            "--shadow-samples", "12", "--seed", "7", "--out", str(out), *extra]  # fmt: skip
    # exact-text classes, of the donors' replies (three replies, three meanings) and of the policy's messages (whose
    # strategy partition is by meaning when the embed extra is installed): the sentence encoder is the real-model tier's
    args += ["--partition", "exact"]
    from collapse_probe.integrations.monitor import _core

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_core, "strategy_partition", lambda asked: asked or "exact")
        assert _example().main(args) == 0


@pytest.fixture(scope="module")
def switched_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("trl") / "on"
    _run(out, "--steps", "3", "--sim", DIVERSE, "--sim-after", COLLAPSED, "--switch-step", "1")
    return out


def test_rows_one_per_step_interval_covers_truth_and_alarm_follows_the_switch(switched_run):
    rows = [json.loads(line) for line in (switched_run / "monitor.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    lo, hi = rows[0]["collapse_error"]["ci95"]
    assert lo <= TRUTH[0] and TRUTH[1] <= hi
    assert rows[0]["collapse_error"]["n_states"] == 8
    collapse_steps = [r["step"] for r in rows if any(a["kind"] == "collapse" for a in r["alarms"])]
    assert collapse_steps and collapse_steps[0] in (1, 2)
    assert all(s >= 1 for s in collapse_steps)
    assert (switched_run / "report.html").stat().st_size > 10_000


def test_figures_reach_trl_log_history_under_collapse_keys(switched_run):
    history = json.loads((switched_run / "log_history.json").read_text())
    steps = [h for h in history if "loss" in h]
    assert len(steps) == 3
    rows = [json.loads(line) for line in (switched_run / "monitor.jsonl").read_text().splitlines()]
    for h, row in zip(steps, rows, strict=True):
        assert h["collapse/epsilon"] == pytest.approx(row["collapse_error"]["estimate"])
        assert h["collapse/epsilon_hi"] == pytest.approx(row["collapse_error"]["ci95"][1])
        assert "collapse/strategy_entropy" in h and "collapse/zero_std_share" in h
        assert h["rewards/collapse_monitor/mean"] == 0.0


def test_monitor_on_and_off_train_identical_weights(switched_run, tmp_path):
    off = tmp_path / "off"
    _run(off, "--steps", "3", "--sim", DIVERSE, "--sim-after", COLLAPSED, "--switch-step", "1", "--no-monitor")
    assert not (off / "monitor.jsonl").exists()
    assert (off / "weights.sha256").read_text() == (switched_run / "weights.sha256").read_text()
    history = json.loads((off / "log_history.json").read_text())
    assert not any(k.startswith("collapse/") for h in history for k in h)


def test_environment_factory_class_plays_the_simulator_and_reports_rewards():
    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor import CollapseMonitor
    from collapse_probe.integrations.monitor.trl import arena_environment

    arena = P4GArena(max_turns=2)
    tasks = arena.load_tasks(2, seed=0)
    monitor = CollapseMonitor(shadow_fraction=1.0, shadow_samples=4, partition="exact", arena=arena)
    env_cls = arena_environment(arena, monitor.wrap(DIVERSE), tasks)
    env = env_cls()
    assert env.reset(task_id=tasks[0].task_id) is None
    first = env.reply("Hi! Could you help the children?")
    assert "[DONATE" in first
    assert "[DONATE" in env.reply("Thank you!")
    assert env.reply("Bye!") == ""  # two rounds: the conversation is over
    reward = env.get_reward()
    assert reward in (0.0, 0.5, 1.0)
    row = monitor.end_step(0)
    assert row["train_reward"] == reward and row["shadow_states"] == 2
    assert row["accumulated_collapse_error"]["turns"] == 2


@pytest.mark.slow
def test_example_with_the_embedded_smollm2_policy(tmp_path):
    """The example at its defaults (real SmolLM2 weights, 4 personas x G = 4): collapse seen after the switch."""
    out = tmp_path / "smollm2"
    assert _example().main(["--steps", "4", "--sim", DIVERSE, "--sim-after", COLLAPSED, "--switch-step", "2",
                            "--out", str(out)]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (out / "monitor.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert not any(a["kind"] == "collapse" for r in rows[:2] for a in r["alarms"])
    assert any(a["kind"] == "collapse" for r in rows[2:4] for a in r["alarms"])
    assert len((out / "weights.sha256").read_text().strip()) == 64
