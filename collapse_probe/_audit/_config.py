"""Audit configuration, constants and the probe-state record."""

from __future__ import annotations

from dataclasses import InitVar, asdict, dataclass, field
from typing import Any

from collapse_probe._constraints import AtMost, Integer, Number, param, rule, validate
from collapse_probe.benchmarks import Episode
from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK
from collapse_probe.benchmarks.p4g import DONATION_GRID, OPENINGS
from collapse_probe.limits import MAX_SAMPLES_PER_STATE, MAX_STATES, check_at_most, check_n_boot
from collapse_probe.metrics.partitioners import check_partitioner, usable_partitioners
from collapse_probe.runspec import (
    UNSET,
    ArenaSpec,
    RolloutConfig,
    check_options,
    nested_arena,
    nested_rollout,
    rollout_property,
)

SCHEMA = "collapse-probe/audit/v1"
SAMPLES = "samples.jsonl"
PARTITIONS = usable_partitioners()
"""The registered partitions an audit can use (every one: it has a judge and a benchmark); an installed
partitioner (entry point ``collapse_probe.partitioners``) is accepted too."""
P4G_OPENINGS = OPENINGS
"""Fixed human-style persuader openings of the P4G probe states (:data:`collapse_probe.benchmarks.p4g.OPENINGS`)."""
P4G_AMOUNTS = DONATION_GRID
"""The closed answer set at the P4G elicitation state (:data:`collapse_probe.benchmarks.p4g.DONATION_GRID`)."""
DONATION_BINS = (0.0, 1e-9, 0.5, 1.0, 1.5, 2.0)
"""Bin edges for the L1 distance between donation distributions: $0, (0, .5], (.5, 1], (1, 1.5], (1.5, 2]."""


