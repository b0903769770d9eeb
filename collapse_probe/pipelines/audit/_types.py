"""The audit's shared data: a measured state's record, the ``summary`` block, the verdict's views and the
sequential test's fields, as the pipeline builds and reads them before :mod:`collapse_probe.results` types
the finished ``results.json``.

These are ``TypedDict``s: plain dicts at run time (``samples.jsonl`` and ``results.json`` keep their
bytes), whose keys and value types a reader and mypy can see. An interval ``ci95`` is ``[low, high]``;
``high`` is ``None`` only for an entropy that is a lower bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

# ----------------------------------------------------------------------------------------------- a state


class ContextMessage(TypedDict):
    """One of the last messages before a state (a record's ``context``)."""

    role: str
    content: str


class StateEstimates(TypedDict):
    """The per-state estimates of a measured state (:func:`~collapse_probe.pipelines.audit._summary._state_estimates`)."""

    collapse_error: float
    """Plug-in ``1 - max_count / N``."""
    collapse_error_estimate: float
    """Bias-aware ε̂."""
    collapse_error_ci95: list[float | None]
    collapse_error_corrected: float
    entropy: float
    """Chao–Wang–Jost entropy (nats), unseen classes included."""
    entropy_ci95: list[float | None]
    entropy_lower_bound_only: bool
    entropy_note: str
    entropy_plugin: float
    entropy_miller_madow: float
    hill: dict[str, float]
    """Hill numbers by order: ``"0"``, ``"1"``, ``"2"``, ``"inf"``."""
    hill_note: str
    sample_coverage: float
    distinct_1: float | None
    distinct_2: float | None
    low_confidence: bool
    """N below :data:`~collapse_probe.metrics.MIN_CONFIDENT_SAMPLES`."""


class RewardViewOfState(TypedDict):
    """A state's replies classed by what the reward pays (a record's ``reward_view``)."""

    class_names: list[str]
    class_counts: list[int]
    """Replies per class, modal class first."""
    collapse_error: float
    collapse_error_estimate: float
    collapse_error_ci95: list[float | None]
    labels: NotRequired[list[int]]
    """Each reply's class (index into ``class_names``) in sample-index order."""


class DecisionClasses(TypedDict):
    """A state's replies classed by the benchmark's decision label (a record's ``decision``)."""

    class_names: list[str]
    class_counts: list[int]
    collapse_error: float


class VSStats(TypedDict):
    """Verbalized-Sampling parse statistics of a state's replies (a record's ``vs``)."""

    parse_failures: int
    failure_reasons: dict[str, int]
    mean_candidates: float
    examples: NotRequired[Sequence[Mapping[str, object]]]
    """The first two parse records (``samples.jsonl`` only, not ``results.json``)."""


class ExactDistribution(TypedDict):
    """A state's exact class distribution over a closed answer set (a record's ``exact``, from
    :func:`~collapse_probe.pipelines.audit._sampling.exact_closed_set_distribution`)."""

    distribution: dict[str, float]
    """Class -> probability, the mass outside the set included (class :data:`~collapse_probe.pipelines.audit._sampling.OUTSIDE`)."""
    collapse_error: float
    closed_set_mass: float
    outside_mass: float
    modal_class: str
    distribution_conditional: dict[str, float] | None
    """The distribution conditioned on answering inside the set (``None`` when the set has no mass)."""
    collapse_error_conditional: float | None
    note: NotRequired[str]


class ExactFailure(TypedDict):
    """A record's ``exact`` where scoring the closed answer set failed."""

    distribution: None
    collapse_error: None
    error: str


class StateRecord(TypedDict, total=False):
    """One measured (or failed) state as the audit holds it: a ``samples.jsonl`` line (checked on resume by
    :class:`~collapse_probe.results.MeasuredSample`), whose subset is the state's row in ``results.json``."""

    state_id: str
    mode: str
    """Sampling mode: ``direct``, ``verbalized``, ``published``, ..."""
    simulator: str
    source: str
    """``opening``, ``elicitation``, ``human``, ``on_policy``, ``published``."""
    kind: str
    turn: int | None
    task_id: str
    conversation: str | None
    closed_set: bool
    """The state asks for a decision (the benchmark's closed answers)."""
    context: list[ContextMessage]
    human_reply: str | None
    status: str
    """``ok`` or ``infra_error``."""
    error: str
    n: int
    class_counts: list[int]
    class_names: list[str]
    class_examples: list[list[str]]
    responses: list[str]
    labels: list[int]
    n_empty: int
    collapse_error: float
    collapse_error_estimate: float
    collapse_error_ci95: list[float | None]
    collapse_error_corrected: float
    entropy: float
    entropy_ci95: list[float | None]
    entropy_lower_bound_only: bool
    entropy_note: str
    entropy_plugin: float
    entropy_miller_madow: float
    hill: dict[str, float]
    hill_note: str
    sample_coverage: float
    distinct_1: float | None
    distinct_2: float | None
    low_confidence: bool
    vendi: float
    mean_pairwise_cosine: float
    domain_similarity: float
    """Similarity of the replies to the partition's validated domain."""
    conversations: list[str]
    """``audit --from``: the conversations that share the state's prefix."""
    reward_view: RewardViewOfState
    decision: DecisionClasses
    vs: VSStats
    exact: ExactDistribution | ExactFailure | None


class StateRowDict(TypedDict, total=False):
    """A state's row in ``results.json`` (``states``): a :class:`StateRecord` without its replies; a failed
    state's row holds ``null`` estimates (typed at the end by :class:`~collapse_probe.results.StateRow`)."""

    state_id: str
    mode: str
    source: str
    kind: str
    turn: int | None
    task_id: str
    status: str
    n: int
    class_counts: list[int]
    class_names: list[str]
    collapse_error: float | None
    collapse_error_ci95: list[float | None] | None
    collapse_error_corrected: float
    collapse_error_estimate: float
    entropy: float | None
    entropy_ci95: list[float | None]
    entropy_lower_bound_only: bool
    entropy_note: str
    hill: dict[str, float]
    hill_note: str
    distinct_1: float | None
    distinct_2: float | None
    vendi: float
    low_confidence: bool
    exact: ExactDistribution | ExactFailure | None
    reward_view: RewardViewOfState
    decision: DecisionClasses
    vs: VSStats
    """Without ``examples``."""
    n_empty: int
    error: str


# ----------------------------------------------------------------------------------------------- summary


class MeanInterval(TypedDict):
    """A mean over states with its interval (:class:`~collapse_probe.metrics.IntervalEstimate`'s fields;
    only ``estimate``, ``ci95`` and ``n_states`` over no state)."""

    estimate: float | None
    ci95: list[float | None] | None
    method: NotRequired[str]
    plugin: NotRequired[float]
    level: NotRequired[float]
    n: NotRequired[int]
    n_states: int
    low_confidence: NotRequired[bool]
    note: NotRequired[str]
    lower_bound_only: NotRequired[bool]


class Estimate(TypedDict):
    """An estimate with its interval (``None`` over no state)."""

    estimate: float | None
    ci95: list[float | None] | None


class CollapseErrorBlock(TypedDict):
    """``summary.collapse_error``: the mean ε over the audited states."""

    estimate: float | None
    ci95: list[float | None] | None
    method: str | None
    plugin: float | None
    level: float | None
    target: str


class EntropyBlock(TypedDict):
    """``summary.entropy``: the mean Chao–Wang–Jost entropy (nats)."""

    estimate: float | None
    ci95: list[float | None] | None
    estimator: str
    unit: str
    method: str | None
    plugin: float | None
    note: str | None
    lower_bound_only: bool


class EffectiveModesBound(TypedDict):
    """Whether exp(H) can only be read as a lower bound, and the bound."""

    effective_modes_lower_bound_only: bool
    effective_modes_lower_bound: float | None


class ParseFailures(TypedDict):
    """Verbalized-Sampling turns that fell back to a plain draw."""

    count: int
    of: int
    rate: float | None
    reasons: dict[str, int]


class SourceMean(TypedDict):
    """``summary.by_source[source]``: mean ε and entropy over one source's states."""

    collapse_error: float | None
    ci95: list[float | None] | None
    n_states: int
    collapse_error_plugin: float | None
    method: str | None
    entropy: float
    entropy_ci95: list[float | None] | None


class KindMean(TypedDict):
    """``summary.by_kind[kind]``: mean ε and entropy over one kind of state."""

    collapse_error: float | None
    ci95: list[float | None] | None
    n_states: int
    entropy: float


class RewardViewSummary(TypedDict):
    """``summary.reward_view``: the mean ε of the reward's classes where it reads the reply."""

    classes: str | None
    """What a class is (the arena's note), ``None`` without a reward hook."""
    n_states: int
    estimate: float | None
    ci95: list[float | None] | None
    method: NotRequired[str | None]
    plugin: NotRequired[float | None]
    level: NotRequired[float | None]
    states: str
    """The states it is measured at, in words (``none`` without one)."""
    reason: str | None
    """Why ``estimate`` is ``None``."""
    closed_answers_given: NotRequired[int]
    """Replies that give one of the closed answers the reward reads."""
    replies_read: NotRequired[int]


class DecisionSummary(TypedDict):
    """``summary.decision_collapse_error``: mean ε of the decision label at the states that ask for one."""

    estimate: float | None
    ci95: list[float | None] | None
    n_states: int
    partition: str


class ExactSummary(TypedDict):
    """``summary.exact``: means over the states with an exact closed-set distribution."""

    n_states: int
    closed_set_mass: float
    """P(the whole reply is one of the closed answers): format compliance, not collapse."""
    collapse_error_in_set: float | None
    n_states_in_set: int
    collapse_error_with_outside: float
    outside_mass: float


class KindViews(TypedDict):
    """The views of the summary beside the headline (:func:`~collapse_probe.pipelines.audit._views.kind_views`)."""

    by_kind: dict[str, KindMean]
    reward_view: RewardViewSummary
    decision_collapse_error: DecisionSummary | None
    exact: ExactSummary | None
    exact_outside_mass: float | None


class SequentialLook(TypedDict):
    """One look of a view's sequential test: ε̄'s exact bounds at that many replies per state."""

    look: int
    replies_per_state: int
    alpha_side: float
    lower: float
    upper: float
    modal_replies: int
    modal_trials: int
    hits: int
    hit_trials: int
    decision: str | None


class SequentialViewRecord(TypedDict):
    """``summary.sequential.views[view]``: the looks of one view and why the test stopped."""

    decision: str | None
    stop_reason: str | None
    reason: str
    replies_per_state: int
    lower: float | None
    upper: float | None
    looks: list[SequentialLook]


class SequentialSummary(TypedDict):
    """``summary.sequential``: the rule, the cap, the replies drawn and each view's test."""

    cap: int
    drawn_per_state: int
    rule: str
    views: dict[str, SequentialViewRecord]


class ExactTextView(TypedDict):
    """The exact-text partition's reading of the same replies (``meaning_checks.exact``)."""

    estimate: float | None
    ci95: list[float | None] | None
    label: str
    n_states: int


class MeaningChecks(TypedDict):
    """``summary.meaning_checks``: the meaning partition's validated domain and the exact-text view."""

    partition: str
    validated_on: str | None
    states_in_domain: int | None
    states_checked: int
    exact: ExactTextView | None
    domain_threshold: NotRequired[float]


class AuditSummary(TypedDict, total=False):
    """``results.json``'s ``summary`` (and ``compare_vs.direct`` / ``.verbalized``): the headline over one
    mode's measured states, the views beside it and the checks the verdict reads."""

    collapse_error: CollapseErrorBlock
    collapse_error_corrected: float | None
    entropy: EntropyBlock
    effective_modes: float | None
    effective_modes_note: str
    effective_modes_lower_bound_only: bool
    effective_modes_lower_bound: float | None
    accumulated_collapse_error: float | None
    """ε̄_H along the rollouts (on-policy audits)."""
    distinct_2: float | None
    vendi: float | None
    exact_collapse_error: float | None
    n_exact_states: int
    n_states: int
    infra_failures: int
    infra_errors: list[str]
    samples_per_state: int
    low_confidence: bool
    n_empty_responses: int
    vs_parse_failures: ParseFailures
    by_source: dict[str, SourceMean]
    by_kind: dict[str, KindMean]
    reward_view: RewardViewSummary
    decision_collapse_error: DecisionSummary | None
    exact: ExactSummary | None
    exact_outside_mass: float | None
    meaning_checks: MeaningChecks
    sequential: SequentialSummary


# ----------------------------------------------------------------------------------------------- verdict


class SequentialFields(TypedDict):
    """A view's label and evidence from its sequential test."""

    label: str
    exact_bounds: list[float] | None
    """The last look's exact bounds on ε̄."""
    decided_at: int | None
    """Replies per state at that look."""
    stop_reason: str | None


class FormatOutcome(TypedDict):
    """The fields of a NO REWARD SIGNAL reward view: how often the simulator gives a closed answer."""

    closed_answer_share: float
    closed_set_mass: float | None
    closed_answers_given: int | None
    replies_read: int | None
    reason: NotRequired[str]


class ViewVerdict(TypedDict, total=False):
    """``results.json`` ``verdicts.meaning`` / ``verdicts.reward``: one view judged against ε*."""

    label: str
    """COLLAPSED, NOT COLLAPSED, INCONCLUSIVE, NOT MEASURED or NO REWARD SIGNAL."""
    estimate: float | None
    ci95: list[float | None] | None
    n_states: int
    classes: str | None
    """What a class is in this view."""
    over: str | None
    """The states the view is measured at, in words."""
    reason: str | None
    """Why NOT MEASURED, NO REWARD SIGNAL, or INCONCLUSIVE by a check of the meaning view."""
    low_confidence: bool
    exact_bounds: list[float] | None
    decided_at: int | None
    stop_reason: str | None
    interval_label: str
    """NO REWARD SIGNAL: what the interval alone reads (COLLAPSED)."""
    closed_answer_share: float
    closed_set_mass: float | None
    closed_answers_given: int | None
    replies_read: int | None
    validated_on: str | None
    """Where the meaning partition is validated (the meaning view)."""
    partition_label: str
    """The label the meaning view's classes gave before a check made it INCONCLUSIVE."""


class Verdicts(TypedDict):
    """``results.json`` ``verdicts``: the verdict in two views."""

    meaning: ViewVerdict
    reward: ViewVerdict


class VerdictParts(TypedDict):
    """``results.json`` ``verdict_text``: the verdict's lines (``None`` where a line is not given)."""

    answer: str
    why: str | None
    next: str | None
    compare_vs: str | None


class MeanDifference(TypedDict):
    """Mean ε(b) − ε(a) over the same states, with a union-bound interval."""

    estimate: float | None
    ci95: list[float] | None
    n_states: int
    method: str
    level: NotRequired[float]
    a: NotRequired[float | None]
    """Mean ε of ``a`` (``a_estimate`` in a paired difference)."""
    b: NotRequired[float | None]
    plugin: NotRequired[float]
    a_estimate: NotRequired[float | None]
    b_estimate: NotRequired[float | None]
    all_states: NotRequired[bool]
    """Every measured state was measured in both modes."""


class CompareVSBlock(TypedDict, total=False):
    """``results.json``'s ``compare_vs``: the same states in direct and Verbalized-Sampling mode."""

    direct: AuditSummary
    verbalized: AuditSummary
    difference_vs_minus_direct: MeanDifference
    reward_view_difference_vs_minus_direct: MeanDifference | None
    vs_parse_failures: ParseFailures | None
    states: list[StateRowDict]
    """The other mode's per-state rows."""
    unreliable: bool
    human_reference: Mapping[str, object]
    """The other mode's comparison with people (:mod:`~collapse_probe.pipelines.audit._human`)."""
    towards_people: Mapping[str, object]


class AuditResultsDict(TypedDict, total=False):
    """``results.json`` of an audit as the pipeline builds it (typed at the end by
    :class:`~collapse_probe.results.AuditResults`); the parts other modules own are open mappings."""

    schema: str
    version: str
    simulator: str
    mode: str
    benchmark: str
    policy: str | None
    partitioner: str
    states_audited: str
    states_note: str | None
    notices: list[str]
    samples_per_state: int
    epsilon_star: float
    config: Mapping[str, object]
    summary: AuditSummary
    verdicts: Verdicts
    verdict: str
    verdict_text: VerdictParts
    trajectory: Mapping[str, object] | None
    states: list[StateRowDict]
    meaning_key: str | None
    compare_vs: CompareVSBlock
    variance_share: Mapping[str, object]
    variance: Mapping[str, object]
    human_reference: Mapping[str, object]
    rollouts: Mapping[str, object]
    source: Mapping[str, object]
    simulator_errors: object
    usage: Mapping[str, object]
