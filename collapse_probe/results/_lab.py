"""The collapse lab's outputs: one run (``results.json``, ``collapse-probe/lab/v1``), a comparison of every
method over seeds (``compare.json``, ``collapse-probe/lab-compare/v2``) and a sweep of one parameter
(``sweep.json``, ``collapse-probe/lab-sweep/v1``). :data:`LabOutput` is the three, told apart by ``schema``."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field

from collapse_probe.results._base import JSON, Count, Interval, ResultsModel

LAB_SCHEMA: Final = "collapse-probe/lab/v1"
LAB_COMPARE_SCHEMA: Final = "collapse-probe/lab-compare/v2"
LAB_SWEEP_SCHEMA: Final = "collapse-probe/lab-sweep/v1"

Curve = list[float | None]
"""One value per logged step (``null`` where undefined, e.g. the sampled reward at step 0)."""


class LabRunResults(ResultsModel):
    """One method, one seed: per-logged-step exact metrics and the theory checks."""

    schema_: Literal["collapse-probe/lab/v1"] = Field(LAB_SCHEMA, alias="schema")
    """The results kind and version."""
    method: str
    config: dict[str, JSON]
    """The run's ``LabConfig``."""
    reward_family: str
    """The seeded family the reward table is drawn from."""
    steps: list[int]
    """Policy updates done before each logged entry."""
    train_reward: Curve
    heldout_reward: Curve
    """Reward under the real users."""
    heldout_sim_reward: Curve
    """Reward under the held-out families' aligned simulators."""
    policy_entropy: Curve
    collapse_error: Curve
    accumulated_collapse_error: Curve
    tv: Curve
    tv_sampled: Curve
    tv_bound: Curve
    grad_gap: Curve
    grad_bound: Curve
    grad_tightness: Curve
    exploit_log_odds: Curve
    sampled_train_reward: Curve
    zero_std_fraction: Curve
    bound_checks: dict[str, bool]
    """Theorem 3.2's bounds, exact and against the sampled TV."""
    tv_sampled_check: dict[str, JSON]
    corollary_3_5: dict[str, JSON]
    summary: dict[str, float | int | None]
    """End-of-run numbers."""
    final_policy: list[list[float]]
    strategy_kind: list[str]


class Stat(ResultsModel):
    """A mean over seeds with its two-sided 95 % Student-t interval."""

    mean: float | None
    ci95: Interval | None
    n_seeds: Count


class CompareMethod(ResultsModel):
    """One row of a comparison: every headline number as a mean over seeds (``*_vs_single``: paired)."""

    method: str
    label: str
    cotrain_reward: str | None = None
    heldout_final: Stat
    heldout_peak: Stat
    heldout_start: Stat
    heldout_sim_final: Stat
    heldout_sim_peak: Stat
    train_final: Stat
    train_peak: Stat
    entropy_start: Stat
    entropy_end: Stat
    entropy_ratio: Stat
    collapse_error_final: Stat
    heldout_drop_from_peak: Stat
    bounds: dict[str, JSON]
    corollary_3_5: dict[str, JSON]
    curve: list[dict[str, JSON]]
    """Per logged step: the seed mean and 95 % interval of each curve."""
    heldout_final_vs_single: Stat | None = None
    heldout_sim_final_vs_single: Stat | None = None
    train_final_vs_single: Stat | None = None


class LabCompareResults(ResultsModel):
    """Every method over the same seeded worlds (``compare.json``)."""

    schema_: Literal["collapse-probe/lab-compare/v2"] = Field(LAB_COMPARE_SCHEMA, alias="schema")
    """The results kind and version."""
    seeds: list[int]
    n_seeds: Count
    seed: int
    steps: int
    cotrain_reward: str
    config: dict[str, JSON]
    """The shared ``LabConfig`` fields (method and seed vary)."""
    reward_family: str
    heldout_families: list[int]
    methods: list[CompareMethod]
    heldout_reward_end: dict[str, float | None]
    """Row label -> mean held-out reward on real users at the end."""


class SweepPoint(ResultsModel):
    value: float
    heldout_final: Stat | None = None
    heldout_sim_final: Stat | None = None
    train_final: Stat | None = None
    heldout_peak: Stat | None = None
    entropy_ratio: Stat | None = None
    heldout_final_vs_single: Stat | None = None
    heldout_sim_final_vs_single: Stat | None = None


class SweepRow(ResultsModel):
    method: str
    label: str
    points: list[SweepPoint]


class LabSweepResults(ResultsModel):
    """Each comparison row's numbers over a grid of one parameter (``sweep.json``)."""

    schema_: Literal["collapse-probe/lab-sweep/v1"] = Field(LAB_SWEEP_SCHEMA, alias="schema")
    """The results kind and version."""
    param: str
    """The parameter, named like its flag (``sim-temperature``)."""
    field: str
    """The ``LabConfig`` field it sets."""
    values: list[float]
    seeds: list[int]
    n_seeds: Count
    config: dict[str, JSON]
    methods: list[SweepRow]


LabOutput = Annotated[LabRunResults | LabCompareResults | LabSweepResults, Field(discriminator="schema_")]
"""Any of the lab's three outputs (``collapse_probe/schemas/lab.json``)."""
