"""``audit --from FILE``: the audit of trajectories someone already published (τ2-bench results, inspect
eval logs, JSONL conversations), without calling the simulator.

The simulator's replies in the file are grouped by shared conversation prefix
(:func:`collapse_probe.integrations.interop.shared_prefix_states`: same task, same messages so far). A prefix
answered at least twice is a state whose replies are independent draws of φ(·|s) — e.g. the τ2 user
simulator's reply to the agent's fixed greeting, across the trials of a task — so it is measured
exactly as a live audit measures its N samples: the same partition (by meaning by default), the same
per-state estimates, summary, verdict, ``results.json`` (schema ``collapse-probe/audit/v1``),
``samples.jsonl``, ``report.html`` and dashboard. On top of a live audit's results:

- ``source``: the file (path, format, SHA-256), what was read and left out (infrastructure failures,
  records without text, prefixes answered once);
- ``variance``: the reward variance split into task, simulator, agent and judge shares with intervals,
  the flip rate and pass^k (:mod:`collapse_probe.metrics.variance`; ``docs/variance-decomposition.md``);
- ``simulator_errors``: the user-simulator errors the records flag, and the share of failed
  trajectories that carry one;
- ``rollouts``: the mean reward over the file's scored conversations, with its interval.

Partition. Exact text is too fine for free-text user replies: an LLM user simulator rarely repeats a
sentence word for word, so exact classes see N distinct replies at almost every prefix, ε̂ ≈ 1 − 1/N,
and the verdict reads "not collapsed" whatever the simulator means. The default is therefore the
audit's own: the judge with ``--judge SPEC``, else the sentence-embedding partition (constrained by the
benchmark's meaning key where the benchmark has one); without the ``embed`` extra the audit falls
back to exact text with a notice that says so.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from collapse_probe._version import __version__
from collapse_probe.benchmarks._registry import DIRECTORY_FORMAT, PUBLISHED_FORMATS
from collapse_probe.errors import ConfigError, InfraError
from collapse_probe.metrics.variance import VarianceBlock
from collapse_probe.pipelines.audit._config import SAMPLES, AuditConfig, ProbeState
from collapse_probe.pipelines.audit._sampling import is_state_record
from collapse_probe.pipelines.audit._types import StateRecord

if TYPE_CHECKING:
    from collapse_probe.benchmarks import EpisodeMessage
    from collapse_probe.results import AuditResults

FORMATS = (*PUBLISHED_FORMATS, "inspect", "jsonl", "taubench")
"""The formats of published trajectories ``audit --from`` reads."""
STATES_AUDITED = "simulator turns of the published trajectories that share a prefix (same task, same messages so far)"
EXACT_TOO_FINE = (
    "exact text is too fine for free-text replies: two wordings of one answer are two classes, which reads "
    "as diversity (ε̂ near 1 − 1/N)"
)


def format_of(path: str | Path, given: str | None = None) -> str:
    """The format of ``path``: ``given``, else from its content
    (:func:`~collapse_probe.integrations.interop._detect.detect_format`: a renamed file reads the same), else from the
    name (``.eval`` inspect, ``.jsonl`` jsonl, a directory or ``results.json`` tau2).

    Raises:
        ConfigError: neither the content nor the name tells.
    """
    if given:
        return given
    from collapse_probe.integrations.interop._detect import detect_format

    found = detect_format(path)
    if found is not None:
        return found
    p = Path(path)
    if p.suffix == ".eval":
        return "inspect"
    if p.suffix == ".jsonl":
        return "jsonl"
    if p.is_dir() or p.name == "results.json":
        return DIRECTORY_FORMAT
    raise ConfigError(f"--from {path}: cannot tell the format from the content or the name; give --format "
                      f"{'|'.join(FORMATS)}")  # fmt: skip


def read_published(path: str | Path, fmt: str, sim_role: str = "user") -> Any:
    """Read a published-trajectory file (a :data:`FORMATS` name) into a
    :class:`~collapse_probe.integrations.interop.PublishedRun`.

    Raises:
        ConfigError: an unknown format or a file that is not in it.
    """
    if sim_role not in ("user", "assistant"):
        raise ConfigError(f"--sim-role must be 'user' or 'assistant', got {sim_role!r}")
    if fmt in PUBLISHED_FORMATS:  # a benchmark's own format (the registry names its reader)
        return PUBLISHED_FORMATS.load(fmt)(path)
    if fmt == "inspect":
        from collapse_probe.integrations.interop._inspect import read_inspect_log

        return read_inspect_log(path, sim_role)
    if fmt == "jsonl":
        from collapse_probe.integrations.interop._jsonl import read_jsonl_conversations

        return read_jsonl_conversations(path, sim_role)
    if fmt == "taubench":
        from collapse_probe.integrations.interop._taubench import read_taubench

        return read_taubench(path)
    raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")


def _choose_simulator(run: Any, simulator: str | None) -> str | None:
    names = list(dict.fromkeys(c.simulator for c in run.conversations if c.simulator is not None))
    if simulator is not None:
        if names and simulator not in names:
            raise ConfigError(
                f"--sim {simulator}: {run.path} holds no conversations of this simulator; it holds {', '.join(names)}"
            )
        return simulator
    if len(names) > 1:
        raise ConfigError(
            f"--from {run.path}: the file holds the replies of {len(names)} simulators ({', '.join(names)}); "
            "choose one with --sim NAME (an audit measures one simulator)"
        )
    return names[0] if names else run.simulator


def _hooks_arena(benchmark: str | None) -> Any:
    """The benchmark's arena, for its audit hooks (meaning key, decision label), when it can be built
    from what ships here; ``None`` otherwise (the hooks are optional)."""
    if not benchmark:
        return None
    from collapse_probe.benchmarks._registry import BENCHMARKS
    from collapse_probe.errors import CollapseProbeError
    from collapse_probe.rollout.runspec import ArenaSpec

    if benchmark not in BENCHMARKS:
        return None
    try:
        return ArenaSpec(benchmark).build([], cache=False)
    except CollapseProbeError:  # e.g. official τ2 data not here: the audit needs no arena, only its hooks
        return None


class PublishedVariance(VarianceBlock):
    """``results.json``'s ``variance`` of an audit of a published file: the decomposition and its success rule."""

    success: str
    """When a trial succeeds (``reward >= X``), for the flip rate and pass^k."""


