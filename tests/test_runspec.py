"""The one arena builder: train, crossplay (API and CLI), play and audit build the same arena for the same specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.rollout.runspec import ArenaSpec, arena_record

REPO = Path(__file__).resolve().parents[1]
DONOR = REPO / "collapse_probe" / "data" / "scripted" / "p4g_donor_diverse.json"


def _prompts(arena, n_tasks: int = 2, turns: int = 2) -> list[tuple]:
    """The first prompts of both sides on the first tasks, as comparable values."""
    from collapse_probe.models import Completion

    out = []
    for task in arena.load_tasks(n_tasks, seed=0):
        ep = arena.new_episode(task, seed=1)
        for _ in range(turns):
            side = arena.next_side(ep)
            if side is None:
                break
            p = arena.prompt_for(ep, side)
            out.append((task.task_id, side, json.dumps(p.messages, sort_keys=True), p.prompt, p.stop, p.tools))
            text = "Hello, I would like to return my order." if side == "simulator" else "Sure, what is your order id?"
            arena.apply(ep, side, Completion(text), text)
    return out


@pytest.mark.parametrize("bench", ["tau2-demo", "p4g"])
def test_trainer_rollouts_and_crossplay_evaluation_use_the_same_prompts(bench) -> None:
    from collapse_probe.cli import build_parser
    from collapse_probe.cli._common import arena_from_args
    from collapse_probe.pipelines.crossplay import CrossplayConfig, arena_spec
    from collapse_probe.trainers.config import TrainConfig
    from collapse_probe.trainers.llm import arena_participants, build_arena

    train = TrainConfig(benchmark=bench, policy="smollm2", sims=["smollm2"], heldout=["vs:smollm2"], max_turns=3)
    trained = build_arena(train)
    # the crossplay that evaluates the trained policy against the training and held-out simulators
    xp = CrossplayConfig(policies=["smollm2"], simulators=["smollm2", "vs:smollm2"], benchmark=bench, max_turns=3)
    api = arena_spec(xp).build([*xp.policies, *xp.simulators])
    args = build_parser().parse_args(
        [
            "crossplay",
            "--policies",
            "smollm2",
            "--sims",
            "smollm2,vs:smollm2",
            "--benchmark",
            bench,
            "--max-turns",
            "3",
            "--out",
            "x",
        ]
    )
    cli = arena_from_args(args, ["smollm2", "smollm2", "vs:smollm2"])
    assert _prompts(trained) == _prompts(api) == _prompts(cli)
    if bench != "p4g":
        # small local models get the compact prompts and the text tool protocol on both sides of training
        assert arena_record(trained)["compact"] is True and arena_record(cli)["compact"] is True
        assert trained.compact and trained.tool_protocol == "text"
    assert set(arena_participants(train)) == {"smollm2", "vs:smollm2"}


def test_api_models_get_full_tau2_prompts_and_local_ones_compact_prompts() -> None:
    spec = ArenaSpec(benchmark="tau2-demo")
    assert spec.resolve(["openai/gpt-5-mini"]).options["compact"] is False
    assert spec.resolve(["openai/gpt-5-mini", "vs:smollm2"]).options["compact"] is True
    assert spec.resolve([f"scripted:{DONOR}"]).options["compact"] is True
    assert ArenaSpec("tau2-demo", {"compact": False}).resolve(["smollm2"]).options["compact"] is False
    full = spec.build(["openai/gpt-5-mini"])
    small = spec.build(["smollm2"])
    assert _prompts(full) != _prompts(small)


def test_p4g_defaults_and_persona_files(tmp_path) -> None:
    spec = ArenaSpec().resolve()
    assert spec.options["max_turns"] == 3 and "compact" not in spec.options
    src = REPO / "collapse_probe" / "data" / "p4g" / "personas.jsonl"
    one = tmp_path / "one.jsonl"
    one.write_text(src.read_text(encoding="utf-8").splitlines()[5] + "\n")
    arena = ArenaSpec(options={"personas": str(one), "max_tokens": 20}).build()
    assert [t.task_id for t in arena.load_tasks()] == [json.loads(one.read_text())["persona_id"]]
    assert arena.max_tokens == 20
    assert arena_record(arena) == ArenaSpec(options={"personas": str(one), "max_tokens": 20, "max_turns": 3}).to_dict()


def test_crossplay_reads_arena_options_from_extra(tmp_path) -> None:
    """Personas passed in ``extra`` reach the default arena (they used to be recorded but ignored)."""
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    src = REPO / "collapse_probe" / "data" / "p4g" / "personas.jsonl"
    one = tmp_path / "one.jsonl"
    one.write_text(src.read_text(encoding="utf-8").splitlines()[7] + "\n")
    spec = f"scripted:{DONOR}"
    config = CrossplayConfig(policies=[spec], simulators=[spec], tasks=1, rollouts=1, extra={"personas": str(one)})
    results = run_crossplay(config, out=tmp_path / "xp", progress=False, report=False)
    rows = [json.loads(line) for line in (tmp_path / "xp" / "conversations.jsonl").read_text().splitlines()]
    assert {r["task_id"] for r in rows} == {json.loads(one.read_text())["persona_id"]}
    recorded = json.loads((tmp_path / "xp" / "config.json").read_text())["arena"]
    assert recorded["personas"] == str(one) and recorded["max_turns"] == 3
    assert results["cells"]


def test_bad_arena_options_are_named() -> None:
    with pytest.raises(ConfigError, match="--max-turns must be an integer >= 1"):
        ArenaSpec(options={"max_turns": 0}).resolve()
    with pytest.raises(ConfigError, match="unknown benchmark 'p4h'"):
        ArenaSpec(benchmark="p4h").resolve()


def test_the_python_audit_builds_the_benchmark_with_its_own_options(tmp_path) -> None:
    """``AuditConfig.arena_options`` reaches the arena the audit builds (e.g. another τ2 data directory)."""
    import shutil

    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    data = tmp_path / "tau2"
    shutil.copytree(REPO / "collapse_probe" / "data" / "tau2-demo", data)
    config = AuditConfig(sim=f"scripted:{DONOR}", benchmark="tau2-demo", states=1, samples=2, partition="exact",
                         policy=f"scripted:{DONOR}", max_turns=1, arena_options={"tau2_data": str(data)})  # fmt: skip
    run_audit(config, tmp_path / "a", progress=False, cache=False)
    recorded = json.loads((tmp_path / "a" / "config.json").read_text())
    assert recorded["arena"]["tau2_data"] == str(data) and recorded["arena"]["data_fingerprints"]["tau2_data"]
    assert recorded["arena_options"] == {"tau2_data": str(data)}
    with pytest.raises(ConfigError, match="--tau2-data"):
        run_audit(AuditConfig(benchmark="tau2-demo", arena_options={"tau2_data": 3}), None, progress=False)
