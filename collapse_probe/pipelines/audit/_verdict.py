"""The audit's verdict in two views — by meaning and where the reward looks — and the one line that states it.

The *meaning* view classes replies by what they say (embedding or judge partition); the *reward* view by
what the benchmark's reward pays (:meth:`~collapse_probe.benchmarks.AuditHooks` ``reward_class``). Both
are judged against ε* by the sequential test's exact bounds (:mod:`collapse_probe.pipelines.audit._sequential`; the
headline's interval for ``audit --from``): COLLAPSED when they lie below ε*, NOT
COLLAPSED above, INCONCLUSIVE when they contain ε*, NOT MEASURED when the view has no number (no state
where the reward reads the reply; classes not by meaning because the sentence encoder is missing). A
simulator whose wording varies while the reward sees one outcome is collapsed where it matters: the
reward then has no simulator-side variance (Lemma 3.3), so the policy gets no learning signal from it.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from collapse_probe.errors import ConfigError
from collapse_probe.metrics import MIN_CONFIDENT_SAMPLES
from collapse_probe.metrics.partitioners import groups_by_meaning, meaning_partitions
from collapse_probe.pipelines.audit._config import AuditConfig
from collapse_probe.pipelines.audit._sequential import SCHEDULE
from collapse_probe.pipelines.audit._types import (
    AuditResultsDict,
    AuditSummary,
    CompareVSBlock,
    FormatOutcome,
    MeanDifference,
    MeaningChecks,
    RewardViewSummary,
    SequentialFields,
    SequentialViewRecord,
    StateRecord,
    VerdictParts,
    Verdicts,
    ViewVerdict,
)

COLLAPSED, NOT_COLLAPSED, INCONCLUSIVE, NOT_MEASURED = "COLLAPSED", "NOT COLLAPSED", "INCONCLUSIVE", "NOT MEASURED"
NO_REWARD_SIGNAL = "NO REWARD SIGNAL"
"""The reward view's outcome when the simulator (almost) never gives a closed answer the reward reads."""
VIEW_LABELS = (COLLAPSED, NOT_COLLAPSED, INCONCLUSIVE, NOT_MEASURED, NO_REWARD_SIGNAL)
FORMAT_COMPLIANCE_LOW = 0.05
"""Below this share of replies that give one of the closed answers the reward reads (of the sampled
replies at the states the reward reads; without a decision label there, the model's exact probability
that the whole reply is one, ``summary.exact.closed_set_mass``), a reward view whose interval lies below
ε* is NO REWARD SIGNAL, not COLLAPSED: (almost) every reply is paid as no answer, so the view measures
how rarely the simulator answers in the reward's format, not how collapsed its answers are. A reward
view that varies (INCONCLUSIVE, NOT COLLAPSED) carries signal and keeps its label."""
MEANING_PARTITIONS = meaning_partitions()
"""Registered partitions whose classes are meanings (each partitioner says so: ``by_meaning``)."""
PROBE_SOURCES = ("opening", "elicitation")
_SOURCE_WORDS = {
    "on_policy": "on-policy simulator turn",
    "human": "human-grounded state",
    "published": "shared-prefix state",
}


FIRST_LOOK = SCHEDULE.first
"""Replies per state at the sequential audit's first look."""


def view_label(estimate: float | None, ci95: Sequence[float | None] | None, epsilon_star: float) -> str:
    """COLLAPSED / NOT COLLAPSED / INCONCLUSIVE of an interval against ε* (NOT MEASURED without one); an
    end that is ``None`` (no bound on that side) places the interval on neither side of ε*."""
    if estimate is None or not ci95:
        return NOT_MEASURED
    lo, hi = ci95
    if hi is not None and hi < epsilon_star:
        return COLLAPSED
    if lo is not None and lo > epsilon_star:
        return NOT_COLLAPSED
    return INCONCLUSIVE


def _count(value: object) -> int:
    """A count read from a summary (``0`` where it is missing or not a number)."""
    return int(value) if isinstance(value, int | float) else 0


def states_text(summary: Mapping[str, object], on_policy: bool | None = None) -> str:
    """The audited states in words, by source: ``"4 probe states"``, ``"4 probe states + 3 human-grounded states"``
    (of an :class:`~collapse_probe.pipelines.audit._types.AuditSummary` or its ``results.json`` object)."""
    by_source = summary.get("by_source")
    counts: dict[str, int] = {}
    for src, b in by_source.items() if isinstance(by_source, Mapping) else ():
        word = "probe state" if src not in _SOURCE_WORDS else _SOURCE_WORDS[src]
        counts[word] = counts.get(word, 0) + (_count(b.get("n_states")) if isinstance(b, Mapping) else 0)
    if not counts:
        n = _count(summary.get("n_states"))
        counts = {"on-policy simulator turn" if on_policy else "probe state": n}
    return " + ".join(f"{n} {w}{'s' if n != 1 else ''}" for w, n in counts.items())


