"""Cross-play matrix: exact rewards against scripted donors, transfer ratios, infra failures, resume."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence

import pytest

from collapse_probe.benchmarks.p4g import P4GArena, donation_reward, parse_donation
from collapse_probe.core._records import ConversationRecord
from collapse_probe.errors import ConfigError
from collapse_probe.models import GenerationRequest, GenerationResult
from collapse_probe.pipelines.crossplay import SCHEMA, CrossplayConfig, crossplay_results, run_crossplay
from collapse_probe.results import load
from collapse_probe.simulators import Participant, make_participant

N_TASKS, N_ROLLOUTS = 4, 2


class BrokenModel:
    """A backend whose every request fails (an outage): the engine must record infra failures."""

    spec = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.calls += 1
        return [GenerationResult([], error="HTTP 503: service unavailable") for _ in requests]


class CountingModel:
    """Wraps a backend and counts the requests it answers (to see what a resumed run re-does)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.requests = 0

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests += len(requests)
        return await self.inner.generate(requests)


@pytest.fixture
def donors(write_scripted):
    """Three scripted donors with fixed donations: $2 (reward 1), $0.50 (reward 0.25), none (reward 0)."""
    return {
        "give2": write_scripted([("Sure, I will give [DONATE $2]", 1.0)], name="give2.json"),
        "give050": write_scripted([("OK, a little: [DONATE $0.50]", 1.0)], name="give050.json"),
        "refuse": write_scripted([("No.", 1.0)], name="refuse.json"),
    }


@pytest.fixture
def policies(write_scripted):
    return {
        "polite": write_scripted(
            [("Please donate to Save the Children.", 0.5), ("Please, every cent helps.", 0.5)], name="polite.json"
        ),
        "blunt": write_scripted([("Give money.", 1.0)], name="blunt.json"),
    }


def _arena(max_turns: int = 2) -> P4GArena:
    return P4GArena(max_turns=max_turns)


def test_hand_computed_rewards(tmp_path, donors, policies):
    pol = [policies["polite"], policies["blunt"]]
    sims = [donors["give2"], donors["give050"], donors["refuse"]]
    cfg = CrossplayConfig(
        policies=pol, simulators=sims, train_simulator=donors["give2"], tasks=N_TASKS, rollouts=N_ROLLOUTS, max_turns=2
    )
    res = run_crossplay(cfg, arena=_arena(), out=tmp_path / "run", progress=False)

    assert res["schema"] == SCHEMA and res["benchmark"] == "p4g"
    assert res["policies"] == pol and res["simulators"] == sims and res["train_simulator"] == donors["give2"]
    # reward = min(donation/2, 1): $2 -> 1, $0.50 -> 0.25, no stated donation -> 0 (after the elicitation turn)
    expected = {donors["give2"]: 1.0, donors["give050"]: 0.25, donors["refuse"]: 0.0}
    assert expected[donors["give050"]] == donation_reward(parse_donation("[DONATE $0.50]"))
    assert len(res["cells"]) == 6
    assert res["reward_range"] == [0.0, 1.0]  # the P4G arena's declared bounds
    for c in res["cells"]:
        want = expected[c["simulator"]]
        assert c["n"] == N_TASKS * N_ROLLOUTS and c["infra_failures"] == 0 and c["n_tasks"] == N_TASKS
        # 8 identical rewards over 4 tasks do not prove the mean: the CI is over tasks and inside [0, 1]
        lo, hi = c["ci95"]
        assert c["mean_reward"] == want and 0 <= lo <= want <= hi <= 1 and hi - lo > 0.3
        assert (lo == 0.0) == (want == 0.0) and (hi == 1.0) == (want == 1.0)
        assert c["ci95_method"] == "Korn-Graubard over tasks in [0, 1]" and c["ci95_note"] is None
        assert c["success_rate"] == (1.0 if want > 0 else 0.0)
        assert sorted(c["task_rewards"]) == sorted(res["tasks"])
        assert all(v == [want] * N_ROLLOUTS for v in c["task_rewards"].values())
    # transfer = mean over held-out sims (0.25 + 0) / 2 over training reward 1
    for t in res["transfer"]:
        assert t["train_reward"] == 1.0 and t["heldout_reward"] == 0.125
        assert t["transfer_ratio"] == 0.125 and t["ci95"][0] < 0.125 < t["ci95"][1]
        assert t["ci95_lower"] == t["ci95"][0] and t["method"].startswith("MOVER-R over tasks")

    # the refusing donor was asked the elicitation question once per conversation
    recs = [json.loads(line) for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines()]
    assert len(recs) == 6 * N_TASKS * N_ROLLOUTS
    refused = [r for r in recs if r["simulator"] == donors["refuse"]]
    assert all(r["status"] == "no_donation_stated" and r["reward"] == 0.0 for r in refused)

    # strategy entropy: "blunt" has one opening move (entropy 0); "polite" two (CWJ entropy > 0).
    # Each (task, rollout) opening counts once, not once per simulator.
    div = {d["policy"]: d for d in res["policy_diversity"]}
    assert div[policies["blunt"]]["strategy_entropy"] == 0.0 and div[policies["blunt"]]["n_classes"] == 1
    assert div[policies["blunt"]]["n_messages"] == N_TASKS * N_ROLLOUTS
    assert div[policies["polite"]]["n_classes"] == 2 and div[policies["polite"]]["strategy_entropy"] > 0.5

    # written results equal the returned ones; the report has the heatmap with CIs on hover
    assert load(tmp_path / "run", kind="crossplay").to_json() == json.loads(json.dumps(res.to_json()))
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Cross-play matrix" in html and "95% CI" in html and "Transfer ratio" in html


