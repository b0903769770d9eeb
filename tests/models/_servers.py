"""Real HTTP servers on 127.0.0.1 that speak the providers' wire formats, for the API-backend tests.

Each server runs ``http.server.ThreadingHTTPServer`` in a background thread; a *handler* function
turns each recorded request into a reply. The reply functions below answer deterministically from
the request (the text names the last user message, the seed and the sample index), so a test can
check that what the backend sent reached the wire and that what came back was parsed.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Recorded], Reply]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is expected in the timeout test


class WireServer:
    """``with WireServer(handler) as s: s.url`` — records every request in ``s.requests``."""

    def __init__(self, handler: Handler, latency: float = 0.0) -> None:
        self.handler = handler
        self.latency = latency
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length) if length else b""
                ctype = self.headers.get("content-type", "")
                body: Any
                if ctype.startswith("multipart/form-data"):
                    body = _multipart(raw, ctype)
                else:
                    try:
                        body = json.loads(raw) if raw else None
                    except json.JSONDecodeError:
                        body = raw.decode(errors="replace")
                rec = Recorded(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with outer._lock:
                    outer.requests.append(rec)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    if outer.latency:
                        time.sleep(outer.latency)
                    reply = outer.handler(rec)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1
                if isinstance(reply.body, bytes):  # a file download (JSONL batch results)
                    data, ctype = reply.body, "application/octet-stream"
                else:
                    data, ctype = json.dumps(reply.body).encode(), "application/json"
                self.send_response(reply.status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._server = _QuietServer(("127.0.0.1", 0), _H)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def _multipart(raw: bytes, ctype: str) -> dict[str, Any]:
    """Fields of a ``multipart/form-data`` body (file parts as bytes), as a file upload sends them."""
    from email.parser import BytesParser
    from email.policy import HTTP

    msg = BytesParser(policy=HTTP).parsebytes(b"content-type: " + ctype.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, Any] = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        fields[str(name)] = payload if part.get_filename() else payload.decode()
    return fields


def words(text: Any) -> int:
    """The fake servers' token count: whitespace-separated words."""
    return len(str(text or "").split())


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def flaky(handler: Handler, failures: list[Reply]) -> Handler:
    """Answer the first requests with ``failures`` (in order), then delegate to ``handler``."""
    queue = list(failures)
    lock = threading.Lock()

    def _h(rec: Recorded) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return handler(rec)

    return _h


def _last_user(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            c = m.get("content")
            text = " ".join(b.get("text", "") for b in c if b.get("type") == "text") if isinstance(c, list) else c
            if text:
                return text
    return ""


# ----------------------------------------------------------------------------- OpenAI Chat Completions


def openai_chat(rec: Recorded) -> Reply:
    """Chat Completions: ``n`` choices ``"<last user>|seed=<seed>|i=<i>"``; a user text starting with
    ``CALL`` while tools are offered gets a tool call of the first tool; logprobs -0.5 per word."""
    body = rec.body
    n = body.get("n", 1)
    text_base = _last_user(body["messages"])
    choices = []
    for i in range(n):
        text = f"{text_base}|seed={body.get('seed')}|i={i}"
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        if body.get("tools") and text_base.startswith("CALL"):
            name = body["tools"][0]["function"]["name"]
            msg = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_abc{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": '{"order_id": "#W1"}'},
                    }
                ],
            }
            finish = "tool_calls"
        choice: dict[str, Any] = {"index": i, "message": msg, "finish_reason": finish}
        if body.get("logprobs"):
            choice["logprobs"] = {
                "content": [{"token": w, "logprob": -0.5, "bytes": None, "top_logprobs": []} for w in text.split("|")]
            }
        choices.append(choice)
    prompt_tokens = sum(words(m.get("content")) for m in body["messages"]) + 3 * len(body["messages"])
    completion_tokens = sum(words(ch["message"].get("content")) + 2 for ch in choices)
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1764500000,
            "model": body["model"] + "-2025-08-07",
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "fp_test",
        }
    )


