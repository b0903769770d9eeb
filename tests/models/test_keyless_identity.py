"""A keyless OpenAI-compatible server (vllm serve, a local proxy) is identified by the model it reports."""

from __future__ import annotations

import http.server
import json
import threading

import pytest


@pytest.fixture
def models_server():
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            body = json.dumps({"id": "served-model-7", "object": "model", "created": 0, "owned_by": "me"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/v1", seen
    srv.shutdown()


def test_keyless_server_fingerprint_names_the_served_model(models_server, monkeypatch):
    pytest.importorskip("openai")
    from collapse_probe.models.openai import make_openai_compatible_model

    for k in ("OPENAI_API_KEY", "COLLAPSE_PROBE_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    url, seen = models_server
    model = make_openai_compatible_model("openai-compatible/x", f"x@{url}")
    fp = model.fingerprint()
    assert fp.endswith("#served-model-7") and "unverified" not in fp
    assert seen and seen[0]["path"].endswith("/models/x") and "authorization" not in seen[0]