def test_one_engine_run_batches_across_cells(donors, policies):
    """Every turn sends one batch per model, whatever the number of cells it serves."""
    counted = {s: CountingModel(make_participant(s, cache=False).model) for s in (donors["give2"], donors["refuse"])}
    calls: dict[str, int] = {}

    class Batches:
        def __init__(self, inner) -> None:
            self.inner, self.spec = inner, inner.spec

        async def generate(self, requests):
            calls[self.spec] = calls.get(self.spec, 0) + 1
            return await self.inner.generate(requests)

    pol = policies["blunt"]
    parts = {pol: Participant(pol, Batches(make_participant(pol, cache=False).model))}
    parts.update({s: Participant(s, Batches(m)) for s, m in counted.items()})
    cfg = CrossplayConfig(policies=[pol], simulators=list(counted), tasks=N_TASKS, rollouts=N_ROLLOUTS, max_turns=2)
    run_crossplay(cfg, arena=_arena(), participants=parts, progress=False)
    # policy: 2 turns, each ONE batch covering both cells (2 cells x 4 tasks x 2 rollouts = 16 requests)
    assert calls[pol] == 2
    assert counted[donors["give2"]].requests == 2 * N_TASKS * N_ROLLOUTS
    # refusing donor: 2 rounds + elicitation = 3 batches
    assert calls[donors["refuse"]] == 3


def test_infra_failures_are_counted_not_scored(donors, policies):
    pol = policies["blunt"]
    parts = {
        pol: make_participant(pol),
        donors["give2"]: make_participant(donors["give2"]),
        "broken": Participant("broken", BrokenModel()),
    }
    cfg = CrossplayConfig(
        policies=[pol],
        simulators=[donors["give2"], "broken"],
        train_simulator=donors["give2"],
        tasks=N_TASKS,
        rollouts=N_ROLLOUTS,
        max_turns=2,
    )
    res = run_crossplay(cfg, arena=_arena(), participants=parts, progress=False)
    cells = {c["simulator"]: c for c in res["cells"]}
    bad = cells["broken"]
    assert bad["n"] == 0 and bad["infra_failures"] == N_TASKS * N_ROLLOUTS and bad["infra_rate"] == 1.0
    assert bad["mean_reward"] is None and bad["ci95"] is None  # never scored 0
    assert bad["infra_errors"] == {"HTTP 503: service unavailable": N_TASKS * N_ROLLOUTS}
    assert cells[donors["give2"]]["mean_reward"] == 1.0
    t = res["transfer"][0]
    assert t["transfer_ratio"] is None and "no task" in t["note"]


