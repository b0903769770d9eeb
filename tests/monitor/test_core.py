"""The framework-free monitor: shadow sampling, the two views, the alarms, identity, the run directory."""

from __future__ import annotations

import asyncio
import json
import random

import numpy as np
import pytest

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor import CollapseMonitor, MonitorConfig, play_simulator_turns, rng_isolated
from collapse_probe.models import GenerationResult
from collapse_probe.models.scripted import ScriptedModel
from collapse_probe.simulators import Participant

# eps = 1 - 0.5 = 0.5 at every state; distinct donation decisions, so every partition agrees
DIVERSE = [("Sure, [DONATE $2]", 0.5), ("A little. [DONATE $1]", 0.3), ("No thanks. [DONATE $0]", 0.2)]
COLLAPSED = [("Sure, [DONATE $2]", 1.0)]


class Recording:
    """A scripted backend that remembers every request it was asked."""

    def __init__(self, dist):
        self.inner = ScriptedModel("scripted:test", dist)
        self.spec = self.inner.spec
        self.calls: list[list] = []

    async def generate(self, requests):
        self.calls.append(list(requests))
        return await self.inner.generate(requests)


def _episodes(arena, tasks, step, per_task=4):
    eps = []
    for i, t in enumerate(tasks):
        for g in range(per_task):
            ep = arena.new_episode(t, seed=10_000 * step + 10 * i + g)
            ep.messages.append({"role": "policy", "content": ["Hello!", "Please help the kids."][g % 2]})
            eps.append(ep)
    return eps


def _play_steps(monitor, sim, arena, tasks, steps, start=0):
    rows, texts = [], []
    for k in range(start, start + steps):
        eps = _episodes(arena, tasks, k)
        asyncio.run(play_simulator_turns(arena, eps, sim, keys=[f"{k}:{i}" for i in range(len(eps))]))
        texts.append([e.messages[-1]["content"] for e in eps])
        if monitor is not None:
            scores = asyncio.run(arena.score(eps))
            rows.append(
                monitor.end_step(
                    k,
                    rewards=[s.reward for s in scores],
                    groups=[e.task.task_id for e in eps],
                    policy_texts=[e.messages[0]["content"] for e in eps],
                )
            )
    return rows, texts


@pytest.fixture
def arena():
    return P4GArena(max_turns=1, elicit=False)


def test_systematic_sampling_shadows_exactly_the_fraction():
    m = CollapseMonitor(shadow_fraction=0.25, partition="exact", strategy_partition="exact")
    picks = [m._pick_turns(8) for _ in range(4)]
    assert sum(len(p) for p in picks) == 8  # 32 turns x 0.25
    assert all(len(p) == 2 for p in picks)  # the count per call varies by at most one
    assert CollapseMonitor(shadow_fraction=1.0, partition="exact", strategy_partition="exact")._pick_turns(5) == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_interval_covers_known_epsilon_and_alarm_fires_only_after_collapse(arena):
    tasks = arena.load_tasks(4, seed=0)
    m = CollapseMonitor(
        shadow_fraction=1.0,
        shadow_samples=8,
        partition="exact",
        strategy_partition="exact",
        arena=arena,
        alarm_views=("meaning", "reward"),
    )
    diverse = m.wrap(Participant("diverse", ScriptedModel("scripted:d", DIVERSE)))
    collapsed = m.wrap(Participant("collapsed", ScriptedModel("scripted:c", COLLAPSED)))
    before, _ = _play_steps(m, diverse, arena, tasks, 5)
    after, _ = _play_steps(m, collapsed, arena, tasks, 2, start=5)
    covered = [r["collapse_error"]["ci95"][0] <= 0.5 <= r["collapse_error"]["ci95"][1] for r in before]
    assert sum(covered) >= 4
    assert all(r["shadow_states"] == 16 and r["collapse_error"]["n"] == 8 for r in before + after)
    assert not any(a["kind"] == "collapse" for r in before for a in r["alarms"])
    # the run-wide test bets only on what earlier steps showed: the first collapsed step sets the bet,
    # the second alarms
    assert not after[0]["alarms"]
    assert {a["view"] for a in after[1]["alarms"] if a["kind"] == "collapse"} == {"meaning", "reward"}
    # the reward view of these replies: rewards 1 / 0.5 / 0, all different, so the same ε
    assert before[0]["reward_collapse_error"]["plugin"] == before[0]["collapse_error"]["plugin"]
    # Lemma 3.3: the N replies of one state share the agent's prefix, and this donor ignores it
    share = before[0]["sim_variance_share"]
    assert share["share"] > 0.9  # unbiased (ANOVA) components: the between-state part is noise only
    assert after[0]["sim_variance_share"]["share"] is None  # no reward variance at all
    assert after[0]["zero_std_share"] == 1.0 and after[0]["train_reward"] == 1.0
    assert after[0]["accumulated_collapse_error"]["estimate"] == pytest.approx(after[0]["collapse_error"]["estimate"])


