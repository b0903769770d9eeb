"""An audit whose Verbalized-Sampling replies mostly fail to parse says so instead of reporting VS as measured."""

from __future__ import annotations

import json
import subprocess
import sys


def test_unparsable_vs_replies_raise_a_notice(write_scripted, tmp_path):
    sim = write_scripted([("No thanks.", 0.7), ("Sure [DONATE $1]", 0.3)])  # never a verbalized list
    out = tmp_path / "audit"
    proc = subprocess.run(
        [sys.executable, "-m", "collapse_probe.cli", "audit", "--sim", sim, "--compare-vs", "--states", "2",
         "--samples", "10", "--partition", "exact", "--no-exact", "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())
    fails = res["compare_vs"]["vs_parse_failures"]
    assert fails["rate"] == 1.0 and res["compare_vs"]["unreliable"] is True
    assert any("could not be parsed" in n for n in res["notices"])
    assert "could not be parsed (100%)" in proc.stdout
