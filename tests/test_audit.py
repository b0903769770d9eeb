"""The audit pipeline against scripted simulators whose response distributions are known."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.models import GenerationResult
from collapse_probe.pipelines.audit import AuditConfig, mean_collapse_error, run_audit, run_audit_async
from collapse_probe.simulators import Participant

# label partitioner: donate:$1 (0.6) / refuse (0.3) / undecided (0.1) -> ε = 0.4
KNOWN = [("Sure! [DONATE $1]", 0.6), ("No thanks.", 0.3), ("Maybe later.", 0.1)]
TRUE_EPS = 0.4


def _audit(spec, out=None, **kw):
    kw.setdefault("states", 2)
    kw.setdefault("partition", "label")  # fast; the default (by meaning) is tested in tests/audit/
    return run_audit(AuditConfig(sim=spec, **kw), out, progress=False)


@pytest.mark.parametrize("partition", ["exact", pytest.param(None, marks=pytest.mark.realmodel)])
def test_known_distribution_at_n400_estimates_within_cis(write_scripted, partition):
    # three replies that are three meanings: exact text, and the default (by meaning) in the real-model tier
    res = _audit(write_scripted(KNOWN), samples=400, partition=partition, stop_early=False)
    assert res["partitioner"] == (partition or "embedding")
    s = res["summary"]
    assert s["n_states"] == 4 and s["infra_failures"] == 0 and not s["low_confidence"]
    lo, hi = s["collapse_error"]["ci95"]
    assert lo <= s["collapse_error"]["estimate"] <= hi and lo <= TRUE_EPS <= hi
    true_h = -sum(p * math.log(p) for _, p in KNOWN)
    elo, ehi = s["entropy"]["ci95"]
    assert elo <= s["entropy"]["estimate"] <= ehi and abs(s["entropy"]["estimate"] - true_h) < 0.1
    for st in res["states"]:
        assert st["n"] == 400 and sum(st["class_counts"]) == 400 and len(st["class_counts"]) == 3
        assert st["collapse_error_ci95"][0] <= st["collapse_error"] <= st["collapse_error_ci95"][1]
        assert st["class_names"][0] == "Sure! [DONATE $1]"
    assert res["verdict"].startswith("NOT COLLAPSED")


def test_cis_cover_the_truth_at_the_stated_rate(write_scripted):
    spec = write_scripted(KNOWN)
    state_cover, summary_cover, runs = [], [], 30
    for seed in range(runs):
        res = run_audit(AuditConfig(sim=spec, states=1, samples=400, seed=seed, n_boot=300, partition="label"), None,
                        progress=False, cache=False)  # fmt: skip
        for st in res["states"]:
            lo, hi = st["collapse_error_ci95"]
            state_cover.append(lo <= TRUE_EPS <= hi)
        lo, hi = res["summary"]["collapse_error"]["ci95"]
        summary_cover.append(lo <= TRUE_EPS <= hi)
    # 95 % intervals: 60 per-state and 30 summary intervals; allow binomial slack (P(fail) < 1e-3)
    assert sum(state_cover) / len(state_cover) >= 0.85
    assert sum(summary_cover) / len(summary_cover) >= 0.8


def test_mean_collapse_error_two_level_bootstrap_covers_a_tie():
    # ties are where a percentile bootstrap of the max fails; the basic interval must still cover
    import numpy as np

    rng = np.random.default_rng(0)
    p, cover = np.array([0.4, 0.4, 0.2]), 0
    for b in range(100):
        counts = [rng.multinomial(400, p) for _ in range(3)]
        lo, hi = mean_collapse_error(counts, seed=b)["ci95"]
        cover += lo <= 0.6 <= hi
    assert cover >= 85


def test_small_n_on_a_diverse_distribution_is_flagged_low_confidence(write_scripted, capsys, tmp_path):
    spec = write_scripted([(f"reply number {i}", 0.1) for i in range(10)])
    out = tmp_path / "run"
    assert main(["audit", "--sim", spec, "--samples", "10", "--states", "1", "--partition", "exact",
                 "--out", str(out), "--no-progress"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "LOW CONFIDENCE" in printed
    res = json.loads((out / "results.json").read_text())
    assert res["summary"]["low_confidence"] is True and "LOW CONFIDENCE" in res["verdict"]
    assert all(st["low_confidence"] for st in res["states"])
    # required schema
    assert (
        res["schema"] == "collapse-probe/audit/v1" and res["partitioner"] == "exact" and res["samples_per_state"] == 10
    )
    assert set(res["summary"]) >= {"collapse_error", "entropy", "effective_modes", "accumulated_collapse_error"}
    assert res["summary"]["entropy"]["estimator"] == "chao_wang_jost"
    st = res["states"][0]
    assert {"state_id", "turn", "n", "class_counts", "collapse_error", "collapse_error_ci95", "entropy"} <= set(st)
    assert (out / "report.html").stat().st_size > 10_000 and "LOW CONFIDENCE" in (out / "report.html").read_text()


def test_cached_rerun_is_identical_and_cached_samples_are_independent_draws(write_scripted, tmp_path):
    spec = write_scripted([("alpha", 0.5), ("beta", 0.3), ("gamma", 0.2)])
    a = _audit(spec, tmp_path / "a", samples=400, states=1, partition="exact", stop_early=False)
    b = _audit(spec, tmp_path / "b", samples=400, states=1, partition="exact", stop_early=False)
    assert a["states"] == b["states"] and a["summary"] == b["summary"]
    from collapse_probe.core._state import process_caches
    from collapse_probe.models import default_cache_path

    wrappers = process_caches()["simulators.cached"].values()
    [cached] = [m for m in wrappers if m.spec == spec and str(m.cache.path) == str(default_cache_path())]
    assert cached.hits >= 800 and cached.misses == 800  # second run served entirely from the cache
    assert len(cached.cache) >= 800  # one cache entry per sample index
    recs = [json.loads(line) for line in (tmp_path / "b" / "samples.jsonl").read_text().splitlines()]
    for rec in recs:  # the cached N samples hold the scripted proportions, not N copies of one answer
        freq = {t: rec["responses"].count(t) / 400 for t in ("alpha", "beta", "gamma")}
        for t, p in (("alpha", 0.5), ("beta", 0.3), ("gamma", 0.2)):
            assert abs(freq[t] - p) < 4 * math.sqrt(p * (1 - p) / 400)


def test_killed_run_resumes_without_duplicates(write_scripted, tmp_path):
    spec = write_scripted(KNOWN)
    out = tmp_path / "run"
    full = _audit(spec, out, samples=50, states=3, batch_states=2)
    lines = (out / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 6
    # simulate a kill: two records survived plus a torn third line
    (out / "samples.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    (out / "results.json").unlink()
    again = _audit(spec, out, samples=50, states=3, batch_states=2)
    ids = [json.loads(line)["state_id"] for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 6
    assert again["states"] == full["states"]
    with pytest.raises(ConfigError, match="different configuration"):
        _audit(spec, out, samples=60, states=3)


def test_exact_class_distribution_at_the_elicitation_state(write_scripted):
    spec = write_scripted([("[DONATE $1]", 0.5), ("[DONATE $0]", 0.3), ("No.", 0.2)])
    res = _audit(spec, samples=100, states=1)
    elic = [s for s in res["states"] if s["state_id"].startswith("elicitation:")][0]
    ex = elic["exact"]
    # not renormalised: the closed set's classes plus "outside the set" (the 0.2 of "No.")
    assert len(ex["distribution"]) == 10  # every amount of the closed set, $0 to $2 in $0.25 steps, and outside
    assert {k: v for k, v in ex["distribution"].items() if v > 0} == pytest.approx(
        {"donate:$1": 0.5, "donate:$0": 0.3, "outside the set": 0.2}
    )
    assert ex["collapse_error"] == pytest.approx(0.5) and ex["closed_set_mass"] == pytest.approx(0.8)
    assert ex["outside_mass"] == pytest.approx(0.2)
    # conditioned on answering inside the closed set: 0.5/0.8 and 0.3/0.8
    assert ex["collapse_error_conditional"] == pytest.approx(0.375)
    assert res["summary"]["exact_collapse_error"] == pytest.approx(0.5)
    assert res["summary"]["exact_outside_mass"] == pytest.approx(0.2)
    assert "exact" not in [s for s in res["states"] if s["state_id"].startswith("opening:")][0]


def test_on_policy_trajectory_and_accumulated_collapse_error(write_scripted):
    pol = write_scripted([("Please donate.", 0.5), ("Kids need you.", 0.5)], name="pol.json")
    sim = write_scripted(
        KNOWN,
        turns=[[("I see.", 0.5), ("Tell me more.", 0.5)], [("OK.", 1.0)], [("[DONATE $1]", 0.7), ("[DONATE $0]", 0.3)]],
        name="sim.json",
    )  # fmt: skip
    res = _audit(sim, policy=pol, states=2, samples=400, max_turns=2, partition="exact", bound_b=2.0)
    by_turn = {t["turn"]: t["mean"] for t in res["trajectory"]["collapse_error_by_turn"]}
    assert set(by_turn) == {0, 1, 2}
    assert abs(by_turn[0] - 0.5) < 0.08 and by_turn[1] == 0.0 and abs(by_turn[2] - 0.3) < 0.08
    eps_bar = res["summary"]["accumulated_collapse_error"]
    assert abs(eps_bar - 0.8) < 0.1 and res["trajectory"]["n_rollouts"] == 2
    assert abs(res["trajectory"]["accumulated_collapse_error_plugin"] - 0.8) < 0.1  # the plug-in is kept beside
    assert res["trajectory"]["gradient_bias_bound"] == pytest.approx(2 * 2.0 * 1.0 * eps_bar)
    elic = [s for s in res["states"] if s["turn"] == 2]
    assert elic and all(s["exact"]["collapse_error"] == pytest.approx(0.3) for s in elic)
    assert res["rollouts"]["n"] == 2


def test_variance_share_by_nested_resampling(write_scripted):
    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    random_sim = write_scripted([("[DONATE $2]", 0.5), ("[DONATE $0]", 0.5)], name="r.json")
    res = _audit(random_sim, policy=pol, states=2, samples=4, max_turns=1, variance_share=True,
                 variance_agents=2, variance_sims=4)  # fmt: skip
    v = res["variance_share"]
    # the reward depends on the simulator's draw alone: the simulator carries (nearly) all of it
    assert v["share"] is not None and v["share"] > 0.6 and v["n_prefixes"] == 4
    fixed_sim = write_scripted([("[DONATE $2]", 1.0)], name="f.json")
    res = _audit(fixed_sim, policy=pol, states=2, samples=4, max_turns=1, variance_share=True,
                 variance_agents=2, variance_sims=3)  # fmt: skip
    assert res["variance_share"]["share"] is None and "variance is 0" in res["variance_share"]["note"]


def test_compare_vs_reports_both_modes_and_parse_failures(write_scripted):
    spec = write_scripted([("1. (p=0.5) Sure [DONATE $1]\n2. (p=0.5) No thanks.", 0.9), ("whatever", 0.1)])
    res = _audit(spec, samples=200, states=1, compare_vs=True, vs_k=2)
    c = res["compare_vs"]
    assert c["direct"]["collapse_error"]["estimate"] < 0.15  # the direct mode returns the whole list
    assert abs(c["verbalized"]["collapse_error"]["estimate"] - 0.5) < 0.12
    d = c["difference_vs_minus_direct"]
    assert d["ci95"][0] > 0 and d["n_states"] == 2
    v = c["vs_parse_failures"]
    assert v["of"] == 400 and 0 < v["count"] < 100 and v["reasons"] == {"no candidate list found": v["count"]}


def test_unparseable_vs_output_is_counted_not_dropped(write_scripted):
    res = _audit("vs:" + write_scripted([("I will not write a list.", 1.0)])[0:], samples=20, states=1)
    s = res["summary"]
    assert s["n_states"] == 2 and s["vs_parse_failures"]["count"] == 40 and s["vs_parse_failures"]["of"] == 40


def test_empty_responses_are_retried_then_dropped_never_a_class(write_scripted):
    res = _audit(
        write_scripted([("", 0.5), ("hello", 0.5)]), samples=100, states=1, partition="exact", stop_early=False
    )
    s = res["summary"]
    assert s["n_states"] == 2 and s["infra_failures"] == 0
    for st in res["states"]:
        # one retry of the empties fills about half of them; the rest are dropped and counted
        assert st["class_counts"] == [st["n"]] and 60 <= st["n"] < 100 and st["n_empty"] == 100 - st["n"]
        assert st["collapse_error"] == 0.0  # "hello" only: an empty reply is not a second class
    assert s["n_empty_responses"] == sum(100 - st["n"] for st in res["states"])
    only_empty = _audit(write_scripted([("  ", 1.0)], name="empty.json"), samples=20, states=1, partition="exact")
    assert only_empty["summary"]["n_states"] == 0 and only_empty["summary"]["infra_failures"] == 2
    assert "empty after a retry" in only_empty["summary"]["infra_errors"][0]


class _Failing:
    """A backend that fails requests whose prompt mentions the elicitation, and raises when asked to."""

    def __init__(self, inner, raise_all=False):
        self.inner, self.spec, self.raise_all = inner, inner.spec, raise_all

    async def generate(self, requests):
        if self.raise_all:
            raise RuntimeError("backend crashed")
        good = await self.inner.generate(requests)
        return [GenerationResult([], error="provider 503") if "how much of your $2" in (r.prompt or "") else g
                for r, g in zip(requests, good, strict=True)]  # fmt: skip


def test_simulator_errors_are_infra_failures_excluded_and_counted(write_scripted):
    from collapse_probe.models import get_model

    spec = write_scripted(KNOWN)
    part = Participant(spec, _Failing(get_model(spec)))
    res = asyncio.run(run_audit_async(AuditConfig(sim=spec, states=2, samples=50, partition="exact"), None,
                                      progress=False, participants=[part]))  # fmt: skip
    s = res["summary"]
    assert s["n_states"] == 2 and s["infra_failures"] == 2 and s["infra_errors"] == ["provider 503"]
    assert "2 states excluded" in res["verdict"]
    bad = [st for st in res["states"] if st["status"] == "infra_error"]
    assert len(bad) == 2 and all(st["collapse_error"] is None for st in bad)
    crash = Participant(spec, _Failing(get_model(spec), raise_all=True))
    res = asyncio.run(run_audit_async(AuditConfig(sim=spec, states=1, samples=5, partition="exact"), None,
                                      progress=False, participants=[crash]))  # fmt: skip
    assert res["summary"]["infra_failures"] == 2 and res["verdict"].startswith("NO RESULT")
    assert "backend crashed" in res["states"][0]["error"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"samples": 1}, "--samples must be an integer >= 2"), ({"partition": "cosine"}, "--partition: unknown partitioner 'cosine'"),
     ({"epsilon_star": 1.5}, "--epsilon-star"), ({"states": 0}, "--states"), ({"vs_k": 1}, "--vs-k")],
)  # fmt: skip
def test_bad_configuration_is_a_clear_error(write_scripted, kw, match):
    with pytest.raises(ConfigError, match=match):
        _audit(write_scripted(KNOWN), **kw)


def test_cli_reports_bad_samples(write_scripted, capsys, tmp_path):
    assert main(["audit", "--sim", write_scripted(KNOWN), "--samples", "1", "--out", str(tmp_path / "x")]) == 2
    assert "--samples must be an integer >= 2" in capsys.readouterr().err


@pytest.mark.parametrize("reader", ["rules", pytest.param("auto", marks=pytest.mark.realmodel)])
def test_human_reference(write_scripted, p4g_dir, monkeypatch, reader):
    """The human reference with the rules stance reader, and with the default one (the fitted model over the
    packaged sentence encoder) in the real-model tier."""
    from collapse_probe.benchmarks.p4g import stance as p4g_stance

    monkeypatch.setattr(p4g_stance, "default_stance_reader", lambda: p4g_stance.StanceReader(reader))
    spec = write_scripted([("[DONATE $1]", 0.5), ("No thanks, not today.", 0.5)])
    res = _audit(spec, samples=20, states=3, human=str(p4g_dir))
    assert ("by rules" in res["human_reference"]["people_epsilon"]["stance_reader"]) == (reader == "rules")
    assert {s["source"] for s in res["states"]} == {"opening", "elicitation", "human"}
    d = res["human_reference"]["donations"]
    assert d["n_human"] > 100 and d["n_simulated"] > 0
    assert 0 <= d["ks_statistic"] <= 1 and 0 <= d["l1_binned"] <= 2 and d["wasserstein"] >= 0
    div = res["human_reference"]["diversity"]
    assert div["n_prefixes"] == 3 and div["distinct_1"]["human"] is not None


@pytest.mark.slow
def test_smollm2_smoke(tmp_path):
    res = run_audit(AuditConfig(states=1, samples=4, compare_vs=True), tmp_path / "run", progress=False)
    assert res["summary"]["n_states"] == 2 and res["compare_vs"]["vs_parse_failures"]["of"] == 8
    assert (tmp_path / "run" / "report.html").exists()


def test_accumulated_collapse_error_uses_the_bias_aware_per_state_estimate(write_scripted):
    # uniform over 10 replies at every simulator turn: true ε = 0.9 per turn; at N = 20 the plug-in
    # reads each turn as more collapsed than it is, and a sum over turns adds that bias up
    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    sim = write_scripted([(f"reply {i}", 0.1) for i in range(10)], name="sim.json")
    res = _audit(sim, policy=pol, states=2, samples=20, max_turns=2, partition="exact")
    traj = res["trajectory"]
    turns = len(traj["collapse_error_by_turn"])
    truth = 0.9 * turns
    assert abs(traj["accumulated_collapse_error"] - truth) < abs(traj["accumulated_collapse_error_plugin"] - truth)
    assert traj["accumulated_collapse_error"] >= 1 and "vacuous" in traj["note"]
