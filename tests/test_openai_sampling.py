"""The ``openai/`` and ``openai-compatible/`` backends send the run's ``temperature`` and ``top_p`` in
every request (through the real ``openai`` SDK, to a local server that records the request bodies);
a model that refuses them is left at its default only where the run asks for the default."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).parent / "reliability"))
from _fault_server import FaultServer  # noqa: E402

from collapse_probe.cli import main  # noqa: E402
from collapse_probe.core._state import reset_caches  # noqa: E402

FAST = ["-M", "sim.max_retries=1", "-M", "sim.backoff_base=0.01", "-M", "sim.timeout=5"]


def _audit(tmp_path, monkeypatch, server: FaultServer, backend: str, *flags: str) -> int:
    reset_caches()  # a fresh process: no backend built for an earlier test's server
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache") + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-sampling-0123")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    sim = "openai/m" if backend == "openai" else f"openai-compatible/m@{server.url}"
    return main(["audit", "--sim", sim, "--states", "2", "--samples", "3", "--partition", "exact", "--no-exact",
                 "--out", "runs/a", "--no-progress", *flags, *FAST])  # fmt: skip


@pytest.mark.parametrize("backend", ["openai", "openai-compatible"])
@pytest.mark.parametrize(
    ("flags", "temperature", "top_p"), [((), 1.0, 1.0), (("--temperature", "0.7", "--top-p", "0.9"), 0.7, 0.9)]
)
def test_every_request_carries_the_runs_sampling(backend, flags, temperature, top_p, tmp_path, monkeypatch, capsys):
    with FaultServer(rate=0.0) as s:
        code = _audit(tmp_path, monkeypatch, s, backend, *flags)
    assert code == 0, capsys.readouterr().err[-2000:]
    assert s.bodies and all(b["temperature"] == temperature and b["top_p"] == top_p for b in s.bodies), s.bodies[0]
    config = json.loads((tmp_path / "runs/a/config.json").read_text())
    assert json.dumps(config).count(str(temperature)) >= 1  # the run records the sampling it asked for


def test_a_model_refusing_sampling_at_the_default_samples_at_its_own_with_a_warning(tmp_path, monkeypatch, capsys):
    with FaultServer(rate=0.0, refuse=("temperature", "top_p")) as s:
        code = _audit(tmp_path, monkeypatch, s, "openai")
    err = capsys.readouterr().err
    assert code == 0, err[-2000:]
    assert err.count("refuses temperature") == 1 and err.count("refuses top_p") == 1, err[-2000:]
    assert 2 <= s.counts["refused"] <= 8  # each of the 4 requests in flight at the start at most twice
    answered = [b for b in s.bodies if "temperature" not in b and "top_p" not in b]
    assert len(answered) == s.counts["requests"] > 0


def test_a_model_refusing_the_runs_temperature_is_an_error_that_says_so(tmp_path, monkeypatch, capsys):
    with FaultServer(rate=0.0, refuse=("temperature",)) as s:
        code = _audit(tmp_path, monkeypatch, s, "openai", "--temperature", "0.7")
    err = capsys.readouterr().err
    assert code != 0
    assert "model 'm' takes no temperature" in err and "--temperature 1 --top-p 1" in err, err[-2000:]
    assert s.counts["requests"] == 0  # nothing was answered at another temperature than the run's
    assert "Traceback" not in err and "internal error" not in err
