"""``results.json`` of an audit (schema ``collapse-probe/audit/v1``): how collapsed a simulator is, in two
views, with intervals; per state, by kind of state, along rollouts, against Verbalized Sampling and people.

The same model reads the audit of published trajectories (``audit --from``: ``mode`` ``published``,
with ``source`` and ``simulator_errors``).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from collapse_probe.results._base import JSON, Count, FiniteInterval, Interval, ResultsModel
from collapse_probe.results._common import RewardSummary, Usage

AUDIT_SCHEMA: Final = "collapse-probe/audit/v1"

ViewLabel = Literal["COLLAPSED", "NOT COLLAPSED", "INCONCLUSIVE", "NOT MEASURED", "NO REWARD SIGNAL"]
"""A verdict view's outcome; ``NO REWARD SIGNAL`` (the reward view only): the simulator (almost) never gives a
closed answer the reward reads, so the view measures format compliance, not collapse."""


class CollapseErrorEstimate(ResultsModel):
    """Mean collapse error over states: the bias-aware estimate with its interval and the plug-in."""

    estimate: float | None
    """Bias-aware mean ε̂ over the states (``null``: no state measured)."""
    ci95: Interval | None
    """Its interval at ``level``."""
    method: str | None = None
    """The interval's method, in words."""
    plugin: float | None = None
    """Mean plug-in ``1 - max_count / N`` (biased towards collapsed at small N)."""
    level: float | None = None
    target: str | None = None
    """What the interval covers."""


class EntropyEstimate(ResultsModel):
    """Mean response entropy over states (Chao–Wang–Jost, nats, incl. unseen classes)."""

    estimate: float | None
    ci95: Interval | None
    estimator: str | None = None
    unit: str | None = None
    method: str | None = None
    plugin: float | None = None
    note: str | None = None


class ParseFailures(ResultsModel):
    """Verbalized-Sampling replies the parser could not read (each fell back to a plain draw)."""

    count: Count
    of: Count
    rate: float | None
    reasons: dict[str, Count] = {}
    """Reason -> how many replies."""


class StatesSummary(ResultsModel):
    """Mean ε̂ over one group of states (a source such as ``opening``, or a kind such as ``turn 1``)."""

    collapse_error: float | None
    ci95: Interval | None
    n_states: Count
    collapse_error_plugin: float | None = None
    method: str | None = None
    entropy: float | None = None
    entropy_ci95: Interval | None = None


class RewardView(ResultsModel):
    """The reward's view: ε̂ over the classes of what the reward pays, at the states where it reads the reply."""

    classes: str | None
    """What a class is (the arena's reading of the reward), ``null`` without a ``reward_class`` hook."""
    n_states: Count
    estimate: float | None
    ci95: Interval | None
    method: str | None = None
    plugin: float | None = None
    level: float | None = None
    states: str | None = None
    """The states it is over, in words."""
    reason: str | None = None
    """Why it is not measured."""
    closed_answers_given: Count | None = None
    """Replies, at the states it is over that ask for a decision, that give one of the closed answers the
    reward reads (the benchmark's decision label names one; P4G: a ``[DONATE $N]`` tag)."""
    replies_read: Count | None = None
    """The replies ``closed_answers_given`` is counted of."""


class DecisionCollapseError(ResultsModel):
    """ε of the benchmark's decision label (kept for earlier readers; not the reward's view)."""

    estimate: float | None
    ci95: Interval | None
    n_states: Count
    partition: str | None = None


class ExactSummary(ResultsModel):
    """Means over the states where the model scores a closed answer set exactly."""

    n_states: Count
    closed_set_mass: float | None = None
    """P(the whole reply is one of the closed answers): format compliance, not collapse."""
    collapse_error_in_set: float | None = None
    """ε of the answer given one of them."""
    n_states_in_set: Count | None = None
    collapse_error_with_outside: float | None = None
    """ε with "outside the set" as one class."""
    outside_mass: float | None = None


class SequentialLook(ResultsModel):
    """One look of the sequential audit: the exact bounds on ε̄ at its replies per state."""

    look: Count
    replies_per_state: Count
    alpha_side: float
    """One-sided error this look spends on each side (fixed by its number, not by the cap)."""
    lower: float
    """Lower bound on ε̄: 1 − the Clopper–Pearson upper bound of the pooled max counts."""
    upper: float
    """Upper bound on ε̄: 1 − the Clopper–Pearson lower bound of the pooled predictable-mode hits."""
    modal_replies: Count
    modal_trials: Count
    hits: Count
    hit_trials: Count
    decision: Literal["COLLAPSED", "NOT COLLAPSED"] | None = None


