"""The gate per held-out simulator: each one's own transfer beside the pooled one, and
``--min-transfer-each`` failing a policy that fails one kind of user even where the pooled check cannot tell."""

from __future__ import annotations

import argparse
import json
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from collapse_probe._crossplay import CrossplayConfig, crossplay_results
from collapse_probe._gate import evaluate_gate
from collapse_probe.report.gate_text import headline, junit_xml, markdown


def _records(means: dict[str, list[float]], rollouts: int, rng: np.random.Generator) -> list[dict]:
    """Pass/fail rollouts whose per-task success rates are ``means[simulator]`` (policy ``cand``)."""
    recs = []
    for sim, per_task in means.items():
        for t, p in enumerate(per_task):
            k = round(p * rollouts)
            outcome = [1.0] * k + [0.0] * (rollouts - k)
            rng.shuffle(outcome)
            for g, r in enumerate(outcome):
                recs.append({"policy": "cand", "simulator": sim, "task_id": f"t{t}", "rollout": g, "messages": [],
                             "status": "done", "reward": r, "infra_error": None, "success": r > 0})  # fmt: skip
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
