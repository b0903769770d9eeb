"""The registry of LLM training methods: each method registered once, with its simulator schedule.

A method is described by what plays the simulator side and which simulator a step uses; the trainer
(:class:`~collapse_probe.trainers.llm.LLMTrainer`), the config validation and the CLI read these
descriptions instead of testing method names. The names and semantics are those of the collapse lab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from collapse_probe.errors import ConfigError

SimulatorKind = Literal["frozen", "trained", "self"]
"""``frozen``: fixed models (any backend); ``trained``: its own LoRA model updated on its own turns;
``self``: the policy model plays both sides."""

Schedule = Literal["fixed", "rotate", "pool"]
"""Which simulator a step uses: always the same one, the next of several in turn, or the co-trained
simulator with a snapshot pool behind it."""


@dataclass(frozen=True)
class TrainMethod:
    """One training method."""

    name: str
    description: str
    simulator: SimulatorKind
    min_sims: int = 1
    """Simulator specs the method takes (``selfplay``: none)."""
    max_sims: int | None = 1
    """``None``: no upper bound."""
    schedule: Schedule = "fixed"
    verbalized: bool = False
    """The simulator samples in Verbalized-Sampling mode (``vs:`` prefixed when missing)."""
    personas: bool = False
    """A donor persona is drawn per rollout (P4G only)."""

    def check_sims(self, sims: list[str]) -> None:
        """Check the number of simulator specs against the method.

        Raises:
            ConfigError: naming ``--sim``, the method and what it takes.
        """
        n = len(sims)
        if self.max_sims == 0:
            if n:
                raise ConfigError(
                    f"--sim: method {self.name!r} trains one model that plays both sides; omit --sim (got {sims})"
                )
            return
        if self.max_sims is None:
            if n < self.min_sims:
                raise ConfigError(
                    f"--sim: method {self.name!r} rotates two or more frozen simulators (e.g. "
                    f"smollm2,gemma3-270m,vs:smollm2); got {sims}"
                )
            if len(set(sims)) != n:
                raise ConfigError(f"--sim: duplicate simulators in the {self.name} {sims}")
            return
        if not self.min_sims <= n <= self.max_sims:
            raise ConfigError(f"--sim: method {self.name!r} takes exactly one simulator spec; got {sims}")


REGISTRY: dict[str, TrainMethod] = {}
"""Method name -> description, in registration order."""


def register(method: TrainMethod) -> TrainMethod:
    """Add a method to :data:`REGISTRY`.

    Raises:
        ConfigError: the name is already registered.
    """
    if method.name in REGISTRY:
        raise ConfigError(f"training method {method.name!r} is already registered")
    REGISTRY[method.name] = method
    return method


def get_method(name: str) -> TrainMethod:
    """The registered method ``name``.

    Raises:
        ConfigError: an unknown name, with the known ones.
    """
    if name not in REGISTRY:
        raise ConfigError(f"--method must be one of {', '.join(REGISTRY)}; got {name!r}")
    return REGISTRY[name]


register(TrainMethod("single", "one frozen simulator", "frozen"))
register(TrainMethod("vs", "one frozen simulator in Verbalized-Sampling mode", "frozen", verbalized=True))
register(TrainMethod("ensemble", "two or more frozen simulators, one per step in turn", "frozen", 2, None, "rotate"))
register(TrainMethod("persona", "one frozen simulator, a donor persona drawn per rollout", "frozen", personas=True))
register(TrainMethod("cotrain", "a simulator LoRA trained on its own reward", "trained"))
register(TrainMethod("population", "a co-trained simulator with a pool of its snapshots", "trained", schedule="pool"))
register(TrainMethod("selfplay", "the policy model plays both sides", "self", 0, 0))

METHODS: tuple[str, ...] = tuple(REGISTRY)
"""Registered method names (the same names and semantics as the collapse lab's)."""