class SequentialView(ResultsModel):
    """One view's sequential test: its looks, its decision and why it stopped."""

    decision: Literal["COLLAPSED", "NOT COLLAPSED"] | None = None
    """``null``: undecided (the view is INCONCLUSIVE)."""
    stop_reason: Literal["decisive", "cap", "below first look"]
    reason: str
    """The stopping reason in words."""
    replies_per_state: Count
    """Replies per state at the last look (0: no look)."""
    lower: float | None = None
    upper: float | None = None
    """The last look's exact bounds on ε̄ (``null`` without a look)."""
    looks: list[SequentialLook] = []


class SequentialAudit(ResultsModel):
    """``summary.sequential``: the verdict's exact, sequential test (live audits)."""

    cap: Count
    """``--samples``: the most replies per state the audit may draw."""
    drawn_per_state: Count
    """Replies asked for per state (the fewest over the states)."""
    rule: str
    """The look schedule and how each look spends the error."""
    views: dict[str, SequentialView] = {}
    """``meaning`` and, where the reward reads the replies, ``reward``."""


class AuditSummary(ResultsModel):
    """The headline over the audited states of one sampling mode."""

    collapse_error: CollapseErrorEstimate
    collapse_error_corrected: float | None = None
    entropy: EntropyEstimate | None = None
    effective_modes: float | None = None
    """exp of the mean entropy estimate."""
    effective_modes_note: str | None = None
    effective_modes_lower_bound_only: bool | None = None
    """The effective modes can only be read as a lower bound (N replies cannot resolve more)."""
    effective_modes_lower_bound: float | None = None
    accumulated_collapse_error: float | None = None
    """ε̄_H along the rollouts (on-policy audits)."""
    distinct_2: float | None = None
    vendi: float | None = None
    exact_collapse_error: float | None = None
    n_exact_states: Count | None = None
    n_states: Count
    """States measured (infrastructure failures excluded)."""
    infra_failures: Count = 0
    infra_errors: list[str] = []
    """Up to five distinct infrastructure error messages."""
    samples_per_state: Count | None = None
    low_confidence: bool | None = None
    """N < 20 replies per state."""
    n_empty_responses: Count | None = None
    """Empty or null replies asked again and dropped (never a class)."""
    vs_parse_failures: ParseFailures | None = None
    by_source: dict[str, StatesSummary] = {}
    by_kind: dict[str, StatesSummary] = {}
    reward_view: RewardView | None = None
    decision_collapse_error: DecisionCollapseError | None = None
    exact: ExactSummary | None = None
    exact_outside_mass: float | None = None
    sequential: SequentialAudit | None = None
    """The sequential test that decides the verdict (``null`` for ``audit --from``: a published file is
    judged on its replies as they are)."""


class VerdictView(ResultsModel):
    """One view of the verdict against ε*."""

    label: ViewLabel
    estimate: float | None
    ci95: Interval | None
    n_states: Count
    classes: str | None = None
    """What a class is in this view."""
    over: str | None = None
    """The states the view is measured at, in words."""
    reason: str | None = None
    """Why NOT MEASURED, NO REWARD SIGNAL, or INCONCLUSIVE by a check of the meaning view."""
    low_confidence: bool | None = None
    exact_bounds: FiniteInterval | None = None
    """The sequential test's last look: its exact bounds on ε̄, which decide ``label`` (``null``: no look,
    or the view was not decided by the sequential test, e.g. ``audit --from``)."""
    decided_at: Count | None = None
    """Replies per state at that look."""
    stop_reason: Literal["decisive", "cap", "below first look"] | None = None
    """Why the sequential test stopped (``summary.sequential.views``)."""
    interval_label: ViewLabel | None = None
    """NO REWARD SIGNAL: what the interval alone reads against ε* (COLLAPSED)."""
    closed_answer_share: float | None = None
    """NO REWARD SIGNAL: the share of replies that give one of the closed answers the reward reads
    (``closed_answers_given / replies_read``, else ``closed_set_mass``), below the threshold 0.05
    (``collapse_probe.pipelines.audit._verdict.FORMAT_COMPLIANCE_LOW``)."""
    closed_answers_given: Count | None = None
    """NO REWARD SIGNAL: sampled replies that give one of the closed answers."""
    replies_read: Count | None = None
    """NO REWARD SIGNAL: the sampled replies they are counted of."""
    closed_set_mass: float | None = None
    """NO REWARD SIGNAL: P(the whole reply is one of the closed answers) by the model's exact scores, where
    it scored them."""


