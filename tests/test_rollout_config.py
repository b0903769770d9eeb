"""One shared rollout config and the arena spec, nested in the play and cross-play configs (the audit
nests the arena spec).

The flat form of earlier versions keeps working: constructor keywords, attributes, and the flat
fields of ``config.json`` / ``results.json``. A run directory written before the nesting (its
``config.json`` is kept here as that version wrote it) resumes, and a changed option is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.pipelines.audit import AuditConfig, run_audit
from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
from collapse_probe.pipelines.play import PlayConfig, run_play
from collapse_probe.rollout.runspec import ROLLOUT_FIELDS, ArenaSpec, RolloutConfig
from collapse_probe.simulators import make_participant

PLAY_CONFIG_BEFORE = {
    "kind": "play",
    "policy": "scripted:pol.json",
    "sim": "scripted:sim.json",
    "benchmark": "p4g",
    "tasks": 2,
    "rollouts": 1,
    "max_turns": 3,
    "seed": 0,
    "temperature": 1.0,
    "max_live": None,
    "extra": {"note": "recorded"},
    "arena": {"benchmark": "p4g", "max_turns": 3, "max_tokens": None, "personas": None},
    "version": "0.1.0",
    "vs_k": None,
    "fingerprints": {
        "scripted:pol.json": "sha256:50bcba0dc3dabf3353d7d885b87c38d96a78c36de97de3e5c4fa259e2c5d4717",
        "scripted:sim.json": "sha256:345746d764c48cf3889dd2edf004d6ce28ee6561b67ab6f8b3f8a7037027c4bf",
    },
}
"""``config.json`` of ``run_play(PlayConfig(policy=P, sim=S, tasks=2, rollouts=1, extra={"note": "recorded"}), ...)``
as the version before the nesting wrote it."""

CROSSPLAY_CONFIG_BEFORE = {
    "kind": "crossplay",
    "policies": ["scripted:pol.json"],
    "simulators": ["scripted:sim.json"],
    "train_simulator": None,
    "benchmark": "p4g",
    "tasks": 2,
    "rollouts": 1,
    "max_turns": 3,
    "seed": 0,
    "temperature": 1.0,
    "partitioner": "exact",
    "entropy_turns": "first",
    "extra": {"max_tokens": 40},
    "arena": {"benchmark": "p4g", "max_turns": 3, "max_tokens": 40, "personas": None},
    "version": "0.1.0",
    "vs_k": None,
    "max_live": None,
    "cache": True,
    "fingerprints": {
        "scripted:pol.json": "sha256:50bcba0dc3dabf3353d7d885b87c38d96a78c36de97de3e5c4fa259e2c5d4717",
        "scripted:sim.json": "sha256:345746d764c48cf3889dd2edf004d6ce28ee6561b67ab6f8b3f8a7037027c4bf",
    },
}
"""``config.json`` of ``run_crossplay(CrossplayConfig(policies=[P], simulators=[S], tasks=2, rollouts=1,
extra={"max_tokens": 40}), ...)`` as the version before the nesting wrote it."""

AUDIT_CONFIG_BEFORE = {
    "kind": "audit",
    "sim": "scripted:sim.json",
    "benchmark": "p4g",
    "policy": None,
    "states": 1,
    "samples": 4,
    "partition": "label",
    "judge": None,
    "compare_vs": False,
    "vs_k": 5,
    "human": None,
    "rollouts": 1,
    "max_turns": 3,
    "temperature": 1.0,
    "top_p": 1.0,
    "seed": 0,
    "epsilon_star": 0.2,
    "bound_b": 1.0,
    "r_max": 1.0,
    "variance_share": False,
    "variance_agents": 3,
    "variance_sims": 4,
    "exact": True,
    "vendi": False,
    "n_boot": 200,
    "batch_states": None,
    "personas": None,
    "arena_options": {"max_tokens": 40},
    "arena": {"benchmark": "p4g", "max_turns": 3, "max_tokens": 40, "personas": None},
    "version": "0.1.0",
    "fingerprints": {"scripted:sim.json": "sha256:345746d764c48cf3889dd2edf004d6ce28ee6561b67ab6f8b3f8a7037027c4bf"},
}
"""``config.json`` of ``run_audit(AuditConfig(sim=S, states=1, samples=4, n_boot=200, partition="label",
arena_options={"max_tokens": 40}), ...)`` as the version before the nesting wrote it."""

PERSONAS = Path(__file__).parents[1] / "collapse_probe" / "data" / "p4g" / "personas.jsonl"
PERSONAS_FINGERPRINT = "sha256:7ddbb9fd01f010601e8aaf45924af30cc3dfc7540cdc75db2fec2b39bb800307"
"""The shipped persona file, and its fingerprint as the version before the nesting recorded it: the
stored audit run with ``personas="personas.jsonl"`` is AUDIT_CONFIG_BEFORE with ``personas``, ``arena_options:
None`` and that arena record (written by that version)."""

POLICY = {"responses": [{"text": "Please donate.", "p": 1.0}]}
SIM = {"responses": [{"text": "[DONATE $2]", "p": 0.5}, {"text": "[DONATE $0]", "p": 0.5}]}
P, S = "scripted:pol.json", "scripted:sim.json"


@pytest.fixture
def models(tmp_path, monkeypatch):
    """The two scripted models, at the relative paths the stored runs name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pol.json").write_text(json.dumps(POLICY))
    (tmp_path / "sim.json").write_text(json.dumps(SIM))
    return {s: make_participant(s) for s in (P, S)}


