"""The monitor's configuration: one typed object, validated once, written into its run directory."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from collapse_probe._constraints import Integer, Number, OneOf, param, validate
from collapse_probe._trackers import TRACKERS
from collapse_probe.errors import ConfigError

BATCHING = ("auto", "joint", "separate")


def __getattr__(name: str) -> Any:
    # ``PARTITIONS``: the registered partitions the monitor can build (it has a benchmark, no judge
    # model; an installed partitioner that needs no judge is accepted too), read from the partitioner
    # registry on use: importing the metrics loads scipy, which a trainer's monitor hook must not pay for
    if name == "PARTITIONS":
        from collapse_probe.metrics.partitioners import usable_partitioners

        return usable_partitioners(model=False)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class MonitorConfig:
    """What the live collapse monitor measures, how often, and when it raises an alarm.

    Every field is a keyword parameter of :class:`~collapse_probe.monitor.CollapseMonitor`'s config;
    :meth:`validate` checks them once, naming the field, what is allowed and what was given.
    """

    shadow_fraction: float = param(0.1, Number(gt=0, le=1))
    """Share of simulator turns that are shadow-sampled, in (0, 1]. Turns are chosen by systematic
    sampling from a random start drawn from the monitor's own seed: every turn has inclusion
    probability exactly ``shadow_fraction`` and the count per step varies by at most one."""
    shadow_samples: int = param(8, Integer(2))
    """N: replies per shadow-sampled state, the training reply included (N - 1 extra draws), >= 2."""
    epsilon_star: float = param(0.2, Number(gt=0, le=1))
    """ε*: the collapse alarm fires at a step whose ε interval lies entirely below it."""
    alarm_views: tuple[str, ...] = ("meaning",)
    """Which views' ε intervals raise the collapse alarm: the headline ``meaning`` view by default; add
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
    level: float = param(0.95, Number(gt=0, lt=1))
    """Confidence level of every interval."""
    seed: int = param(0, Integer(None))
    """Seed of the monitor's own random stream: which turns are shadowed and the shadow replies' seeds.
    Nothing the monitor does draws from the training stream (torch, ``random``, numpy, sampler seeds)."""
    batching: str = param("auto", OneOf(BATCHING))
    """``joint``: shadow requests ride in the same ``generate`` call as the training requests (cheapest;
    exact for backends whose samples depend only on their own seed, which every backend here is);
    ``separate``: a second call after the training call, under an RNG guard (for callables and
    backends that draw from global random state); ``auto``: joint for model specs and ChatModels,
    separate for plain callables."""
    entropy_window: int = param(6, Integer(2))
    """Steps the strategy-entropy alarm looks back over (>= 2): it compares the mean of the window's
    later half with its earlier half."""
    entropy_drop: float = param(0.25, Number(gt=0, le=1))
    """Relative fall of strategy entropy (later half vs earlier half of the window) that, together
    with ``reward_rise``, raises the policy alarm; in (0, 1]. The fall must also clear the sampling
    noise: the later half's mean upper interval end lies below the earlier half's mean lower end."""
    reward_rise: float = param(0.05, Number(ge=0))
    """Absolute rise of mean train reward over the same halves that, with ``entropy_drop``, raises the
    policy alarm (>= 0)."""
    r_max: float = param(1.0, Number(gt=0))
    """R_max of the Lemma 3.3 bound Var_sim(R) <= R_max² · ε_H printed beside the variance share."""
    trackers: tuple[str, ...] = ()
    """Also log every step's figures to these trackers (``wandb``, ``mlflow``, ``tensorboard``,
    ``trackio``); one that is not installed is one notice, never an error. Trainers with their own
    logging (TRL, verl) get the figures through it instead."""
    prefix: str = "collapse/"
    """Prefix of the scalar metric names handed to trackers and to trainers' logs."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form facts recorded in the run directory's ``config.json`` (e.g. the simulator spec)."""

    FLAG_FORMAT = "monitor {name}"
    """The monitor is configured in Python (or a trainer's config), by field name."""

    def validate(self) -> MonitorConfig:
        """Check every field once (the declared constraints, then the set-valued fields); returns ``self``.

        Raises:
            ConfigError: naming the field, what is allowed and what was given.
        """
        validate(self)
        for name in ("partition", "strategy_partition"):
            v = getattr(self, name)
            if v is not None:
                from collapse_probe.metrics.partitioners import check_partitioner

                check_partitioner(v, f"monitor {name}", model=False, benchmark=True)
        self.alarm_views = tuple(self.alarm_views)
        bad = [v for v in self.alarm_views if v not in ("meaning", "reward")]
        if bad:
            raise ConfigError(f"monitor alarm_views must be a subset of meaning, reward; got {bad}")
        self.trackers = tuple(self.trackers)
        bad = [t for t in self.trackers if t not in TRACKERS]
        if bad:
            raise ConfigError(f"monitor trackers must be among {', '.join(TRACKERS)}; got {bad}")
        if not isinstance(self.prefix, str):
            raise ConfigError(f"monitor prefix must be a string, got {self.prefix!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["alarm_views"] = list(self.alarm_views)
        d["trackers"] = list(self.trackers)
        return d
