"""``play``: run policy-vs-simulator conversations on a benchmark and report the mean reward."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from collapse_probe._version import __version__
from collapse_probe.benchmarks import Arena, declared_reward_range
from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK
from collapse_probe.models._usage import start_run_usage
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.runspec import arena_record
from collapse_probe.simulators import Participant, vs_setting


@dataclass
class PlayConfig:
    """Configuration of a ``play`` run (the CLI, the API and ``config.json`` share it)."""

    policy: str = "smollm2"
    """Policy (persuader / agent) model spec."""
    sim: str = "smollm2"
    """Simulator (persuadee / user) spec; ``vs:SPEC`` for Verbalized Sampling."""
    benchmark: str = DEFAULT_BENCHMARK
    tasks: int = 4
    """Number of tasks (P4G: donor personas)."""
    rollouts: int = 2
    """Conversations per task."""
    max_turns: int | None = 3
    seed: int = 0
    temperature: float = 1.0
    max_live: int | None = None
    """At most this many conversations in flight (``None``: all)."""
    extra: dict[str, Any] = field(default_factory=dict)


def summarize_rewards(
    records: list[dict[str, Any]], *, reward_range: tuple[float, float] | None = None
) -> dict[str, Any]:
    """Mean reward with a 95 % CI over scored conversations (tasks as clusters, inside the arena's
    declared ``reward_range``); infra failures counted, not scored."""
    from collapse_probe.metrics.rewards import cell_summary

    cell = cell_summary(records, "", "", [], reward_range=reward_range)
    return {k: cell[k] for k in ("n", "infra_failures", "mean_reward", "ci95", "ci95_method", "n_tasks")}


def run_play(
    config: PlayConfig,
    arena: Arena,
    participants: dict[str, Participant],
    out: str | Path | None,
    *,
    progress: bool = True,
    fresh: bool = False,
    keep_failed: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Synchronous :func:`run_play_async`; also works inside a running event loop (e.g. Jupyter)."""
    from collapse_probe._sync import run_sync

    return run_sync(
        run_play_async(config, arena, participants, out, progress=progress, fresh=fresh, keep_failed=keep_failed)
    )


async def run_play_async(
    config: PlayConfig,
    arena: Arena,
    participants: dict[str, Participant],
    out: str | Path | None,
    *,
    progress: bool = True,
    fresh: bool = False,
    keep_failed: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run ``config.tasks x config.rollouts`` conversations; return records and the reward summary.

    ``fresh`` starts over in ``out`` (old files move to ``out/.previous/``); ``keep_failed`` keeps
    conversations that ended in an infrastructure failure on resume instead of running them again.
    """
    from collapse_probe.limits import MAX_CONVERSATIONS, check_at_most, check_finite
    from collapse_probe.models._identity import participant_fingerprints

    check_finite(config.temperature, "--temperature")
    check_at_most(config.tasks * config.rollouts, MAX_CONVERSATIONS, "--tasks x --rollouts =", "conversations")
    run_dir = None
    if out is not None:
        run_dir = RunDir(out)
        fps = participant_fingerprints({s: participants[s] for s in (config.policy, config.sim)})
        record = {
            **asdict(config),
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
    if run_dir is not None:
        from collapse_probe.report.play_plots import write_play_report
        from collapse_probe.results import PlayResults
        from collapse_probe.rollout.records import record_fingerprints

        results = PlayResults.build(
            {
                "schema": "collapse-probe/play/v1",
                **asdict(config),
                "summary": summary,
                "fingerprints": record_fingerprints(records),
                "usage": usage.finish(),
            }
        )
        run_dir.write_results(results)
        write_play_report(results.to_json(), records, run_dir.path / "report.html")
    return records, summary