def _variance(convs: list[Any], reward_range: tuple[float, float] | None, seed: int,
              agent_greedy: bool | None) -> PublishedVariance:  # fmt: skip
    """``results.json``'s ``variance``: the reward variance of the file's scored conversations split into task,
    simulator, agent and judge (:func:`~collapse_probe.metrics.variance.decompose_variance`), flip rate, pass^k."""
    from collapse_probe.metrics.variance import Trial, decompose_variance, variance_notes

    trials = [
        Trial((c.task_id, c.group), tuple(("simulator" if m.role == "simulator" else "agent", m.identity())
                                          for m in c.messages), (float(c.reward),))
        for c in convs if c.infra_error is None and c.reward is not None
    ]  # fmt: skip
    success = reward_range[1] if reward_range is not None else 1.0
    out: PublishedVariance = {**decompose_variance(trials, seed=seed, success=success).to_dict(),
                              "success": f"reward >= {success:g}"}  # fmt: skip
    out["notes"] = variance_notes(out, agent_greedy)
    return out


def _probe_state(st: Any) -> ProbeState:
    from collapse_probe.benchmarks import Episode, Task

    messages: list[EpisodeMessage] = []
    for m in st.prefix:
        message: EpisodeMessage = {"role": m.role, "content": m.text}
        if m.meta:
            message["meta"] = m.meta
        messages.append(message)
    episode = Episode(task=Task(st.task_id, {}), seed=0, messages=messages)
    return ProbeState(st.state_id, "published", st.turn, episode, closed_set=st.closed_set)


