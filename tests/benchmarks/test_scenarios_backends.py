"""``audit --benchmark scenarios`` against a real backend: an OpenAI-compatible server on 127.0.0.1 (through
the openai SDK) and the embedded model offline (slow)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from collapse_probe.benchmarks.scenarios import example_path, load_scenarios
from collapse_probe.cli import main

REPLIES = ("Yes, I'll come in. [PATIENT AGREES]", "I'm not sure. [PATIENT UNSURE]", "No thanks. [PATIENT DECLINES]")


class _Patient(BaseHTTPRequestHandler):
    """Chat Completions: reply ``i`` of a request with seed ``s`` is ``REPLIES[(s + i) % 3]``; bodies are kept."""

    bodies: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        seed, n = int(body.get("seed") or 0), int(body.get("n") or 1)
        choices = [
            {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": REPLIES[(seed + i) % 3]}}
            for i in range(n)
        ]
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                           "choices": choices, "usage": usage}).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _cli(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_audit_of_scenarios_against_an_openai_compatible_server(tmp_path, monkeypatch, capsys):
    pytest.importorskip("openai")
    monkeypatch.chdir(tmp_path)
    for var in ("COLLAPSE_PROBE_API_KEY", "OPENAI_API_KEY", "COLLAPSE_PROBE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    _Patient.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Patient)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        code, out = _cli(capsys, "audit", "--benchmark", "scenarios", "--scenarios", str(example_path()),
                         "--sim", f"openai-compatible/patient-7b@{url}", "--states", "2", "--samples", "6",
                         "--partition", "exact", "--no-progress", "--no-cache", "--out", "runs/a")  # fmt: skip
    finally:
        server.shutdown()
    assert code == 0, out
    res = json.loads((tmp_path / "runs/a/results.json").read_text())
    assert res["summary"]["reward_view"]["n_states"] == 2  # the two closing states read the pattern's values
    systems = {b["messages"][0]["content"] for b in _Patient.bodies}
    scenarios = {s.id: s for s in load_scenarios(example_path())}
    probed = {s["task_id"] for s in res["states"]}
    assert len(probed) == 2 and all(any(scenarios[t].instructions.strip() in s for s in systems) for t in probed)
    assert all(b["model"] == "patient-7b" for b in _Patient.bodies)


@pytest.mark.slow
def test_audit_of_scenarios_with_the_embedded_model_offline(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out = _cli(capsys, "audit", "--benchmark", "scenarios", "--scenarios", str(example_path()),
                     "--sim", "smollm2", "--states", "1", "--samples", "4", "--max-turns", "1",
                     "--no-progress", "--out", "runs/local")  # fmt: skip
    assert code == 0, out
    res = json.loads(Path("runs/local/results.json").read_text())
    assert len(res["states"]) == 3 and all(s["n"] == 4 for s in res["states"])  # opening, prefix, closing
