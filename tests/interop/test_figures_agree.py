"""One source for every printed figure: the terminal, report.html and the simulator card of one run
print the same headline numbers, on a live audit, an ``audit --from`` of a τ2 file and a cross-play run."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from collapse_probe.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tau2-sample.json"


def _fig(v: dict) -> str:
    """How the three surfaces print an estimate with its interval: ``0.123 [0.045, 0.678]``."""
    lo, hi = v["ci95"]
    return f"{v['estimate']:.3f} [{lo:.3f}, {hi:.3f}]"


def _surfaces(run: Path, terminal: str, tmp_path: Path) -> dict[str, str]:
    card = tmp_path / f"card-{run.name}.md"
    assert main(["card", str(run), "--out", str(card)]) == 0
    page = html.unescape(re.sub(r"<[^>]+>", " ", (run / "report.html").read_text(encoding="utf-8")))
    return {"terminal": terminal, "report": " ".join(page.split()), "card": card.read_text(encoding="utf-8")}


def _assert_everywhere(figure: str, surfaces: dict[str, str]) -> None:
    missing = [name for name, text in surfaces.items() if figure not in text]
    assert not missing, f"{figure!r} is not printed by {missing}"


def test_a_live_audit_prints_the_same_figures_everywhere(p4g_specs, tmp_path, capsys):
    out = tmp_path / "audit"
    args = ["audit", "--sim", p4g_specs["donor"], "--states", "2", "--samples", "20", "--partition", "label"]
    assert main([*args, "--no-progress", "--no-cache", "--out", str(out)]) in (0, 1)
    terminal = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    surfaces = _surfaces(out, terminal, tmp_path)
    for view in ("meaning", "reward"):
        v = res["verdicts"][view]
        assert v.get("estimate") is not None and v.get("ci95"), view  # both views are measured here
        _assert_everywhere(_fig(v), surfaces)
    _assert_everywhere(res["verdicts"]["reward"]["label"], surfaces)


@pytest.mark.realmodel  # the meaning view's figures: the default partition embeds with the sentence encoder
def test_an_audit_of_a_published_file_prints_the_same_figures_everywhere(tmp_path, capsys):
    out = tmp_path / "from"
    assert main(["audit", "--from", str(EXAMPLE), "--format", "tau2", "--no-progress", "--out", str(out)]) in (0, 1)
    terminal = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    surfaces = _surfaces(out, terminal, tmp_path)
    v = res["verdicts"]["meaning"]
    assert v.get("estimate") is not None and v.get("ci95")
    _assert_everywhere(_fig(v), surfaces)
    flip = res["variance"]["flip_rate"]
    assert flip is not None
    _assert_everywhere(f"{flip:.3f}", surfaces)


def test_a_crossplay_run_prints_the_same_transfer_everywhere(p4g_specs, tmp_path, capsys):
    out = tmp_path / "xp"
    s = p4g_specs
    args = ["crossplay", "--policies", f"{s['polite']},{s['pushy']}", "--sims", f"{s['donor']},{s['donor2']}",
            "--train-sim", s["donor"], "--tasks", "3", "--rollouts", "2", "--max-turns", "2", "--no-cache",
            "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    terminal = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    surfaces = _surfaces(out, terminal, tmp_path)
    ratios = [t["transfer_ratio"] for t in res["transfer"] if t.get("transfer_ratio") is not None]
    assert ratios
    for r in ratios:
        _assert_everywhere(f"{r:.3f}", surfaces)
