"""On the public τ2 result files: the variance block of ``audit --from`` equals a computation straight from
the JSON (flip rate, pass^k, trial pairs by first divergence, the shares' point estimates)."""

from __future__ import annotations

import json
import math
from itertools import combinations

import pytest

from tests.conftest import SHARED_DATASETS

PUBLISHED = SHARED_DATASETS / "tau2-real" / "published"
FILES = sorted(PUBLISHED.glob("20*.json")) if PUBLISHED.is_dir() else []


def _independent(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    by_task: dict[str, list[tuple[list, float]]] = {}
    for sim in data["simulations"]:
        if sim.get("termination_reason") in ("infrastructure_error", "context_window_exceeded"):
            continue
        reward = (sim.get("reward_info") or {}).get("reward")
        if reward is None:
            continue
        msgs = []
        for m in sim["messages"]:
            calls = tuple((c["name"], json.dumps(c["arguments"], sort_keys=True, ensure_ascii=False))
                          for c in (m.get("tool_calls") or []))  # fmt: skip
            msgs.append(("simulator" if m["role"] == "user" else "agent", m["role"], m.get("content") or "", calls))
        by_task.setdefault(str(sim["task_id"]), []).append((msgs, float(reward)))
    multi = {t: v for t, v in by_task.items() if len(v) >= 2}
    flips = [len({r >= 1 for _, r in v}) > 1 for v in multi.values()]
    kmax = min(len(v) for v in by_task.values())
    pass_k = {str(k): sum(math.comb(sum(r >= 1 for _, r in v), k) / math.comb(len(v), k) for v in by_task.values())
              / len(by_task) for k in range(1, kmax + 1)}  # fmt: skip
    div = {"simulator": 0, "agent": 0, "identical": 0}
    comp = {"simulator": [], "agent": []}
    within, means, sizes = [], [], []
    for v in multi.values():
        per = {"simulator": 0.0, "agent": 0.0}
        pairs = list(combinations(v, 2))
        for (a, ra), (b, rb) in pairs:
            side = "identical"
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                if x != y:
                    side = x[0] if x[0] == y[0] or i == 0 else a[i - 1][0]
                    break
            else:
                if len(a) != len(b):
                    side = (a[len(b)] if len(a) > len(b) else b[len(a)])[0]
            div[side] += 1
            if side != "identical":
                per[side] += (ra - rb) ** 2 / 2 / len(pairs)
        for s in per:
            comp[s].append(per[s])
        rs = [r for _, r in v]
        mu = sum(rs) / len(rs)
        within.append(sum((r - mu) ** 2 for r in rs) / (len(rs) - 1))
        means.append(mu)
        sizes.append(len(rs))
    out = {"flip_rate": sum(flips) / len(flips) if flips else None, "pass_k": pass_k, "divergence": div}
    if len(multi) >= 2:
        t = len(means)
        mbar = sum(means) / t
        task = (
            sum((m - mbar) ** 2 for m in means) / (t - 1) - sum(w / n for w, n in zip(within, sizes, strict=True)) / t
        )
        total = sum(within) / t + task
        if total > 0:
            out["shares"] = {"simulator": sum(comp["simulator"]) / t / total, "agent": sum(comp["agent"]) / t / total,
                             "task": max(0.0, task / total)}  # fmt: skip
    return out


@pytest.mark.skipif(not FILES, reason="public τ2 result files not present at ../shared/datasets/tau2-real/published")
@pytest.mark.parametrize("path", FILES, ids=[p.name[:30] for p in FILES])
def test_variance_block_equals_an_independent_count(path):
    from collapse_probe.pipelines.audit._published import _variance, read_published

    run = read_published(path, "tau2")
    got = _variance(run.conversations, (0.0, 1.0), 0, run.agent_greedy)
    want = _independent(path)
    assert got["divergence"] == want["divergence"]
    assert got["flip_rate"] == pytest.approx(want["flip_rate"])
    assert got["pass_k"] == pytest.approx(want["pass_k"])
    if "shares" in want:
        for k, v in want["shares"].items():
            assert got["shares"][k]["estimate"] == pytest.approx(min(1.0, max(0.0, v)), abs=1e-9), k
    else:
        assert all(v is None for v in got["shares"].values())


@pytest.mark.skipif(not FILES, reason="public τ2 result files not present at ../shared/datasets/tau2-real/published")
def test_audit_from_prints_the_decomposition(tmp_path, capsys):
    import argparse

    from collapse_probe.cli import audit

    path = next(p for p in FILES if "grok-3-mini" in p.name)
    parser = argparse.ArgumentParser()
    audit.add_parser(parser.add_subparsers())
    args = parser.parse_args(["audit", "--from", str(path), "--format", "tau2", "--partition", "exact",
                              "--out", str(tmp_path / "a"), "--no-progress"])  # fmt: skip
    audit.run(args)
    printed = capsys.readouterr().out
    want = _independent(path)
    assert "reward variance over 4 tasks" in printed and f"flip rate {want['flip_rate']:.3f}" in printed
    assert f"simulator {want['shares']['simulator']:.3f}" in printed
    res = json.loads((tmp_path / "a" / "results.json").read_text())
    assert set(res["variance"]["shares"]) == {"task", "simulator", "agent", "judge"}
    assert res["variance"]["shares"]["judge"] is None and "variance_share" not in res
    assert "Reward variance: task, simulator, agent, judge" in (tmp_path / "a" / "report.html").read_text()
    from collapse_probe.report.audit_plots import variance_figure

    fig = variance_figure(res)
    (bar,) = fig.data
    assert list(bar.x) == ["task", "simulator", "agent", "judge"]
    assert bar.y[1] == pytest.approx(res["variance"]["shares"]["simulator"]["estimate"]) and bar.y[3] is None
    assert f"flip rate {want['flip_rate']:.3f}" in fig.layout.title.text
