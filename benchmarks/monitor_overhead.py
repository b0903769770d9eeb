"""What the collapse monitor costs per training step, as a ratio to the same step without it.

One TRL ``GRPOTrainer`` run on Persuasion for Good: the embedded SmolLM2-135M-Instruct is the policy
(LoRA) *and* the donor simulator (the embedded model through the batched local backend). Steps
alternate between monitored (the simulator wrapped by the monitor, the weight-0 monitor reward closing
the step: shadow sampling, partition by meaning, intervals, the row written) and unmonitored (the plain
simulator, no monitor work), so both see the same machine load; the first two steps (one of each,
loading the sentence encoder) are warm-up. Each step is timed from ``on_step_begin`` to ``on_step_end``
(generation, the simulator's replies, the rewards and the optimizer step).

Prints the median step time of each kind and their ratio (target: <= 1.10 at fraction 0.1, N = 8)::

    python benchmarks/monitor_overhead.py [--steps 10] [--fraction 0.1] [--samples 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=10, help="steps after the two warm-up steps (half of them monitored)")
    p.add_argument("--fraction", type=float, default=0.1, help="share of simulator turns shadow-sampled")
    p.add_argument("--samples", type=int, default=8, help="N replies per shadowed state")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--generations", type=int, default=4)
    p.add_argument("--max-completion-length", type=int, default=24)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import peft
    import torch
    import transformers
    import trl

    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.models.local import load_local_model
    from collapse_probe.monitor import CollapseMonitor
    from collapse_probe.monitor.trl import arena_reward_func, monitor_reward_func, prompt_dataset
    from collapse_probe.simulators import make_participant

    transformers.utils.logging.set_verbosity_error()
    if os.environ.get("COLLAPSE_PROBE_TORCH_THREADS"):
        torch.set_num_threads(int(os.environ["COLLAPSE_PROBE_TORCH_THREADS"]))
    arena = P4GArena(max_turns=1, max_tokens=32)
    tasks = arena.load_tasks(a.tasks, seed=a.seed)
    out = Path(tempfile.mkdtemp(prefix="monitor-overhead-"))
    monitor = CollapseMonitor(arena=arena, out=out, shadow_fraction=a.fraction, shadow_samples=a.samples, seed=a.seed)
    plain = make_participant("smollm2", cache=False)
    watched = monitor.wrap(plain)
    monitored = lambda step: step % 2 == 1  # noqa: E731 - odd steps are monitored

    close_step = monitor_reward_func(monitor)

    def collapse_monitor(prompts: Any, completions: Any, trainer_state: Any = None, **kw: Any) -> list[float]:
        if monitored(int(trainer_state.global_step)):
            return close_step(prompts, completions, trainer_state=trainer_state, **kw)
        return [0.0] * len(prompts)

    times: dict[int, float] = {}

    class Timer(transformers.TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            step = state.global_step - 1
            times[step] = time.perf_counter() - self.t0
            kind = "monitored" if monitored(step) else "unmonitored"
            print(f"step {step}: {kind} {times[step]:.2f} s{' (warm-up)' if step < 2 else ''}", flush=True)

    model, tok = load_local_model("smollm2-135m", shared=False)
    tok.padding_side = "left"
    steps = a.steps + 2
    args = trl.GRPOConfig(
        output_dir=str(out / "trl"), max_steps=steps, per_device_train_batch_size=a.tasks * a.generations,
        num_generations=a.generations, max_completion_length=a.max_completion_length, learning_rate=5e-4,
        beta=0.0, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, seed=a.seed,
        reward_weights=[1.0, 0.0], disable_tqdm=True,
    )  # fmt: skip
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[
            arena_reward_func(arena, lambda s: watched if monitored(s) else plain, tasks, seed=a.seed),
            collapse_monitor,
        ],  # fmt: skip
        args=args,
        train_dataset=prompt_dataset(arena, tasks),
        processing_class=tok,
        callbacks=[Timer()],
        peft_config=peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    trainer.train()
    on = [t for s, t in times.items() if s >= 2 and monitored(s)]
    off = [t for s, t in times.items() if s >= 2 and not monitored(s)]
    shadowed = [r["shadow_states"] for r in monitor.rows_ if r["step"] >= 2]
    monitor_s = [r["monitor_seconds"] for r in monitor.rows_ if r["step"] >= 2]
    turns = [r["simulator_turns"] for r in monitor.rows_ if r["step"] >= 2]
    print(f"steps: {len(on)} monitored, {len(off)} not; simulator turns per monitored step: {turns}")
    pairs = [times[s + 1] / times[s] for s in sorted(times) if s >= 2 and not monitored(s) and s + 1 in times]
    print("per-pair ratios (monitored step / the unmonitored step before it): " + ", ".join(f"{x:.2f}" for x in pairs))
    print(f"shadowed states per monitored step: {shadowed} (fraction {a.fraction}, N = {a.samples})")
    print(f"median step: monitored {statistics.median(on):.2f} s, unmonitored {statistics.median(off):.2f} s")
    print(
        f"monitor's own computation per step (partition, intervals, row): median {statistics.median(monitor_s):.3f} s"
    )
    print(f"ratio monitored / unmonitored: {statistics.median(on) / statistics.median(off):.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
