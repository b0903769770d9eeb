"""The batched engine: batching per model, per-conversation seeds, infra failures, resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.models import GenerationResult, get_model
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.simulators import Participant

QUIET = EngineConfig(progress=False)


class Counting:
    """Wraps a real backend and records the size of every batch it is handed."""

    def __init__(self, inner):
        self.inner, self.spec, self.batches = inner, inner.spec, []

    async def generate(self, requests):
        self.batches.append(len(requests))
        return await self.inner.generate(requests)


def _participants(pol_spec, sim_specs, wrap=True):
    out = {}
    pol = Counting(get_model(pol_spec)) if wrap else get_model(pol_spec)
    out[pol_spec] = Participant(pol_spec, pol)
    for s in sim_specs:
        out[s] = Participant(s, Counting(get_model(s)) if wrap else get_model(s))
    return out


def test_requests_for_one_model_go_in_one_batch_per_turn(write_scripted):
    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    sims = [write_scripted([("[DONATE $2]", 1.0)], name="s1.json"), write_scripted([("No.", 1.0)], name="s2.json")]
    arena = P4GArena(max_turns=2)
    parts = _participants(pol, sims)
    specs = make_specs(arena.load_tasks(4), [pol], sims, rollouts=2, seed=0)
    records = asyncio.run(run_conversations(arena, specs, parts, config=QUIET))
    assert len(records) == 16
    # policy: 16 conversations x 2 turns -> two calls of 16, across both simulators' cells
    assert parts[pol].model.batches == [16, 16]
    # the "[DONATE $2]" simulator: 8 conversations x 2 turns; "No." also gets the elicitation turn
    assert parts[sims[0]].model.batches == [8, 8]
    assert parts[sims[1]].model.batches == [8, 8, 8]
    rewards = {r.simulator: r.reward for r in records}
    assert rewards == {sims[0]: 1.0, sims[1]: 0.0}


def test_conversation_draws_do_not_depend_on_batch_composition(write_scripted):
    pol = write_scripted([("A", 0.5), ("B", 0.5)], name="pol.json")
    sim = write_scripted([("x [DONATE $1]", 0.3), ("y", 0.3), ("z [DONATE $0]", 0.4)], name="sim.json")
    arena = P4GArena(max_turns=3)
    parts = _participants(pol, [sim], wrap=False)
    specs = make_specs(arena.load_tasks(6), [pol], [sim], rollouts=3, seed=5)
    together = asyncio.run(run_conversations(arena, specs, parts, config=QUIET))
    alone = asyncio.run(run_conversations(arena, specs[7:8], parts, config=QUIET))
    assert alone[0].messages == together[7].messages
    assert len({json.dumps(r.to_line_dict()["messages"]) for r in together}) > 3  # rollouts differ


def test_infra_failures_are_recorded_not_scored(write_scripted, tmp_path):
    class Failing:
        spec = "failing"

        async def generate(self, requests):
            return [GenerationResult([], error="HTTP 503 after 3 retries") for _ in requests]

    pol = write_scripted([("hello", 1.0)])
    arena = P4GArena(max_turns=2)
    parts = {pol: Participant(pol, get_model(pol)), "failing": Participant("failing", Failing())}
    specs = make_specs(arena.load_tasks(2), [pol], ["failing"], rollouts=1, seed=0)
    run_dir = RunDir(tmp_path / "run")
    records = asyncio.run(run_conversations(arena, specs, parts, config=QUIET, run_dir=run_dir))
    assert [r.status for r in records] == ["infra_error", "infra_error"]
    assert all(r.reward is None and "503" in (r.infra_error or "") for r in records)
    assert len(run_dir.read_jsonl("conversations.jsonl")) == 2


def test_resume_runs_only_missing_conversations(write_scripted, tmp_path):
    pol = write_scripted([("hi", 1.0)], name="pol.json")
    sim = write_scripted([("[DONATE $1]", 0.5), ("no", 0.5)], name="sim.json")
    arena = P4GArena(max_turns=1)
    run_dir = RunDir(tmp_path / "run")
    tasks = arena.load_tasks(5)
    parts = _participants(pol, [sim])
    first = asyncio.run(
        run_conversations(arena, make_specs(tasks[:2], [pol], [sim], 2, 0), parts, config=QUIET, run_dir=run_dir)
    )
    parts2 = _participants(pol, [sim])
    full = asyncio.run(
        run_conversations(arena, make_specs(tasks, [pol], [sim], 2, 0), parts2, config=QUIET, run_dir=run_dir)
    )
    assert parts2[pol].model.batches == [6]  # only the 3 x 2 new conversations were run
    assert full[:4] == first
    keys = [r["key"] for r in run_dir.read_jsonl("conversations.jsonl")]
    assert len(keys) == len(set(keys)) == 10


def test_torn_last_line_is_repaired(tmp_path):
    run_dir = RunDir(tmp_path)
    run_dir.append_jsonl("conversations.jsonl", {"key": "a"})
    with open(tmp_path / "conversations.jsonl", "a") as f:
        f.write('{"key": "b", "mess')
    assert [r["key"] for r in run_dir.read_jsonl("conversations.jsonl")] == ["a"]
    assert run_dir.repair("conversations.jsonl") > 0
    run_dir.append_jsonl("conversations.jsonl", {"key": "c"})
    assert [r["key"] for r in run_dir.read_jsonl("conversations.jsonl")] == ["a", "c"]


def test_kill_9_mid_run_then_resume_completes_without_loss_or_duplicates(tmp_path):
    pol = tmp_path / "pol.json"
    pol.write_text(json.dumps({"responses": [{"text": "Please give.", "p": 1}], "delay_s": 0.05}))
    sim = tmp_path / "sim.json"
    sim.write_text(
        json.dumps({"responses": [{"text": "[DONATE $1]", "p": 0.5}, {"text": "No.", "p": 0.5}], "delay_s": 0.05})
    )
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "collapse_probe.cli",
        "play",
        "--policy",
        f"scripted:{pol}",
        "--sim",
        f"scripted:{sim}",
        "--tasks",
        "40",
        "--rollouts",
        "1",
        "--max-turns",
        "1",
        "--out",
        str(out),
        "--max-live",
        "4",
        "--no-progress",
        "--show",
        "0",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conv = out / "conversations.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and not (conv.exists() and conv.read_text().count("\n") >= 1):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = conv.read_text().count("\n") if conv.exists() else 0
    assert partial < 40, "the run finished before it could be killed"
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    keys = [r["key"] for r in RunDir(out).read_jsonl("conversations.jsonl")]
    assert len(keys) == 40 and len(set(keys)) == 40


def test_a_reward_that_is_not_a_finite_number_is_recorded_as_null_with_the_reason(write_scripted, tmp_path):
    import math

    from collapse_probe.benchmarks._base import Score

    class OddRewards(P4GArena):
        async def score(self, episodes):
            odd = [math.nan, math.inf, -math.inf, "0.5", True, 1e308]
            return [Score(odd[i % len(odd)]) for i in range(len(episodes))]

    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    sim = write_scripted([("[DONATE $2]", 1.0)], name="sim.json")
    arena = OddRewards(max_turns=1)
    specs = make_specs(arena.load_tasks(3), [pol], [sim], rollouts=2, seed=0)
    rd = RunDir(tmp_path / "run")
    rd.create({"a": 1}, kind="play")
    records = asyncio.run(run_conversations(arena, specs, _participants(pol, [sim], wrap=False), config=QUIET,
                                            run_dir=rd))  # fmt: skip
    rd.release()
    rewards = sorted((r.reward for r in records), key=lambda v: (v is not None, v or 0))
    assert rewards == [None] * 5 + [1e308]  # nan, ±inf, a string and a bool are not scores
    assert all("not a finite number" in (r.info or {})["reward_error"] for r in records if r.reward is None)
    text = (tmp_path / "run" / "conversations.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