@pytest.mark.realmodel  # the encoder loads inside the monitor: the streams must not move
def test_training_replies_and_random_streams_are_untouched(arena):
    tasks = arena.load_tasks(2, seed=0)
    plain = Participant("d", ScriptedModel("scripted:d", DIVERSE))
    _, off = _play_steps(None, plain, arena, tasks, 2)
    m = CollapseMonitor(shadow_fraction=0.5, shadow_samples=4, partition="embedding", arena=arena)
    random.seed(5)
    np.random.seed(5)
    torch = pytest.importorskip("torch")
    torch.manual_seed(5)
    state = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state().clone())
    _, on = _play_steps(m, m.wrap(plain), arena, tasks, 2)  # loads the sentence encoder inside the guard
    assert on == off
    assert random.getstate() == state[0]
    assert np.array_equal(np.random.get_state()[1], state[1])
    assert torch.equal(torch.get_rng_state(), state[2])


def test_shadow_requests_have_their_own_seeds_and_ride_in_the_training_batch(arena):
    tasks = arena.load_tasks(2, seed=0)
    backend = Recording(DIVERSE)
    m = CollapseMonitor(
        shadow_fraction=0.5, shadow_samples=5, partition="exact", strategy_partition="exact", arena=arena
    )
    sim = m.wrap(Participant("d", backend))
    _play_steps(m, sim, arena, tasks, 1)
    (call,) = backend.calls  # one call: training requests and their shadows together
    train, shadows = call[:8], call[8:]
    assert len(shadows) == 4 and all(r.n == 4 for r in shadows)
    assert {r.params.seed for r in train}.isdisjoint({r.params.seed for r in shadows})
    assert len({r.params.seed for r in shadows}) == 4


def test_separate_batching_guards_a_callable_that_draws_from_global_random(arena):
    m = CollapseMonitor(
        shadow_fraction=1.0, shadow_samples=6, partition="exact", strategy_partition="exact", arena=arena
    )
    replies = ["[DONATE $0]", "[DONATE $1]", "[DONATE $2]"]
    sim = m.wrap(lambda messages: random.choice(replies))
    assert sim.batching == "separate"
    from collapse_probe.models import GenerationRequest

    random.seed(1)
    (res,) = asyncio.run(sim.generate([GenerationRequest(messages=({"role": "user", "content": "hi"},))]))
    after_training_call = random.getstate()
    random.seed(1)
    random.choice(replies)  # what the training call alone consumes
    assert after_training_call == random.getstate()
    (req,) = sim.pending_  # the shadow replies wait for their turn to be recorded
    assert len(sim.pending_[req]) == 5


def test_the_reward_view_alarms_only_when_asked(arena):
    m = CollapseMonitor(shadow_fraction=1.0, partition="exact", strategy_partition="exact", arena=arena)
    tagless = m.wrap(
        Participant("t", ScriptedModel("scripted:t", [("Maybe.", 0.4), ("I like it.", 0.3), ("Who?", 0.3)]))
    )
    (row,), _ = _play_steps(m, tagless, arena, arena.load_tasks(2, seed=0), 1)
    assert row["reward_collapse_error"]["ci95"][1] < 0.2  # the reward pays every reply 0 ...
    assert row["alarms"] == []  # ... but the default alarm watches the meaning view, which is diverse


