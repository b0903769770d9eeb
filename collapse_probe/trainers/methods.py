"""The registry of training methods: each method registered once, read by the LLM trainer and the lab.

A method is described by what plays the simulator side, which simulator a step uses and what the
simulator side is trained on; the LLM trainer (:class:`~collapse_probe.trainers.llm.LLMTrainer`), the
collapse lab (:mod:`collapse_probe.trainers.lab`), the configs and the CLI read these descriptions
instead of testing method names. A name exists for the lab, the LLM trainer or both, as its
:attr:`TrainMethod.lab` and :attr:`TrainMethod.trainer` say.

There is no entry-point group for methods: a method is not a description alone but the code paths
of the trainer and the lab that its attributes select, so an installed package could only name a new
combination of attributes, which neither implements for every combination (the lab's rotation, for
one, rotates aligned simulators and has no verbalized or persona form). The lab refuses such a
combination by name (:func:`~collapse_probe.trainers.lab.SimulatorSide`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from collapse_probe.core._plugins import Registry
from collapse_probe.errors import ConfigError

SimulatorKind = Literal["frozen", "trained", "self"]
"""``frozen``: fixed models (any backend); ``trained``: its own LoRA model updated on its own turns;
``self``: the policy model plays both sides."""

Schedule = Literal["fixed", "rotate", "pool"]
"""Which simulator a step uses: always the same one, the next of several in turn, or the co-trained
simulator with a snapshot pool behind it."""

SHARED_REWARD = "cooperative"
"""The simulator reward of self-play: one model, one objective, the shared reward ``R``."""


@dataclass(frozen=True)
class TrainMethod:
    """One training method: what the trainer and the lab need to know to run it."""

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
    lab: bool = True
    """The collapse lab runs this method (one of :data:`LAB_METHODS`)."""
    trainer: bool = True
    """The LLM trainer runs this method (one of :data:`METHODS`)."""
    vllm_rollouts: bool = False
    """The LLM trainer can roll it out through vLLM (one trained model, one frozen simulator)."""
    compare_rewards: bool = False
    """The lab's ``--compare`` also runs it once with each other simulator reward."""

    @property
    def trains_simulator(self) -> bool:
        """The simulator side is updated by REINFORCE on its own turns (co-trained or self-play)."""
        return self.simulator != "frozen"

    @property
    def takes_cotrain_reward(self) -> bool:
        """The simulator is trained on the configured ``cotrain_reward`` (self-play's is the shared reward)."""
        return self.simulator == "trained"

    @property
    def snapshots(self) -> bool:
        """Copies of the trained simulator are taken every ``snapshot_every`` steps (the population's
        pool, the lab's self-play user copy)."""
        return self.schedule == "pool" or self.simulator == "self"

    def simulator_reward(self, cotrain_reward: str) -> str | None:
        """The reward the simulator side is trained on: ``cotrain_reward`` for a co-trained simulator,
        the shared reward for self-play, ``None`` for frozen simulators."""
        if self.takes_cotrain_reward:
            return cotrain_reward
        return SHARED_REWARD if self.trains_simulator else None

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


REGISTRY: Registry[TrainMethod] = Registry("training method", flag="--method")
"""Method name -> description, in registration order (the order the lab's ``--compare`` runs them)."""


def register(method: TrainMethod) -> TrainMethod:
    """Add a method to :data:`REGISTRY`.

    Raises:
        ConfigError: the name is already registered.
    """
    REGISTRY.register(method.name, method)
    return method


def method_names(*, lab: bool = False) -> tuple[str, ...]:
    """Names the LLM trainer runs (``lab=True``: the names the collapse lab runs), in registration order."""
    return tuple(n for n, m in REGISTRY.items() if (m.lab if lab else m.trainer))


def get_method(name: object, flag: str = "--method", *, lab: bool = False) -> TrainMethod:
    """The registered method ``name`` that the LLM trainer (``lab=True``: the lab) runs.

    Raises:
        ConfigError: an unknown name, naming ``flag``, the allowed names, the value received and
            the closest names.
    """
    known = method_names(lab=lab)
    if not isinstance(name, str) or name not in known:
        import difflib

        close = difflib.get_close_matches(str(name), known, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ConfigError(f"{flag} must be one of {', '.join(known)}; got {name!r}.{hint}")
    return REGISTRY.load(name)


register(TrainMethod("single", "one frozen simulator", "frozen", vllm_rollouts=True))
register(
    TrainMethod("vs", "one frozen simulator in Verbalized-Sampling mode", "frozen", verbalized=True, vllm_rollouts=True)
)
register(TrainMethod("ensemble", "two or more frozen simulators, one per step in turn", "frozen", 2, None, "rotate"))
register(TrainMethod("persona", "one frozen simulator, a donor persona drawn per rollout", "frozen", personas=True))
register(TrainMethod("cotrain", "a simulator LoRA trained on its own reward", "trained", compare_rewards=True))
register(TrainMethod("population", "a co-trained simulator with a pool of its snapshots", "trained", schedule="pool"))
register(TrainMethod("selfplay", "the policy model plays both sides", "self", 0, 0))

BASELINE: str = "single"
"""The method every other is compared with, seed by seed (the lab's ``*_vs_single`` numbers)."""

METHODS: tuple[str, ...] = method_names()
"""Method names of the LLM trainer (the same names and semantics as the collapse lab's)."""

LAB_METHODS: tuple[str, ...] = method_names(lab=True)
"""Method names of the collapse lab, in the order ``--compare`` runs them."""
