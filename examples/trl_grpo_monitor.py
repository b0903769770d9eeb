"""Train a persuader with TRL's GRPOTrainer on Persuasion for Good, with the collapse monitor on.

The policy is the embedded SmolLM2-135M-Instruct as a transformers model (LoRA adapters); each GRPO
completion is the persuader's opening message, the simulator (``--sim``) answers as the donor, and
the reward is min(donation / 2, 1). From step ``--switch-step`` on the simulator is replaced by
``--sim-after``: a collapse the monitor must see. Runs on 2 CPU cores in a few minutes::

    python examples/trl_grpo_monitor.py --sim scripted:collapse_probe/data/scripted/p4g_donor_diverse.json \\
        --sim-after scripted:collapse_probe/data/scripted/p4g_donor_collapsed_cause.json --switch-step 4 \\
        --steps 8 --out runs/trl-grpo-monitor

Writes ``DIR/monitor.jsonl`` (one row per step, ``step`` from 0: ``collapse_error`` ``{"estimate",
"ci95"}``, ``alarms``, ...), ``DIR/report.html``, ``DIR/log_history.json`` (TRL's
``trainer.state.log_history``, where the same figures appear under ``collapse/…`` keys) and
``DIR/weights.sha256`` (SHA-256 of the final trained weights). ``--no-monitor`` trains without the
monitor: with the same ``--seed`` the weights are identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from collapse_probe.core._resources import package_path

    diverse = package_path("data", "scripted", "p4g_donor_diverse.json")
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--sim", default=f"scripted:{diverse}", help="simulator spec (the donor)")
    p.add_argument("--sim-after", default=None, help="simulator spec from --switch-step on (default: no switch)")
    p.add_argument("--switch-step", type=int, default=None, help="first step (from 0) played by --sim-after")
    p.add_argument("--steps", type=int, default=8, help="GRPO optimizer steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-monitor", action="store_true", help="train without the collapse monitor")
    p.add_argument("--out", default=None, help="run directory (default: runs/trl-grpo-monitor-<time>)")
    p.add_argument(
        "--policy", default="smollm2", help="trainable policy: smollm2 (the embedded SmolLM2), hf/DIR, or tiny"
    )
    p.add_argument("--tasks", type=int, default=4, help="donor personas (prompts) per step")
    p.add_argument("--generations", type=int, default=4, help="GRPO group size G (completions per prompt)")
    p.add_argument("--max-completion-length", type=int, default=24, help="tokens of the persuader's message")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--lora-r", type=int, default=8, help="LoRA rank (0: train every weight)")
    p.add_argument("--shadow-fraction", type=float, default=1.0, help="share of simulator turns shadow-sampled")
    p.add_argument("--shadow-samples", type=int, default=8, help="N replies per shadowed state (N - 1 shadows)")
    p.add_argument("--epsilon-star", type=float, default=0.2, help="ε* of the collapse alarm")
    p.add_argument("--partition", default=None, choices=["embedding", "exact", "label"],
                   help="classes of the meaning view (default: as the audit: by meaning when the embed extra is installed)")  # fmt: skip
    p.add_argument("--sim-max-tokens", type=int, default=32, help="tokens of the donor's reply")
    a = p.parse_args(argv)
    if (a.sim_after is None) != (a.switch_step is None):
        p.error("--sim-after and --switch-step go together")
    if a.switch_step is not None and a.switch_step < 0:
        p.error(f"--switch-step must be >= 0, got {a.switch_step}")
    for name in ("steps", "tasks", "max_completion_length", "sim_max_tokens"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(a, name)}")
    if a.lora_r < 0:
        p.error(f"--lora-r must be >= 0 (0: train every weight), got {a.lora_r}")
    if a.generations < 2:
        p.error(f"--generations must be >= 2 (GRPO compares completions within a group), got {a.generations}")
    if a.shadow_samples < 2:
        p.error(f"--shadow-samples must be >= 2 (the training reply and at least one shadow), got {a.shadow_samples}")
    if not (math.isfinite(a.lr) and a.lr > 0):
        p.error(f"--lr must be a finite number > 0, got {a.lr}")
    if not (math.isfinite(a.shadow_fraction) and 0 < a.shadow_fraction <= 1):
        p.error(f"--shadow-fraction must be in (0, 1], got {a.shadow_fraction}")
    if not (math.isfinite(a.epsilon_star) and 0 < a.epsilon_star <= 1):
        p.error(f"--epsilon-star must be in (0, 1], got {a.epsilon_star}")
    return a


def load_policy(spec: str, out: Path) -> tuple[Any, Any]:
    """The policy as a transformers causal LM and its tokenizer (left padding, a pad token)."""
    from collapse_probe.models.local import load_hf_model, load_local_model

    if spec == "tiny":
        from collapse_probe.models.tiny import build_tiny_llama

        model, tok = load_hf_model(build_tiny_llama(out / "tiny-policy"), device="cpu", dtype="float32", shared=False)
    elif spec.startswith("hf/"):
        model, tok = load_hf_model(spec[3:], device="cpu", dtype="float32", shared=False)
    elif spec in ("smollm2", "local/smollm2-135m"):
        model, tok = load_local_model("smollm2-135m", device="cpu", dtype="float32", shared=False)
    else:
        raise SystemExit(f"error: --policy must be smollm2, tiny or hf/DIR, got {spec!r}")
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model.train()
    return model, tok


def weights_sha256(model: Any) -> str:
    """SHA-256 over every parameter and buffer of ``model``, by sorted name (dtype and shape included)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(-1).view(dtype=__import__("torch").uint8).numpy().tobytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from collapse_probe.errors import CollapseProbeError

    try:
        return run(a)
    except CollapseProbeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(a: argparse.Namespace) -> int:
    import torch
    import trl
    from transformers.utils import logging as hf_logging

    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor import CollapseMonitor
    from collapse_probe.integrations.monitor.trl import (
        CollapseMonitorCallback,
        arena_reward_func,
        monitor_reward_func,
        prompt_dataset,
    )
    from collapse_probe.simulators import make_participant

    hf_logging.set_verbosity_error()
    threads = os.environ.get("COLLAPSE_PROBE_TORCH_THREADS")
    if threads:  # on a shared machine one thread beats two spin-waiting ones (see models/local/__init__.py)
        torch.set_num_threads(int(threads))
    out = Path(a.out or f"runs/trl-grpo-monitor-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}")
    out.mkdir(parents=True, exist_ok=True)
    arena = P4GArena(max_turns=1, max_tokens=a.sim_max_tokens)
    tasks = arena.load_tasks(a.tasks, seed=a.seed)
    # Both simulators are built in both modes, in the same order, so the runs with and without the
    # monitor do exactly the same work before training starts.
    before = make_participant(a.sim, cache=False)
    after = make_participant(a.sim_after, cache=False) if a.sim_after else None
    monitor = None
    if not a.no_monitor:
        monitor = CollapseMonitor(
            arena=arena,
            out=out,
            shadow_fraction=a.shadow_fraction,
            shadow_samples=a.shadow_samples,
            epsilon_star=a.epsilon_star,
            partition=a.partition,
            seed=a.seed,
            extra={"sim": a.sim, "sim_after": a.sim_after, "switch_step": a.switch_step, "policy": a.policy},
        )
        before = monitor.wrap(before)
        after = monitor.wrap(after) if after is not None else None

    def simulator(step: int) -> Any:
        return after if after is not None and a.switch_step is not None and step >= a.switch_step else before

    model, tok = load_policy(a.policy, out)
    reward_funcs: list[Any] = [arena_reward_func(arena, simulator, tasks, seed=a.seed)]
    weights = [1.0]
    callbacks = []
    if monitor is not None:
        reward_funcs.append(monitor_reward_func(monitor))
        weights.append(0.0)
        callbacks.append(CollapseMonitorCallback(monitor))
    peft_config = None
    if a.lora_r > 0:
        import peft

        peft_config = peft.LoraConfig(r=a.lora_r, lora_alpha=2 * a.lora_r, lora_dropout=0.0,
                                      target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")  # fmt: skip
    args = trl.GRPOConfig(
        output_dir=str(out / "trl"),
        max_steps=a.steps,
        per_device_train_batch_size=a.tasks * a.generations,
        num_generations=a.generations,
        max_completion_length=a.max_completion_length,
        learning_rate=a.lr,
        beta=0.0,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=a.seed,
        data_seed=a.seed,
        reward_weights=weights,
        dataloader_num_workers=0,
        disable_tqdm=True,
        log_completions=False,
    )
    torch.manual_seed(a.seed)
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=prompt_dataset(arena, tasks),
        processing_class=tok,
        callbacks=callbacks,
        peft_config=peft_config,
    )
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1), encoding="utf-8")
    digest = weights_sha256(trainer.model)
    (out / "weights.sha256").write_text(digest + "\n", encoding="utf-8")
    if monitor is not None:
        monitor.close()
        alarms = [(r["step"], al["kind"], al.get("view")) for r in monitor.rows_ for al in r["alarms"]]
        first = {"collapse": next((s for s, k, _ in alarms if k == "collapse"), None)}
        print(
            f"monitor: {len(monitor.rows_)} rows in {out / 'monitor.jsonl'}; first collapse alarm at step {first['collapse']}"
        )
    print(f"trained {a.steps} steps in {seconds:.1f} s; weights sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