def audit_verdicts(summary: AuditSummary, config: AuditConfig, partition: str | None = None,
                   policy: bool | None = None) -> Verdicts:  # fmt: skip
    """``results.json`` ``verdicts``: ``{"meaning": view, "reward": view}``.

    Each view is ``{label, estimate, ci95, n_states}`` plus ``classes`` (what a class is), ``over`` (the
    states it is measured at, in words), ``reason`` (why NOT MEASURED, else ``None``) and
    ``low_confidence`` (N < :data:`~collapse_probe.metrics.MIN_CONFIDENT_SAMPLES`). The meaning view is NOT MEASURED when the classes fell back to a
    non-semantic partition that was not asked for (the ``embed`` extra missing): its number would
    depend on what is installed, not on the simulator. An explicitly asked ``--partition exact|label``
    is judged and says so in ``classes``.

    Args:
        summary: the ``summary`` block (with ``reward_view`` from :func:`~collapse_probe.pipelines.audit._views.kind_views`).
        config: the audit configuration (ε*, the asked partition).
        partition: the partition used (default: the one asked for).
        policy: the states are on-policy turns (default: ``config.policy`` is set).
    """
    star = config.epsilon_star
    partition = partition or config.partitioner_name
    on_policy = config.policy is not None if policy is None else policy
    low = bool(summary.get("low_confidence"))
    ce = summary["collapse_error"]
    by_meaning = groups_by_meaning(partition)
    fallback = not by_meaning and config.partition != partition
    classes = f"{partition} (by meaning)" if by_meaning else f"{partition} (not by meaning)"
    meaning: ViewVerdict = {"label": view_label(ce["estimate"], ce["ci95"], star), "estimate": ce["estimate"],
                            "ci95": ce["ci95"], "n_states": int(summary.get("n_states") or 0), "classes": classes,
                            "over": states_text(summary, on_policy), "reason": None, "low_confidence": low}  # fmt: skip
    if ce["estimate"] is None:
        meaning["reason"] = "no state could be measured"
    elif fallback:  # the fallback's number is not a meaning: it would change with the extras installed
        meaning.update(
            {
                "label": NOT_MEASURED,
                "estimate": None,
                "ci95": None,
                "reason": f"the classes fell back to {partition}, not meanings (no sentence encoder installed)",
            }
        )
    from collapse_probe.metrics.partitioners import partitioner_needs_model

    try:
        judged = partitioner_needs_model(partition)
    except ConfigError:  # a plugin partition that cannot be loaded is not a judge
        judged = False
    sequential = summary.get("sequential")
    tests = (sequential.get("views") if sequential else None) or {}
    if meaning["label"] != NOT_MEASURED and "meaning" in tests:
        meaning.update(sequential_fields(tests["meaning"]))
    if by_meaning and not fallback:
        meaning = checked_meaning_view(meaning, summary.get("meaning_checks"), judged)
    rv: RewardViewSummary | dict[str, None] = summary.get("reward_view") or {}
    reward: ViewVerdict = {"label": view_label(rv.get("estimate"), rv.get("ci95"), star), "estimate": rv.get("estimate"),
                           "ci95": rv.get("ci95"), "n_states": int(rv.get("n_states") or 0),
                           "classes": rv.get("classes"), "reason": rv.get("reason"),
                           "over": rv.get("states") if rv.get("estimate") is not None else None,
                           "low_confidence": low}  # fmt: skip
    if reward["label"] == NOT_MEASURED and not reward["reason"]:
        reward["reason"] = "no reward view in this summary"
    if reward["label"] != NOT_MEASURED and "reward" in tests:
        reward.update(sequential_fields(tests["reward"]))
    if reward["label"] == COLLAPSED:
        exact = summary.get("exact")
        silent = format_outcome(rv, exact.get("closed_set_mass") if exact else None)
        if silent is not None:
            reward.update({"label": NO_REWARD_SIGNAL, "interval_label": COLLAPSED, **silent})
    return {"meaning": meaning, "reward": reward}


def sequential_fields(test: SequentialViewRecord) -> SequentialFields:
    """A view's label and evidence from its sequential test (``summary.sequential.views``): the decision of
    the exact bounds, INCONCLUSIVE while undecided; ``exact_bounds`` are the last look's bounds on ε̄ and
    ``decided_at`` its replies per state (``None`` without a look)."""
    lower, upper = test["lower"], test["upper"]
    bounds = [lower, upper] if test.get("looks") and lower is not None and upper is not None else None
    return {"label": test.get("decision") or INCONCLUSIVE, "exact_bounds": bounds,
            "decided_at": test.get("replies_per_state") or None, "stop_reason": test.get("stop_reason")}  # fmt: skip


