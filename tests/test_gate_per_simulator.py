"""The gate per held-out simulator: each one's own transfer beside the pooled one, and
``--min-transfer-each`` failing a policy that fails one kind of user even where the pooled check cannot tell."""

from __future__ import annotations

import argparse
import json
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from collapse_probe.core._records import ConversationRecord
from collapse_probe.pipelines.crossplay import CrossplayConfig, crossplay_results
from collapse_probe.pipelines.gate import evaluate_gate
from collapse_probe.report.gate_text import headline, junit_xml, markdown


def _records(means: dict[str, list[float]], rollouts: int, rng: np.random.Generator) -> list[ConversationRecord]:
    """Pass/fail rollouts whose per-task success rates are ``means[simulator]`` (policy ``cand``)."""
    recs = []
    for sim, per_task in means.items():
        for t, p in enumerate(per_task):
            k = round(p * rollouts)
            outcome = [1.0] * k + [0.0] * (rollouts - k)
            rng.shuffle(outcome)
            for g, r in enumerate(outcome):
                recs.append(ConversationRecord.make(policy="cand", simulator=sim, task_id=f"t{t}", rollout=g,
                                                    status="done", reward=r, infra_error=None, success=r > 0))  # fmt: skip
    return recs


@pytest.fixture
def one_failing_heldout():
    """Training simulator at 0.625, held-out 'kind' at 0.925 and 'hostile' at 0.156: pooled transfer 0.865."""
    rng = np.random.default_rng(0)
    tasks = 8
    jitter = np.array([-0.125, 0.0, 0.125, 0.0, -0.125, 0.125, 0.0, 0.0])
    means = {
        "train": list(0.625 + jitter),
        "kind": [0.875, 1.0, 0.875, 1.0, 0.875, 1.0, 0.875, 0.9],
        "hostile": [0.125, 0.25, 0.125, 0.125, 0.25, 0.125, 0.125, 0.125],
    }
    recs = _records(means, 8, rng)
    cfg = CrossplayConfig(policies=["cand"], simulators=list(means), train_simulator="train", tasks=tasks, rollouts=8)
    return crossplay_results(recs, cfg, reward_range=(0.0, 1.0))


def test_one_failing_heldout_simulator_fails_the_per_simulator_requirement(one_failing_heldout):
    res = one_failing_heldout
    pooled = evaluate_gate(res, "cand", min_transfer=0.8)
    (t,) = [c for c in pooled.checks if c.name == "transfer"]
    assert t.value == pytest.approx((0.925 + 0.156) / 2 / 0.625, abs=0.02)
    assert pooled.exit_code in (0, 3)  # the pooled check passes or cannot tell: it does not see the failing user
    cases = {c.get("name"): c for c in ET.fromstring(junit_xml(pooled)).iter("testcase")}
    assert "held-out hostile: transfer=0.25" in cases["transfer"].find("system-out").text
    rows = {r["simulator"]: r for r in pooled.per_simulator}
    assert set(rows) == {"kind", "hostile"} and rows["hostile"]["status"] is None  # listed, not required
    assert rows["hostile"]["value"] == pytest.approx(0.156 / 0.625, abs=0.02) and rows["hostile"]["n_tasks"] == 8

    each = evaluate_gate(res, "cand", min_transfer=0.8, min_transfer_each=0.8)
    assert each.exit_code == 1 and each.outcome == "fail"
    by_name = {c.name: c for c in each.checks}
    assert by_name["transfer:hostile"].status == "fail" and "hostile" in by_name["transfer:hostile"].message
    assert by_name["transfer:kind"].status == "pass"
    assert by_name["transfer:hostile"].rule == "interval" and by_name["transfer:hostile"].interval is not None
    assert "transfer:hostile" in headline(each) and "misses 0.8" in headline(each)
    md = markdown(each)
    assert "| `hostile` |" in md and "| `transfer:hostile` | ❌ fail |" in md
    js = each.to_json()
    assert [r["simulator"] for r in js["per_simulator"]] == ["kind", "hostile"]
    assert {r["simulator"]: r["status"] for r in js["per_simulator"]} == {"kind": "pass", "hostile": "fail"}
    cases = {c.get("name"): c for c in ET.fromstring(junit_xml(each)).iter("testcase")}
    assert cases["transfer:hostile"].find("failure") is not None and cases["transfer:kind"].find("failure") is None


