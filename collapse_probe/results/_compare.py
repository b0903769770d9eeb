"""``results.json`` of a ``compare`` run (schema ``collapse-probe/compare/v1``): the user simulator's effect
on each agent's success across published runs, the noise of rerunning one configuration, and whether the
agents' ranking changes with the simulator (:mod:`collapse_probe.metrics.simulator_effects`)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from collapse_probe.results._base import Count, Finite, FiniteInterval, ResultsModel

COMPARE_SCHEMA: Final = "collapse-probe/compare/v1"


class CompareSource(ResultsModel):
    """One input: a results file or a run directory."""

    path: str
    format: str
    """The reader that read it (``tau2``, ``taubench``, ``inspect``, ``jsonl``, ``crossplay``, ...)."""
    sha256: str
    """The SHA-256 of the file (of a cross-play run's ``conversations.jsonl``)."""
    conversations: Count
    agents: list[str]
    simulators: list[str]
    skipped: dict[str, Count] = {}
    """Records the reader left out, by reason (e.g. voice simulations without text)."""


class Pairing(ResultsModel):
    """How trials were paired into tasks across the inputs, and what was left out."""

    task_key: Literal["content", "id"]
    """``content``: the task's own text, normalised; ``id``: the task id."""
    why: str
    records: Count
    """Conversations read."""
    paired_records: Count
    """Scored trials that entered the comparison."""
    tasks: Count
    """Distinct task keys among them."""
    left_out: dict[str, Count] = {}
    """Records left out, by reason (infrastructure failure, no reward, no task text)."""


class CellRate(ResultsModel):
    """One agent under one simulator: the success rate over its tasks."""

    agent: str
    simulator: str
    n_tasks: Count
    trials: Count
    success_rate: Finite
    """Mean over tasks of the task's share of successful trials."""
    ci95: FiniteInterval
    """Clopper–Pearson at the effective number of trials."""


class SimulatorEffect(ResultsModel):
    """``success(simulator) − success(reference)`` for one agent, paired by task."""

    agent: str
    simulator: str
    reference: str
    """The other simulator."""
    difference: Finite | None
    """The difference in success rate over the shared tasks (``null``: no shared task)."""
    ci95: FiniteInterval | None
    """95 % MOVER interval of two Clopper–Pearson intervals (``docs/compare.md``)."""
    n_tasks: Count
    """Tasks both simulators ran (with at least one scored trial each)."""
    rate: Finite | None = None
    reference_rate: Finite | None = None
    rerun_difference_ci95: FiniteInterval | None = None
    """``[−h, h]``: how far two reruns of one of the two configurations would differ on these tasks
    (``null`` without repeated trials)."""
    beyond_noise: bool | None = None
    """The interval excludes 0."""
    left_out: dict[str, Count] = {}
    """Tasks only one of the two simulators ran."""


class NoiseFloor(ResultsModel):
    """What rerunning one agent under one simulator does to its success."""

    agent: str
    simulator: str
    n_tasks: Count
    tasks_with_repeats: Count
    """Tasks with two or more scored trials."""
    trials: Count
    flip_rate: Finite | None
    """Share of the tasks with two or more scored trials that have both a success and a failure."""
    flipping_tasks: Count
    pass_k: dict[str, Finite] = {}
    """τ-bench's pass^k for k = 1 … the fewest trials of a task."""
    rerun_difference_ci95: FiniteInterval | None
    """``[−h, h]``: the range within which two reruns (same tasks, same trials) differ 95 % of the time."""


class RankCorrelationRow(ResultsModel):
    """Kendall's τ-b of the agents' success rates under two simulators."""

    simulators: list[str]
    agents: list[str]
    tau: Finite | None
    ci95: FiniteInterval | None
    """Percentile bootstrap over the shared tasks."""
    n_tasks: Count


class RankFlip(ResultsModel):
    """Two agents whose observed order strictly reverses between two simulators."""

    agents: list[str]
    simulators: list[str]
    rates: dict[str, dict[str, Finite]]
    """Simulator -> agent -> success rate over the tasks the four cells share."""
    n_tasks: Count


class CompareResults(ResultsModel):
    """A comparison of published runs of the same tasks under different user simulators."""

    schema_: Literal["collapse-probe/compare/v1"] = Field(COMPARE_SCHEMA, alias="schema")
    """The results kind and version."""
    version: str
    success_threshold: Finite
    """A trial succeeds when its reward is at least this (unless it carries its own verdict: ``success_rule``)."""
    success_rule: dict[str, Count] = {}
    """How each scored trial's success was decided (``reward >= X``, or a cross-play record's own success) and
    how many trials each way."""
    level: Finite
    sources: list[CompareSource]
    pairing: Pairing
    agents: list[str]
    simulators: list[str]
    cells: list[CellRate]
    simulator_effects: list[SimulatorEffect]
    noise_floor: list[NoiseFloor]
    rank_correlation: list[RankCorrelationRow] = []
    rank_flips: list[RankFlip] = []
    notes: list[str] = []