def test_empty_shadow_replies_are_dropped_and_counted(arena):
    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=4, partition="exact", strategy_partition="exact")
    m.record_turn("r0", "[DONATE $1]", ["", "  ", "[DONATE $1]"])
    m.record_turn("r1", "[DONATE $1]", ["", "", ""])
    row = m.end_step(0)
    assert row["shadow_states"] == 1 and row["empty_replies"] == 5 and row["shadow_failures"] == 1
    assert row["collapse_error"]["n"] == 2


def test_strategy_entropy_alarm_needs_falling_entropy_and_rising_reward():
    diverse = [f"opening number {i}" for i in range(8)]

    def run(reward_of):
        m = CollapseMonitor(partition="exact", strategy_partition="exact", entropy_window=4)
        kinds = []
        for k in range(4):
            texts = diverse if k < 2 else ["the same opening"] * 8
            row = m.end_step(k, rewards=[reward_of(k)] * 8, policy_texts=texts)
            kinds.append([a["kind"] for a in row["alarms"]])
        return kinds

    assert run(lambda k: 0.1 * k) == [[], [], [], ["strategy_entropy"]]
    assert run(lambda k: 0.5) == [[], [], [], []]  # entropy fell but reward did not rise


def test_zero_std_share_and_train_reward_by_hand():
    m = CollapseMonitor(partition="exact", strategy_partition="exact")
    row = m.end_step(0, rewards=[1.0, 1.0, 0.0, 1.0, None], groups=["a", "a", "b", "b", "c"])
    assert row["train_reward"] == pytest.approx(0.75)
    assert row["zero_std_share"] == pytest.approx(0.5)  # group a is all-tied; b is not; c has no score


def test_run_directory_rows_resume_and_report(tmp_path, arena):
    out = tmp_path / "mon"
    m = CollapseMonitor(shadow_fraction=1.0, partition="exact", strategy_partition="exact", arena=arena, out=out)
    for k in range(3):
        m.record_turn(f"{k}", "[DONATE $1]", ["[DONATE $1]", "[DONATE $2]"])
        m.end_step(k)
    m.close()
    assert (out / "report.html").stat().st_size > 10_000
    assert json.loads((out / "config.json").read_text())["kind"] == "monitor"
    # a resumed training run repeats step 1: its row replaces the old rows from step 1 on
    again = CollapseMonitor(shadow_fraction=1.0, partition="exact", strategy_partition="exact", arena=arena, out=out)
    assert [r["step"] for r in again.rows_] == [0, 1, 2]
    again.end_step(1)
    steps = [json.loads(line)["step"] for line in (out / "monitor.jsonl").read_text().splitlines()]
    assert steps == [0, 1]
    with pytest.raises(ConfigError, match="monitor"):  # another configuration in the same directory
        CollapseMonitor(shadow_fraction=0.5, partition="exact", strategy_partition="exact", arena=arena, out=out)


def test_worker_monitors_spool_into_the_trainer_side_monitor(tmp_path, arena):
    spool = tmp_path / "spool"
    from collapse_probe.benchmarks.p4g import ELICITATION

    workers = [
        CollapseMonitor(partition="exact", strategy_partition="exact", arena=arena, spool=spool, worker=True)
        for _ in range(2)
    ]
    for i, w in enumerate(workers):
        ep = arena.new_episode(arena.load_tasks(1)[0], 0)
        # the donation question: the state where the P4G reward reads the reply (its reward_class hook)
        ep.messages = [{"role": "policy", "content": ELICITATION, "meta": {"elicitation": True}}]
        w.record_turn(f"w{i}", "[DONATE $2]", ["[DONATE $2]", "[DONATE $0]"], context=ep)
        w.record_results([1.0], groups=["t"], policy_texts=[f"hi {i}"])
    with pytest.raises(ConfigError, match="worker"):
        workers[0].end_step(0)
    driver = CollapseMonitor(partition="exact", strategy_partition="exact", arena=arena, spool=spool)
    row = driver.end_step(0)
    assert row["shadow_states"] == 2 and row["collapse_error"]["plugin"] == pytest.approx(1 / 3)
    assert row["reward_collapse_error"]["n_states"] == 2 and row["train_reward"] == 1.0
    assert row["strategy_entropy"]["n_messages"] == 2
    assert list(spool.iterdir()) == []
    assert driver.end_step(1)["shadow_states"] == 0


