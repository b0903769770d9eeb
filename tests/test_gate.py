"""The CI gate: exit codes that follow from hand-computed cross-play matrices, strict vs point
thresholds, could-not-judge cases, and well-formed JUnit XML."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from xml.etree import ElementTree as ET

import pytest

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.crossplay import CrossplayConfig, crossplay_results, run_crossplay
from collapse_probe.errors import ConfigError
from collapse_probe.gate import evaluate_gate, gate_run_dir
from collapse_probe.models import Completion, GenerationRequest, GenerationResult
from collapse_probe.simulators import Participant, make_participant


class PolitenessDonor:
    """A donor that gives $2 when the persuader said "please" and $0 otherwise: rewards depend on the policy."""

    spec = "politeness-donor"

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            said = " ".join(m["content"] for m in r.messages if m["role"] == "user").lower()
            text = "Happy to help. [DONATE $2]" if "please" in said else "Not convinced. [DONATE $0]"
            out.append(GenerationResult([Completion(text=text, finish_reason="stop")] * r.n))
        return out


class BrokenModel:
    spec = "broken"

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [GenerationResult([], error="connection reset") for _ in requests]


@pytest.fixture
def matrix(tmp_path, write_scripted):
    """polite/blunt x ($2 donor [train], $0.50 donor, politeness donor), 4 tasks x 2 rollouts.

    Hand-computed: polite = (1, 0.25, 1) -> held-out 0.625, transfer 0.625;
                   blunt  = (1, 0.25, 0) -> held-out 0.125, transfer 0.125.
    """
    polite = write_scripted([("Please donate today.", 1.0)], name="polite.json")
    blunt = write_scripted([("Give money.", 1.0)], name="blunt.json")
    give2 = write_scripted([("Sure [DONATE $2]", 1.0)], name="give2.json")
    give050 = write_scripted([("OK [DONATE $0.50]", 1.0)], name="give050.json")
    parts = {s: make_participant(s) for s in (polite, blunt, give2, give050)}
    parts["politeness"] = Participant("politeness", PolitenessDonor())
    cfg = CrossplayConfig(
        policies=[polite, blunt],
        simulators=[give2, give050, "politeness"],
        train_simulator=give2,
        tasks=4,
        rollouts=2,
        max_turns=1,
    )
    out = tmp_path / "matrix"
    res = run_crossplay(cfg, arena=P4GArena(max_turns=1), participants=parts, out=out, progress=False, report=False)
    return {"dir": out, "results": res, "polite": polite, "blunt": blunt}


def _run_cli(argv: list[str]) -> int:
    from collapse_probe.cli import gate

    parser = argparse.ArgumentParser()
    gate.add_parser(parser.add_subparsers(dest="command"))
    return gate.run(parser.parse_args(["gate", *argv]))


def test_matrix_is_as_hand_computed(matrix):
    res = matrix["results"]
    got = {(c["policy"], c["simulator"]): c["mean_reward"] for c in res["cells"]}
    p, b = matrix["polite"], matrix["blunt"]
    assert [got[(p, s)] for s in res["simulators"]] == [1.0, 0.25, 1.0]
    assert [got[(b, s)] for s in res["simulators"]] == [1.0, 0.25, 0.0]
    ratios = {t["policy"]: t["transfer_ratio"] for t in res["transfer"]}
    assert ratios == {p: 0.625, b: 0.125}
    assert res["heldout_reward"] == {p: 0.625, b: 0.125}


@pytest.mark.parametrize("strict", [False, True])
def test_exit_codes_follow_from_the_matrix(matrix, strict):
    p, b, d = matrix["polite"], matrix["blunt"], str(matrix["dir"])
    s = ["--strict"] if strict else []
    # deterministic donors: every CI is the point itself, so strict and point mode agree
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.6", *s]) == 0
    assert _run_cli([d, "--policy", p, "--min-transfer", "0.625", *s]) == 0  # the bound is inclusive
    assert _run_cli([d, "--policy", b, "--min-transfer", "0.6", *s]) == 1
    # blunt loses 0.625 - 0.125 = 0.5 of held-out reward against polite
    assert _run_cli([d, "--policy", b, "--baseline-policy", p, "--max-drop", "0.49", *s]) == 1
    assert _run_cli([d, "--policy", b, "--baseline-policy", p, "--max-drop", "0.5", *s]) == 0
    assert _run_cli([d, "--policy", p, "--baseline-policy", b, "--max-drop", "0", *s]) == 0


def test_verdict_values_and_markdown(matrix, tmp_path, capsys):
    p, b = matrix["polite"], matrix["blunt"]
    v = evaluate_gate(matrix["results"], b, min_transfer=0.5, baseline_policy=p, max_drop=0.1)
    checks = {c.name: c for c in v.checks}
    assert checks["transfer"].status == "fail" and checks["transfer"].value == 0.125
    assert checks["regression"].status == "fail" and checks["regression"].value == pytest.approx(0.5)
    assert checks["regression"].ci95 == pytest.approx([0.5, 0.5])
    assert all(checks[f"infra:{q}|{s}"].status == "pass" for q in (p, b) for s in matrix["results"]["simulators"])
    assert v.exit_code == 1 and v.outcome == "fail"
    md_file = tmp_path / "gate.md"
    assert _run_cli([str(matrix["dir"]), "--policy", b, "--min-transfer", "0.5", "--markdown", str(md_file)]) == 1
    md = md_file.read_text()
    assert md == capsys.readouterr().out.rstrip("\n") + "\n"
    assert md.startswith("### collapse-probe gate: ❌ failed") and "| `transfer` | ❌ fail | 0.125 |" in md


def test_junit_xml_is_well_formed(matrix, tmp_path):
    p, b = matrix["polite"], matrix["blunt"]
    junit = tmp_path / "junit.xml"
    code = _run_cli(
        [
            str(matrix["dir"]),
            "--policy",
            b,
            "--min-transfer",
            "0.5",
            "--baseline-policy",
            p,
            "--max-drop",
            "0.6",
            "--junit",
            str(junit),
        ]
    )
    assert code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1" and root.get("errors") == "0"
    cases = root.findall("./testsuite/testcase")
    names = [c.get("name") for c in cases]
    assert names[0] == "results" and "transfer" in names and "regression" in names
    assert len(cases) == 1 + 6 + 2  # results, one infra check per read cell, transfer, regression
    by_name = {c.get("name"): c for c in cases}
    fail = by_name["transfer"].find("failure")
    assert fail is not None and "0.125" in fail.get("message") and "< 0.5" in fail.text
    assert by_name["regression"].find("failure") is None and by_name["regression"].find("error") is None


def test_strict_needs_the_ci_to_clear_the_threshold(tmp_path, write_scripted):
    """A noisy training donor: the transfer ratio clears the threshold but its CI lower bound does not."""
    policy = write_scripted([("Please donate.", 1.0)], name="policy.json")
    coin = write_scripted([("Fine [DONATE $2]", 0.5), ("Nope [DONATE $0]", 0.5)], name="coin.json")
    give050 = write_scripted([("OK [DONATE $0.50]", 1.0)], name="give050.json")
    cfg = CrossplayConfig(
        policies=[policy], simulators=[coin, give050], train_simulator=coin, tasks=10, rollouts=1, max_turns=1
    )
    res = run_crossplay(cfg, arena=P4GArena(max_turns=1), progress=False)
    coin_cell = next(c for c in res["cells"] if c["simulator"] == coin)
    train = sum(sum(v) for v in coin_cell["task_rewards"].values()) / 10
    assert 0 < train < 1  # the coin donor really is noisy under these seeds
    t = res["transfer"][0]
    assert t["transfer_ratio"] == pytest.approx(0.25 / train)
    threshold = t["transfer_ratio"] - 1e-9
    assert t["ci95"][0] < threshold <= t["transfer_ratio"]
    assert evaluate_gate(res, policy, min_transfer=threshold).exit_code == 0
    strict = evaluate_gate(res, policy, min_transfer=threshold, strict=True)
    assert strict.exit_code == 1 and "CI lower bound" in strict.checks[-1].message


def _records(rewards: dict[str, dict[str, list[float | None]]]) -> list[dict]:
    """Records from {policy|simulator: {task: [reward or None for an infra failure]}}."""
    recs = []
    for cell, tasks in rewards.items():
        pol, sim = cell.split("|")
        for task, rs in tasks.items():
            for g, r in enumerate(rs):
                recs.append(
                    {
                        "policy": pol,
                        "simulator": sim,
                        "task_id": task,
                        "rollout": g,
                        "messages": [],
                        "status": "infra_error" if r is None else "done",
                        "reward": r,
                        "infra_error": "timeout" if r is None else None,
                        "success": None if r is None else r > 0,
                    }
                )
    return recs


def test_strict_regression_uses_the_upper_bound_of_the_drop():
    tasks = [f"t{i}" for i in range(6)]
    cand = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    recs = _records({
        "cand|train": {t: [1.0] for t in tasks}, "base|train": {t: [1.0] for t in tasks},
        "cand|h": {t: [r] for t, r in zip(tasks, cand, strict=True)}, "base|h": {t: [1.0] for t in tasks},
    })  # fmt: skip
    res = crossplay_results(
        recs,
        CrossplayConfig(
            policies=["cand", "base"], simulators=["train", "h"], train_simulator="train", tasks=6, rollouts=1
        ),
    )
    v = evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.4)
    reg = v.checks[-1]
    assert reg.name == "regression" and reg.value == pytest.approx(1 - 4 / 6) and v.exit_code == 0
    assert reg.ci95[0] <= reg.value <= reg.ci95[1] and reg.ci95[1] > 0.4
    assert evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.4, strict=True).exit_code == 1
    # the drop is judged on held-out simulators only: the training column (equal here) does not dilute it
    assert evaluate_gate(res, "cand", baseline_policy="base", max_drop=0.3).exit_code == 1


def test_infra_failures_make_the_gate_unable_to_judge(tmp_path, write_scripted):
    policy = write_scripted([("Please donate.", 1.0)], name="policy.json")
    give2 = write_scripted([("Sure [DONATE $2]", 1.0)], name="give2.json")
    parts = {
        policy: make_participant(policy),
        give2: make_participant(give2),
        "broken": Participant("broken", BrokenModel()),
    }
    cfg = CrossplayConfig(
        policies=[policy], simulators=[give2, "broken"], train_simulator=give2, tasks=2, rollouts=1, max_turns=1
    )
    out = tmp_path / "run"
    run_crossplay(cfg, arena=P4GArena(max_turns=1), participants=parts, out=out, progress=False, report=False)
    # the candidate's training cell is perfect, but one cell is all infra failures: never a silent pass
    assert _run_cli([str(out), "--policy", policy]) == 2
    assert _run_cli([str(out), "--policy", policy, "--max-infra-rate", "1.0"]) == 2  # nothing scored either
    v = gate_run_dir(out, policy)
    bad = next(c for c in v.checks if c.name == f"infra:{policy}|broken")
    assert bad.status == "error" and bad.value == 1.0 and "2 of 2" in bad.message


def test_infra_rate_threshold():
    recs = _records({"p|s": {"t0": [1.0, None], "t1": [1.0, 1.0], "t2": [1.0, 1.0]}})  # 1 of 6 lost
    res = crossplay_results(recs, CrossplayConfig(policies=["p"], simulators=["s"], tasks=3, rollouts=2))
    assert evaluate_gate(res, "p", max_infra_rate=0.2).exit_code == 0
    assert evaluate_gate(res, "p", max_infra_rate=0.1).exit_code == 2


def test_could_not_judge(matrix, tmp_path, write_scripted):
    d = str(matrix["dir"])
    assert _run_cli([str(tmp_path / "nowhere"), "--policy", "x"]) == 2  # no results
    assert _run_cli([d, "--policy", "someone-else"]) == 2  # not a row of the run
    assert _run_cli([d, "--policy", matrix["blunt"], "--baseline-policy", "ghost", "--max-drop", "0.1"]) == 2
    # a missing cell (e.g. a results file cut short by hand)
    res = json.loads((matrix["dir"] / "results.json").read_text())
    res["cells"] = res["cells"][:-1]
    v = evaluate_gate(res, matrix["blunt"])
    assert v.exit_code == 2 and "missing cells" in v.checks[0].message
    # not a cross-play results file
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "collapse-probe/play/v1"}))
    assert _run_cli([str(other), "--policy", "x"]) == 2
    # bad options are exit 2 with a message, never a pass
    assert _run_cli([d, "--policy", matrix["blunt"], "--baseline-policy", matrix["polite"]]) == 2
    with pytest.raises(ConfigError, match="--max-drop"):
        evaluate_gate(matrix["results"], matrix["blunt"], baseline_policy=matrix["polite"], max_drop=-1)


def test_transfer_cannot_be_judged_without_a_defined_ratio(write_scripted):
    policy = write_scripted([("Hi.", 1.0)], name="policy.json")
    refuse = write_scripted([("No. [DONATE $0]", 1.0)], name="refuse.json")
    give2 = write_scripted([("Sure [DONATE $2]", 1.0)], name="give2.json")
    arena = P4GArena(max_turns=1)
    res = run_crossplay(
        CrossplayConfig(
            policies=[policy], simulators=[refuse, give2], train_simulator=refuse, tasks=2, rollouts=1, max_turns=1
        ),
        arena=arena,
        progress=False,
    )
    v = evaluate_gate(res, policy, min_transfer=0.5)
    assert v.exit_code == 2 and "undefined" in v.checks[-1].message
    # no training simulator in the run: a transfer threshold cannot be judged
    res2 = run_crossplay(
        CrossplayConfig(policies=[policy], simulators=[refuse, give2], tasks=2, rollouts=1, max_turns=1),
        arena=arena,
        progress=False,
    )
    assert res2["transfer"] == []
    assert evaluate_gate(res2, policy, min_transfer=0.5).exit_code == 2
    health = evaluate_gate(res2, policy)
    assert health.exit_code == 0  # nothing asked beyond a complete, healthy run
    assert health.checks[-1].name == "thresholds" and "not the policy" in health.checks[-1].message
    assert "not the policy" in health.markdown()