class Verdicts(ResultsModel):
    """The verdict in two views."""

    meaning: VerdictView
    """By meaning (the headline classes)."""
    reward: VerdictView
    """Where the reward looks."""


class VerdictText(ResultsModel):
    """The verdict as a person reads it; ``verdict`` is these lines joined by newlines."""

    answer: str
    """The answer in one short line (``COLLAPSED where the reward looks, although wording varies``; ``NOT
    COLLAPSED: wording varies; NO REWARD SIGNAL where the reward looks: ...``)."""
    why: str | None = None
    """``why: ...``: each view's evidence (ε̂, CI, states, classes), any view's reason, NO REWARD SIGNAL's format compliance."""
    next: str | None = None
    """``next: ...``: what to do, each step ending in a command that runs (``collapse-probe play ...``,
    ``collapse-probe audit ... --compare-vs``, the rerun flags)."""
    compare_vs: str | None = None
    """The ``--compare-vs`` result in one line (``null`` when it was not run)."""


class StateRow(ResultsModel):
    """One audited state (its responses stay in ``samples.jsonl``)."""

    state_id: str
    mode: str | None = None
    source: str | None = None
    """``opening``, ``elicitation``, ``human``, ``on_policy`` or ``published``."""
    kind: str | None = None
    turn: int | None = None
    task_id: str | None = None
    status: str | None = None
    """``ok`` or ``infra_error``."""
    n: Count
    """Replies classed at the state."""
    class_counts: list[Count]
    class_names: list[str] | None = None
    collapse_error: float | None
    """Plug-in ``1 - max_count / N``."""
    collapse_error_ci95: Interval | None
    collapse_error_corrected: float | None = None
    collapse_error_estimate: float | None = None
    entropy: float | None
    entropy_ci95: Interval | None = None
    entropy_note: str | None = None
    hill: dict[str, float | None] | None = None
    """Hill numbers D_q (q = 0, 1, 2, inf) over the observed classes."""
    hill_note: str | None = None
    distinct_1: float | None = None
    distinct_2: float | None = None
    vendi: float | None = None
    low_confidence: bool | None = None
    exact: dict[str, JSON] | None = None
    """The exact closed-set distribution where the model scores one."""
    reward_view: dict[str, JSON] | None = None
    """The reward's classes at this state."""
    decision: dict[str, JSON] | None = None
    vs: dict[str, JSON] | None = None
    """Verbalized-Sampling parse statistics of the state."""
    n_empty: Count | None = None
    error: str | None = None
    """The infrastructure failure."""


class Difference(ResultsModel):
    """Mean ε(VS) − ε(direct) over the states measured in both modes."""

    estimate: float | None
    ci95: Interval | None
    n_states: Count
    method: str | None = None
    level: float | None = None
    plugin: float | None = None
    a_estimate: float | None = None
    b_estimate: float | None = None
    all_states: bool | None = None


class CompareVS(ResultsModel):
    """The same states audited in direct and Verbalized-Sampling mode."""

    direct: AuditSummary
    verbalized: AuditSummary
    difference_vs_minus_direct: Difference
    reward_view_difference_vs_minus_direct: Difference | None = None
    vs_parse_failures: ParseFailures | None = None
    states: list[StateRow] = []
    """The other mode's states."""
    unreliable: bool | None = None
    """Most VS replies could not be parsed: the VS numbers describe the fallback draw."""
    human_reference: dict[str, JSON] | None = None
    """The other mode's comparison with people."""
    towards_people: dict[str, JSON] | None = None
    """Whether VS moves the simulator towards the people, per measure."""


class TurnMean(ResultsModel):
    turn: int
    mean: float
    n_states: Count