def _stored(tmp_path, name, config):
    run = tmp_path / name
    run.mkdir()
    (run / "config.json").write_text(json.dumps(config))
    return run


@pytest.mark.parametrize("cls", [PlayConfig, CrossplayConfig])
def test_the_rollout_and_arena_are_views_of_the_fields(cls):
    c = cls(
        tasks=3, rollouts=1, max_turns=None, seed=7, temperature=0.5, benchmark="p4g", extra={"personas": "p.jsonl"}
    )
    assert c.rollout == RolloutConfig(tasks=3, rollouts=1, max_turns=None, seed=7, temperature=0.5)
    assert c.arena == ArenaSpec("p4g", {"personas": "p.jsonl"})
    c.tasks, c.benchmark = 5, "tau2-demo"
    c.extra["judge"] = "smollm2"  # the options mapping itself
    assert c.rollout.tasks == 5 and c.arena == ArenaSpec("tau2-demo", {"personas": "p.jsonl", "judge": "smollm2"})
    assert c.replace(tasks=9).rollout.tasks == 9 and c.tasks == 5
    with pytest.raises(ConfigError, match=r"unknown field 'rollout' \(did you mean rollouts\?\)"):
        cls(rollout=RolloutConfig())  # one way to give each field: flat
    with pytest.raises(ConfigError, match=r"^--tasks must be an integer >= 1, got 0$"):
        c.replace(tasks=0)


def test_config_json_fields_stay_flat():
    play = PlayConfig(policy=P, sim=S, tasks=2, rollouts=1, extra={"note": "recorded"}).to_dict()
    assert play == {k: v for k, v in PLAY_CONFIG_BEFORE.items() if k in play}
    assert set(play) == set(PLAY_CONFIG_BEFORE) - {"kind", "arena", "version", "vs_k", "fingerprints"}
    xp = CrossplayConfig(policies=[P], simulators=[S], tasks=2, rollouts=1, extra={"max_tokens": 40}).to_dict()
    assert xp == {k: v for k, v in CROSSPLAY_CONFIG_BEFORE.items() if k in xp}
    before = set(CROSSPLAY_CONFIG_BEFORE) - {"kind", "arena", "version", "vs_k", "max_live", "cache", "fingerprints"}
    assert set(xp) == before
    assert set(ROLLOUT_FIELDS) <= set(PLAY_CONFIG_BEFORE)


def test_bad_options_are_one_line_naming_the_field():
    with pytest.raises(ConfigError, match=r"^extra: expected a mapping of the benchmark's options"):
        PlayConfig(extra=["personas"]).validate()
    with pytest.raises(ConfigError, match=r"^--max-turns must be an integer >= 1, got 0$"):
        CrossplayConfig(max_turns=0).validate()


