"""After runs with (fake) API keys in the environment, no key appears in run directories, caches,
logs or reports, even when the server quotes the key back in its error messages."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _fault_server import FaultServer  # noqa: E402

from collapse_probe.cli import main  # noqa: E402

pytestmark = pytest.mark.reliability

KEYS = {
    "COLLAPSE_PROBE_API_KEY": "sk-collapse-SECRET-4f9a1c2e7b",
    "OPENAI_API_KEY": "sk-openai-SECRET-8d2e6f0a13",
    "ANTHROPIC_API_KEY": "sk-ant-SECRET-77c1b9e2d4",
    "GEMINI_API_KEY": "AIza-SECRET-5e3f2a1b9c",
}
FAST = ["-M", "sim.max_retries=3", "-M", "sim.backoff_base=0.01", "-M", "sim.backoff_max=0.02", "-M", "sim.timeout=1"]


def test_no_key_reaches_run_dirs_caches_logs_or_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    cache = tmp_path / "cache"
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(cache) + "/")
    (tmp_path / "pol.json").write_text(json.dumps({"responses": [{"text": "Please donate.", "p": 1.0}]}))
    with FaultServer(rate=0.4, seed=11, faults=("500", "429", "null_content"), echo_auth=True) as s:
        sim = f"openai-compatible/m@{s.url}"
        codes = [
            main(["crossplay", "--policies", "scripted:pol.json", "--sims", sim, "--tasks", "3", "--rollouts", "2",
                  "--max-turns", "2", "--out", "runs/xp", "--no-progress", "-vv", *FAST]),
            main(["audit", "--sim", sim, "--states", "2", "--samples", "4", "--partition", "exact", "--no-exact",
                  "--out", "runs/audit", "--no-progress", "-vv", *FAST]),
            main(["gate", "runs/xp", "--policy", "scripted:pol.json", "--json", "gate.json", "--junit", "gate.xml",
                  "--markdown", "gate.md"]),
        ]  # fmt: skip
        assert s.counts["500"] > 0
    out = capsys.readouterr()
    assert codes[0] in (0, 1) and codes[1] in (0, 1) and codes[2] in (0, 1, 2), out.err[-2000:]
    blobs = {"stdout+stderr": (out.out + out.err).encode()}
    for p in tmp_path.rglob("*"):
        if p.is_file():
            blobs[str(p.relative_to(tmp_path))] = p.read_bytes()
    assert any(name.startswith("cache") for name in blobs) and any("runs/xp" in n for n in blobs)
    for name, data in blobs.items():
        for secret in KEYS.values():
            assert secret.encode() not in data, f"{secret} found in {name}"
            assert secret[-10:].encode() not in data, f"the tail of {secret} found in {name}"