async def _measure(states: list[Any], config: AuditConfig, partitioner: Any, embedder: Any, arena: Any,
                   simulator: str) -> list[StateRecord]:  # fmt: skip
    import asyncio

    from collapse_probe.benchmarks._base import audit_hook
    from collapse_probe.pipelines.audit._sampling import measured_state, state_header
    from collapse_probe.pipelines.audit._views import reward_reader

    decide = audit_hook(arena, "decision_label")
    reward_read = reward_reader(arena)[0] if arena is not None else None
    out: list[StateRecord] = []
    try:
        from collapse_probe.metrics.partitioners._base import apartition_states

        contexts = [" ".join(m.text for m in s.prefix) or None for s in states]
        labels = await apartition_states(partitioner, [s.replies for s in states], contexts)
    except InfraError as exc:  # the judge failed: these states are infrastructure failures, sampled on resume
        return [{**state_header(_probe_state(s), "published", simulator), "status": "infra_error",
                 "error": f"partitioner {partitioner.name}: {exc}"} for s in states]  # fmt: skip
    embeddings = None
    if embedder is not None:
        embeddings = await asyncio.to_thread(embedder.embed, [t for s in states for t in s.replies])
    offset = 0
    for st, labs in zip(states, labels, strict=True):
        ps = _probe_state(st)
        rec: StateRecord = {**state_header(ps, "published", simulator),
               **measured_state(ps, list(st.replies), labs, partitioner, config.rollout.seed, decide, reward_read)}  # fmt: skip
        rec["n_empty"] = 0
        rec["conversations"] = list(st.conversations)
        if embeddings is not None:
            from collapse_probe.metrics.vendi import mean_pairwise_cosine, vendi_score

            emb = embeddings[offset : offset + len(st.replies)]
            rec["vendi"] = vendi_score(emb)
            rec["mean_pairwise_cosine"] = mean_pairwise_cosine(emb)
            if hasattr(partitioner, "domain_similarity"):
                rec["domain_similarity"] = round(partitioner.domain_similarity(emb), 4)
        offset += len(st.replies)
        out.append(rec)
    return out


def run_audit_from(
    path: str | Path, fmt: str, config: AuditConfig, out: str | Path | None, **kwargs: Any
) -> AuditResults:
    """:func:`run_audit_from_async` for callers without an event loop (same arguments)."""
    from collapse_probe.core._sync import run_sync

    return run_sync(run_audit_from_async(path, fmt, config, out, **kwargs))


def _published_states(
    run: Any, sim: str | None, path: str | Path, fmt: str, config: AuditConfig
) -> tuple[list[Any], list[Any], int]:
    """``(conversations, states, prefixes answered once)``: the simulator's conversations of the file and
    the prefixes they share with two or more replies.

    Raises:
        ConfigError: no conversation, no prefix with two replies, or a model partition without a judge.
    """
    from collapse_probe.integrations.interop._published import shared_prefix_states
    from collapse_probe.metrics.partitioners import partitioner_needs_model

    convs = [c for c in run.conversations if sim is None or c.simulator in (sim, None)]
    if not convs:
        raise ConfigError(f"--from {path}: no conversations found (format {fmt})")
    states, singletons = shared_prefix_states(convs)
    if not states:
        infra = [c for c in convs if c.infra_error is not None]
        raise ConfigError(
            f"--from {path}: no conversation prefix has 2 or more simulator replies ({len(convs)} conversations, "
            f"{len(infra)} infrastructure failures, {singletons} prefixes answered once); an audit of published "
            "trajectories needs several trials of a task (e.g. tau2-bench --num-trials 4)"
        )
    if config.partition is not None and partitioner_needs_model(config.partition) and not config.judge:
        raise ConfigError(
            f"--partition {config.partition} with --from needs --judge SPEC (the file's simulator is not a model here)"
        )
    return convs, states, singletons


