"""Secrets, deadlines and odd answers against real HTTP servers on 127.0.0.1: URL credentials in a
spec never reach a file or the terminal, a reply quoting the key is refused before it is cached, a
key with an embedded newline is scrubbed from the transport's error, ``timeout`` bounds the whole
request, negative token usage is refused, and content given as a list of parts is read."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _servers import Recorded, Reply, WireServer  # noqa: E402

from collapse_probe.cli import main  # noqa: E402
from collapse_probe.core._identity import http_fingerprint  # noqa: E402
from collapse_probe.core._secrets import redact_spec, scrub  # noqa: E402
from collapse_probe.models import CachedModel, GenerationRequest, ResponseCache, SamplingParams  # noqa: E402
from collapse_probe.models.openai import make_openai_compatible_model  # noqa: E402

PW = "pw-SECRET-93af1c7e"
QK = "qk-SECRET-77b2e0d4"
KEY = "sk-env-SECRET-5c1d9e0f2a"


def chat(text: str = "Sure! [DONATE $1]", usage: dict | None = None, content=None):
    def handler(rec: Recorded) -> Reply:
        if rec.method == "GET":
            return Reply(body={"object": "list", "data": [{"id": "m", "object": "model"}]})
        msg = {"role": "assistant", "content": text if content is None else content}
        return Reply(body={
            "id": "c1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
            "usage": usage or {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        })  # fmt: skip

    return handler


def req(text: str = "hello") -> GenerationRequest:
    return GenerationRequest(({"role": "user", "content": text},), n=1, params=SamplingParams(seed=1))


def _blobs(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache") + "/")
    for var in ("COLLAPSE_PROBE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COLLAPSE_PROBE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_url_credentials_in_a_spec_reach_no_file_and_no_terminal_line_and_the_run_resumes(workdir, capsys):
    with WireServer(chat()) as srv:
        host = srv.url.removeprefix("http://")
        sim = f"openai-compatible/m@http://user:{PW}@{host}/v1?api_key={QK}&deployment=d1"
        args = ["audit", "--sim", sim, "--states", "2", "--samples", "4", "--partition", "exact", "--no-exact",
                "--out", "runs/a", "--no-progress", "-vv", "-M", "sim.max_retries=0"]  # fmt: skip
        assert main(args) == 0
        assert main(args) == 0  # the redacted spec on disk is the same run: it resumes, not "another run"
        assert main(["card", "runs/a", "--out", "cards/sim.md"]) == 0
        assert srv.requests  # the real URL was used to connect
    out = capsys.readouterr()
    blobs = {"terminal": (out.out + out.err).encode(), **_blobs(workdir)}
    assert "runs/a/config.json" in blobs and any(k.startswith("cache") for k in blobs)
    for name, data in blobs.items():
        for secret in (PW, QK):
            assert secret.encode() not in data, f"{secret} in {name}"
    cfg = json.loads(blobs["runs/a/config.json"])
    (fp,) = cfg["fingerprints"].values()
    assert "deployment=d1" in fp and "***" not in fp  # the identity keeps what tells models apart


def test_fingerprints_tell_deployments_apart_and_hold_no_secret():
    a = http_fingerprint(f"http://u:{PW}@h:1/v1?deployment=a&api_key={QK}", "m")
    b = http_fingerprint(f"http://u:{PW}@h:1/v1?deployment=b&api_key={QK}", "m")
    c = http_fingerprint("http://h:1/v1?deployment=a&api_key=other-key-123", "m")
    assert a != b and a == c and PW not in a and QK not in a
    assert redact_spec(f"vs:openai-compatible/m@http://u:{PW}@h/v1?token={QK}") == (
        "vs:openai-compatible/m@http://***@h/v1?token=***"
    )


def test_a_reply_quoting_the_key_is_an_infrastructure_failure_never_cached(workdir, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_API_KEY", KEY)

    def echo(rec: Recorded) -> Reply:
        return chat(f"your header was {rec.headers.get('authorization')}")(rec)

    with WireServer(echo) as srv:
        model = make_openai_compatible_model("openai-compatible/m", f"m@{srv.url}/v1", max_retries=0)
        cache = ResponseCache(workdir / "c.sqlite")
        [res] = asyncio.run(CachedModel(model, cache).generate([req()]))
    assert not res.ok and "configured secret" in res.error and KEY not in res.error
    assert len(cache) == 0


def test_a_key_with_an_embedded_newline_is_scrubbed_from_the_transport_error(workdir, monkeypatch):
    key = "sk-line-one-SECRET\nline-two-SECRET-42"
    monkeypatch.setenv("COLLAPSE_PROBE_API_KEY", key)
    with WireServer(chat()) as srv:
        model = make_openai_compatible_model("openai-compatible/m", f"m@{srv.url}/v1", max_retries=0)
        [res] = asyncio.run(model.generate([req()]))
    assert not res.ok
    for part in (key, "sk-line-one-SECRET", "line-two-SECRET-42", repr(key)[1:-1]):
        assert part not in res.error, res.error


def test_bearer_and_escaped_forms_of_a_key_are_scrubbed():
    from collapse_probe.models._http import Secret

    Secret("sk-bearer-SECRET-0011")
    text = 'Authorization: Bearer sk-bearer-SECRET-0011 {"k": "sk-bearer-SECRET-0011"} b\'sk-bearer-SECRET-0011\''
    assert "SECRET-0011" not in scrub(text)


class Trickle:
    """Answers headers at once, then one byte of the body a second (a read never times out)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        body = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "slow"}}]}'
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body))
            for b in body:
                if self.stop.is_set():
                    break
                conn.sendall(bytes([b]))
                time.sleep(1.0)
        except OSError:
            pass
        finally:
            conn.close()