def openai_completions(rec: Recorded) -> Reply:
    """Legacy ``/completions``: ``n`` choices ``"<prompt tail>|seed=<seed>|i=<i>"``."""
    body = rec.body
    choices = []
    for i in range(body.get("n", 1)):
        text = f"{body['prompt'][-8:]}|seed={body.get('seed')}|i={i}"
        ch: dict[str, Any] = {"index": i, "text": text, "finish_reason": "length"}
        if body.get("logprobs"):
            ch["logprobs"] = {"tokens": ["a", "b"], "token_logprobs": [-0.25, -1.0]}
        choices.append(ch)
    return Reply(body={"id": "cmpl-1", "object": "text_completion", "choices": choices})


def openai_router(rec: Recorded) -> Reply:
    if rec.method == "GET" and "/models/" in rec.path:
        name = rec.path.rsplit("/models/", 1)[1]
        return Reply(body={"id": name + "-2025-08-07", "object": "model", "created": 1754000000, "owned_by": "system"})
    path = rec.path.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        return openai_chat(rec)
    if path.endswith("/completions"):
        return openai_completions(rec)
    return Reply(404, {"error": {"message": f"no route {rec.path}"}})


# ---------------------------------------------------------------------------- Anthropic Messages API


def anthropic_messages(rec: Recorded) -> Reply:
    """Messages API: one text block ``"<last user>|T=<temperature>"``, or a ``tool_use`` block for ``CALL``."""
    body = rec.body
    if "max_tokens" not in body:
        return Reply(
            400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}}
        )
    last = _last_user(body["messages"])
    if body.get("tools") and last.startswith("CALL"):
        content = [
            {"type": "text", "text": "Looking it up."},
            {"type": "tool_use", "id": "toolu_01", "name": body["tools"][0]["name"], "input": {"order_id": "#W1"}},
        ]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": f"{last}|T={body.get('temperature')}"}]
        stop = "end_turn"
    return Reply(
        body={
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": sum(words(_text(m.get("content"))) for m in body["messages"])
                + words(body.get("system")),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": sum(words(b.get("text")) + 1 for b in content),
            },
        }
    )


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(b.get("text") or b.get("content") or "") for b in content)
    return str(content or "")


def anthropic_router(rec: Recorded) -> Reply:
    """Messages API plus ``GET /v1/models/{id}`` (an alias resolves to its dated snapshot)."""
    if rec.method == "GET" and "/v1/models/" in rec.path:
        name = rec.path.rsplit("/", 1)[1]
        return Reply(
            body={"type": "model", "id": name + "-20251001", "display_name": name, "created_at": "2025-10-01T00:00:00Z"}
        )
    if rec.path.rstrip("/").endswith("/v1/messages"):
        return anthropic_messages(rec)
    return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {rec.path}"}})


# ------------------------------------------------------------------------------ Gemini generateContent