def format_outcome(reward_view: RewardViewSummary | Mapping[str, None], mass: float | None) -> FormatOutcome | None:
    """The fields of a NO REWARD SIGNAL reward view, or ``None`` where the reward does read answers.

    The share is of the sampled replies at the states the reward reads (``reward_view.closed_answers_given``
    of ``replies_read``: the benchmark's decision label names a closed answer); without those counts, the
    model's exact probability that the whole reply is a closed answer (``mass``). Either below
    :data:`FORMAT_COMPLIANCE_LOW`: no signal. Where both exist, the sample decides (a reply may carry the
    answer inside a sentence, which the exact score of a bare answer does not count) and ``mass`` is shown."""
    given, read = reward_view.get("closed_answers_given"), reward_view.get("replies_read")
    if read and given is not None:
        share = given / read
    elif mass is not None:
        share, given, read = mass, None, None
    else:
        return None
    if share >= FORMAT_COMPLIANCE_LOW:
        return None
    out: FormatOutcome = {
        "closed_answer_share": share,
        "closed_set_mass": mass,
        "closed_answers_given": given,
        "replies_read": read,
    }
    out["reason"] = (f"the simulator gives one of the closed answers the reward reads in {given_text(out)} (below "
                     f"{percent(FORMAT_COMPLIANCE_LOW)}): the view measures format, not collapse")  # fmt: skip
    return out


def given_text(view: Mapping[str, object]) -> str:
    """How often a NO REWARD SIGNAL view's simulator gives a closed answer, in words: ``0 of 40 sampled
    replies, model probability 0.041 %``, or ``0.041 % of replies (model probability)`` (of a
    :class:`~collapse_probe.pipelines.audit._types.ViewVerdict`, its ``results.json`` object or a
    :class:`~collapse_probe.pipelines.audit._types.FormatOutcome`)."""
    mass, read, share = view.get("closed_set_mass"), view.get("replies_read"), view.get("closed_answer_share")
    if read:
        prob = f", model probability {percent(mass)}" if isinstance(mass, int | float) else ""
        return f"{view.get('closed_answers_given')} of {read} sampled replies{prob}"
    return f"{percent(share if isinstance(share, int | float) and share else 0.0)} of replies (model probability)"


def percent(share: float) -> str:
    """A share as a percentage with two significant figures at least: ``0.04 %``, ``5 %``, ``12.5 %``."""
    pct = 100.0 * share
    return f"{pct:.2g} %" if pct < 10 else f"{pct:.3g} %"


_MAX_ADVISED_SAMPLES = 200
"""Replies per state the rerun advice asks for at most; beyond, it asks for more states instead."""


class RerunAdvice(NamedTuple):
    """The audit design the verdict's ``next:`` line asks for: ``states`` per source and ``samples`` per state."""

    states: int
    samples: int

    @property
    def flags(self) -> str:
        """The command-line flags of this design (``--states 2 --samples 48``)."""
        return f"--states {self.states} --samples {self.samples}"


def rerun_advice(config: AuditConfig, n_states: int | None = None) -> RerunAdvice:
    """The design of an audit whose verdict is decisive (its interval excludes ε*) in at least 80 % of runs
    when the true mean ε lies 0.1 from ε* (:func:`~collapse_probe.metrics.decisive_sample_size`): the
    replies per state for the audited states (default: the probe states, ``len(PROBE_SOURCES)`` per
    ``--states``), never fewer than now, and more states where that would exceed 200 replies per state.
    The advice is the design's: it does not depend on the estimate or its interval."""
    from collapse_probe.metrics import decisive_sample_size

    tasks = config.rollout.tasks
    states = n_states or tasks * len(PROBE_SOURCES)
    need = decisive_sample_size(config.epsilon_star, states)
    factor = max(1, math.ceil(need / _MAX_ADVISED_SAMPLES))
    samples = max(config.samples, decisive_sample_size(config.epsilon_star, states * factor))
    return RerunAdvice(tasks * factor, samples)


def _ends(ci95: Sequence[float | None] | None) -> tuple[float, float]:
    """The ends of a measured view's interval (a collapse-error interval: both ends always finite)."""
    assert ci95 is not None, "a measured view has an interval"
    lo, hi = ci95
    assert lo is not None and hi is not None, "collapse-error intervals are two-sided"
    return lo, hi


def _evidence(name: str, v: ViewVerdict, star: float, first: bool) -> str:
    lo, hi = _ends(v["ci95"])
    where = {COLLAPSED: "below", NOT_COLLAPSED: "above", INCONCLUSIVE: "contains"}[v["label"]]
    rel = f"{where} ε* = {star:g}" if first else f"{where} ε*"
    if v["label"] == INCONCLUSIVE:
        rel = f"95% CI {rel}"
    extra = f", classes by {(v.get('classes') or '').split(' (')[0]}" if name == "meaning" and v.get("classes") else ""
    if v.get("stop_reason") is not None:  # decided by the sequential test's exact bounds, not by the interval
        rel = f"{where} ε* = {star:g}" if first else f"{where} ε*"
        bounds = v.get("exact_bounds")
        if bounds:
            a, b = bounds
            rel = rel.replace("contains", "contain")
            rel = f"exact bounds [{a:.3f}, {b:.3f}] at N = {v['decided_at']} {rel}"
        else:
            rel = f"no look of the sequential test (the cap is below {FIRST_LOOK} replies per state)"
        return f"{name} ε̂ {v['estimate']:.3f} [{lo:.3f}, {hi:.3f}]; {rel}, over {v['over']}{extra}"
    return f"{name} ε̂ {v['estimate']:.3f} [{lo:.3f}, {hi:.3f}] {rel}, over {v['over']}{extra}"


