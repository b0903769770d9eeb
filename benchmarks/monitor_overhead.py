"""What the collapse monitor costs per training step, as a ratio to the same step without it.

One TRL ``GRPOTrainer`` run on Persuasion for Good: the embedded SmolLM2-135M-Instruct is the policy
(LoRA) *and* the donor simulator (the embedded model through the batched local backend). Steps come in
pairs, one monitored (the simulator wrapped by the monitor, the weight-0 monitor reward closing the step:
shadow sampling, partition by meaning, intervals, the row written) and one not (the plain simulator, no
monitor work); the order inside a pair alternates (off-on, on-off, ...) so drift in the machine's load
falls on both kinds alike, and both steps of a pair play their conversations with the same seed. The
first pair (loading the sentence encoder) is warm-up. Each step is timed from ``on_step_begin`` to
``on_step_end`` (generation, the simulator's replies, the rewards and the optimizer step).

Prints the paired ratio, the geometric mean of the per-pair ratios monitored / unmonitored, with its 95 %
t-interval (on the log ratios), target <= 1.10 at fraction 0.1, N = 8::

    python benchmarks/monitor_overhead.py [--pairs 6] [--fraction 0.1] [--samples 8]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
import types
from pathlib import Path
from typing import Any


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=6, help="pairs of steps (one monitored) after the warm-up pair")
    p.add_argument("--fraction", type=float, default=0.1, help="share of simulator turns shadow-sampled")
    p.add_argument("--samples", type=int, default=8, help="N replies per shadowed state")
    p.add_argument("--tasks", type=int, default=2)
    p.add_argument("--generations", type=int, default=4)
    p.add_argument("--max-completion-length", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import numpy as np
    import peft
    import scipy.stats
    import torch
    import transformers
    import trl

    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor import CollapseMonitor
    from collapse_probe.integrations.monitor.trl import arena_reward_func, monitor_reward_func, prompt_dataset
    from collapse_probe.models.local import load_local_model
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

    def monitored(step: int) -> bool:
        """Pair k = steps 2k, 2k + 1: off-on for even k, on-off for odd k."""
        return (step % 2 == 1) == ((step // 2) % 2 == 0)

    def pair_state(trainer_state: Any) -> Any:
        # both steps of a pair: the same conversation seeds; the monitor's steps: one per pair, in order
        return types.SimpleNamespace(global_step=int(trainer_state.global_step) // 2)

    play = arena_reward_func(arena, lambda k: watched if on_now[0] else plain, tasks, seed=a.seed)
    close_step = monitor_reward_func(monitor)
    on_now = [False]

    def arena_reward(prompts: Any, completions: Any, trainer_state: Any = None, **kw: Any) -> list[float | None]:
        on_now[0] = monitored(int(trainer_state.global_step))
        return play(prompts, completions, trainer_state=pair_state(trainer_state), **kw)

    def collapse_monitor(prompts: Any, completions: Any, trainer_state: Any = None, **kw: Any) -> list[float]:
        if monitored(int(trainer_state.global_step)):
            return close_step(prompts, completions, trainer_state=pair_state(trainer_state), **kw)
        return [0.0] * len(prompts)

    times: dict[int, float] = {}

    class Timer(transformers.TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            step = state.global_step - 1
            times[step] = time.perf_counter() - self.t0
            kind = "monitored" if monitored(step) else "unmonitored"
            print(
                f"step {step} (pair {step // 2}): {kind} {times[step]:.2f} s{' (warm-up)' if step < 2 else ''}",
                flush=True,
            )

    model, tok = load_local_model("smollm2-135m", shared=False)
    tok.padding_side = "left"
    steps = 2 * a.pairs + 2
    args = trl.GRPOConfig(
        output_dir=str(out / "trl"), max_steps=steps, per_device_train_batch_size=a.tasks * a.generations,
        num_generations=a.generations, max_completion_length=a.max_completion_length, learning_rate=5e-4,
        beta=0.0, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, seed=a.seed,
        reward_weights=[1.0, 0.0], disable_tqdm=True,
    )  # fmt: skip
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[
            arena_reward,
            collapse_monitor,
        ],  # fmt: skip
        args=args,
        train_dataset=prompt_dataset(arena, tasks),
        processing_class=tok,
        callbacks=[Timer()],
        peft_config=peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    trainer.train()
    pairs = sorted({s // 2 for s in times if s >= 2 and s + (1 if s % 2 == 0 else -1) in times})
    ratios = []
    for k in pairs:
        on, off = (2 * k, 2 * k + 1) if monitored(2 * k) else (2 * k + 1, 2 * k)
        ratios.append(times[on] / times[off])
    rows = [r for r in monitor.rows_ if r["step"] >= 1]
    print(f"pairs: {len(ratios)}; simulator turns per monitored step: {[r['simulator_turns'] for r in rows]}")
    print(
        f"shadowed states per monitored step: {[r['shadow_states'] for r in rows]} (fraction {a.fraction}, N = {a.samples})"
    )
    print("per-pair ratios (monitored / unmonitored): " + ", ".join(f"{x:.3f}" for x in ratios))
    print(f"monitor's own computation per step (partition, intervals, row): median "
          f"{statistics.median(r['monitor_seconds'] for r in rows):.3f} s")  # fmt: skip
    on_t = [times[s] for s in times if s >= 2 and monitored(s)]
    off_t = [times[s] for s in times if s >= 2 and not monitored(s)]
    print(f"median step: monitored {statistics.median(on_t):.2f} s, unmonitored {statistics.median(off_t):.2f} s")
    logs = np.log(ratios)
    mean = float(np.mean(logs))
    if len(logs) >= 2:
        half = float(scipy.stats.t.ppf(0.975, len(logs) - 1) * np.std(logs, ddof=1) / math.sqrt(len(logs)))
        lo, hi = math.exp(mean - half), math.exp(mean + half)
        print(f"paired ratio monitored / unmonitored: {math.exp(mean):.3f}, 95% CI [{lo:.3f}, {hi:.3f}] over "
              f"{len(logs)} pairs (target <= 1.10: {'met' if hi <= 1.10 else 'not established' if lo <= 1.10 else 'missed'})")  # fmt: skip
    else:
        print(f"paired ratio monitored / unmonitored: {math.exp(mean):.3f} (one pair: no interval)")


if __name__ == "__main__":
    main()
