"""Upper bounds on the size of one run, checked when a configuration is validated.

A mistyped ``--samples 1000000000`` must fail at once with a clear message, not grow memory until
the machine swaps: every sample of a state and every conversation of a run is held in memory for
its estimates. The bounds are far above any useful run; split larger work into several runs.
"""

from __future__ import annotations

import math
from typing import Any

from collapse_probe.core._constraints import AtMost, Integer, Number
from collapse_probe.errors import ConfigError

MAX_SAMPLES_PER_STATE = 100_000
"""Responses sampled at one audit state (``--samples``)."""
MAX_STATES = 100_000
"""Audit states / tasks in one run (``--states``, ``--tasks``)."""
MAX_TURNS = 1_000
"""Rounds of one conversation (``--max-turns``)."""
MAX_CONVERSATIONS = 1_000_000
"""Conversations in one run (tasks x rollouts x matrix cells)."""
MAX_ROLLOUTS = 10_000
"""Conversations per task (``--rollouts``, ``--eval-rollouts``)."""
MAX_LIVE = 100_000
"""Conversations in flight at once (``--max-live``)."""
MAX_VS_K = 100
"""Candidates of one Verbalized-Sampling turn (``--vs-k``): each is a reply the model writes in one answer."""
MAX_VARIANCE_DRAWS = 1_000
"""Agent seeds per task (``--variance-agents``) and simulator continuations per agent prefix
(``--variance-sims``) of the variance share: each multiplies the run's conversations."""
MAX_STEPS = 1_000_000
"""Updates of a training run or a lab run (``--steps``), and the step interval options (``--eval-every``,
``--snapshot-every``, ``--save-every``); a lab step takes about a millisecond, a train step seconds."""
MAX_GROUP = 4_096
"""Rollouts of one advantage group or one batch (``--group-size``, ``--train-batch``, ``--tv-samples``
per step), the members of a pool or an ensemble (``--pool-size``, ``--ensemble-size``, ``--keep-checkpoints``)."""
MAX_TOKENS = 131_072
"""Tokens of one generated reply (``--max-tokens``)."""
MAX_LORA_RANK = 4_096
"""LoRA rank and alpha (``--lora-r``, ``--lora-alpha``): past a model's hidden size a rank adds nothing."""
MAX_LAB_SIZE = 10_000
"""Tasks, strategies, behaviours, families and personas of the tabular lab (its tables hold their products)."""
MAX_LAB_HORIZON = 12
"""User turns of a lab conversation (``--horizon``): the exact analysis enumerates ``n_behaviours**horizon`` sequences."""
MAX_SEED = 2**63 - 1
"""A seed (``--seed``): what numpy and torch accept."""
MAX_CONCURRENCY = 1_024
"""Calls of one model in flight at once (backend option ``concurrency``): providers limit far lower."""
MAX_RETRIES = 100
"""Retries of one failed call (backend option ``max_retries``)."""
MAX_WAIT_S = 3_600.0
"""Seconds of one backend wait (``timeout``, ``backoff_base``, ``backoff_max``, ``max_retry_after``)."""
MAX_DELAY_S = 60.0
"""Seconds a scripted model waits per call (backend option ``delay_s``): simulated latency."""
MAX_REPLICAS = 1_024
"""Ray replica actors of one model (``--replicas``)."""
MAX_RAY_CPUS = 4_096
"""CPUs of a ``--ray-address local`` cluster (``--ray-num-cpus``), threads of the local backend
(``$COLLAPSE_PROBE_TORCH_THREADS``)."""
MAX_LAB_SEEDS = 1_000
"""Seeds of a lab ``--compare`` / ``--sweep`` (``--seeds``): every method runs once per seed."""
MAX_SWEEP_VALUES = 100
"""Values of a lab ``--sweep PARAM=V1,V2,...``: every method runs at each of them."""
MAX_BATCH = 4_096
"""Sequences of one forward pass of a local model (backend option ``max_batch``)."""
MAX_BOOT = 100_000
"""Bootstrap resamples (``--n-boot``); 2,000 already puts a 95 % interval's ends within Monte-Carlo noise."""
MAX_BOOT_DRAWS = 50_000_000
"""Resamples x units resampled (tasks, states): the draws a bootstrap holds in memory at once, 8 bytes each."""


def check_at_most(value: Any, limit: int, flag: str, what: str) -> None:
    """Raise :class:`ConfigError` naming ``flag`` when ``value`` exceeds ``limit``."""
    AtMost(limit, what).check(value, flag)


def check_n_boot(n_boot: Any, units: int, flag: str = "--n-boot", least: int = 100) -> None:
    """Refuse a bootstrap that could not run in memory, before any model is called: ``n_boot`` must
    be an integer in [``least``, :data:`MAX_BOOT`] and ``n_boot x units`` at most :data:`MAX_BOOT_DRAWS`."""
    check_int(n_boot, flag, least)
    if n_boot > MAX_BOOT:
        raise ConfigError(
            f"{flag} {n_boot}: at most {MAX_BOOT:,} bootstrap resamples (2,000 already put a 95 % interval's ends "
            "within Monte-Carlo noise)"
        )
    if n_boot * max(units, 1) > MAX_BOOT_DRAWS:
        raise ConfigError(
            f"{flag} {n_boot}: x {units:,} resampled units is more than {MAX_BOOT_DRAWS:,} draws in memory; "
            f"use --n-boot {max(least, MAX_BOOT_DRAWS // max(units, 1)):,} or fewer"
        )


def check_finite(value: Any, flag: str, least: float | None = 0.0) -> None:
    """Raise :class:`ConfigError` naming ``flag`` unless ``value`` is a finite number ``>= least``."""
    Number(ge=least).check(value, flag)


def check_int(value: Any, flag: str, least: int | None = 1, *, optional: bool = False) -> None:
    """Raise :class:`ConfigError` naming ``flag`` unless ``value`` is an integer ``>= least`` (a bool is not
    an integer here; ``optional`` also accepts ``None``)."""
    Integer(least, optional=optional).check(value, flag)


def check_range(value: Any, name: str) -> tuple[float, float]:
    """``value`` as a reward range ``(low, high)``: two finite numbers (not bools) with low < high.

    Raises:
        ConfigError: naming ``name``, what was expected and the value received.
    """
    if isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = value
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
        if numbers and low < high:
            return float(low), float(high)
    raise ConfigError(f"{name}: expected [low, high], two finite numbers with low < high, got {value!r}")
