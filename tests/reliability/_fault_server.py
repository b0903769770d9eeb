"""A fault-injecting OpenAI-compatible server on 127.0.0.1.

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` deterministically from the request
(the answer is drawn from a fixed list by a hash of the conversation and seed, so a retried request
gets the same answer), and replaces a share of the answers by a fault: HTTP 429 (with Retry-After),
500, a stall past the client's timeout, an invalid JSON body, a truncated body, empty ``choices``,
``content: null`` or an empty or whitespace-only ``content``. Every request and fault is counted, so a test can check that each fault was
retried or recorded and that no faulty answer reached a result.
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("429", "500", "timeout", "invalid_json", "truncated", "empty_choices", "null_content")
"""The default fault kinds. Also served when asked for (``faults=(..., "empty_content")``):
``empty_content`` (``content: ""`` or whitespace, HTTP 200: a reply the engine asks again, not the
backend), ``401_echo`` (HTTP 401 whose error message quotes the request's credentials) and
``echo_reply`` (HTTP 200 whose reply quotes them, as a server echoing its request headers would); see
:func:`echoed_credentials` for the forms quoted."""


def echoed_credentials(authorization: str) -> str:
    """What a hostile server quotes of an ``Authorization`` header: the header itself, the credentials
    decoded (a Basic header's ``user:password``), and both percent-encoded and JSON-escaped."""
    import base64
    import urllib.parse

    scheme, _, token = authorization.partition(" ")
    plain = token
    if scheme.lower() == "basic":
        try:
            plain = base64.b64decode(token).decode("utf-8", "replace")
        except ValueError:
            plain = token
    forms = [authorization, plain, urllib.parse.quote(plain, safe=""), json.dumps(plain)]
    return " | ".join(forms)


ANSWERS = (
    "That sounds good, I'll give [DONATE $1]",
    "Not today, sorry. [DONATE $0]",
    "Happy to help the children: [DONATE $2]",
    "Maybe a little. [DONATE $0.5]",
)


def fast_retries(timeout_s: float) -> list[str]:
    """``-M`` flags that make a simulator retry often and quickly (the faults, not backoff, are tested)."""
    return ["-M", "sim.max_retries=8", "-M", "sim.backoff_base=0.01", "-M", "sim.backoff_max=0.05",
            "-M", f"sim.timeout={timeout_s}"]  # fmt: skip


def scripted_policy(tmp_path: Any, monkeypatch: Any, key: str) -> str:
    """Work in ``tmp_path`` with a fake API key and a one-answer scripted persuader; its spec."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_API_KEY", key)
    (tmp_path / "pol.json").write_text(json.dumps({"responses": [{"text": "Please donate to the kids.", "p": 1.0}]}))
    return "scripted:pol.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and hang up are part of the test


class FaultServer:
    """``with FaultServer(rate=0.2) as s: s.url`` — an OpenAI-compatible base URL ending in ``/v1``.

    Args:
        rate: share of chat requests answered by a fault instead of an answer.
        faults: the fault kinds to draw from (uniformly).
        seed: seed of the fault draws.
        port: port to listen on (0: any free one).
        stall_s: how long a ``timeout`` fault stalls before answering.
        model: the model name ``GET /v1/models`` reports.
        echo_auth: error bodies quote the request's Authorization header (as some servers do), to
            check that keys are scrubbed from every message that reaches a log or a run directory.
        alias: another name ``GET /v1/models/{alias}`` resolves to ``model`` (as an API resolves an
            alias to its snapshot).
        refuse: request fields answered by HTTP 400 in OpenAI's words ("Unsupported parameter: 'top_p'
            is not supported with this model."), as its reasoning models answer ``temperature``/``top_p``.
    """

    def __init__(
        self,
        rate: float = 0.2,
        faults: tuple[str, ...] = FAULTS,
        seed: int = 0,
        port: int = 0,
        stall_s: float = 1.5,
        model: str = "fault-model",
        alias: str | None = None,
        echo_auth: bool = False,
        refuse: tuple[str, ...] = (),
    ) -> None:
        self.echo_auth = echo_auth
        self.refuse = refuse
        self.rate, self.faults, self.stall_s, self.model, self.alias = rate, faults, stall_s, model, alias
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.answers_sent: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        """Every chat or completion request body received, in order (what the client sent)."""
        self.authorizations: list[str] = []
        """The ``Authorization`` header of every chat or completion request ("" when absent)."""
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None, length: int | None = None):
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data) if length is None else length))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            def do_GET(self) -> None:  # noqa: N802
                name = self.path.rstrip("/").rsplit("/", 1)[-1]
                if "/models/" in self.path and name in (outer.model, outer.alias):  # an alias resolves
                    self._send(200, json.dumps({"id": outer.model, "object": "model", "owned_by": "test"}).encode())
                elif self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": outer.model, "object": "model", "owned_by": "test"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, b'{"error": {"message": "bad json"}}')
                    return
                with outer._lock:
                    outer.authorizations.append(self.headers.get("authorization", ""))
                refused = [f for f in outer.refuse if f in body]
                if refused:
                    with outer._lock:
                        outer.bodies.append(body)
                        outer.counts["refused"] += 1
                    said = f"Unsupported parameter: '{refused[0]}' is not supported with this model."
                    error = {"message": said, "type": "invalid_request_error", "param": refused[0]}
                    self._send(400, json.dumps({"error": error}).encode())
                    return
                with outer._lock:
                    outer.counts["requests"] += 1
                    outer.bodies.append(body)
                    fault = outer._rng.choice(outer.faults) if outer._rng.random() < outer.rate else None
                    if fault:
                        outer.counts[fault] += 1
                if fault == "429":
                    self._send(429, b'{"error": {"message": "rate limited"}}', {"retry-after": "0"})
                elif fault == "500":
                    auth = self.headers.get("authorization", "") if outer.echo_auth else ""
                    self._send(500, json.dumps({"error": {"message": f"internal (auth {auth})"}}).encode())
                elif fault == "401_echo":
                    said = echoed_credentials(self.headers.get("authorization", ""))
                    self._send(401, json.dumps({"error": {"message": f"invalid credentials: {said}"}}).encode())
                elif fault == "echo_reply":
                    reply = outer._reply(body)
                    said = echoed_credentials(self.headers.get("authorization", ""))
                    for ch in reply["choices"]:
                        ch["message"]["content"] = f"Your request said {said}. [DONATE $1]"
                    self._send(200, json.dumps(reply).encode())
                elif fault == "timeout":
                    time.sleep(outer.stall_s)
                    self._send(504, b'{"error": {"message": "stalled"}}')
                elif fault == "invalid_json":
                    self._send(200, b'{"choices": [{"message": ')
                elif fault == "truncated":
                    data = json.dumps(outer._reply(body)).encode()
                    self._send(200, data[: len(data) // 2], length=len(data) // 2)
                elif fault == "empty_choices":
                    self._send(200, json.dumps({"id": "x", "model": outer.model, "choices": []}).encode())
                elif fault == "null_content":
                    reply = outer._reply(body)
                    for ch in reply["choices"]:
                        ch["message"]["content"] = None
                    self._send(200, json.dumps(reply).encode())
                elif fault == "empty_content":
                    reply = outer._reply(body)
                    with outer._lock:
                        blanks = [outer._rng.choice(("", " ", "\n  ")) for _ in reply["choices"]]
                    for ch, blank in zip(reply["choices"], blanks, strict=True):
                        ch["message"]["content"] = blank
                    self._send(200, json.dumps(reply).encode())
                else:
                    reply = outer._reply(body)
                    with outer._lock:
                        outer.counts["ok"] += 1
                        outer.answers_sent.extend(ch["message"]["content"] for ch in reply["choices"])
                    self._send(200, json.dumps(reply).encode())

        self._server = _Server(("127.0.0.1", port), _H)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        n = int(body.get("n") or 1)
        seed = body.get("seed")
        key = json.dumps([body.get("messages"), seed], sort_keys=True)
        choices = []
        for i in range(n):
            h = int.from_bytes(hashlib.sha256(f"{key}|{i}".encode()).digest()[:4], "little")
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": ANSWERS[h % len(ANSWERS)]},
                    "finish_reason": "stop",
                }
            )
        return {"id": "cmpl", "object": "chat.completion", "model": self.model, "choices": choices}

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
