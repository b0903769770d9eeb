"""The synchronous entry points work inside a running event loop (a notebook cell), and the async ones can be awaited."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay, run_crossplay_async
from collapse_probe.pipelines.play import PlayConfig, run_play, run_play_async
from collapse_probe.rollout.runspec import ArenaSpec
from collapse_probe.simulators import make_participant

DONOR = Path(__file__).resolve().parents[1] / "collapse_probe" / "data" / "scripted" / "p4g_donor_diverse.json"
SPEC = f"scripted:{DONOR}"


def _strip(records):
    return sorted(
        ({k: v for k, v in r.to_line_dict().items() if k != "seconds"} for r in records), key=lambda r: r["key"]
    )


def test_play_inside_a_running_loop_matches_play_outside(tmp_path) -> None:
    config = PlayConfig(policy=SPEC, sim=SPEC, tasks=2, rollouts=2, seed=3)
    participants = {SPEC: make_participant(SPEC, cache=False)}
    arena = ArenaSpec().build([SPEC])
    outside = run_play(config, arena, participants, tmp_path / "a", progress=False).conversations

    async def notebook_cell():
        assert asyncio.get_running_loop() is not None
        summary = run_play(config, arena, participants, tmp_path / "b", progress=False)
        awaited = await run_play_async(config, arena, participants, tmp_path / "c", progress=False)
        return summary.conversations, awaited.conversations, summary

    inside, awaited, summary = asyncio.run(notebook_cell())
    assert _strip(inside) == _strip(outside) == _strip(awaited)
    assert summary.summary.n == 4


def test_crossplay_inside_a_running_loop(tmp_path) -> None:
    config = CrossplayConfig(policies=[SPEC], simulators=[SPEC], tasks=1, rollouts=2)

    async def notebook_cell():
        sync_inside = run_crossplay(config, out=tmp_path / "a", progress=False, report=False, cache=False)
        awaited = await run_crossplay_async(config, out=tmp_path / "b", progress=False, report=False, cache=False)
        return sync_inside, awaited

    a, b = asyncio.run(notebook_cell())
    assert a["cells"][0]["n"] == b["cells"][0]["n"] == 2
    rows = [json.loads(x) for x in (tmp_path / "a" / "conversations.jsonl").read_text().splitlines()]
    assert len(rows) == 2