def _published_notices(config: AuditConfig, partition: str, notice: str | None, sizes: list[int]) -> list[str]:
    """The notices of an audit of a published file: the partition chosen, and few replies per state."""
    notices = [f"{notice}; {EXACT_TOO_FINE}" if notice and partition == "exact" else notice] if notice else []
    if partition == "exact" and config.partition == "exact":
        notices.append(f"notice: classes by exact text as asked (--partition exact); {EXACT_TOO_FINE}")
    if min(sizes) < 20:
        notices.append(
            f"notice: {min(sizes) if min(sizes) == max(sizes) else f'{min(sizes)} to {max(sizes)}'} replies per state "
            "(the trials of a task); more trials per task "
            "narrow the intervals (--states and --samples do not apply to a published file)"
        )
    return notices


class ReplyCounts(TypedDict):
    """Replies per state over the file's states."""

    min: int
    median: float
    max: int


class PublishedSource(TypedDict):
    """``results.json``'s ``source`` of an audit of a published file: the file and what was read of it."""

    path: str
    format: str
    sha256: str
    """The file's content hash (its run directory is named by it)."""
    simulator: str | None
    policy: str | None
    benchmark: str | None
    conversations: int
    """The audited simulator's conversations in the file."""
    infra_failures: int
    infra_errors: list[str]
    """The first five distinct infrastructure errors."""
    skipped: dict[str, int]
    """Records the reader left out, by reason."""
    prefixes_answered_once: int
    states: int
    """Prefixes answered at least twice: the audited states."""
    replies_per_state: ReplyCounts
    agent_greedy: bool | None
    notes: list[str]


def _open_run_dir(
    out: str | Path,
    config: AuditConfig,
    partition: str,
    source: PublishedSource,
    sim_role: str,
    *,
    cache: bool,
    fresh: bool,
) -> tuple[Any, dict[str, StateRecord], Any]:
    """``(run directory, state id -> its measured record kept from an earlier run, usage ledger)``: the
    run directory created (or resumed: the file is named by its content) with the models' fingerprints."""
    from collapse_probe.metrics.partitioners import partitioner_needs_model
    from collapse_probe.models._usage import start_run_usage
    from collapse_probe.rollout import RunDir

    fps: dict[str, str] = {config.sim: f"published:sha256:{source['sha256']}"}
    if partitioner_needs_model(partition) and config.judge:
        from collapse_probe.core._identity import participant_fingerprints
        from collapse_probe.simulators import make_participant

        judge = make_participant(config.judge, cache=cache)
        fps.update(participant_fingerprints({config.judge: judge}))
    run_dir = RunDir(out)
    # the file is named by its content: the same trajectories at another path resume the same run
    record = {**config.to_dict(), "source": {k: source[k] for k in ("format", "sha256", "simulator")},
              "sim_role": sim_role, "arena": {"benchmark": config.arena.benchmark, "custom": True},
              "version": __version__}  # fmt: skip
    run_dir.create(record, kind="audit", fingerprints=fps, fresh=fresh)
    run_dir.repair(SAMPLES)
    usage = start_run_usage(out)
    done: dict[str, StateRecord] = {}
    for rec in run_dir.read_jsonl(SAMPLES):
        if rec.get("status") == "infra_error":
            done.pop(str(rec.get("state_id")), None)
            continue
        if is_state_record(rec):
            done[rec["state_id"]] = rec
    return run_dir, done, usage


