"""``play``: run policy-vs-simulator conversations on a benchmark and report the mean reward."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from collapse_probe._version import __version__
from collapse_probe.benchmarks import Arena, declared_reward_range
from collapse_probe.core._constraints import rule
from collapse_probe.core._records import ConversationRecord
from collapse_probe.core.limits import MAX_CONVERSATIONS, check_at_most
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.rewards import summarize_rewards
from collapse_probe.models._usage import start_run_usage
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.rollout.runspec import RunConfig, arena_record
from collapse_probe.simulators import Participant, vs_setting

if TYPE_CHECKING:
    from collapse_probe.metrics.variance import VarianceBlock
    from collapse_probe.results import PlayResults


class PlayConfig(RunConfig):
    """Configuration of a ``play`` run (the CLI, the API and ``config.json`` share it): the policy and
    the simulator, and the rollout and arena fields of :class:`~collapse_probe.rollout.runspec.RunConfig`."""

    policy: str = "smollm2"
    """Policy (persuader / agent) model spec."""
    sim: str = "smollm2"
    """Simulator (persuadee / user) spec; ``vs:SPEC`` for Verbalized Sampling."""

    @rule
    def _specs_given(self) -> None:
        for flag, spec in (("--policy", self.policy), ("--sim", self.sim)):
            if not spec.strip():
                raise ConfigError(f"{flag}: expected a model spec, got an empty string")

    @rule
    def _conversations_per_run(self) -> None:
        check_at_most(self.tasks * self.rollouts, MAX_CONVERSATIONS, "--tasks x --rollouts =", "conversations")


def run_play(
    config: PlayConfig,
    arena: Arena,
    participants: dict[str, Participant],
    out: str | Path | None,
    *,
    progress: bool = True,
    fresh: bool = False,
    keep_failed: bool = False,
) -> PlayResults:
    """Synchronous :func:`run_play_async`; also works inside a running event loop (e.g. Jupyter)."""
    from collapse_probe.core._sync import run_sync

    return run_sync(
        run_play_async(config, arena, participants, out, progress=progress, fresh=fresh, keep_failed=keep_failed)
    )


def _play_variance(records: list[ConversationRecord], arena: Arena, seed: int) -> VarianceBlock:
    """``results.json``'s ``variance`` of a play run (its tasks' rollouts are the trials): the
    :class:`~collapse_probe.metrics.variance.VarianceDecomposition` and its notes."""
    from collapse_probe.metrics.variance import decompose_variance, trials_from_records, variance_notes

    bounds = declared_reward_range(arena)
    trials = trials_from_records(r.to_line_dict() for r in records)
    out = decompose_variance(trials, seed=seed, success=bounds[1] if bounds else 1.0).to_dict()
    out["notes"] = variance_notes(out)
    return out


async def run_play_async(
    config: PlayConfig,
    arena: Arena,
    participants: dict[str, Participant],
    out: str | Path | None,
    *,
    progress: bool = True,
    fresh: bool = False,
    keep_failed: bool = False,
) -> PlayResults:
    """Run ``config.tasks x config.rollouts`` conversations; return the typed results
    (:class:`~collapse_probe.results.PlayResults`, what ``results.json`` holds; written to ``out``), whose
    ``conversations`` are the conversation records.

    ``fresh`` starts over in ``out`` (old files move to ``out/.previous/``); ``keep_failed`` keeps
    conversations that ended in an infrastructure failure on resume instead of running them again.
    """
    from collapse_probe.core._identity import participant_fingerprints

    config.validate()
    run_dir = None
    if out is not None:
        run_dir = RunDir(out)
        fps = participant_fingerprints({s: participants[s] for s in (config.policy, config.sim)})
        record = {
            **config.to_dict(),
            "arena": arena_record(arena),
            "version": __version__,
            "vs_k": vs_setting(participants[s] for s in (config.policy, config.sim)),
        }
        run_dir.create(record, kind="play", fingerprints=fps, fresh=fresh)
    usage = start_run_usage(out)
    tasks = arena.load_tasks(config.tasks, seed=config.seed)
    specs = make_specs(tasks, [config.policy], [config.sim], config.rollouts, config.seed)
    records = await run_conversations(
        arena,
        specs,
        participants,
        config=EngineConfig(temperature=config.temperature, progress=progress, max_live=config.max_live),
        run_dir=run_dir,
        retry_infra_failures=not keep_failed,
    )
    summary = summarize_rewards(records, reward_range=declared_reward_range(arena))
    from collapse_probe.core._records import record_fingerprints
    from collapse_probe.results import PlayResults

    results = PlayResults.build(
        {
            "schema": "collapse-probe/play/v1",
            **config.to_dict(),
            "summary": summary,
            "fingerprints": record_fingerprints(records),
            "variance": _play_variance(records, arena, config.seed),
            "usage": usage.finish(),
        }
    )
    if run_dir is not None:
        from collapse_probe.core._reports import write_report

        run_dir.write_results(results)
        write_report("play", results.to_json(), records, run_dir.path / "report.html")
    results._conversations = list(records)
    return results