_WHERE = {"reward": "where the reward looks", "meaning": "by meaning"}
_VARIES = {"reward": "what the reward pays varies", "meaning": "wording varies"}
_NAMES = {"reward": "reward-view", "meaning": "meaning"}
FORMAT_MODEL = "gpt-5-mini"
"""The model the format outcome's ``next:`` line suggests: a hosted model that follows an answer format."""


def audit_command(config: AuditConfig, *flags: str, sim: str | None = None) -> str:
    """The ``collapse-probe audit`` command line of ``config`` (its simulator, benchmark, policy and asked
    partition, where they are not the defaults) with ``flags`` added: what a ``next:`` step asks to run."""
    from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK

    words = ["collapse-probe", "audit", "--sim", sim or config.sim]
    if config.benchmark != DEFAULT_BENCHMARK:
        words += ["--benchmark", config.benchmark]
    if config.policy:
        words += ["--policy", config.policy]
    if config.partition:
        words += ["--partition", config.partition]
    if config.judge:
        words += ["--judge", config.judge]
    words += _benchmark_option_words(config.arena_options or {})
    added = [w for f in flags for w in f.split()]
    words += _test_words(config, skip=added)
    words += added
    return " ".join(shlex.quote(w) for w in words)


_SAME_TEST = ("states", "rollouts", "max_turns", "temperature", "top_p", "seed", "epsilon_star", "personas", "human")
"""The audit's fields that choose its states, its replies and its threshold: a ``next:`` command repeats
those not at their defaults, so that it continues the same test (the response cache keys on them)."""


def _test_words(config: AuditConfig, skip: Sequence[str] = ()) -> list[str]:
    """The flags of the fields of :data:`_SAME_TEST` that ``config`` sets to other than their defaults
    (but those in ``skip``: the flags a step gives itself, e.g. more ``--states``)."""
    words: list[str] = []
    for name in _SAME_TEST:
        value, flag = getattr(config, name), "--" + name.replace("_", "-")
        if flag not in skip and value is not None and value != type(config).model_fields[name].default:
            words += [flag, str(value)]  # all digits: `:g` keeps 6, a different --temperature or --epsilon-star
    return words


def _benchmark_option_words(options: Mapping[str, object]) -> list[str]:
    """The flags of the benchmark options the run was given (``--scenarios FILE``, ``--domain retail``), so a
    ``next:`` command audits the same states: without them it would fail or audit the benchmark's default."""
    import json

    words: list[str] = []
    for name, value in options.items():
        if value is None or value is False or name == "judge":
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, (str, int, float)):
            words += [flag, str(value)]
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
            words += [flag, ",".join(str(v) for v in value)]
        else:
            words += [flag, json.dumps(value, separators=(",", ":"), default=str)]
    return words


def _phrase(view: str, label: str) -> str:
    if label == NOT_COLLAPSED:
        return _VARIES[view]
    return _WHERE[view] if label == COLLAPSED else f"inconclusive {_WHERE[view]}"


def _answer(measured: dict[str, ViewVerdict], views: dict[str, ViewVerdict]) -> tuple[str, str, list[str]]:
    """The answer line, the headline label and the views in the order the evidence is given."""
    labels = {k: v["label"] for k, v in measured.items()}
    head = next(lab for lab in (COLLAPSED, INCONCLUSIVE, NOT_COLLAPSED) if lab in labels.values())
    order = sorted(measured, key=lambda k: (labels[k] != head, k != "reward"))  # the head's view first, reward first
    if len(order) == 2 and labels["reward"] == labels["meaning"]:
        answer = f"{head} {'in either view' if head == NOT_COLLAPSED else 'in both views'}"
    else:
        first = order[0]
        answer = f"{head} {_WHERE[first]}" if head != NOT_COLLAPSED else f"{head}: {_VARIES[first]}"
        if len(order) == 2:
            other = order[1]
            joint = ", although " if head == COLLAPSED and labels[other] == NOT_COLLAPSED else "; "
            answer += f"{joint}{_phrase(other, labels[other])}"
    for k, v in views.items():
        if v["label"] == NOT_MEASURED:
            answer += f" ({k} view not measured)"
        elif v["label"] == NO_REWARD_SIGNAL:
            answer += (
                f"; {NO_REWARD_SIGNAL} {_WHERE[k]}: the simulator gives one of the closed answers in {given_text(v)}"
            )
    return answer, head, order


