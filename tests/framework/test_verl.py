"""The verl adapter on verl 0.9's own classes, on CPU.

What runs is verl's: its agent-loop registry and hydra instantiation, ``AgentLoopWorker._run_agent_loop``
(``ToolAgentLoop``'s state machine, Continuous Token building, padding, ``_compute_score``), its
``RewardLoopWorker`` loading our reward manager through ``reward.reward_manager.source=importlib``, and
``AgentLoopWorker._postprocess`` assembling the batch ``DataProto``. Not covered (they need a GPU or a
cluster): the vLLM/SGLang server, which a scripted policy replaces (``generate`` returns the tokens of
fixed texts as verl's ``TokenOutput``), and Ray's actor transport (the reward-loop worker is the real
class, called in process).
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

verl_agent_loop = pytest.importorskip(
    "verl.experimental.agent_loop.agent_loop", reason="verl is not importable here (scripts/framework_env.sh DIR)"
)

from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, _agent_loop_registry  # noqa: E402
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop  # noqa: E402
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker  # noqa: E402
from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls  # noqa: E402
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

OPENINGS = ["Would you give to Save the Children?", "Hi! How are you today?", "Kids need help, will you donate?"]


class ScriptedServer:
    """Stands in for verl's LLM server client (vLLM/SGLang need a GPU): the policy's turns are fixed texts."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.calls = tokenizer, 0

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **_: Any) -> TokenOutput:
        text = OPENINGS[self.calls % len(OPENINGS)]
        self.calls += 1
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=ids, log_probs=[-1.0] * len(ids), stop_reason="completed")


class InProcessHandle:
    """Ray's actor handle for a reward-loop worker, without Ray: ``compute_score.remote(data)`` awaits the
    real worker's ``compute_score``."""

    def __init__(self, worker: RewardLoopWorker) -> None:
        self.compute_score = type("Remote", (), {"remote": staticmethod(worker.compute_score)})


def _config(tok_dir: Path, tmp_path: Path, **section: Any) -> Any:
    import verl

    cfg = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    r = cfg.actor_rollout_ref.rollout
    r.prompt_length, r.response_length, r.n = 512, 512, 2
    r.multi_turn.max_assistant_turns = 4
    cfg.actor_rollout_ref.model.path = cfg.actor_rollout_ref.model.tokenizer_path = str(tok_dir)
    cfg.data.train_batch_size = 2
    cfg.reward.num_workers = 1
    cfg.reward.reward_manager.source = "importlib"
    cfg.reward.reward_manager.module.path = "pkg://collapse_probe.integrations.monitor.verl"
    cfg.reward.reward_manager.name = "CollapseMonitorRewardManager"
    cfg.collapse_monitor = {"sim": section.pop("sim"), "benchmark": "p4g", "max_turns": 2,
                            "spool": str(tmp_path / "spool"), "out": str(tmp_path / "monitor"),
                            "monitor": {"shadow_fraction": 1.0, "shadow_samples": 4, "partition": "exact"}, **section}  # fmt: skip
    return cfg


def _worker(cfg: Any, tokenizer: Any) -> AgentLoopWorker:
    """verl's AgentLoopWorker with the attributes its __init__ would set from a running cluster."""
    w = AgentLoopWorker.__new__(AgentLoopWorker)
    w.config, w.rollout_config = cfg, cfg.actor_rollout_ref.rollout
    w.llm_client, w.teacher_client = ScriptedServer(tokenizer), None
    w.tokenizer, w.processor, w.hf_model_type, w.dataset_cls = tokenizer, None, None, RLHFDataset
    w.mm_processor_kwargs, w.distillation_enabled, w.tools = {}, False, []
    w.reward_loop_worker_handles = [InProcessHandle(RewardLoopWorker(cfg))]
    return w


def _rows(tmp_path: Path, n: int) -> list[dict[str, Any]]:
    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor.verl import write_dataset

    arena = P4GArena(max_turns=2)
    path = write_dataset(arena, arena.load_tasks(n, seed=0), tmp_path / "p4g.parquet")
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    assert {r["agent_name"] for r in rows} == {"collapse_monitor"}
    return rows


