"""The OpenRLHF adapter on OpenRLHF 0.11's own classes, on CPU.

What runs is OpenRLHF's: ``MultiTurnAgentExecutor.execute`` (the multi-turn loop: tokenizing the
observation and the environment feedback, calling the agent's ``reset`` and ``step``), its ``Experience``
with ``concat_experiences``, ``make_experience_batch`` and ``split_experience_batch``. Not covered (they
need a GPU): the vLLM engine, which a scripted policy replaces (``generate`` returns vLLM-shaped outputs of
fixed texts), and ``samples_generator.py``, which imports vLLM: :func:`_experience` does its three lines
that turn a response's ``extra_logs`` into ``Experience.info``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

agent = pytest.importorskip(
    "openrlhf.utils.agent", reason="OpenRLHF's agent module is not importable here (scripts/framework_env.sh DIR)"
)
torch = pytest.importorskip("torch")

from openrlhf.trainer.ppo_utils.experience import (  # noqa: E402
    Experience,
    make_experience_batch,
    split_experience_batch,
)

OPENINGS = ["Would you give to Save the Children?", "Hi! How are you today?"]


@dataclass
class SamplingParams:
    """The fields of vLLM's SamplingParams that OpenRLHF's executor reads and writes."""

    max_tokens: int | None = None
    logprobs: int | None = None
    temperature: float = 1.0


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine: the policy's turns are fixed texts."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.calls = tokenizer, 0

    async def generate(self, prompt_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        text = OPENINGS[self.calls % len(OPENINGS)]
        self.calls += 1
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        out = types.SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return types.SimpleNamespace(outputs=[out])


def _experience(response: dict[str, Any]) -> Experience:
    """An Experience from an executor response, as OpenRLHF's samples_generator builds it."""
    tokens = response["observation_tokens"]
    action_mask = torch.zeros(len(tokens), dtype=torch.long)
    for start, end in response["action_ranges"]:
        action_mask[start:end] = 1
    info = {"response_clip_ratio": torch.tensor([False]), "reward": torch.tensor([response["reward"]]),
            "score": torch.tensor([response["scores"]])}  # fmt: skip
    for key, value in response.get("extra_logs", {}).items():  # samples_generator.py: extra logs -> info
        if isinstance(value, torch.Tensor):
            value = value.flatten()[0].item()
        info[key] = torch.tensor([value])
    return Experience(
        sequences=torch.tensor(tokens).unsqueeze(0), attention_mask=torch.ones(1, len(tokens), dtype=torch.long),
        action_mask=action_mask[1:].unsqueeze(0), prompts=[response["prompt"]], labels=[response["label"]],
        rewards=torch.tensor([response["reward"]]), scores=torch.tensor([response["scores"]]),
        response_length=torch.tensor([int(action_mask.sum())]), truncated=torch.tensor([False]),
        total_length=torch.tensor([float(len(tokens))]), info=info,
    )  # fmt: skip


def _classes(tmp_path: Path, donor: str) -> tuple[type, type]:
    from collapse_probe.integrations.monitor.openrlhf import agent_classes

    return agent_classes(sim=donor, benchmark="p4g", max_turns=2, rollouts_per_step=2, out=tmp_path,
                         monitor={"shadow_fraction": 1.0, "shadow_samples": 4, "partition": "exact"})  # fmt: skip


def test_agent_classes_subclass_openrlhfs_bases_and_the_documented_flag_is_openrlhfs(tmp_path, donor):
    instance_cls, executor_cls = _classes(tmp_path, donor)
    assert issubclass(instance_cls, agent.AgentInstanceBase)
    assert issubclass(executor_cls, agent.MultiTurnAgentExecutor) and issubclass(executor_cls, agent.AgentExecutorBase)
    # OpenRLHF builds its argparse parser under __main__: read the flags from its source
    spec = importlib.util.find_spec("openrlhf.cli.train_ppo_ray")
    assert spec is not None and spec.origin is not None
    flags = set(re.findall(r'add_argument\(\s*"(--[\w.]+)"', Path(spec.origin).read_text()))
    assert "--train.agent_func_path" in flags and "--agent_func_path" not in flags
    docs = (Path(__file__).parents[2] / "docs" / "monitor-openrlhf.md").read_text()
    used = set(re.findall(r"(--[\w.-]+)", docs))
    assert "--train.agent_func_path" in used and not (used - flags - {"--no-deps"}), sorted(used - flags)