def verdict_parts(
    verdicts: Verdicts,
    config: AuditConfig,
    infra_failures: int = 0,
    first_error: str | None = None,
    *,
    compare_vs: CompareVSBlock | None = None,
    published: bool = False,
    replies: str | None = None,
) -> VerdictParts:
    """The verdict as a person reads it: ``answer`` (one short line), ``why`` (the evidence of each
    view, any view's ``reason``, format compliance), ``next`` (what to do: fix the format, try Verbalized
    Sampling, rerun with more states or samples) and ``compare_vs`` (the ``--compare-vs`` result, when
    it was run; else ``None``).

    Args:
        verdicts: :func:`audit_verdicts`.
        config: the audit configuration (ε*, N, whether VS was compared).
        infra_failures: states excluded as infrastructure failures.
        first_error: the first infrastructure failure's message.
        compare_vs: ``results.json`` ``compare_vs``, when it was run.
        published: the replies come from a published file (it cannot be sampled again).
        replies: the replies per state as measured (``"9 to 10 (median 10)"``; default ``config.samples``).
    """
    views = {"reward": verdicts["reward"], "meaning": verdicts["meaning"]}
    unmeasured = _unmeasured(views, config, infra_failures, first_error)
    if unmeasured is not None:
        return unmeasured
    measured = {k: v for k, v in views.items() if v["label"] not in (NOT_MEASURED, NO_REWARD_SIGNAL)}
    silent = views["reward"] if views["reward"]["label"] == NO_REWARD_SIGNAL else None
    answer, head, order = _answer(measured, views)
    why = _why(views, measured, order, silent, config, infra_failures, replies)
    low = any(v.get("low_confidence") for v in measured.values())
    steps = _next_steps(measured, head, silent, low, config, compare_vs=compare_vs, published=published)
    return {"answer": answer, "why": f"why: {why}", "next": "next: " + "; ".join(steps),
            "compare_vs": _vs_line(compare_vs) if compare_vs is not None else None}  # fmt: skip


def _unmeasured(
    views: dict[str, ViewVerdict], config: AuditConfig, infra_failures: int, first_error: str | None
) -> VerdictParts | None:
    """The verdict when no view measured collapse: no state measured, only format compliance, or
    nothing at all; ``None`` when a view measured it."""
    if not views["meaning"].get("n_states"):
        from collapse_probe.core._observe import no_result_reason

        nxt = (
            "next: fix the failure named above and run the same command again (finished states are kept)"
            if infra_failures
            else "next: check that the simulator answers (collapse-probe play) and run again"
        )
        # the reason is the answer here: it stays on the first line, as the run's last stderr line words it
        answer = "NO RESULT: no state could be measured " + no_result_reason(infra_failures, first_error)
        return {"answer": answer, "why": None, "next": nxt, "compare_vs": None}
    measured = {k: v for k, v in views.items() if v["label"] not in (NOT_MEASURED, NO_REWARD_SIGNAL)}
    silent = views["reward"] if views["reward"]["label"] == NO_REWARD_SIGNAL else None
    if not measured and silent is not None:
        # the reward view measured format only, and the meaning view nothing: say both
        answer = (f"{NO_REWARD_SIGNAL} {_WHERE['reward']}: the simulator gives one of the closed answers in "
                  f"{given_text(silent)} (meaning view not measured)")  # fmt: skip
        return {"answer": answer, "why": f"why: reward view: {silent['reason']}; meaning view not measured: "
                f"{views['meaning']['reason']}", "next": "next: " + "; ".join(_format_steps(config)),
                "compare_vs": None}  # fmt: skip
    if not measured:
        why = "; ".join(f"{k} view: {v['reason']}" for k, v in views.items())
        if infra_failures:
            why += f"; {infra_failures} state{'' if infra_failures == 1 else 's'} excluded: infrastructure failures"
        return {"answer": "NO RESULT: no view could be measured", "why": f"why: {why}",
                "next": "next: install the embed extra (pip install -e \".[embed]\") or give --partition judge "
                        "--judge SPEC for a meaning view", "compare_vs": None}  # fmt: skip
    return None