def test_a_play_run_of_the_former_version_resumes_and_a_changed_option_is_refused(tmp_path, models):
    arena = ArenaSpec("p4g").build([P, S])
    run = _stored(tmp_path, "play", PLAY_CONFIG_BEFORE)
    records = run_play(
        PlayConfig(policy=P, sim=S, tasks=2, rollouts=1, extra={"note": "recorded"}), arena, models, run, progress=False
    ).conversations
    assert len(records) == 2
    assert json.loads((run / "results.json").read_text())["extra"] == {"note": "recorded"}
    changed = PlayConfig(policy=P, sim=S, tasks=2, rollouts=1, extra={"note": "other"})
    with pytest.raises(ConfigError, match=r"different configuration \(differs in: extra\)"):
        run_play(changed, arena, models, _stored(tmp_path, "play2", PLAY_CONFIG_BEFORE), progress=False)
    with pytest.raises(ConfigError, match=r"differs in: tasks"):
        run_play(changed.replace(tasks=3, extra={"note": "recorded"}), arena, models, run, progress=False)


def test_a_crossplay_run_of_the_former_version_resumes_and_a_changed_option_is_refused(tmp_path, models):
    config = CrossplayConfig(policies=[P], simulators=[S], tasks=2, rollouts=1, extra={"max_tokens": 40})
    run = _stored(tmp_path, "xp", CROSSPLAY_CONFIG_BEFORE)
    results = run_crossplay(config, participants=models, out=run, progress=False, report=False)
    assert results["config"]["tasks"] == 2 and results["config"]["extra"] == {"max_tokens": 40}
    changed = config.replace(extra={"max_tokens": 41})
    with pytest.raises(ConfigError, match=r"differs in: arena, extra"):
        run_crossplay(changed, participants=models, out=_stored(tmp_path, "xp2", CROSSPLAY_CONFIG_BEFORE),
                      progress=False, report=False)  # fmt: skip


def test_the_audit_nests_the_arena_and_keeps_its_keywords():
    c = AuditConfig(benchmark="tau2-demo", arena_options={"data": "d"})
    assert c.arena == ArenaSpec("tau2-demo", {"data": "d"}) and c.benchmark == "tau2-demo"
    assert AuditConfig().arena_options is None and AuditConfig().to_dict()["arena_options"] is None
    c.benchmark, c.arena_options = "p4g", None
    assert c.arena == ArenaSpec("p4g", {}) and c.validate() == AuditConfig()
    assert c.replace(sim="x").arena == c.arena and c.replace(benchmark="b").benchmark == "b"
    assert AuditConfig(arena_options={}).to_dict()["arena_options"] == {}  # as given: both forms resume
    assert AuditConfig(arena_options={}).replace(sim="x").arena_options == {}
    assert AuditConfig().replace(sim="x").arena_options is None
    with pytest.raises(ConfigError, match=r"^arena_options: expected a mapping"):
        AuditConfig(arena_options=["max_tokens"]).validate()


def test_an_audit_run_of_the_former_version_resumes_and_a_changed_option_is_refused(tmp_path, models):
    def config(**options):
        return AuditConfig(sim=S, states=1, samples=4, n_boot=200, partition="label", arena_options=options)

    run = _stored(tmp_path, "au", AUDIT_CONFIG_BEFORE)
    res = run_audit(config(max_tokens=40), run, progress=False)
    assert res["config"]["arena_options"] == {"max_tokens": 40} and res["config"]["benchmark"] == "p4g"
    with pytest.raises(ConfigError, match=r"differs in: arena, arena_options"):
        run_audit(config(max_tokens=41), _stored(tmp_path, "au2", AUDIT_CONFIG_BEFORE), progress=False)