def test_timeout_bounds_the_whole_request_against_a_server_trickling_a_byte_a_second(workdir):
    srv = Trickle()
    try:
        model = make_openai_compatible_model("openai-compatible/m", f"m@{srv.url}", timeout=2.0, max_retries=0)
        t0 = time.monotonic()
        [res] = asyncio.run(model.generate([req()]))
        took = time.monotonic() - t0
    finally:
        srv.stop.set()
        srv.sock.close()
    assert not res.ok and "within 2 s" in res.error
    assert took < 6, took  # the body would take ~80 s at a byte a second


def test_negative_token_usage_is_refused_and_the_run_resumes(workdir, capsys):
    with WireServer(chat(usage={"prompt_tokens": -5, "completion_tokens": 3})) as srv:
        sim = f"openai-compatible/m@{srv.url}/v1"
        args = ["audit", "--sim", sim, "--states", "1", "--samples", "3", "--partition", "exact", "--no-exact",
                "--out", "runs/neg", "--no-progress", "-M", "sim.max_retries=0"]  # fmt: skip
        first = main(args)
        second = main(args)
    err = capsys.readouterr().err
    assert "rerun with -v" not in err
    assert first in (0, 1) and second in (0, 1), err[-2000:]
    usage = Path("runs/neg/usage.json")
    if usage.exists():
        assert "-5" not in usage.read_text()
    assert "-5 input tokens" in err or "expected a whole number" in err


@pytest.mark.parametrize(
    ("content", "text", "error"),
    [
        ([{"type": "text", "text": "Sure "}, {"type": "text", "text": "[DONATE $1]"}], "Sure [DONATE $1]", None),
        (["plain ", "parts"], "plain parts", None),
        (5, None, "expected a string or a list of content parts"),
        ([{"type": "image_url", "image_url": {"url": "x"}}], None, "expected a text part"),
        ({"text": "a dict"}, None, "expected a string or a list of content parts"),
    ],
)
def test_content_as_a_list_of_parts_is_read_or_refused_in_one_line(workdir, content, text, error):
    with WireServer(chat(content=content)) as srv:
        model = make_openai_compatible_model("openai-compatible/m", f"m@{srv.url}/v1", max_retries=0)
        [res] = asyncio.run(model.generate([req()]))
    if error is None:
        assert res.ok and res.completions[0].text == text
    else:
        assert not res.ok and error in res.error and "\n" not in res.error