def _why(
    views: dict[str, ViewVerdict],
    measured: dict[str, ViewVerdict],
    order: list[str],
    silent: ViewVerdict | None,
    config: AuditConfig,
    infra_failures: int,
    replies: str | None,
) -> str:
    """The verdict's evidence: each measured view's interval, format compliance, each view's reason,
    the replies per state, low confidence and the states excluded."""
    labels = {k: v["label"] for k, v in measured.items()}
    why = "; ".join(_evidence(_NAMES[k], measured[k], config.epsilon_star, i == 0) for i, k in enumerate(order))
    if labels.get("reward") == COLLAPSED and labels.get("meaning") == NOT_COLLAPSED:
        why += " — the variety reaches the policy as no reward signal (Lemma 3.3)"
    if silent is not None:
        lo, hi = _ends(silent["ci95"])
        why += (f"; reward view {NO_REWARD_SIGNAL} (ε̂ {silent['estimate']:.3f} [{lo:.3f}, {hi:.3f}] over {silent['over']}): "
                f"one of the closed answers in {given_text(silent)}, below {percent(FORMAT_COMPLIANCE_LOW)}, so the "
                "reward pays every reply as no answer and the view measures format compliance, not collapse; the "
                "policy gets no reward signal from this simulator (Lemma 3.3)")  # fmt: skip
    for k, v in views.items():
        if v.get("reason") and v["label"] != NO_REWARD_SIGNAL:
            why += f"; {k} view {v['label'].lower() if v['label'] != NOT_MEASURED else 'not measured'}: {v['reason']}"
    n = replies or str(config.samples)
    why += f"; N = {n} replies per state"
    if any(v.get("low_confidence") for v in measured.values()):
        why += (
            f" [LOW CONFIDENCE: fewer than {MIN_CONFIDENT_SAMPLES} responses per state; ε̂ is biased towards collapsed]"
        )
    if infra_failures:
        why += f" [{infra_failures} state{'' if infra_failures == 1 else 's'} excluded: infrastructure failures]"
    return why


def _next_steps(
    measured: dict[str, ViewVerdict],
    head: str,
    silent: ViewVerdict | None,
    low: bool,
    config: AuditConfig,
    *,
    compare_vs: CompareVSBlock | None,
    published: bool,
) -> list[str]:
    """What to do next: fix the answer format, sample more (or raise the cap of the sequential test),
    choose another partition, try Verbalized Sampling, or nothing."""
    steps: list[str] = []
    if silent is not None:
        steps += (["the file's simulator (almost) never answers in the reward's format: its replies are in "
                   "samples.jsonl"] if published else _format_steps(config))  # fmt: skip
    undecided = [v for v in measured.values() if v["label"] == INCONCLUSIVE and not v.get("reason")]
    if undecided:
        if published:
            steps.append("more trials per task (or more tasks) narrow the interval")
        elif any(v.get("stop_reason") is not None for v in undecided):
            cap = max(config.samples * 2, FIRST_LOOK * 4)
            steps.append(f"raise the cap, which continues the same sequential test from the cached replies: "
                         f"{audit_command(config, f'--samples {cap}')}")  # fmt: skip
        else:
            steps.append(f"sample more states or responses: {audit_command(config, rerun_advice(config).flags)}")
    for k, v in measured.items():
        if v["label"] == INCONCLUSIVE and v.get("reason"):
            steps.append(f"the {k} view cannot decide here; judge by the other view or choose another "
                         "--partition (e.g. --partition judge --judge SPEC)")  # fmt: skip
    if head == COLLAPSED and not published:
        if compare_vs is None and not config.compare_vs:
            steps.append(f"audit Verbalized Sampling beside it: {audit_command(config, '--compare-vs')}")
        elif compare_vs is not None:
            steps.append(_vs_step(compare_vs))
    elif head == COLLAPSED:
        steps.append("audit the same simulator live with Verbalized Sampling: collapse-probe audit --sim vs:SPEC")
    if low and not undecided:
        steps.append(
            f"more trials per task ({MIN_CONFIDENT_SAMPLES} or more)"
            if published
            else f"more replies per state: {audit_command(config, f'--samples {MIN_CONFIDENT_SAMPLES}')}"
        )
    if not steps:
        steps.append(
            "nothing to fix at these states"
            + (
                "; audit the states a policy visits with --policy SPEC"
                if config.policy is None and not published
                else ""
            )
        )
    return steps


def _format_steps(config: AuditConfig) -> list[str]:
    """The ``next:`` steps of NO REWARD SIGNAL, each a command that runs: read the replies the reward pays 0
    (one conversation, offline for a local simulator), then audit a model that follows the answer format."""
    from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK

    look = f"collapse-probe play --sim {shlex.quote(config.sim)} --tasks 1 --rollouts 1"
    # P4G's one round then the donation question; another benchmark's --max-turns may end a task unscored
    look += (
        " --max-turns 1" if config.benchmark == DEFAULT_BENCHMARK else f" --benchmark {shlex.quote(config.benchmark)}"
    )
    look += "".join(" " + shlex.quote(w) for w in _benchmark_option_words(config.arena_options or {}))
    return [f"read what the simulator answers where the reward looks: {look}",
            f"audit a model that answers in the reward's format (needs OPENAI_API_KEY): "
            f"{audit_command(config, sim=FORMAT_MODEL)}"]  # fmt: skip