def test_the_audit_nests_the_rollout_config_and_its_personas_are_an_arena_option():
    c = AuditConfig(states=3, rollouts=2, max_turns=None, temperature=0.5, seed=7, personas="p.jsonl")
    assert c.rollout == RolloutConfig(tasks=3, rollouts=2, max_turns=None, seed=7, temperature=0.5)
    assert (c.states, c.rollouts, c.max_turns, c.temperature, c.seed) == (3, 2, None, 0.5, 7)
    assert c.arena == ArenaSpec("p4g", {"personas": "p.jsonl"}) and c.personas == "p.jsonl"
    flat = c.to_dict()
    assert (flat["personas"], flat["arena_options"], flat["states"], flat["seed"]) == ("p.jsonl", None, 3, 7)
    assert "rollout" not in flat and "arena" not in flat
    assert AuditConfig(**{k: v for k, v in flat.items()}) == c  # config.json rebuilds the same config
    assert AuditConfig().rollout == RolloutConfig(tasks=2, rollouts=1)  # the audit's own defaults
    copy = c.replace(personas=None)
    assert copy.personas is None and c.personas == "p.jsonl"  # the copy does not share the options
    assert c.replace(states=5).rollout.tasks == 5 and c.states == 3
    c.states, c.personas = 4, "q.jsonl"
    assert c.rollout.tasks == 4 and c.arena.options == {"personas": "q.jsonl"}
    # a persona file given as an arena option is recorded there
    opt = AuditConfig(arena_options={"personas": "p.jsonl"}).to_dict()
    assert (opt["personas"], opt["arena_options"]) == (None, {"personas": "p.jsonl"})
    with pytest.raises(ConfigError, match=r"^--states must be an integer >= 1, got 0$"):
        AuditConfig(states=0).validate()
    with pytest.raises(ConfigError, match=r"^--temperature must be a finite number >= 0, got -1$"):
        AuditConfig(temperature=-1).validate()


def test_an_audit_run_with_a_persona_file_of_the_former_version_resumes(tmp_path, models):
    (tmp_path / "personas.jsonl").write_text(PERSONAS.read_text())
    stored = {**AUDIT_CONFIG_BEFORE, "personas": "personas.jsonl", "arena_options": None}
    stored["arena"] = {
        **stored["arena"],
        "max_tokens": None,
        "personas": "personas.jsonl",
        "data_fingerprints": {"personas": PERSONAS_FINGERPRINT},
    }
    config = AuditConfig(sim=S, states=1, samples=4, n_boot=200, partition="label", personas="personas.jsonl")
    run = _stored(tmp_path, "au", stored)
    res = run_audit(config, run, progress=False)
    assert res["config"]["personas"] == "personas.jsonl" and res["config"]["arena_options"] is None
    with pytest.raises(ConfigError, match=r"differs in: states"):
        run_audit(config.replace(states=2), run, progress=False)


TRAIN_CONFIG_BEFORE = {
    "kind": "train", "method": "single", "policy": "smollm2", "sims": ["smollm2"], "benchmark": "p4g", "heldout": [],
    "steps": 1, "group_size": 2, "tasks": 2, "max_turns": 2, "max_tokens": 12, "temperature": 0.7, "lr": 0.0001,
    "sim_lr": None, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "lora_target_modules": None, "kl_coef": 0.0,
    "adv_eps": 1e-06, "max_grad_norm": 1.0, "train_batch": 8, "cotrain_reward": "adversarial", "pool_size": 5,
    "snapshot_every": 1, "pool_dir": None, "personas": "personas.jsonl", "tau2_data": None, "vs_k": 5, "eval_every": 5,
    "eval_tasks": None, "eval_rollouts": 2, "collapse_states": 2, "collapse_samples": 8, "partitioner": "exact",
    "entropy_turns": "first", "save_every": 1, "keep_checkpoints": 2, "rollout_backend": "torch", "vllm_options": {},
    "tis_cap": 2.0, "device": None, "dtype": None, "cache": True, "seed": 3, "progress": False, "version": "0.1.0",
    "arena": {"benchmark": "p4g", "max_turns": 2, "max_tokens": 12, "personas": "personas.jsonl",
              "data_fingerprints": {"personas": PERSONAS_FINGERPRINT}},
}  # fmt: skip
"""``config.json`` of a train run of ``TrainConfig(sims=["smollm2"], steps=1, group_size=2, tasks=2, max_turns=2,
max_tokens=12, personas="personas.jsonl", seed=3, temperature=0.7)`` as the version before the nesting wrote it
(``LLMTrainer(config, out, arena=build_arena(config))._prepare_dir()``)."""