def test_same_rule_as_the_pooled_check(one_failing_heldout):
    """The per-simulator check decides with the pooled check's rule: the point rule, the strict rule."""
    res = one_failing_heldout
    for kw in ({"decision": "point"}, {"strict": True}, {}):
        v = evaluate_gate(res, "cand", min_transfer_each=0.2, **kw)
        c = {c.name: c for c in v.checks}["transfer:hostile"]
        pooled_rule = evaluate_gate(res, "cand", min_transfer=0.2, **kw).checks[-1].rule
        assert c.rule == pooled_rule
    # 0.25 against 0.2 over 8 tasks: the point rule passes it; the interval rule cannot tell
    assert {c.name: c for c in evaluate_gate(res, "cand", min_transfer_each=0.2, decision="point").checks}[
        "transfer:hostile"
    ].status == "pass"


def test_cli_exit_1_names_the_simulator(one_failing_heldout, tmp_path, capsys):
    from collapse_probe.cli import gate

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(one_failing_heldout), encoding="utf-8")
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    gate.add_parser(sub)
    out = tmp_path / "gate.json"
    args = parser.parse_args(["gate", str(run), "--policy", "cand", "--min-transfer", "0.8",
                              "--min-transfer-each", "0.8", "--json", str(out)])  # fmt: skip
    assert gate.run(args) == 1
    printed = capsys.readouterr().out
    assert "transfer:hostile" in printed and "❌ fail" in printed
    assert json.loads(out.read_text())["exit_code"] == 1
    with pytest.raises(SystemExit):
        parser.parse_args(["gate", str(run), "--policy", "cand", "--min-transfer-each", "x"])
    bad = parser.parse_args(["gate", str(run), "--policy", "cand", "--min-transfer-each", "-1"])
    assert gate.run(bad) == 2 and "--min-transfer-each must be a finite number >= 0" in capsys.readouterr().err


def test_the_fail_side_of_each_check_is_bonferroni_over_the_simulators(one_failing_heldout):
    """Two held-out simulators: a check's lower end (pass side) is the 90 % interval's, its upper end (fail
    side) the 95 % interval's, i.e. one-sided 5 %/2; the pooled check keeps both ends at 90 %."""
    from collapse_probe.pipelines.crossplay import transfer_estimate
    from collapse_probe.results import read_crossplay

    res = one_failing_heldout
    each = evaluate_gate(res, "cand", min_transfer_each=0.8)
    checks = {c.name: c for c in each.checks}
    typed = read_crossplay(res, "results")
    cells = {(c.policy, c.simulator): c for c in typed.cells}
    for sim in ("kind", "hostile"):
        c = checks[f"transfer:{sim}"]
        near, _ = transfer_estimate(cells[("cand", "train")], [cells[("cand", sim)]], level=0.9, reward_range=(0, 1))
        far, _ = transfer_estimate(cells[("cand", "train")], [cells[("cand", sim)]], level=0.95, reward_range=(0, 1))
        assert c.interval == [pytest.approx(near.lo), pytest.approx(far.hi)]
        assert c.level == 0.9 and c.fail_level == pytest.approx(0.95)
        assert "one-sided 2.50%" in c.message
    assert checks["transfer:hostile"].status == "fail"  # far below 0.8 even at 2.5 %
    pooled = {c.name: c for c in evaluate_gate(res, "cand", min_transfer=0.8).checks}["transfer"]
    assert pooled.fail_level is None


def test_verdict_false_fail_at_the_threshold_holds_with_four_heldout_simulators():
    """Every simulator's true transfer exactly 0.8, 4 held-out simulators, 40 tasks x 4: the verdict fails in
    at most 5 % of runs (each check's own 5 % fail side, as before, failed 0.10 of runs)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "gate_error_rates.py"
    spec = importlib.util.spec_from_file_location("gate_error_rates", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    rng = np.random.default_rng(7)
    runs = 300
    fails = sum(
        evaluate_gate(bench.simulate_run(rng, bench.PANELS["bernoulli"], 40, 4, 0.8, 4), "candidate",
                      min_transfer_each=0.8).exit_code == 1
        for _ in range(runs)
    )  # fmt: skip
    assert fails / runs <= 0.075, fails
