"""The monitor's configuration: one typed object, validated once, written into its run directory."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from collapse_probe.core._constraints import Config, Integer, Number, OneOf, SubsetOf
from collapse_probe.core._trackers import TRACKERS
from collapse_probe.core.limits import MAX_SAMPLES_PER_STATE, MAX_SEED, MAX_STEPS

BATCHING = ("auto", "joint", "separate")


def __getattr__(name: str) -> Any:
    # ``PARTITIONS``: the registered partitions the monitor can build (it has a benchmark, no judge
    # model; an installed partitioner that needs no judge is accepted too), read from the partitioner
    # registry on use: importing the metrics loads scipy, which a trainer's monitor hook must not pay for
    if name == "PARTITIONS":
        from collapse_probe.metrics.partitioners import usable_partitioners

        return usable_partitioners(model=False)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class MonitorConfig(Config):
    """What the live collapse monitor measures, how often, and when it raises an alarm.

    Every field is a keyword parameter of :class:`~collapse_probe.integrations.monitor.CollapseMonitor`'s config;
    :meth:`validate` checks them once, naming the field, what is allowed and what was given.
    """

    shadow_fraction: Annotated[float, Number(gt=0, le=1)] = 0.1
    """Share of simulator turns that are shadow-sampled, in (0, 1]. Turns are chosen by systematic
    sampling from a random start drawn from the monitor's own seed: every turn has inclusion
    probability exactly ``shadow_fraction`` and the count per step varies by at most one."""
    shadow_samples: Annotated[int, Integer(2, most=MAX_SAMPLES_PER_STATE)] = 8
    """N: replies per shadow-sampled state, the training reply included (N - 1 extra draws), >= 2."""
    epsilon_star: Annotated[float, Number(gt=0, le=1)] = 0.2
    """ε*: the collapse alarm fires when the run-wide sequential test rejects "ε ≥ ε* at the shadowed
    states" (a false alarm anywhere in the run has chance ≤ 1 − ``level``; docs/monitor.md)."""
    alarm_views: Annotated[tuple[str, ...], SubsetOf(("meaning", "reward"))] = ("meaning",)
    """Which views' run-wide collapse tests raise the collapse alarm: the headline ``meaning`` view by default; add
    ``reward`` to be alarmed also when what the reward pays for collapses (a simulator whose replies the
    reward never tells apart, e.g. a donor that never states an amount, is reward-collapsed from the
    first step: the reward view's ε is always in the rows either way)."""
    partition: str | None = None
    """Classes of the meaning view: ``None`` resolves as the audit does (embedding by meaning, with the
    benchmark's meaning key, when the ``embed`` extra is installed, else the benchmark's fallback);
    or ``embedding``, ``exact``, ``label`` (the benchmark's decision labels)."""
    strategy_partition: str | None = None
    """Classes of the policy's messages for its strategy entropy: ``None`` is ``embedding`` (no
    meaning key: the key reads donor replies) when installed, else ``exact``."""
    level: Annotated[float, Number(gt=0, lt=1)] = 0.95
    """Confidence level of every interval."""
    seed: Annotated[int, Integer(None, most=MAX_SEED)] = 0
    """Seed of the monitor's own random stream: which turns are shadowed and the shadow replies' seeds.
    Nothing the monitor does draws from the training stream (torch, ``random``, numpy, sampler seeds)."""
    batching: Annotated[str, OneOf(BATCHING)] = "auto"
    """``joint``: shadow requests ride in the same ``generate`` call as the training requests (cheapest;
    exact for backends whose samples depend only on their own seed, which every backend here is);
    ``separate``: a second call after the training call, under an RNG guard (for callables and
    backends that draw from global random state); ``auto``: joint for model specs and ChatModels,
    separate for plain callables."""
    entropy_window: Annotated[int, Integer(2, most=MAX_STEPS)] = 6
    """Steps the strategy-entropy alarm looks back over (>= 2): it compares the mean of the window's
    later half with its earlier half."""
    entropy_drop: Annotated[float, Number(gt=0, le=1)] = 0.25
    """Relative fall of strategy entropy (later half vs earlier half of the window) that, together
    with ``reward_rise``, raises the policy alarm; in (0, 1]. The fall must also clear the sampling
    noise: the later half's mean upper interval end lies below the earlier half's mean lower end."""
    reward_rise: Annotated[float, Number(ge=0)] = 0.05
    """Absolute rise of mean train reward over the same halves that, with ``entropy_drop``, raises the
    policy alarm (>= 0)."""
    r_max: Annotated[float, Number(gt=0)] = 1.0
    """R_max of the Lemma 3.3 bound Var_sim(R) <= R_max² · ε_H printed beside the variance share."""
    trackers: Annotated[tuple[str, ...], SubsetOf(TRACKERS)] = ()
    """Also log every step's figures to these trackers (``wandb``, ``mlflow``, ``tensorboard``,
    ``trackio``); one that is not installed is one notice, never an error. Trainers with their own
    logging (TRL, verl) get the figures through it instead."""
    prefix: str = "collapse/"
    """Prefix of the scalar metric names handed to trackers and to trainers' logs."""
    extra: dict[str, Any] = {}
    """Free-form facts recorded in the run directory's ``config.json`` (e.g. the simulator spec)."""

    FLAG_FORMAT: ClassVar[str] = "monitor {name}"
    """The monitor is configured in Python (or a trainer's config), by field name."""

    def validate(self) -> MonitorConfig:  # type: ignore[override]
        """Check every field once (the declared constraints, then the partitions); returns ``self``.

        Raises:
            ConfigError: naming the field, what is allowed and what was given.
        """
        super().validate()
        for name in ("partition", "strategy_partition"):
            v = getattr(self, name)
            if v is not None:
                from collapse_probe.metrics.partitioners import check_partitioner

                check_partitioner(v, f"monitor {name}", model=False, benchmark=True)
        return self