def gemini_generate(rec: Recorded, max_candidates: int = 8) -> Reply:
    """generateContent: ``candidateCount`` candidates ``"<last user>|seed=<seed>|i=<i>"``; ``CALL`` with
    tools gives a signed ``functionCall``; ``BLOCK`` gives a prompt blocked by the safety filter."""
    body = rec.body
    config = body.get("generationConfig", {})
    count = config.get("candidateCount", 1)
    if count > max_candidates:
        return Reply(
            400, {"error": {"code": 400, "message": "Multiple candidates is not enabled", "status": "INVALID_ARGUMENT"}}
        )
    last = ""
    for c in reversed(body["contents"]):
        if c["role"] == "user" and any("text" in p for p in c["parts"]):
            last = "".join(p.get("text", "") for p in c["parts"])
            break
    if last.startswith("BLOCK"):
        return Reply(body={"promptFeedback": {"blockReason": "SAFETY"}})
    candidates = []
    for i in range(count):
        if body.get("tools") and last.startswith("CALL"):
            name = body["tools"][0]["functionDeclarations"][0]["name"]
            parts = [{"functionCall": {"name": name, "args": {"order_id": "#W1"}}, "thoughtSignature": "c2lnbmVk"}]
            finish = "STOP"
        else:
            parts = [{"text": "thinking...", "thought": True}, {"text": f"{last}|seed={config.get('seed')}|i={i}"}]
            finish = "STOP"
        cand: dict[str, Any] = {"index": i, "content": {"role": "model", "parts": parts}, "finishReason": finish}
        if config.get("responseLogprobs"):
            cand["logprobsResult"] = {"chosenCandidates": [{"token": "x", "logProbability": -0.75}] * 3}
        candidates.append(cand)
    return Reply(body={"candidates": candidates, "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5}})


# ------------------------------------------------------------------------------------------ batch APIs


class BatchProvider:
    """The batch endpoints of OpenAI (``/v1/files``, ``/v1/batches``) and Anthropic
    (``/v1/messages/batches``) over an online handler that answers each batched request.

    A batch stays in progress for ``polls`` status reads, then ends. A request whose last user text
    starts with ``FAIL`` is answered with an error line (OpenAI: in the error file with HTTP 400;
    Anthropic: ``errored``), like a request the provider refused inside an accepted batch.
    """

    def __init__(self, online: Handler, polls: int = 2) -> None:
        self.online = online
        self.polls = polls
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, rec: Recorded) -> Reply:
        path = rec.path.split("?", 1)[0]
        with self._lock:
            if path == "/v1/files" and rec.method == "POST":
                return self._upload(rec)
            if path.startswith("/v1/files/") and path.endswith("/content"):
                return Reply(body=self.files[path.split("/")[3]])
            if path == "/v1/batches" and rec.method == "POST":
                return self._openai_create(rec)
            if path.startswith("/v1/batches/"):
                return self._openai_status(path.split("/")[3])
            if path == "/v1/messages/batches" and rec.method == "POST":
                return self._anthropic_create(rec)
            if path.startswith("/v1/messages/batches/") and path.endswith("/results"):
                return Reply(body=self.batches[path.split("/")[4]]["results"])
            if path.startswith("/v1/messages/batches/"):
                return self._anthropic_status(path.split("/")[4], rec.headers.get("host", ""))
            if path.endswith(":batchGenerateContent"):
                return self._gemini_create(rec)
            if "/batches/" in path and rec.method == "GET":
                return self._gemini_status(path.rsplit("/", 1)[1])
        return self.online(rec)

    # -- Gemini (inlined requests)

    def _gemini_create(self, rec: Recorded) -> Reply:
        bid = f"gb{len(self.batches) + 1}"
        responses = []
        for item in rec.body["batch"]["inputConfig"]["requests"]["requests"]:
            request = item["request"]
            text = "".join(p.get("text", "") for p in request["contents"][-1]["parts"])
            if text.startswith("FAIL"):
                responses.append({"error": {"code": 400, "message": "refused in batch", "status": "INVALID_ARGUMENT"},
                                  "metadata": item.get("metadata")})  # fmt: skip
            else:
                reply = self.online(Recorded("POST", "/v1beta/" + request["model"] + ":generateContent", {}, request))
                responses.append({"response": reply.body, "metadata": item.get("metadata")})
        model = rec.path.split("/models/", 1)[1].split(":", 1)[0]
        self.batches[bid] = {"reads": 0, "responses": responses, "model": model,
                             "name": rec.body["batch"].get("displayName", "")}  # fmt: skip
        self.created.append(bid)
        return self._gemini_status(bid, count=False)

    def _gemini_status(self, bid: str, count: bool = True) -> Reply:
        b = self.batches[bid]
        if count:
            b["reads"] += 1
        ended = b["reads"] > self.polls
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": f"batches/{bid}", "displayName": b["name"], "model": f"models/{b['model']}",
            "state": "BATCH_STATE_SUCCEEDED" if ended else "BATCH_STATE_RUNNING",
            "createTime": "2026-11-30T09:00:00Z", "updateTime": "2026-11-30T09:00:01Z",
        }  # fmt: skip
        if ended:
            meta["output"] = {"inlinedResponses": {"inlinedResponses": b["responses"]}}
        return Reply(body={"name": f"batches/{bid}", "metadata": meta, "done": ended})

    # -- OpenAI

    def _upload(self, rec: Recorded) -> Reply:
        fid = f"file-{len(self.files) + 1}"
        data = rec.body["file"]
        self.files[fid] = data
        return Reply(
            body={
                "id": fid,
                "object": "file",
                "bytes": len(data),
                "created_at": 1764500000,
                "filename": "batch.jsonl",
                "purpose": rec.body["purpose"],
                "status": "processed",
                "expires_at": None,
                "status_details": None,
            }  # fmt: skip
        )

    def _openai_create(self, rec: Recorded) -> Reply:
        bid = f"batch_{len(self.batches) + 1}"
        lines = [json.loads(x) for x in self.files[rec.body["input_file_id"]].decode().splitlines() if x.strip()]
        ok, bad = [], []
        for i, line in enumerate(lines):
            assert line["method"] == "POST" and line["url"] == rec.body["endpoint"]
            text = _last_user(line["body"]["messages"])
            if text.startswith("FAIL"):
                err = {
                    "error": {
                        "message": "refused in batch",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                }
                bad.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                            "response": {"status_code": 400, "request_id": f"req_{i}", "body": err}, "error": None})  # fmt: skip
            else:
                reply = self.online(Recorded("POST", line["url"], {}, line["body"]))
                ok.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                           "response": {"status_code": 200, "request_id": f"req_{i}", "body": reply.body}, "error": None})  # fmt: skip
        out_id, err_id = f"file-{bid}-out", f"file-{bid}-err"
        self.files[out_id] = "".join(json.dumps(x) + "\n" for x in ok).encode()
        self.files[err_id] = "".join(json.dumps(x) + "\n" for x in bad).encode()
        self.batches[bid] = {"reads": 0, "n": len(lines), "out": out_id, "err": err_id, "endpoint": rec.body["endpoint"],
                             "input": rec.body["input_file_id"], "ok": len(ok), "bad": len(bad)}  # fmt: skip
        self.created.append(bid)
        return self._openai_status(bid, count=False)

    def _openai_status(self, bid: str, count: bool = True) -> Reply:
        b = self.batches[bid]
        if count:
            b["reads"] += 1
        ended = b["reads"] > self.polls
        body = {
            "id": bid, "object": "batch", "endpoint": b["endpoint"], "errors": None, "input_file_id": b["input"],
            "completion_window": "24h", "status": "completed" if ended else ("validating" if b["reads"] == 0 else "in_progress"),
            "output_file_id": b["out"] if ended else None, "error_file_id": b["err"] if ended and b["bad"] else None,
            "created_at": 1764500000, "in_progress_at": 1764500001, "expires_at": 1764586400,
            "completed_at": 1764500100 if ended else None, "failed_at": None, "expired_at": None,
            "request_counts": {"total": b["n"], "completed": b["ok"] if ended else 0, "failed": b["bad"] if ended else 0},
            "metadata": None,
        }  # fmt: skip
        return Reply(body=body)

    # -- Anthropic

    def _anthropic_create(self, rec: Recorded) -> Reply:
        bid = f"msgbatch_{len(self.batches) + 1:04d}"
        results = []
        for r in rec.body["requests"]:
            text = _last_user(r["params"]["messages"])
            if text.startswith("FAIL"):
                result = {"type": "errored", "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "refused in batch"}}}  # fmt: skip
            else:
                reply = self.online(Recorded("POST", "/v1/messages", {}, r["params"]))
                result = {"type": "succeeded", "message": reply.body}
            results.append({"custom_id": r["custom_id"], "result": result})
        self.batches[bid] = {"reads": 0, "n": len(results), "results": "".join(json.dumps(x) + "\n" for x in results).encode(),
                             "ok": sum(x["result"]["type"] == "succeeded" for x in results)}  # fmt: skip
        self.created.append(bid)
        return self._anthropic_status(bid, rec.headers.get("host", ""), count=False)

    def _anthropic_status(self, bid: str, host: str, count: bool = True) -> Reply:
        b = self.batches[bid]
        if count:
            b["reads"] += 1
        ended = b["reads"] > self.polls
        n, ok = b["n"], b["ok"]
        body = {
            "id": bid, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": ok if ended else 0,
                               "errored": n - ok if ended else 0, "canceled": 0, "expired": 0},
            "ended_at": "2026-11-30T10:00:00Z" if ended else None, "created_at": "2026-11-30T09:00:00Z",
            "expires_at": "2026-12-01T09:00:00Z", "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"http://{host}/v1/messages/batches/{bid}/results" if ended else None,
        }  # fmt: skip
        return Reply(body=body)