def test_partial_infra_failures_excluded_from_mean(donors, policies):
    """Half the conversations lost: the mean is over the others, the failures counted."""
    recs = []
    for i in range(6):
        infra = i % 2 == 0
        recs.append(
            ConversationRecord.make(
                policy="p",
                simulator="s",
                task_id=f"t{i // 2}",
                rollout=i % 2,
                status="infra_error" if infra else "done",
                infra_error="timeout" if infra else None,
                reward=None if infra else 0.5 * (i // 2),
                success=None if infra else i > 1,
            )
        )
    res = crossplay_results(recs, CrossplayConfig(policies=["p"], simulators=["s"], tasks=3, rollouts=2))
    c = res["cells"][0]
    assert c["n"] == 3 and c["infra_failures"] == 3 and c["infra_rate"] == 0.5
    assert c["mean_reward"] == pytest.approx((0.0 + 0.5 + 1.0) / 3)
    assert c["task_rewards"] == {"t0": [0.0], "t1": [0.5], "t2": [1.0]}
    # no declared reward range: a Student-t CI over the 3 tasks, mean ± t_{2,0.975} * s / sqrt(3), s = 0.5
    half = 4.302652729911275 * 0.5 / math.sqrt(3)
    assert c["ci95"] == pytest.approx([0.5 - half, 0.5 + half]) and c["ci95_method"] == "Student t over tasks"
    # with the range the CI stays inside it
    ranged = crossplay_results(
        recs, CrossplayConfig(policies=["p"], simulators=["s"], tasks=3, rollouts=2), reward_range=(0.0, 1.0)
    )["cells"][0]
    assert ranged["mean_reward"] == c["mean_reward"] and 0 <= ranged["ci95"][0] < 0.5 < ranged["ci95"][1] <= 1


def test_transfer_undefined_when_training_reward_is_zero(donors, policies):
    cfg = CrossplayConfig(
        policies=[policies["blunt"]],
        simulators=[donors["refuse"], donors["give2"]],
        train_simulator=donors["refuse"],
        tasks=2,
        rollouts=1,
        max_turns=1,
    )
    res = run_crossplay(cfg, arena=_arena(1), progress=False)
    t = res["transfer"][0]
    assert t["train_reward"] == 0.0 and t["heldout_reward"] == 1.0
    assert t["transfer_ratio"] is None and t["ci95"] is None and "undefined" in t["note"]


def test_resume_after_partial_run(tmp_path, donors, policies):
    pol = [policies["polite"]]
    sims = [donors["give2"], donors["refuse"]]
    cfg = CrossplayConfig(
        policies=pol, simulators=sims, train_simulator=donors["give2"], tasks=N_TASKS, rollouts=N_ROLLOUTS, max_turns=2
    )
    out = tmp_path / "run"
    full = run_crossplay(cfg, arena=_arena(), out=out, progress=False)
    conv = out / "conversations.jsonl"
    lines = conv.read_text().splitlines(keepends=True)
    n = len(lines)
    # a run killed half way: half the records, and a torn last line from a kill mid-write
    conv.write_text("".join(lines[: n // 2]) + lines[n // 2][:40])
    (out / "results.json").unlink()

    counters = {s: CountingModel(make_participant(s, cache=False).model) for s in pol + sims}
    parts = {s: Participant(s, m) for s, m in counters.items()}
    resumed = run_crossplay(cfg, arena=_arena(), participants=parts, out=out, progress=False)
    recs = [json.loads(line) for line in conv.read_text().splitlines()]
    keys = [r["key"] for r in recs]
    assert len(keys) == n and len(set(keys)) == n  # no duplicates, none missing
    assert resumed["cells"] == full["cells"] and resumed["transfer"] == full["transfer"]
    assert resumed["policy_diversity"] == full["policy_diversity"]
    # only the missing half was run again: policy turns = 2 per re-run conversation
    assert counters[pol[0]].requests == 2 * (n - n // 2)

    # a second resume has nothing left to do
    again = {s: CountingModel(make_participant(s, cache=False).model) for s in pol + sims}
    run_crossplay(
        cfg, arena=_arena(), participants={s: Participant(s, m) for s, m in again.items()}, out=out, progress=False
    )
    assert sum(m.requests for m in again.values()) == 0

    # another configuration in the same directory is refused
    other = CrossplayConfig(policies=pol, simulators=sims, tasks=2, rollouts=N_ROLLOUTS, max_turns=2)
    with pytest.raises(ConfigError, match="different configuration"):
        run_crossplay(other, arena=_arena(), out=out, progress=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policies": [], "simulators": ["smollm2"]}, "--policies.*empty"),
        ({"policies": ["smollm2"], "simulators": []}, "--sims.*empty"),
        ({"policies": ["a"], "simulators": ["x", "x"]}, "duplicate"),
        ({"policies": ["a"], "simulators": ["x", "y"], "train_simulator": "z"}, "--train-sim 'z' is not among --sims"),
        ({"policies": ["a"], "simulators": ["x"], "tasks": 0}, "--tasks must be"),
        ({"policies": ["a"], "simulators": ["x"], "rollouts": 0}, "--rollouts must be"),
        ({"policies": ["a"], "simulators": ["x"], "partitioner": "judge"}, "--partitioner must be one of"),
        ({"policies": "a,b", "simulators": ["x"]}, "expected a list"),
    ],
)
def test_bad_config(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        CrossplayConfig(**kwargs).validate()


def test_unknown_spec_is_a_clear_error(donors):
    cfg = CrossplayConfig(policies=["smolm2"], simulators=[donors["give2"]], tasks=1, rollouts=1)
    with pytest.raises(ConfigError, match="unknown model spec 'smolm2'.*smollm2"):
        run_crossplay(cfg, arena=_arena(), progress=False)


def _cli(argv: list[str]) -> argparse.Namespace:
    from collapse_probe.cli import crossplay

    parser = argparse.ArgumentParser()
    crossplay.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["crossplay", *argv])


def test_cli_end_to_end(tmp_path, donors, policies, capsys):
    from collapse_probe.cli import crossplay

    out = tmp_path / "cli"
    args = _cli(
        [
            "--policies",
            f"{policies['blunt']}",
            "--sims",
            f"{donors['give2']},{donors['give050']}",
            "--train-sim",
            donors["give2"],
            "--tasks",
            "2",
            "--rollouts",
            "1",
            "--max-turns",
            "1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert crossplay.run(args) == 0
    printed = capsys.readouterr().out
    assert "transfer" in printed and "0.250" in printed
    res = load(out, kind="crossplay").to_json()
    assert [c["mean_reward"] for c in res["cells"]] == [1.0, 0.25]
    assert res["transfer"][0]["transfer_ratio"] == 0.25

    bad = _cli(
        [
            "--policies",
            policies["blunt"],
            "--sims",
            donors["give2"],
            "--train-sim",
            "smollm2",
            "--out",
            str(tmp_path / "bad"),
            "--no-progress",
        ]
    )
    with pytest.raises(ConfigError, match="--train-sim"):
        crossplay.run(bad)
    with pytest.raises(ConfigError, match="--sims"):
        crossplay.run(_cli(["--policies", "a", "--sims", " , ", "--out", str(tmp_path / "bad2")]))


class InterruptAfter:
    """Wraps a backend and raises KeyboardInterrupt (a kill) on its ``calls``-th batch."""

    def __init__(self, inner, calls: int) -> None:
        self.inner, self.spec, self.left = inner, inner.spec, calls

    async def generate(self, requests):
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt
        return await self.inner.generate(requests)


def test_resume_after_a_kill_mid_run(tmp_path, donors, policies):
    """Killed during the third wave of conversations; the rerun completes it with no duplicates."""
    pol, sims = [policies["polite"]], [donors["give2"], donors["give050"]]
    cfg = CrossplayConfig(policies=pol, simulators=sims, train_simulator=donors["give2"], tasks=N_TASKS,
                          rollouts=N_ROLLOUTS, max_turns=1)  # fmt: skip
    reference = run_crossplay(cfg, arena=_arena(1), progress=False, max_live=4)
    out = tmp_path / "run"
    parts = {s: make_participant(s, cache=False) for s in pol + sims}
    parts[pol[0]] = Participant(pol[0], InterruptAfter(parts[pol[0]].model, calls=3))
    with pytest.raises(KeyboardInterrupt):
        run_crossplay(cfg, arena=_arena(1), participants=parts, out=out, progress=False, max_live=4)
    partial = (out / "conversations.jsonl").read_text().splitlines()
    assert 0 < len(partial) < 2 * N_TASKS * N_ROLLOUTS
    resumed = run_crossplay(cfg, arena=_arena(1), out=out, progress=False)
    keys = [json.loads(line)["key"] for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 2 * N_TASKS * N_ROLLOUTS
    assert resumed["cells"] == reference["cells"] and resumed["transfer"] == reference["transfer"]


def test_cell_ci_clusters_by_task():
    """Rollouts of a task are correlated: 2 tasks x 20 rollouts are 2 units, not 40."""
    recs = [
        ConversationRecord.make(policy="p", simulator="s", task_id=f"t{t}", rollout=g, reward=float(t))
        for t in range(2) for g in range(20)
    ]  # fmt: skip
    cell = crossplay_results(recs, CrossplayConfig(policies=["p"], simulators=["s"], tasks=2, rollouts=20))["cells"][0]
    # per-conversation t: 0.5 ± 2.02 * 0.506 / sqrt(40) = [0.34, 0.66]; over the 2 task means it is wide
    assert cell["mean_reward"] == 0.5 and cell["ci95"][0] < -1 and cell["ci95"][1] > 2
    one = crossplay_results(recs[:20], CrossplayConfig(policies=["p"], simulators=["s"], tasks=1, rollouts=20))
    assert one["cells"][0]["ci95"] is None and "at least 2 tasks" in one["cells"][0]["ci95_note"]


def test_rewards_outside_the_declared_range_are_noted(donors, policies):
    recs = [
        ConversationRecord.make(policy="p", simulator="s", task_id=f"t{t}", reward=1.5 if t == 0 else 0.5)
        for t in range(3)
    ]  # fmt: skip
    cfg = CrossplayConfig(policies=["p"], simulators=["s"], tasks=3, rollouts=1)
    cell = crossplay_results(recs, cfg, reward_range=(0.0, 1.0))["cells"][0]
    assert "outside the declared range" in cell["ci95_note"] and cell["ci95_method"] == "Student t over tasks"


def test_terminal_table_shows_the_cell_intervals(donors, policies):
    from collapse_probe.report.terminal import crossplay_text as format_matrix

    cfg = CrossplayConfig(
        policies=[policies["blunt"]], simulators=[donors["give2"], donors["give050"]], train_simulator=donors["give2"],
        tasks=N_TASKS, rollouts=N_ROLLOUTS, max_turns=2,
    )  # fmt: skip
    res = run_crossplay(cfg, arena=_arena(), progress=False)
    out = format_matrix(res)
    lo, hi = next(c for c in res["cells"] if c["simulator"] == donors["give050"])["ci95"]
    assert f"0.250 [{lo:.3f}, {hi:.3f}]" in out and "95% CI over tasks" in out