def test_tensorboard_tracker_gets_the_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    m = CollapseMonitor(partition="exact", strategy_partition="exact", out=tmp_path / "tb", trackers=("tensorboard",))
    m.record_turn("r", "[DONATE $1]", ["[DONATE $1]", "[DONATE $2]"])
    row = m.end_step(0)
    assert m.scalars(row)["collapse/epsilon"] == row["collapse_error"]["estimate"]
    m.close()
    assert list((tmp_path / "tb" / "tensorboard").glob("events.out.tfevents.*"))


def test_mlflow_tracker_gets_every_step_in_the_runs_own_store(tmp_path, monkeypatch):
    """Without a tracking server the monitor's MLflow run lives in ``out/mlflow.db`` (a database: MLflow 3
    refuses a file store by default), one metric point per monitor step."""
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    m = CollapseMonitor(partition="exact", strategy_partition="exact", out=tmp_path / "m", trackers=("mlflow",))
    for step, replies in enumerate([["[DONATE $1]", "[DONATE $2]"], ["a", "a"]]):
        m.record_turn(f"r{step}", replies[0], replies)
        m.end_step(step)
    m.close()
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'm' / 'mlflow.db'}")
    (run,) = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    assert run.info.status == "FINISHED" and run.info.run_name == "collapse-monitor"
    assert [h.step for h in client.get_metric_history(run.info.run_id, "collapse/epsilon")] == [0, 1]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("shadow_fraction", 0.0, r"shadow_fraction must be a number in \(0, 1\]"),
        ("shadow_samples", 1, r"shadow_samples must be an integer in \[2, 100,000\]"),
        ("partition", "meaning", "partition: unknown partitioner 'meaning'"),
        ("trackers", ("neptune",), "trackers must be among"),
        ("batching", "both", "batching must be one of"),
    ],
)
def test_bad_configuration_is_one_clear_error(field, value, message):
    with pytest.raises(ConfigError, match=message):
        MonitorConfig(**{field: value}).validate()


def test_rng_isolated_restores_everything():
    random.seed(0)
    before = random.getstate()
    with rng_isolated():
        random.random()
        np.random.random()
    assert random.getstate() == before


def test_a_failed_shadow_call_costs_the_measurement_not_the_rollout(arena):
    class Flaky(Recording):
        async def generate(self, requests):
            if len(self.calls) >= 1:
                raise RuntimeError("outage")
            self.calls.append(list(requests))
            return await self.inner.generate(requests)

    m = CollapseMonitor(
        shadow_fraction=1.0,
        shadow_samples=3,
        partition="exact",
        strategy_partition="exact",
        arena=arena,
        batching="separate",
    )
    sim = m.wrap(Participant("f", Flaky(DIVERSE)))
    eps = _episodes(arena, arena.load_tasks(1), 0, per_task=2)
    asyncio.run(play_simulator_turns(arena, eps, sim))
    assert all(e.done and e.status != "infra_error" for e in eps)
    row = m.end_step(0)
    assert row["shadow_states"] == 0 and row["shadow_failures"] == 2
    assert isinstance(GenerationResult([]), GenerationResult)


def test_the_sampling_state_round_trips_and_is_checked():
    from collapse_probe.errors import ConfigError
    from collapse_probe.integrations.monitor import CollapseMonitor

    m = CollapseMonitor(shadow_fraction=0.3, shadow_samples=3, partition="exact", strategy_partition="exact")
    for _ in range(5):
        m._pick_turns(4)
    state = m.sampling_state()
    other = CollapseMonitor(shadow_fraction=0.3, shadow_samples=3, partition="exact", strategy_partition="exact")
    other.restore_sampling_state(state)
    assert other.sampling_state() == state and other._pick_turns(7) == m._pick_turns(7)
    for bad in ({"phase": 1.5, "shadow_counter": 0}, {"phase": 0.2, "shadow_counter": -1}, {}):
        with pytest.raises(ConfigError, match="monitor sampling state"):
            other.restore_sampling_state(bad)