def test_the_documented_agent_file_loads_the_way_openrlhf_loads_it(tmp_path):
    """OpenRLHF's ``_load_agent_executor`` (in vllm_engine.py, which imports vLLM): exec the file, take
    its ``AgentExecutor``, check it is an ``AgentExecutorBase`` and instantiate it."""
    docs = (Path(__file__).parents[2] / "docs" / "monitor-openrlhf.md").read_text()
    block = re.search(r"```python\n(# agent.py\n.*?)```", docs, re.S)
    assert block is not None
    path = tmp_path / "agent.py"
    path.write_text(block.group(1).replace('"runs/openrlhf-monitor"', repr(str(tmp_path / "mon"))))
    spec = importlib.util.spec_from_file_location("agent_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, agent.AgentExecutorBase)
    assert isinstance(module.AgentExecutor(), agent.MultiTurnAgentExecutor)


def test_openrlhfs_experience_batching_takes_extra_logs_from_before_and_after_the_first_closed_step(
    tmp_path, tokenizer, donor
):
    tok, _ = tokenizer
    _, executor_cls = _classes(tmp_path, donor)
    executor, engine = executor_cls(), ScriptedEngine(tok)

    async def batch(labels: list[str]) -> list[dict[str, Any]]:
        return await asyncio.gather(*[
            executor.execute("Persuader:", label, SamplingParams(), 512, tok, engine) for label in labels
        ])  # fmt: skip

    from collapse_probe.benchmarks.p4g import P4GArena

    labels = [str(t.task_id) for t in P4GArena(max_turns=2).load_tasks(2, seed=0)]
    first = asyncio.run(batch(labels))  # no monitor step has closed when these start
    second = asyncio.run(batch(labels))  # these start after step 0 closed
    rows = [r for r in (Path(p) for p in tmp_path.glob("actor-*/monitor.jsonl"))]
    assert len(rows) == 1
    import json

    steps = [json.loads(line) for line in rows[0].read_text().splitlines()]
    assert [s["step"] for s in steps] == [0, 1] and steps[0]["shadow_states"] >= 2
    for r in first + second:  # the policy's turns and the simulator's answers, in OpenRLHF's token stream
        text = tok.decode(r["observation_tokens"])
        assert len(r["action_ranges"]) >= 1 and any(o in text for o in OPENINGS) and text.count("\n") >= 2
    keys = {tuple(sorted(r["extra_logs"])) for r in first + second}
    assert len(keys) == 1 and "collapse/epsilon" in next(iter(keys))

    experiences = [_experience(r) for r in first + second]
    merged = Experience.concat_experiences(experiences, pad_token_id=tok.pad_token_id)
    items = split_experience_batch(merged)  # raised "Size of info[collapse/epsilon] (1) does not match" before
    assert len(items) == 4
    batched = make_experience_batch(items)
    eps = batched.info["collapse/epsilon"]
    assert [math.isnan(float(x)) for x in eps] == [True, True, False, False]
    assert float(eps[2]) == pytest.approx(steps[0]["collapse_error"]["estimate"])
    # OpenRLHF's actor logs the mean of a micro-batch's info (a list becomes a float tensor): over one
    # step's samples it is that step's figure
    later = make_experience_batch(items[2:]).info["collapse/epsilon"]
    later = torch.tensor([float(x) for x in later]) if isinstance(later, list) else later
    assert float(later.float().mean()) == pytest.approx(steps[0]["collapse_error"]["estimate"])


def test_samples_with_different_extra_log_keys_do_not_split(tokenizer):
    """Why the key set is fixed: OpenRLHF's own split refuses samples whose info keys differ."""
    tok, _ = tokenizer
    response = {"observation_tokens": [1, 2, 3], "action_ranges": [(1, 3)], "reward": 0.0, "scores": 0.0,
                "prompt": "p", "label": "l"}  # fmt: skip
    exps = [
        _experience({**response, "extra_logs": {}}),
        _experience({**response, "extra_logs": {"collapse/epsilon": 0.5}}),
    ]
    with pytest.raises(ValueError, match="does not match batch_size"):
        split_experience_batch(Experience.concat_experiences(exps, pad_token_id=tok.pad_token_id))
