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


USER, PASSWORD, KEY = "alice-ops", "sk-urlpass-9f8e7d6c5b2a", "sk-envkey-1a2b3c4d5e6f"
"""The credentials of the entry-way scan: a user and password inside a base URL, an API key."""


def secret_forms(*secrets: str) -> dict[str, str]:
    """Every form of ``secrets`` a leak could take: raw, percent-encoded, JSON-escaped, and the HTTP
    Basic ``base64(user:password)`` of the URL credentials (standard and URL-safe alphabets)."""
    import base64
    import urllib.parse

    forms = {}
    for s in secrets:
        forms[s] = s
        forms[f"quote({s})"] = urllib.parse.quote(s, safe="")
        forms[f"json({s})"] = json.dumps(s)[1:-1]
    pair = f"{USER}:{PASSWORD}".encode()
    forms["base64(user:password)"] = base64.b64encode(pair).decode()
    forms["urlsafe_base64(user:password)"] = base64.urlsafe_b64encode(pair).decode()
    return forms


def _entry(way: str, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Arguments naming the simulator with the secret given ``way``; the environment set to match."""
    for name in (
        "COLLAPSE_PROBE_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "COLLAPSE_PROBE_BASE_URL",
        "COLLAPSE_PROBE_SIM",
    ):
        monkeypatch.delenv(name, raising=False)
    with_creds = url.replace("http://", f"http://{USER}:{PASSWORD}@")
    if way == "url":
        return ["--sim", f"openai-compatible/m@{with_creds}"]
    if way == "env-key":
        monkeypatch.setenv("COLLAPSE_PROBE_API_KEY", KEY)
        return ["--sim", f"openai-compatible/m@{url}"]
    if way == "openai-key":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        return ["--sim", "openai/m"]
    if way == "env-url":
        monkeypatch.setenv("COLLAPSE_PROBE_BASE_URL", with_creds)
        return ["--sim", "openai-compatible/m"]
    if way == "env-sim":
        monkeypatch.setenv("COLLAPSE_PROBE_SIM", f"openai-compatible/m@{with_creds}")
        return []
    if way == "M-url":
        return ["--sim", "openai-compatible/m", "-M", f"sim.base_url={with_creds}"]
    assert way == "config"
    (tmp_path / "audit.yaml").write_text(f"sim: openai-compatible/m@{with_creds}\n")
    return ["--config", "audit.yaml"]


@pytest.mark.parametrize("way", ["url", "env-key", "openai-key", "env-url", "env-sim", "M-url", "config"])
def test_echoed_credentials_reach_no_output(way, tmp_path, monkeypatch, capsys):
    """A server that quotes the request's credentials in its 401 bodies and in its replies: the key,
    however it was given, is in no terminal line, run file or cache entry, in none of its forms."""
    from collapse_probe.core._secrets import forget_secrets

    forget_secrets()  # as in a fresh process: nothing registered before this run's own configuration
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache") + "/")
    with FaultServer(rate=0.5, seed=3, faults=("401_echo", "echo_reply")) as s:
        code = main(["audit", *_entry(way, s.url, tmp_path, monkeypatch), "--states", "2", "--samples", "6",
                     "--partition", "exact", "--no-exact", "--out", "runs/audit", "--no-progress", "-vv", *FAST])  # fmt: skip
        assert s.counts["401_echo"] > 0 and s.counts["echo_reply"] > 0 and s.counts["ok"] > 0
    out = capsys.readouterr()
    assert code in (0, 1), out.err[-2000:]
    blobs = {"stdout+stderr": out.out + out.err}
    for p in tmp_path.rglob("*"):
        if p.is_file() and p.name != "audit.yaml":  # the user's own file holds what the user wrote
            blobs[str(p.relative_to(tmp_path))] = p.read_text(encoding="utf-8", errors="replace")
    # the 401 body was shown or recorded, scrubbed (which failure the terminal names first depends on the
    # order the concurrent requests met the server's faults)
    assert any("invalid credentials" in text for text in blobs.values()), sorted(blobs)
    assert "runs/audit/samples.jsonl" in blobs and any(n.startswith("cache") for n in blobs), sorted(blobs)
    secrets = (KEY,) if way in ("env-key", "openai-key") else (USER, PASSWORD)
    for name, text in blobs.items():
        for form_name, form in secret_forms(*secrets).items():
            assert form not in text, f"{form_name} found in {name}"
    forget_secrets()