def _train_config(**changes):
    from collapse_probe.trainers import TrainConfig

    flat = dict(sims=["smollm2"], steps=1, group_size=2, tasks=2, max_turns=2, max_tokens=12, seed=3, temperature=0.7)
    return TrainConfig(**{**flat, "personas": "personas.jsonl", **changes})


def test_the_train_config_nests_the_rollout_config_and_the_arena():
    from collapse_probe.trainers import TrainConfig

    c = _train_config()
    assert c.rollout == RolloutConfig(tasks=2, rollouts=2, max_turns=2, seed=3, temperature=0.7)  # G = rollouts
    assert c.arena == ArenaSpec("p4g", {"personas": "personas.jsonl"}) and c.personas == "personas.jsonl"
    assert (c.benchmark, c.group_size, c.tasks, c.max_turns, c.seed, c.temperature) == ("p4g", 2, 2, 2, 3, 0.7)
    stored = {k: v for k, v in TRAIN_CONFIG_BEFORE.items() if k not in ("kind", "version", "arena")}
    assert c.to_dict() == {**stored, "arena_options": None}  # config.json and results.json: the fields
    assert TrainConfig.from_dict(TRAIN_CONFIG_BEFORE) == c == TrainConfig(**c.to_dict())
    assert c.replace(group_size=3).rollout.rollouts == 3 and c.group_size == 2
    assert c.replace(personas=None).arena.options == {} and c.personas == "personas.jsonl"
    c.tasks, c.benchmark, c.tau2_data = 5, "tau2-demo", "d"
    assert c.rollout.tasks == 5 and c.arena == ArenaSpec("tau2-demo", {"personas": "personas.jsonl", "tau2_data": "d"})
    plugin = _train_config(arena_options={"room_type": "x"})
    assert plugin.to_dict()["arena_options"] == {"room_type": "x"} and plugin.arena_options == {"room_type": "x"}
    assert TrainConfig.from_dict(plugin.to_dict()) == plugin
    assert TrainConfig().rollout == RolloutConfig(tasks=4, rollouts=4, max_turns=3)  # the trainer's defaults
    # the trainer's own bounds on the shared fields, named by its flags
    with pytest.raises(ConfigError, match=r"^--group-size must be an integer in \[2, 4,096\] \(advantages"):
        TrainConfig(group_size=1)
    with pytest.raises(ConfigError, match=r"^--temperature must be a finite number > 0 \(REINFORCE"):
        TrainConfig(temperature=0)
    with pytest.raises(ConfigError, match=r"^--max-turns must be an integer >= 1, got None$"):
        TrainConfig(max_turns=None)
    with pytest.raises(ConfigError, match=r"^arena_options: expected a mapping"):
        TrainConfig(arena_options=["room_type"])


def test_a_train_run_of_the_former_version_resumes_and_a_changed_option_is_refused(tmp_path, monkeypatch):
    from collapse_probe.trainers.llm import LLMTrainer, build_arena

    monkeypatch.chdir(tmp_path)
    (tmp_path / "personas.jsonl").write_text(PERSONAS.read_text())
    run = _stored(tmp_path, "tr", TRAIN_CONFIG_BEFORE)
    config = _train_config()
    arena = build_arena(config)
    LLMTrainer(config, run, arena=arena)._prepare_dir()
    assert json.loads((run / "config.json").read_text())["arena"] == TRAIN_CONFIG_BEFORE["arena"]
    with pytest.raises(ConfigError, match=r"differs in: group_size\)"):
        changed = _train_config(group_size=3)
        LLMTrainer(changed, _stored(tmp_path, "tr2", TRAIN_CONFIG_BEFORE), arena=build_arena(changed))._prepare_dir()
