"""Model identity: a changed model behind the same spec is never served from the cache or resumed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from collapse_probe.core._identity import (
    UNVERIFIED,
    clean_url,
    file_fingerprint,
    http_fingerprint,
    model_fingerprint,
    same_model,
)
from collapse_probe.errors import ConfigError
from collapse_probe.models import GenerationRequest, get_model
from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
from collapse_probe.report.gate_text import markdown

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
from _fault_server import FaultServer, free_port  # noqa: E402

POLICY_A = {"responses": [{"text": "Please donate, it helps kids.", "p": 1.0}]}
POLICY_B = {"responses": [{"text": "Please donate to the charity.", "p": 1.0}]}
DONOR = {
    "responses": [{"text": "No thanks. [DONATE $0]", "p": 1.0}],
    "rules": [{"if_contains": ["kids"], "responses": [{"text": "Sure! [DONATE $2]", "p": 1.0}]}],
}


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data))
    st = path.stat()  # a rewrite within the same mtime tick must still be seen as a change
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_file_fingerprint_follows_content_and_is_memoised(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"a" * 1000)
    fp1 = file_fingerprint(f)
    assert fp1.startswith("sha256:") and file_fingerprint(f) == fp1
    _write(f, {"x": 1})
    assert file_fingerprint(f) != fp1
    d = tmp_path / "ckpt"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"\x00" * 64)
    fd = file_fingerprint(d)
    (d / "model.safetensors").write_bytes(b"\x01" * 64)
    assert file_fingerprint(d) != fd
    assert file_fingerprint(tmp_path / "missing").startswith("missing:")


def test_scripted_fingerprint_is_the_file_content(tmp_path):
    p = tmp_path / "m.json"
    _write(p, POLICY_A)
    a = get_model(f"scripted:{p}")
    _write(p, POLICY_B)
    b = get_model(f"scripted:{p}")  # rewritten in place: loaded again, another identity
    assert a is not b and a.fingerprint() != b.fingerprint()
    assert model_fingerprint(a) == a.fingerprint()


def test_http_fingerprint_names_the_served_model_without_credentials(monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_API_KEY", "sk-test-not-a-real-key")
    assert clean_url("https://user:secret@host:8443/v1/?key=abc#x") == "https://host:8443/v1"
    assert "secret" not in http_fingerprint("https://user:secret@host/v1?key=abc", "m")
    with FaultServer(rate=0.0, model="served-model-7b", alias="whatever") as s:
        model = get_model(f"openai-compatible/whatever@{s.url}")
        assert model.fingerprint() == http_fingerprint(s.url, "whatever", "served-model-7b")
        assert not model.fingerprint().endswith(UNVERIFIED)
    port = free_port()
    down = get_model(f"openai-compatible/whatever@http://127.0.0.1:{port}/v1", max_retries=0)
    assert down.fingerprint().endswith(UNVERIFIED)  # the server did not say what it serves
    assert same_model(down.fingerprint(), http_fingerprint(f"http://127.0.0.1:{port}/v1", "whatever", "x-1"))
    assert not same_model(http_fingerprint(s.url, "w", "a-1"), http_fingerprint(s.url, "w", "b-1"))


def _matrix(tmp_path: Path, out: str, **kw):
    cfg = CrossplayConfig(
        policies=[f"scripted:{tmp_path / 'cand.json'}"],
        simulators=[f"scripted:{tmp_path / 'donor.json'}"],
        tasks=2,
        rollouts=2,
        max_turns=1,
    )
    return run_crossplay(cfg, out=tmp_path / out, progress=False, report=False, **kw)


def test_changed_model_file_is_not_served_from_the_cache_nor_resumed(tmp_path):
    _write(tmp_path / "donor.json", DONOR)
    _write(tmp_path / "cand.json", POLICY_A)
    old = _matrix(tmp_path, "r1")
    assert old["cells"][0]["mean_reward"] > 0
    _write(tmp_path / "cand.json", POLICY_B)  # the candidate is retrained in place
    new = _matrix(tmp_path, "r2")  # a fresh --out, the same shared cache
    assert new["cells"][0]["mean_reward"] == 0.0
    with pytest.raises(ConfigError, match=r"model changed since this run started: scripted:.*cand\.json"):
        _matrix(tmp_path, "r1")
    fresh = _matrix(tmp_path, "r1", fresh=True)
    assert fresh["cells"][0]["mean_reward"] == 0.0
    assert any((tmp_path / "r1" / ".previous").iterdir())  # the old run is kept, not deleted
    assert len(set(fresh["fingerprints"].values())) == 2


def test_gate_refuses_a_run_that_mixes_two_models(tmp_path):
    from collapse_probe.pipelines.gate import evaluate_gate

    _write(tmp_path / "donor.json", DONOR)
    _write(tmp_path / "cand.json", POLICY_A)
    res = _matrix(tmp_path, "r1")
    spec = res["policies"][0]
    res["fingerprints"][spec] = ["sha256:aaa", "sha256:bbb"]
    verdict = evaluate_gate(res, spec)
    assert verdict.exit_code == 3 and "mixes outputs of different models" in markdown(verdict)


def test_cache_key_holds_the_fingerprint(tmp_path):
    from collapse_probe.models import ResponseCache

    req = GenerationRequest(messages=({"role": "user", "content": "hi"},))
    k1 = ResponseCache.key("scripted:x", req, 0, "", "sha256:1")
    k2 = ResponseCache.key("scripted:x", req, 0, "", "sha256:2")
    assert k1 != k2