async def run_audit_from_async(
    path: str | Path,
    fmt: str,
    config: AuditConfig,
    out: str | Path | None,
    *,
    simulator: str | None = None,
    sim_role: str = "user",
    benchmark: str | None = None,
    cache: bool = True,
    progress: bool = True,
    fresh: bool = False,
) -> AuditResults:
    """Audit the simulator of a published-trajectory file and return its typed results.

    Args:
        path: the file (a τ2 results directory also works for ``tau2``).
        fmt: ``tau2``, ``inspect`` or ``jsonl``.
        config: the audit settings that apply (``partition``, ``judge``, ``epsilon_star``, ``seed``,
            ``n_boot``, ``benchmark`` when the file names none); the simulator, policy, benchmark and
            the replies per state are read from the file.
        out: run directory (``None``: nothing is written).
        simulator: which simulator of the file to audit (default: the file's only one).
        sim_role: for inspect and generic JSONL chats: the role the simulator speaks as.
        benchmark: the benchmark whose audit hooks (meaning key, reward view) apply, when the file names
            none; ``None``: none is guessed (a generic chat file gets no benchmark's reward view, and its
            meaning classes are the customer-service ``disclosure`` partition's).
        cache: serve the judge's answers through the response cache.
        progress: print notices to stderr.
        fresh: start over in ``out`` (old files move to ``out/.previous/``).

    Raises:
        ConfigError: the file cannot be read, holds several simulators and none was chosen, or no
            prefix has two replies.
    """
    from collapse_probe.benchmarks import declared_reward_range
    from collapse_probe.integrations.interop._published import simulator_error_summary
    from collapse_probe.metrics.rewards import Outcome, summarize_rewards
    from collapse_probe.pipelines.audit._pipeline import (
        _make_partitioner,
        audit_results,
        finish_audit,
        resolve_partition,
    )

    run = read_published(path, fmt, sim_role)
    sim = _choose_simulator(run, simulator)
    convs, states, singletons = _published_states(run, sim, path, fmt, config)
    infra = [c for c in convs if c.infra_error is not None]
    benchmark = run.benchmark or benchmark
    tasks = {c.task_id for c in convs}
    sizes = [len(s.replies) for s in states]
    config = config.replace(sim=str(sim or "published simulator"), benchmark=str(benchmark or "none"),
                     policy=str(run.policy or "published policy"), states=max(1, len(tasks)), samples=min(sizes),
                     exact=False, max_turns=None)  # fmt: skip
    config.validate()
    arena = _hooks_arena(benchmark)
    partition, notice = resolve_partition(config, arena)
    notices = _published_notices(config, partition, notice, sizes)
    # the notices are printed once, with the table (cli/audit.py), not also here while the run starts
    partitioner = _make_partitioner(config, arena, partition, cache)
    from collapse_probe.metrics.partitioners import EmbeddingPartitioner

    embedder = partitioner if isinstance(partitioner, EmbeddingPartitioner) else None

    source: PublishedSource = {
        "path": str(path),
        "format": fmt,
        "sha256": run.sha256,
        "simulator": sim,
        "policy": run.policy,
        "benchmark": run.benchmark,
        "conversations": len(convs),
        "infra_failures": len(infra),
        "infra_errors": sorted({str(c.infra_error) for c in infra})[:5],
        "skipped": dict(run.skipped),
        "prefixes_answered_once": singletons,
        "states": len(states),
        "replies_per_state": {"min": min(sizes), "median": statistics.median(sizes), "max": max(sizes)},
        "agent_greedy": run.agent_greedy,
        "notes": list(run.notes),
    }
    run_dir: Any = None
    usage: Any = None
    done: dict[str, StateRecord] = {}
    if out is not None:
        run_dir, done, usage = _open_run_dir(out, config, partition, source, sim_role, cache=cache, fresh=fresh)
    todo = [s for s in states if s.state_id not in done]
    if todo:
        for rec in await _measure(todo, config, partitioner, embedder, arena, config.sim):
            done[rec["state_id"]] = rec
            if rec.get("status") == "infra_error":
                from collapse_probe.core._observe import note_infra_failure

                note_infra_failure()
            if run_dir is not None:
                run_dir.append_jsonl(SAMPLES, rec)
    recs = [done[s.state_id] for s in states]
    results = audit_results(recs, config, mode="published", partition=partition, on_policy=True, notices=notices,
                            states_audited=STATES_AUDITED, arena=arena)  # fmt: skip
    results["source"] = source
    results["variance"] = _variance(convs, declared_reward_range(arena), config.rollout.seed, run.agent_greedy)
    results["simulator_errors"] = simulator_error_summary(convs)
    results["rollouts"] = summarize_rewards(
        [Outcome(c.task_id, c.reward, c.infra_error or None) for c in convs], reward_range=declared_reward_range(arena)
    )
    return finish_audit(results, recs, run_dir, usage)