async def _step(w: AgentLoopWorker, rows: list[dict[str, Any]], step: int, n: int = 2) -> DataProto:
    """One training step's rollouts, as AgentLoopWorker.generate_sequences runs them, then its batch."""
    tasks = []
    for i, row in enumerate(r for r in rows for _ in range(n)):
        kwargs = {"raw_prompt": np.array(row["prompt"], dtype=object), "extra_info": row["extra_info"],
                  "index": i, "uid": f"{step}-{row['extra_info']['task_id']}", "data_source": row["data_source"],
                  "reward_model": row["reward_model"]}  # fmt: skip
        trajectory = {"step": step, "sample_index": i, "rollout_n": i % n, "validate": False}
        tasks.append(
            w._run_agent_loop({"temperature": 1.0}, trajectory, agent_name=row["agent_name"], trace=False, **kwargs)
        )
    outputs = await asyncio.gather(*tasks)
    return outputs


def test_agent_loop_and_reward_manager_are_registered_verl_classes(tmp_path, tokenizer, donor):
    import collapse_probe.integrations.monitor.verl as adapter

    loop_cls, manager_cls = adapter.CollapseMonitorAgentLoop, adapter.CollapseMonitorRewardManager
    assert issubclass(loop_cls, ToolAgentLoop) and issubclass(manager_cls, RewardManagerBase)
    assert _agent_loop_registry["collapse_monitor"] == {
        "_target_": "collapse_probe.integrations.monitor.verl.CollapseMonitorAgentLoop"
    }
    assert get_reward_manager_cls("collapse_monitor") is manager_cls
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    cfg = _config(tokenizer[1], tmp_path, sim=donor)
    assert resolve_reward_manager_cls(cfg) is manager_cls  # how verl's RewardLoopManager finds it


def test_verl_rollouts_are_played_scored_and_monitored_through_verls_own_pipeline(tmp_path, tokenizer, donor):
    tok, tok_dir = tokenizer
    cfg = _config(tok_dir, tmp_path, sim=donor)
    rows = _rows(tmp_path, 2)

    async def run() -> tuple[list[Any], list[Any], AgentLoopWorker]:
        w = _worker(cfg, tok)
        first = await _step(w, rows, 0)
        second = await _step(w, rows, 1)
        return first, second, w

    first, second, w = asyncio.run(run())
    for out in first + second:
        info = out.extra_fields["collapse_probe"]
        assert info["status"] != "infra_error" and info["opening"] in OPENINGS
        assert out.num_turns >= 3  # the prompt, a policy turn and the simulator's answer at least
        assert out.reward_score == pytest.approx(info["reward"])  # verl's reward loop called our manager
        policy = tok.decode(out.response_ids[0][out.response_mask[0].bool()].tolist(), skip_special_tokens=True)
        assert info["opening"] in policy  # the tokens trained on are the turns the arena heard
    # the simulator's reply is in the response as an observation (mask 0), the policy's turns are mask 1
    masks = first[0].response_mask[0].tolist()
    assert 0 in masks and 1 in masks
    # the trainer-side monitor closed one step per 2 x 2 samples and took the spooled turns
    from collapse_probe.integrations.monitor.verl import _SESSIONS, RewardSession

    session = next(
        s for s in _SESSIONS.values() if isinstance(s, RewardSession) and s.monitor.out == tmp_path / "monitor"
    )
    rows_ = session.monitor.rows_
    assert [r["step"] for r in rows_] == [0, 1]
    assert all(r["rollouts"] == 4 and r["shadow_states"] >= 4 for r in rows_)
    assert rows_[0]["train_reward"] == pytest.approx(np.mean([o.reward_score for o in first]))
    # verl assembles each step's batch from the first sample's reward_extra_info keys: every sample has them
    batch0 = w._postprocess(first, validate=False)
    mixed = w._postprocess(first[2:] + second[:2], validate=False)  # samples from before and after the close
    batch1 = w._postprocess(second, validate=False)
    keys = batch0.meta_info["reward_extra_keys"]
    assert (
        "collapse/epsilon" in keys
        and keys == batch1.meta_info["reward_extra_keys"] == mixed.meta_info["reward_extra_keys"]
    )
    assert all(math.isnan(x) for x in batch0.non_tensor_batch["collapse/epsilon"])  # no step closed yet
    eps0 = rows_[0]["collapse_error"]["estimate"]
    assert list(batch1.non_tensor_batch["collapse/epsilon"]) == pytest.approx([eps0] * 4)  # the last closed step's
    both = DataProto.concat([batch0, batch1])
    assert len(both) == 8 and both.batch["rm_scores"].shape[0] == 8