@dataclass
class AuditConfig:
    """Configuration of an ``audit`` run (the CLI, the Python API and ``config.json`` share it)."""

    sim: str = "smollm2"
    """Simulator spec; ``vs:SPEC`` audits the Verbalized-Sampling mode."""
    benchmark: InitVar[str] = DEFAULT_BENCHMARK
    """Benchmark name: ``arena.benchmark`` (a keyword and a read/write attribute, as before)."""
    policy: str | None = None
    """Policy spec. Given: on-policy states from rollouts against the simulator (and the opening is
    the policy's own). ``None``: probe states with fixed human-style openings."""
    states: InitVar[int] = UNSET
    """Number of tasks (P4G personas) probed, ``rollout.tasks``; each gives an opening and an
    elicitation state, or the simulator turns of ``rollouts`` on-policy conversations."""
    samples: int = param(
        20,
        Integer(2, why="a collapse error needs at least 2 responses per state"),
        AtMost(MAX_SAMPLES_PER_STATE, "responses per state"),
    )
    """N, responses sampled per state (N < 20 is flagged low-confidence)."""
    partition: str | None = None
    """``exact | embedding | judge | label`` or an installed partitioner; ``None``: by meaning, i.e.
    ``judge`` when ``judge`` is given, else ``embedding`` (constrained by the benchmark's
    ``meaning_key``) when the embedding extra is installed, else the benchmark's ``fallback_partition``
    (P4G: ``label``; others: ``exact``) with a notice, and no meaning verdict (those classes are not
    meanings)."""
    judge: str | None = None
    """Judge model spec for ``partition="judge"`` (default: the simulator's model)."""
    compare_vs: bool = False
    """Audit the direct and the ``vs:`` mode on the same states and report the difference."""
    vs_k: int = param(5, Integer(2))
    human: str | None = None
    """Directory with the official P4G CSVs (``full_info.csv``, ``full_dialog.csv``); with the annotated
    ``annotated_dialog.csv`` there too, human-grounded states come from the annotated dialogues and
    ``human_reference.people_epsilon`` reports people's own ε at them."""
    rollouts: InitVar[int] = UNSET
    """On-policy conversations per task (``rollout.rollouts``)."""
    max_turns: InitVar[int | None] = UNSET
    """Conversation rounds (``rollout.max_turns``; ``None``: the benchmark's own cap; tau2 has none by default)."""
    temperature: InitVar[float] = UNSET
    """Sampling temperature of the audited responses and the on-policy rollouts (``rollout.temperature``)."""
    top_p: float = param(1.0, Number(gt=0, le=1))
    seed: InitVar[int] = UNSET
    """Seed of the task order and of every sample (``rollout.seed``)."""
    epsilon_star: float = param(0.2, Number(gt=0, lt=1))
    """ε*: each verdict view (by meaning, where the reward looks) is COLLAPSED when the upper end of the
    CI of its mean ε̂ is below it, NOT COLLAPSED when the lower end is above it."""
    bound_b: float = param(1.0, Number(gt=0))
    """B, bound on the norm of the trajectory score function, for the gradient-bias bound."""
    r_max: float = param(1.0, Number(gt=0))
    """R_max, bound on |R| (P4G rewards lie in [0, 1])."""
    variance_share: bool = False
    """Measure the simulator's share of reward variance by nested resampling (extra rollouts)."""
    variance_agents: int = param(3, Integer(1))
    """Agent prefixes (agent seeds) per task for the variance share."""
    variance_sims: int = param(4, Integer(2))
    """Simulator continuations per agent prefix for the variance share."""
    exact: bool = True
    """Compute the exact class distribution where the model scores a closed answer set."""
    vendi: bool = False
    """Embed responses for the Vendi score (always on with ``partition="embedding"``)."""
    n_boot: int = param(1000, Integer(100), flag="n_boot")
    """Bootstrap resamples for the summary CIs."""
    batch_states: int | None = param(None, Integer(1, optional=True))
    """States sampled per ``generate`` call (each state's record is appended as its call finishes);
    ``None``: about 64 responses per call (``max(1, 64 // samples)``), which fills the local
    backend's micro-batches and still moves the progress bar often."""
    personas: InitVar[str | None] = UNSET
    """P4G persona file (JSONL); default: the shipped personas. The arena's ``personas`` option (a
    keyword and a read/write attribute, as before)."""
    arena_options: InitVar[dict[str, Any] | None] = None
    """``arena.options`` (``None`` when there are none; a keyword and a read/write attribute, as before)."""
    arena: ArenaSpec = field(default_factory=ArenaSpec)
    """The benchmark and its own options (fields of its ``Options``, e.g. a data directory, P4G's
    ``personas``) for the arena the audit builds when none is given; ``max_turns`` and ``judge``
    count as such options where the benchmark takes them."""
    rollout: RolloutConfig = param(None, factory=lambda: RolloutConfig(tasks=2, rollouts=1))
    """The tasks (``states``), the on-policy rollouts per task and their turns, seed and temperature:
    the rollout config ``play`` and ``crossplay`` nest, with the audit's defaults (2 tasks, 1 rollout)."""

    NESTED_FLAGS = {"rollout": {"tasks": "--states"}}
    """How the audit names the nested fields whose flag differs from the field (``validate``)."""

    FLAT_FIELDS = ("benchmark", "states", "rollouts", "max_turns", "temperature", "seed", "personas", "arena_options")
    """Keywords the config takes besides its fields (the flat form of earlier versions)."""

    def __post_init__(
        self,
        benchmark: str | None,
        states: int,
        rollouts: int,
        max_turns: int | None,
        temperature: float,
        seed: int,
        personas: str | None,
        arena_options: dict[str, Any] | None,
    ) -> None:
        self.rollout = nested_rollout(
            self.rollout, tasks=states, rollouts=rollouts, max_turns=max_turns, seed=seed, temperature=temperature
        )
        self.arena = nested_arena(self.arena, benchmark, arena_options)
        # None and {} were recorded apart in config.json: keep which was given, so either resumes
        self._options_none = arena_options is None
        # a persona file given as the keyword of earlier versions is recorded there, not in arena_options
        self._personas_flat = False
        if personas is not UNSET:
            _set_personas(self, personas)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy, flat as ``config.json`` and ``results.json`` record it (``benchmark``, the
        rollout fields, ``personas`` and ``arena_options`` beside the other fields)."""
        d = asdict(self)
        del d["arena"], d["rollout"]
        r = self.rollout
        flat = {"states": r.tasks, "rollouts": r.rollouts, "max_turns": r.max_turns, "temperature": r.temperature}
        return {
            **d,
            **flat,
            "seed": r.seed,
            "benchmark": self.arena.benchmark,
            "personas": _personas(self) if self._personas_flat else None,
            "arena_options": _arena_options(self),
        }

    def validate(self) -> None:
        """Check every field once (the declared constraints and the rules below), naming the flag, the
        allowed values and the value received."""
        validate(self)
        if self.partition is not None:
            check_partitioner(self.partition, "--partition", model=True, benchmark=True)

    @rule
    def _arena_options_mapping(self) -> None:
        check_options(self.arena.options, "arena_options")

    @rule
    def _bootstrap_fits_in_memory(self) -> None:
        check_n_boot(self.n_boot, 1, "n_boot")

    @rule
    def _rollouts_per_run(self) -> None:
        check_at_most(self.rollout.rollouts * self.rollout.tasks, MAX_STATES, "--states x --rollouts =", "rollouts")

    @property
    def partitioner_name(self) -> str:
        """The partition asked for: ``partition``, else ``judge`` with a judge, else ``embedding``
        (the audit falls back, with a notice, when the embedding extra is not installed)."""
        return self.partition or ("judge" if self.judge else "embedding")


def _benchmark(config: AuditConfig) -> str:
    return config.arena.benchmark


def _set_benchmark(config: AuditConfig, value: str) -> None:
    config.arena = nested_arena(config.arena, value, None)


def _arena_options(config: AuditConfig) -> dict[str, Any] | None:
    options: Any = config.arena.options
    if config._personas_flat and isinstance(options, dict):  # recorded as ``personas``, as before
        options = {k: v for k, v in options.items() if k != "personas"}
    if options or not config._options_none:
        return options  # the dict nested_arena keeps
    return None


def _set_arena_options(config: AuditConfig, value: dict[str, Any] | None) -> None:
    personas = _personas(config) if config._personas_flat else None
    config.arena = nested_arena(config.arena, None, {} if value is None else value)
    config._options_none = value is None
    if personas is not None:
        _set_personas(config, personas)


def _personas(config: AuditConfig) -> str | None:
    options = config.arena.options
    return options.get("personas") if isinstance(options, dict) else None


def _set_personas(config: AuditConfig, value: str | None) -> None:
    options = config.arena.options
    if isinstance(options, dict):  # anything else is refused by name by the options rule
        # a new mapping: a config copied by dataclasses.replace shares the old one
        options = {k: v for k, v in options.items() if k != "personas"}
        config.arena = nested_arena(config.arena, None, options if value is None else {**options, "personas": value})
    config._personas_flat = value is not None


# the keywords of earlier versions, read and written as attributes (set after the dataclass took their defaults)
# (setattr: to a type checker these names are the dataclass's init-only keywords, not attributes)
setattr(AuditConfig, "benchmark", property(_benchmark, _set_benchmark, doc="``arena.benchmark``."))  # noqa: B010
setattr(AuditConfig, "arena_options", property(_arena_options, _set_arena_options, doc="``arena.options`` or None."))  # noqa: B010
setattr(AuditConfig, "personas", property(_personas, _set_personas, doc="``arena.options['personas']``."))  # noqa: B010
for _name, _attr in (("states", "tasks"), ("rollouts", "rollouts"), ("max_turns", "max_turns"),
                     ("temperature", "temperature"), ("seed", "seed")):  # fmt: skip
    setattr(AuditConfig, _name, rollout_property(_attr))


@dataclass
class ProbeState:
    """A simulator turn to audit: the episode up to (not including) the simulator's reply."""

    state_id: str
    source: str
    """``"opening"``, ``"elicitation"``, ``"human"`` or ``"on_policy"``."""
    turn: int
    """Number of earlier simulator turns in the conversation."""
    episode: Episode
    closed_set: bool = False
    """The state asks for a decision: the decision label and the closed answer set's exact scores apply."""
    kind: str | None = None
    """Kind of state, reported separately: ``"opening"``, ``"elicitation"``, ``"turn k"`` (on-policy:
    the k-th simulator turn); ``None``: derived from ``closed_set`` and ``turn``."""
    conversation: str | None = None
    """Key of the on-policy conversation the state comes from."""
    human_reply: str | None = None
    """The human persuadee's actual reply at this prefix (human states)."""


def state_kind(state: ProbeState) -> str:
    """``state.kind``, else ``"elicitation"`` where a decision is asked, ``"opening"`` at the first
    simulator turn and ``"turn k"`` after k earlier simulator turns."""
    if state.kind is not None:
        return state.kind
    if state.closed_set:
        return "elicitation"
    return "opening" if state.turn == 0 else f"turn {state.turn}"