class Trajectory(ResultsModel):
    """ε along on-policy rollouts: per turn, accumulated, and the Theorem 3.2 bounds."""

    collapse_error_by_turn: list[TurnMean] = []
    accumulated_collapse_error: float | None = None
    accumulated_collapse_error_plugin: float | None = None
    tv_bound: float | None = None
    gradient_bias_bound: float | None = None
    """2·B·R_max·ε̄_H."""
    B: float | None = None
    R_max: float | None = None
    n_rollouts: Count | None = None
    note: str | None = None


class VarianceShare(ResultsModel):
    """The simulator's share of reward variance (Lemma 3.3), by nested resampling or across trials."""

    share: float | None
    note: str | None = None


class VarianceComponent(ResultsModel):
    """One share of reward variance with its interval."""

    estimate: float
    ci95: FiniteInterval | None = None


class VarianceShares(ResultsModel):
    """The reward variance split four ways; ``null`` where the data cannot identify a share."""

    task: VarianceComponent | None = None
    simulator: VarianceComponent | None = None
    agent: VarianceComponent | None = None
    judge: VarianceComponent | None = None


class VarianceDecomposition(ResultsModel):
    """Whose noise the reward's variance is: task, simulator, agent, judge (``docs/variance-decomposition.md``),
    the flip rate and pass^k."""

    shares: VarianceShares
    flip_rate: float | None = None
    """Share of tasks with ≥ 2 trials whose success differs between trials."""
    pass_k: dict[str, float] = {}
    """``k`` -> τ-bench's pass^k, the mean over tasks of C(c, k) / C(n, k), for k = 1 … the fewest trials."""
    n_tasks: Count = 0
    """Tasks with ≥ 2 scored trials (the decomposition's units)."""
    n_trials: Count = 0
    divergence: dict[str, Count] = {}
    """Trial pairs by the side of their first differing message (``identical``: the same transcript)."""
    identical_prefixes: dict[str, dict[str, Count]] = {}
    """side -> ``{"prefixes", "varied"}``: prefixes that side answered in ≥ 2 trials, and at how many its replies differed."""
    judge_source: str | None = None
    """Where the judge's share comes from (``repeated judgements``, ``identical transcripts``) or ``null``."""
    notes: list[str] = []


class AuditResults(ResultsModel):
    """One audit of one simulator (its primary sampling mode)."""

    schema_: Literal["collapse-probe/audit/v1"] = Field(AUDIT_SCHEMA, alias="schema")
    """The results kind and version."""
    version: str | None = None
    simulator: str
    """The simulator spec audited."""
    mode: str
    """Sampling mode of the headline: ``direct``, ``verbalized``, ``persona`` or ``published``."""
    benchmark: str
    policy: str | None = None
    """The policy whose rollouts gave the states (``null``: probe states)."""
    partitioner: str
    """The partition the headline classes come from."""
    states_audited: str | None = None
    """What the headline is over."""
    states_note: str | None = None
    """What the states are when they are not Definition 3.1's (probe states)."""
    notices: list[str] = []
    samples_per_state: Count | None = None
    epsilon_star: float | None = None
    config: dict[str, JSON] = {}
    """The run's ``AuditConfig``."""
    summary: AuditSummary
    verdicts: Verdicts | None = None
    verdict: str | None = None
    """The verdict as the terminal prints it: the lines of ``verdict_text`` joined by newlines (answer,
    why, next, and the ``--compare-vs`` line when it was run)."""
    verdict_text: VerdictText | None = None
    trajectory: Trajectory | None = None
    states: list[StateRow]
    meaning_key: str | None = None
    """Which reader gave the partition's meaning key."""
    compare_vs: CompareVS | None = None
    variance_share: VarianceShare | None = None
    """A live audit's ``--variance-share`` (nested resampling with the agent's prefixes fixed)."""
    variance: VarianceDecomposition | None = None
    """``audit --from``: the reward variance split into task, simulator, agent and judge shares."""
    human_reference: dict[str, JSON] | None = None
    """Realism against people (``--human DIR``): donations, grounding, diversity, people's own ε."""
    rollouts: RewardSummary | None = None
    """Reward of the on-policy (or published) conversations."""
    source: dict[str, JSON] | None = None
    """``audit --from``: the file audited (format, sha256, simulator, ...)."""
    simulator_errors: JSON = None
    """``audit --from``: the user-simulator errors the records flag."""
    usage: Usage = {}