def test_validation_rollouts_are_not_training_steps(tmp_path, tokenizer, donor):
    tok, tok_dir = tokenizer
    cfg = _config(tok_dir, tmp_path, sim=donor)
    rows = _rows(tmp_path, 2)
    for r in rows:
        r["extra_info"]["split"] = "val"

    async def run() -> list[Any]:
        return await _step(_worker(cfg, tok), rows, 0, n=2)

    outs = asyncio.run(run())
    assert all(o.reward_score is not None for o in outs)
    assert not list((tmp_path / "spool").glob("*.jsonl"))  # the unmonitored simulator played them
    assert (
        not (tmp_path / "monitor" / "monitor.jsonl").exists()
        or not (tmp_path / "monitor" / "monitor.jsonl").read_text()
    )


def test_reward_manager_refuses_several_reward_workers(tmp_path, tokenizer, donor):
    from collapse_probe.errors import ConfigError

    cfg = _config(tokenizer[1], tmp_path, sim=donor)
    cfg.reward.num_workers = 4
    with pytest.raises(ConfigError, match="reward.num_workers=1"):
        RewardLoopWorker(cfg)


def test_missing_settings_are_one_line_naming_the_key(tmp_path, tokenizer, donor):
    from collapse_probe.errors import ConfigError
    from collapse_probe.integrations.monitor.verl import settings_from

    cfg = _config(tokenizer[1], tmp_path, sim=donor)
    del cfg.collapse_monitor["spool"]
    with pytest.raises(ConfigError, match=r"collapse_monitor.spool is required"):
        settings_from(cfg)
    cfg.collapse_monitor.spool, cfg.collapse_monitor.shadow = "x", 0.1
    with pytest.raises(ConfigError, match=r"collapse_monitor.shadow: unknown setting"):
        settings_from(cfg)


def _blocks(kind: str) -> list[str]:
    import re

    docs = (Path(__file__).parents[2] / "docs" / "monitor-verl.md").read_text()
    return re.findall(rf"```{kind}\n(.*?)```", docs, re.S)


def test_the_documented_commands_make_the_dataset_and_the_agent_loop_config_verl_loads(tmp_path, tokenizer, donor):
    import os
    import subprocess
    import sys

    import hydra

    setup = _blocks("bash")[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(Path(__file__).parents[2])}  # fmt: skip
    subprocess.run(["bash", "-euo", "pipefail", "-c", setup], cwd=tmp_path, env=env, check=True, timeout=600)
    import pyarrow.parquet as pq

    train, val = (pq.read_table(tmp_path / f).to_pylist() for f in ("p4g.parquet", "p4g-val.parquet"))
    assert {r["extra_info"]["split"] for r in train} == {"train"} and {r["extra_info"]["split"] for r in val} == {"val"}
    # what AgentLoopWorker.__init__ does with agent_loop_config_path, then what _run_agent_loop does
    entries = OmegaConf.load(tmp_path / "agent_loops.yaml")
    registry = {e.name: e for e in entries}
    tok, tok_dir = tokenizer
    cfg = _config(tok_dir, tmp_path, sim=donor)

    async def make() -> Any:
        from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap

        return hydra.utils.instantiate(config=registry["collapse_monitor"], trainer_config=DictConfigWrap(cfg),
                                       server_manager=ScriptedServer(tok), tokenizer=tok, processor=None,
                                       hf_model_type=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                       tools=ToolListWrap([]))  # fmt: skip

    import collapse_probe.integrations.monitor.verl as adapter

    assert isinstance(asyncio.run(make()), adapter.CollapseMonitorAgentLoop)


def test_the_documented_run_sets_only_keys_of_verls_config():
    import re

    import verl

    cfg = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    run = _blocks("bash")[1]
    keys = [m.group(1) for m in re.finditer(r"(?:^|\s)([\w.]+)=", run)]
    assert "reward.reward_manager.name" in keys and len(keys) > 10
    for key in keys:
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        assert node is not None and leaf in list(node.keys()), f"{key} is not a key of verl's ppo_trainer config"
    added = re.findall(r"\+(collapse_monitor\.[\w.]+)=", run)
    from collapse_probe.integrations.monitor.verl import SETTINGS

    assert {k.split(".")[1] for k in added} <= set(SETTINGS)