def _difference_word(d: MeanDifference | None) -> str | None:
    ci = d.get("ci95") if d else None
    if not d or d.get("estimate") is None or not ci or ci[0] is None or ci[1] is None:
        return None
    if ci[0] > 0:
        return "less collapsed"
    if ci[1] < 0:
        return "more collapsed"
    return "no clear difference"


def _vs_step(compare_vs: CompareVSBlock) -> str:
    words = [_difference_word(compare_vs.get("reward_view_difference_vs_minus_direct")),
             _difference_word(compare_vs.get("difference_vs_minus_direct"))]  # fmt: skip
    if compare_vs.get("unreliable"):
        return "Verbalized Sampling replies could not be parsed: a larger model, or --vs-k smaller"
    if "less collapsed" in words:
        return "train against the Verbalized-Sampling simulator (--sim vs:SPEC): it is less collapsed here"
    return "Verbalized Sampling does not help here: train against several simulators (train --method ensemble)"


def _vs_line(compare_vs: CompareVSBlock) -> str:
    """``--compare-vs``: VS − direct in each view, with its interval and what it says."""
    parts = []
    for name, d in (
        ("reward view", compare_vs.get("reward_view_difference_vs_minus_direct")),
        ("meaning", compare_vs.get("difference_vs_minus_direct")),
    ):
        word = _difference_word(d)
        if d is None or d["ci95"] is None or word is None:
            continue
        lo, hi = d["ci95"]
        parts.append(f"{name} VS − direct {d['estimate']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({word})")
    text = "; ".join(parts) if parts else "no state measured in both modes"
    if compare_vs.get("unreliable"):
        text += " [most VS replies could not be parsed: the VS numbers describe the fallback draw]"
    return f"Verbalized Sampling (--compare-vs): {text}"


def join_verdict(parts: VerdictParts) -> str:
    """``results.json`` ``verdict``: the lines of :func:`verdict_parts` joined by newlines, in the order
    the terminal prints them (answer, why, next, then the ``--compare-vs`` line when it was run)."""
    return "\n".join(
        p for p in (parts.get("answer"), parts.get("why"), parts.get("next"), parts.get("compare_vs")) if p
    )


def verdict_line(
    verdicts: Verdicts, config: AuditConfig, infra_failures: int = 0, first_error: str | None = None,
    **context: Any,
) -> str:  # fmt: skip
    """The verdict as the terminal prints it (:func:`verdict_parts` joined by :func:`join_verdict`).

    The answer is COLLAPSED when either view is (named: "where the reward looks", "by meaning" or "in
    both views"), else INCONCLUSIVE when either view is, else NOT COLLAPSED; a view that is not
    measured says why. ``context``: :func:`verdict_parts`' keywords (``compare_vs``,
    ``published``).
    """
    return join_verdict(verdict_parts(verdicts, config, infra_failures, first_error, **context))


def replies_text(states: Sequence[Mapping[str, object]]) -> str | None:
    """Replies per measured state: ``"20"``, or ``"9 to 10 (median 10)"`` when the states differ (a
    published file's states hold as many replies as the trials that share the prefix)."""
    import statistics

    ns = sorted(_count(r.get("n")) for r in states if r.get("status", "ok") == "ok")
    if not ns:
        return None
    return str(ns[0]) if ns[0] == ns[-1] else f"{ns[0]} to {ns[-1]} (median {statistics.median(ns):g})"


def render_verdict(results: AuditResultsDict, config: AuditConfig, *, published: bool = False) -> AuditResultsDict:
    """Set ``results.json``'s ``verdict_text`` (the lines of :func:`verdict_parts`) and ``verdict`` (them
    joined, as the terminal prints them) from its ``verdicts``, ``summary`` and ``compare_vs``."""
    summary = results["summary"]
    parts = verdict_parts(results["verdicts"], config, summary.get("infra_failures") or 0, first_infra_error(summary),
                          compare_vs=results.get("compare_vs"),
                          published=published, replies=replies_text(results.get("states") or ()))  # fmt: skip
    results["verdict_text"] = parts
    results["verdict"] = join_verdict(parts)
    return results


def verdict(summary: AuditSummary, config: AuditConfig, partition: str | None = None,
            policy: bool | None = None) -> str:  # fmt: skip
    """The verdict a newcomer can act on: the answer in both views, the evidence and what to do next
    (when INCONCLUSIVE, the flags to rerun with) (:func:`audit_verdicts`, :func:`verdict_line`).

    Args:
        summary: the ``summary`` block.
        config: the audit configuration.
        partition: the partition used (default: the one asked for).
        policy: the states are on-policy turns (default: ``config.policy`` is set).
    """
    verdicts = audit_verdicts(summary, config, partition=partition, policy=policy)
    return verdict_line(verdicts, config, summary.get("infra_failures") or 0, first_infra_error(summary))


