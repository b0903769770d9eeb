"""One source for every printed figure: on real runs (an audit, a cross-play, an audit of published
trajectories), each figure the terminal prints is the one the report shows, both read from the typed
results through the same helpers."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from collapse_probe.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tau2-sample.json"


def _report_text(path: Path) -> str:
    """The report's visible text and tables (scripts and styles dropped, entities unescaped)."""
    doc = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", doc)))


def _row(printed: str, name: str) -> str:
    line = next(line for line in printed.splitlines() if line.startswith(name + " "))
    return line[len(name) :].strip()


def _audit_figures_agree(out: Path, printed: str) -> dict:
    from collapse_probe.report.audit_plots import infra_failures_text, reward_classes_text, samples_per_state_text

    res = json.loads((out / "results.json").read_text())
    report = _report_text(out / "report.html")
    for name, text in (("samples per state", samples_per_state_text(res)),
                       ("infra failures excluded", infra_failures_text(res)),
                       ("reward view", reward_classes_text(res))):  # fmt: skip
        assert _row(printed, name) == text  # the terminal row is the helper's text
        assert re.sub(r"\s+", " ", text) in report, f"{name}: {text!r} not in the report"
    ce = res["summary"]["collapse_error"]
    mean = f"{ce['estimate']:.3f} [{ce['ci95'][0]:.3f}, {ce['ci95'][1]:.3f}]"
    assert mean in printed and mean in report  # the headline ε̂ with its interval, on both
    for line in res["verdict"].splitlines():  # the verdict lines, as stored, printed and in the report
        assert line in printed.splitlines() and re.sub(r"\s+", " ", line) in report
    assert res["verdict"] == "\n".join(
        v for v in (res["verdict_text"][k] for k in ("answer", "why", "next", "compare_vs")) if v
    )
    return res


def test_a_live_audit_prints_the_figures_its_report_shows(tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(["audit", "--sim", "scripted:p4g_donor_diverse", "--states", "2", "--samples", "12", "--partition",
                 "exact", "--no-progress", "--no-cache", "--out", str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    res = _audit_figures_agree(out, printed)
    assert _row(printed, "samples per state") == "12  LOW CONFIDENCE (N < 20)" and res["summary"]["low_confidence"]


def test_an_audit_of_published_trajectories_prints_the_figures_its_report_shows(tmp_path, capsys):
    if not SAMPLE.exists():
        pytest.skip("examples/tau2-sample.json is not in this checkout")
    out = tmp_path / "from"
    assert main(["audit", "--from", str(SAMPLE), "--format", "tau2", "--partition", "exact", "--no-progress",
                 "--out", str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    res = _audit_figures_agree(out, printed)
    ns = {st["n"] for st in res["states"] if st["status"] == "ok"}
    assert _row(printed, "samples per state").startswith(str(min(ns)))  # the states' own N, not the N asked for
    c = res["source"]["infra_failures"]
    assert f"{c} conversation{'s' if c != 1 else ''} with an infrastructure failure excluded" in printed
    assert f"{c} conversation" in _row(printed, "infra failures excluded")  # the same count in the table
    from collapse_probe.report.audit_plots import simulator_errors_text

    errors = simulator_errors_text(res)
    assert errors and errors in printed and errors in _report_text(out / "report.html")


def test_a_crossplay_prints_the_figures_its_report_shows(tmp_path, capsys):
    from collapse_probe.report.crossplay_plots import cell_text, transfer_text

    out = tmp_path / "xp"
    assert main(["crossplay", "--policies", "scripted:p4g_persuader_cause,scripted:p4g_persuader_rapport", "--sims",
                 "scripted:p4g_donor_diverse,scripted:p4g_donor_skeptic", "--train-sim", "scripted:p4g_donor_diverse",
                 "--tasks", "6", "--max-turns", "1", "--no-progress", "--no-cache", "--out", str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    report = _report_text(out / "report.html")
    for c in res["cells"]:
        text = cell_text(c["mean_reward"], c["ci95"])
        assert text in printed and text in report, text
    for t in res["transfer"]:
        text = transfer_text(t)
        assert f": {text}" in printed and text in report, text
