"""The sequential audit end to end with scripted simulators: replies drawn in looks until the exact
verdict is decisive, the looks and the stopping reason in results.json and the terminal, and a raised
cap that continues the same test from the cache."""

from __future__ import annotations

import json

from collapse_probe.cli import main
from collapse_probe.pipelines.audit import AuditConfig, run_audit
from collapse_probe.results import AuditResults


def _audit(spec, out, **kw):
    kw.setdefault("states", 2)
    kw.setdefault("partition", "exact")
    return run_audit(AuditConfig(sim=spec, **kw), out, progress=False)


def _records(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_a_collapsed_simulator_stops_at_the_first_look(write_scripted, tmp_path):
    spec = write_scripted([("No thanks.", 1.0)])
    res = _audit(spec, tmp_path / "run", samples=80)
    seq = res["summary"]["sequential"]
    assert seq["cap"] == 80 and seq["drawn_per_state"] == 20
    meaning = seq["views"]["meaning"]
    assert meaning["decision"] == "COLLAPSED" and meaning["stop_reason"] == "decisive"
    assert [lk["replies_per_state"] for lk in meaning["looks"]] == [20]
    assert meaning["looks"][0]["hits"] == meaning["looks"][0]["hit_trials"] == 4 * 19
    assert res["verdicts"]["meaning"]["label"] == "COLLAPSED"
    assert {r["n"] for r in _records(tmp_path / "run")} == {20}  # nothing drawn past the decisive look
    assert res["samples_per_state"] == res["summary"]["samples_per_state"] == 20  # what was drawn, not the cap
    AuditResults.parse(json.loads((tmp_path / "run" / "results.json").read_text()))


def test_an_undecided_simulator_draws_to_the_cap_and_a_raised_cap_continues_the_same_test(
    write_scripted, tmp_path, capsys
):
    spec = write_scripted([("Sure! [DONATE $1]", 0.78), ("No thanks.", 0.22)])  # ε = 0.22, next to ε*
    out = tmp_path / "run"
    first = _audit(spec, out, samples=40)
    m1 = first["summary"]["sequential"]["views"]["meaning"]
    assert [lk["replies_per_state"] for lk in m1["looks"]] == [20, 40]
    assert m1["stop_reason"] == "cap" and m1["decision"] is None
    assert [lk["alpha_side"] for lk in m1["looks"]] == [0.025 * 0.24] * 2
    replies = {r["state_id"]: r["responses"] for r in _records(out) if r["n"] == 40}

    # the same directory, a raised cap: the looks at 20 and 40 are made again on the cached replies
    again = _audit(spec, out, samples=80)
    m2 = again["summary"]["sequential"]["views"]["meaning"]
    assert m2["looks"][:2] == m1["looks"]
    assert [lk["replies_per_state"] for lk in m2["looks"]][:3] == [20, 40, 60]
    for r in _records(out):
        if r["n"] >= 40:
            assert r["responses"][:40] == replies[r["state_id"]]  # sample indices 0-39 served, not redrawn

    capsys.readouterr()
    rc = main(["audit", "--sim", spec, "--states", "2", "--samples", "80", "--partition", "exact", "--out", str(tmp_path / "cli"),
               "--no-progress"])  # fmt: skip
    cap = capsys.readouterr()
    printed = cap.out
    assert rc == 0, cap.err
    assert "sequential verdict (exact bounds, cap 80 replies per state" in printed
    assert "N = 20: ε̄ in [" in printed and "N = 40: ε̄ in [" in printed


def test_a_cap_below_the_first_look_decides_nothing(write_scripted, tmp_path):
    spec = write_scripted([("No thanks.", 1.0)])
    res = _audit(spec, tmp_path / "run", samples=10)
    meaning = res["summary"]["sequential"]["views"]["meaning"]
    assert meaning["looks"] == [] and meaning["stop_reason"] == "below first look"
    assert "below the first look at 20" in meaning["reason"]


def test_no_stop_early_draws_every_reply_and_makes_the_same_test(write_scripted, tmp_path):
    spec = write_scripted([("No thanks.", 1.0)])
    early = _audit(spec, tmp_path / "a", samples=60)
    full = _audit(spec, tmp_path / "b", samples=60, stop_early=False)
    assert {st["n"] for st in early["states"]} == {20} and {st["n"] for st in full["states"]} == {60}
    assert full["summary"]["sequential"]["drawn_per_state"] == 60
    # the test stops at its first decisive look whatever was drawn: the same look, the same bounds
    assert full["summary"]["sequential"]["views"] == early["summary"]["sequential"]["views"]


def test_the_verdict_is_the_sequential_tests_and_says_so_everywhere(write_scripted, tmp_path):
    from collapse_probe.integrations.interop._card import simulator_card

    spec = write_scripted([("Sure! [DONATE $1]", 0.78), ("No thanks.", 0.22)])
    out = tmp_path / "run"
    res = _audit(spec, out, samples=40)
    v = res["verdicts"]["meaning"]
    seq = res["summary"]["sequential"]["views"]["meaning"]
    assert v["label"] == "INCONCLUSIVE" and v["stop_reason"] == "cap"
    assert v["exact_bounds"] == [seq["lower"], seq["upper"]] and v["decided_at"] == 40
    lo, hi = v["exact_bounds"]
    assert f"exact bounds [{lo:.3f}, {hi:.3f}] at N = 40 contain ε*" in res["verdict_text"]["why"]
    # the advice raises the cap, which continues the test (not a new design from scratch)
    assert "continues the same sequential test" in res["verdict_text"]["next"]
    assert "--samples 80" in res["verdict_text"]["next"]
    assert "sequential verdict (exact bounds, cap 40" in (out / "report.html").read_text()
    figures = {f["name"]: f.get("value") for f in simulator_card([out])["figures"]}
    assert figures["meaning view: replies per state at the last look"] == 40
    assert figures["meaning view: exact upper bound on ε̄ at the last look"] == hi


def test_no_look_no_decision_even_where_the_interval_lies_below_epsilon_star(write_scripted, tmp_path):
    spec = write_scripted([("No thanks.", 1.0)])
    res = _audit(spec, tmp_path / "run", samples=10)
    assert res["summary"]["collapse_error"]["ci95"][1] < 0.2  # the interval alone read COLLAPSED before
    assert res["verdicts"]["meaning"]["label"] == "INCONCLUSIVE"
    assert res["verdicts"]["meaning"]["exact_bounds"] is None
    assert "no look of the sequential test" in res["verdict_text"]["why"]


def test_the_command_line_raises_the_cap_on_the_same_out_and_its_next_step_audits_the_same_states(
    write_scripted, tmp_path, capsys, monkeypatch
):
    import shlex

    from tests.conftest import run_cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text(
        "- id: a\n  instructions: 'You are a patient.'\n  opening: 'Clinic, hello.'\n"
        "  closing: 'Before we hang up: [PATIENT AGREES] or [PATIENT DECLINES]?'\n"
        "  reward: {pattern: '\\[PATIENT (AGREES|DECLINES)\\]', values: {AGREES: 1, DECLINES: 0}}\n"
    )
    spec = write_scripted([("Yes. [PATIENT AGREES]", 0.78), ("No. [PATIENT DECLINES]", 0.22)])  # ε next to ε*
    argv = ["audit", "--benchmark", "scenarios", "--scenarios", "mine.yaml", "--sim", spec, "--states", "1",
            "--partition", "exact", "--epsilon-star", "0.25", "--no-progress", "--out", "run"]  # fmt: skip
    rc, out, err = run_cli([*argv, "--samples", "40"], capsys)
    assert rc == 0, err
    first = json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["sequential"]
    assert first["views"]["meaning"]["stop_reason"] == "cap"
    assert "after 2 looks without a decision" in out
    # the next step names the scenario file and the states and threshold of this test: it runs as printed
    nxt = next(line for line in out.splitlines() if line.startswith("next: "))
    words = shlex.split(nxt.split(": ", 2)[-1])
    assert words[words.index("--scenarios") + 1] == "mine.yaml" and words[words.index("--states") + 1] == "1"
    assert words[words.index("--epsilon-star") + 1] == "0.25" and words[words.index("--samples") + 1] == "80"

    # the same --out with a raised cap continues the same test (refused before any model loaded, once)
    rc, out, err = run_cli([*argv, "--samples", "80"], capsys)
    assert rc == 0, err
    again = json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["sequential"]
    assert again["cap"] == 80 and again["views"]["meaning"]["looks"][:2] == first["views"]["meaning"]["looks"]
    assert "N = 60: ε̄ in [" in out

    # a lowered cap keeps the replies drawn: the estimates read 80 per state, which is not low confidence
    rc, out, err = run_cli([*argv, "--samples", "10"], capsys)
    assert rc == 0, err
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["summary"]["sequential"]["drawn_per_state"] == 80 and res["summary"]["low_confidence"] is False
    assert "N = 80 replies per state" in out and "LOW CONFIDENCE" not in out


def test_a_cap_reached_after_one_look_says_one_look(write_scripted, tmp_path):
    spec = write_scripted([("Sure! [DONATE $1]", 0.78), ("No thanks.", 0.22)])
    meaning = _audit(spec, tmp_path / "run", samples=20)["summary"]["sequential"]["views"]["meaning"]
    assert meaning["stop_reason"] == "cap"
    assert "reached after 1 look without a decision" in meaning["reason"]