def first_infra_error(summary: AuditSummary) -> str | None:
    """The first infrastructure failure's message of a ``summary`` block (``None`` without one)."""
    errors = summary.get("infra_errors") or []
    return str(errors[0]) if errors else None


# --------------------------------------------------------------------------------------------------
# the meaning view's checks
#
# Whether the meaning view's classes can carry the verdict: the domain its partition is validated on,
# and whether exact text would decide the other way.
#
# An offline meaning partition is a model of what replies mean, fitted and checked on one kind of text
# (the customer-service ``disclosure`` partition on real τ2 / τ-bench user-simulator replies; the
# embedding partition's threshold on P4G persuadee replies). Two checks guard the meaning view:
#
# - **domain**: a partition that knows its domain (``in_domain`` / ``domain_similarity``) says how many
#   of the audited states' replies lie in it; when fewer than :data:`MIN_IN_DOMAIN_SHARE` of them do,
#   the classes are outside what was validated and the meaning view is INCONCLUSIVE;
# - **flip**: the exact-text partition is measured on the same replies; when exact text and the
#   offline meaning partition give opposite verdicts (one interval below ε*, the other above), the
#   verdict rests entirely on which replies the partition merges, so the meaning view is INCONCLUSIVE.
#
# Either way the meaning view keeps its estimate and interval, records the label it would have had
# (``partition_label``) and says why and what to run: ``--judge MODEL`` (the rubric's definition of a
# meaning class, asked of an LLM), which both checks trust.

MIN_IN_DOMAIN_SHARE = 0.5
"""The share of measured states whose replies must lie in the partition's validated domain."""


def meaning_checks(records: Sequence[StateRecord], partition: str, seed: int, star: float) -> MeaningChecks:
    """``summary.meaning_checks``: the partition's validated domain, the states in it, and the
    exact-text view of the same replies (estimate, interval, label against ``star``)."""
    from collapse_probe.metrics.estimators import mean_collapse_error_interval
    from collapse_probe.metrics.partitioners import ExactPartitioner, class_counts, partitioner_class

    ok = [r for r in records if r.get("status") == "ok" and r.get("responses")]
    cls = partitioner_class(partition)
    out: MeaningChecks = {"partition": partition, "validated_on": getattr(cls, "validated_on", None),
                           "states_in_domain": None, "states_checked": 0, "exact": None}  # fmt: skip
    sims = [s for r in ok if isinstance(s := r.get("domain_similarity"), int | float)]
    if sims and hasattr(cls, "domain_threshold"):
        out["states_checked"] = len(sims)
        out["states_in_domain"] = sum(1 for s in sims if s >= cls.domain_threshold())
        out["domain_threshold"] = cls.domain_threshold()
    if ok:
        exact = ExactPartitioner()
        counts = [class_counts(exact.partition(r["responses"])) for r in ok]
        iv = mean_collapse_error_interval(counts, seed=seed)
        out["exact"] = {"estimate": iv.estimate, "ci95": list(iv.ci95),
                        "label": view_label(iv.estimate, iv.ci95, star), "n_states": len(ok)}  # fmt: skip
    return out


def judge_advice(partition: str) -> str:
    return (
        "rerun with --partition judge --judge MODEL, a capable LLM (it classes the replies by the same "
        "rubric the offline partition was fitted to)"
    )


def checked_meaning_view(view: ViewVerdict, checks: MeaningChecks | None, judged: bool) -> ViewVerdict:
    """The meaning view after the domain and flip checks (unchanged for a judge partition, which
    applies the definition itself, and for views that are not COLLAPSED / NOT COLLAPSED)."""
    view = view.copy()
    view["validated_on"] = (
        (checks.get("validated_on") if checks else None) if not judged else "the rubric's definition (judge)"
    )
    if not checks or judged or view.get("label") not in (COLLAPSED, NOT_COLLAPSED):
        return view
    reasons = []
    n, k = checks.get("states_checked") or 0, checks.get("states_in_domain")
    if n and k is not None and k < MIN_IN_DOMAIN_SHARE * n:
        reasons.append(f"the replies of {n - k} of {n} states are outside the domain the {checks['partition']} "
                       f"partition is validated on ({checks.get('validated_on')})")  # fmt: skip
    ex = checks.get("exact")
    flips = {COLLAPSED: NOT_COLLAPSED, NOT_COLLAPSED: COLLAPSED}
    if ex and ex.get("label") == flips[view["label"]]:
        lo, hi = _ends(ex["ci95"])
        reasons.append(f"exact text reads {ex['label']} (ε̂ {ex['estimate']:.3f} [{lo:.3f}, {hi:.3f}]) where the "
                       f"{checks['partition']} classes read {view['label']}: the verdict rests on which replies the "
                       "partition merges")  # fmt: skip
    if reasons:
        view.update({"partition_label": view["label"], "label": INCONCLUSIVE,
                     "reason": "; ".join(reasons) + f"; {judge_advice(checks['partition'])}"})  # fmt: skip
    return view
