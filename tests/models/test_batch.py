"""Native batch APIs (OpenAI Batch, Anthropic Message Batches) through the official SDKs against local
servers that speak the batch wire formats: same samples and seeds as online calls, usage at the
batch discount, per-request failures as infrastructure failures, a pending batch resumed after a kill."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _servers import BatchProvider, WireServer, anthropic_router, gemini_generate, openai_router  # noqa: E402

from collapse_probe.models import (  # noqa: E402
    CachedModel,
    GenerationRequest,
    ResponseCache,
    SamplingParams,
    _batch,  # noqa: E402
    derive_seed,
)
from collapse_probe.models._usage import UsageLedger  # noqa: E402
from collapse_probe.models.anthropic import make_anthropic_model  # noqa: E402
from collapse_probe.models.google import make_google_model  # noqa: E402
from collapse_probe.models.openai import make_openai_model  # noqa: E402

KEY = "sk-batch-SECRET-0123456789"


@pytest.fixture
def batch_on(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setattr(
        _batch, "SETTINGS", _batch.BatchSettings(mode="on", poll_s=0.01, state_dir=tmp_path, progress=False)
    )
    ledger = UsageLedger()
    monkeypatch.setattr("collapse_probe.models._usage.LEDGER", ledger)
    return ledger


def req(text, n=1, seed=None, **params):
    return GenerationRequest(({"role": "user", "content": text},), n=n, params=SamplingParams(seed=seed, **params))


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
def test_batch_answers_equal_online_answers_and_cost_half(provider, batch_on, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    router, make, spec = {
        "openai": (openai_router, make_openai_model, "openai/gpt-5-mini"),
        "anthropic": (anthropic_router, make_anthropic_model, "anthropic/claude-haiku-4-5"),
        "google": (gemini_generate, make_google_model, "google/gemini-2.5-flash"),
    }[provider]
    requests = [req(f"state {i}", n=3, seed=i, temperature=0.7) for i in range(4)] + [req("FAIL this one", n=2, seed=9)]
    with WireServer(BatchProvider(router)) as srv:
        model = make(spec, spec.split("/", 1)[1], base_url=srv.url + ("/v1" if provider == "openai" else ""))
        batched = asyncio.run(model.generate(requests))
        batch_calls = [
            r for r in srv.requests if r.method == "POST" and ("batches" in r.path or "batchGenerate" in r.path)
        ]
        batch_on.by_spec.clear()
        _batch.SETTINGS.mode = "off"
        online = asyncio.run(model.generate(requests[:4]))
    assert len(batch_calls) == 1 and len(srv.handler.created) == 1
    for b, o in zip(batched[:4], online, strict=True):
        assert b.ok and [c.text for c in b.completions] == [c.text for c in o.completions]
    assert not batched[4].ok and "refused in batch" in batched[4].error and srv.handler.created[0] in batched[4].error
    if provider == "openai":  # native n: one line per request, with the seed of its first sample
        lines = [json.loads(x) for x in srv.handler.files["file-1"].decode().splitlines()]
        assert [ln["body"]["n"] for ln in lines] == [3, 3, 3, 3, 2]
        assert [ln["body"]["seed"] for ln in lines] == [derive_seed(i, 0) for i in range(4)] + [derive_seed(9, 0)]
        assert all(ln["url"] == "/v1/chat/completions" for ln in lines)
    if provider == "google":  # candidateCount: one inlined request per state, with its first sample's seed
        [b] = srv.handler.batches.values()
        assert len(b["responses"]) == 5
    uploads = [r for r in srv.requests if r.path.startswith("/v1/files") or "atch" in r.path]
    assert uploads and all(
        r.headers["user-agent"].startswith(("AsyncOpenAI/", "AsyncAnthropic/", "google-genai-sdk/")) for r in uploads
    )
    # the batch's usage is charged at half the online price of the same tokens
    online_usage = batch_on.snapshot()[spec]
    assert online_usage.cost_usd and online_usage.cost_usd > 0


def test_batch_usage_is_charged_at_the_discount(batch_on):
    requests = [req(f"q{i}", n=2, seed=i) for i in range(3)]
    with WireServer(BatchProvider(openai_router)) as srv:
        model = make_openai_model("openai/gpt-5-mini", "gpt-5-mini", base_url=srv.url + "/v1")
        asyncio.run(model.generate(requests))
        batched = batch_on.snapshot()["openai/gpt-5-mini"]
        batch_on.by_spec.clear()
        _batch.SETTINGS.mode = "off"
        asyncio.run(model.generate(requests))
        online = batch_on.snapshot()["openai/gpt-5-mini"]
    assert (batched.requests, batched.input_tokens, batched.output_tokens) == (
        online.requests,
        online.input_tokens,
        online.output_tokens,
    )
    assert batched.cost_usd == pytest.approx(online.cost_usd / 2)


@pytest.mark.parametrize(("router", "make", "spec"), [
    (openai_router, make_openai_model, "openai/gpt-5-mini"),
    (anthropic_router, make_anthropic_model, "anthropic/claude-haiku-4-5"),
    (gemini_generate, make_google_model, "google/gemini-2.5-flash"),
])  # fmt: skip
def test_a_pending_batch_is_resumed_after_a_kill_and_lands_in_the_cache(
    router, make, spec, batch_on, tmp_path, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    requests = [req(f"s{i}", n=2, seed=i) for i in range(3)]
    provider = BatchProvider(router, polls=10**6)  # never ends while the first process waits
    with WireServer(provider) as srv:
        base = srv.url + ("/v1" if spec.startswith("openai") else "")
        model = CachedModel(make(spec, spec.split("/", 1)[1], base_url=base), ResponseCache(tmp_path / "c.sqlite"))

        async def killed() -> None:  # the process dies once the batch is submitted and being polled
            task = asyncio.ensure_future(model.generate(requests))
            for _ in range(600):
                await asyncio.sleep(0.05)
                if (tmp_path / "batches.jsonl").exists():
                    break
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(killed())
        journal = [json.loads(x) for x in (tmp_path / "batches.jsonl").read_text().splitlines()]
        assert [e["event"] for e in journal] == ["submitted"]
        provider.polls = 0  # the provider finishes the batch while nobody is watching
        results = asyncio.run(model.generate(requests))
        assert all(r.ok for r in results)
        assert len(provider.created) == 1  # the rerun polled the pending batch, it did not submit again
        journal = [json.loads(x) for x in (tmp_path / "batches.jsonl").read_text().splitlines()]
        assert [e["event"] for e in journal] == ["submitted", "finished"]
        n_before = len(srv.requests)
        again = asyncio.run(model.generate(requests))  # now all from the cache
        assert len(srv.requests) == n_before
    assert [c.text for r in again for c in r.completions] == [c.text for r in results for c in r.completions]
    assert KEY not in (tmp_path / "batches.jsonl").read_text()


def test_auto_mode_batches_only_large_independent_sampling(batch_on, monkeypatch):
    settings = _batch.BatchSettings(mode="auto", auto=True, threshold=5, poll_s=0.01, progress=False)
    monkeypatch.setattr(_batch, "SETTINGS", settings)
    with WireServer(BatchProvider(anthropic_router)) as srv:
        model = make_anthropic_model("anthropic/c", "c", base_url=srv.url)
        asyncio.run(model.generate([req("a", n=4)]))  # 4 samples: below the threshold, online
        assert not srv.handler.created
        asyncio.run(model.generate([req("b", n=5)]))  # 5 samples: batched
        assert len(srv.handler.created) == 1
        settings.auto = False  # a multi-turn command: never automatic
        asyncio.run(model.generate([req("c", n=6)]))
        assert len(srv.handler.created) == 1


def test_audit_samples_through_one_batch_automatically_and_records_failures(tmp_path, monkeypatch, fresh_models):
    """``collapse-probe audit`` against an OpenAI batch endpoint: above the threshold all states go
    into one batch; the results carry the batch-priced usage; ``--no-batch`` samples online."""
    from collapse_probe.cli import main
    from collapse_probe.models._usage import LEDGER

    monkeypatch.setattr(LEDGER, "run", None)
    monkeypatch.setattr(_batch, "SETTINGS", _batch.BatchSettings(poll_s=0.01))
    monkeypatch.setenv("COLLAPSE_PROBE_BATCH_THRESHOLD", "40")
    provider = BatchProvider(openai_router, polls=1)
    with WireServer(provider) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        args = [
            "audit",
            "--sim",
            "openai/gpt-5-mini",
            "--states",
            "3",
            "--samples",
            "20",
            "--partition",
            "exact",
            "--no-progress",
        ]
        assert main([*args, "--out", str(tmp_path / "a")]) == 0
        assert len(provider.created) == 1  # 3 openings x 20 samples >= 40: one batch for the whole audit
        lines = provider.files["file-1"].decode().splitlines()
        assert len(lines) >= 3 and all(json.loads(x)["body"]["n"] == 20 for x in lines)
        batched = json.loads((tmp_path / "a" / "results.json").read_text())
        assert (tmp_path / "a" / "batches.jsonl").exists()
        assert main([*args, "--no-batch", "--no-cache", "--out", str(tmp_path / "b")]) == 0
        assert len(provider.created) == 1
        online = json.loads((tmp_path / "b" / "results.json").read_text())
    ub, uo = batched["usage"]["openai/gpt-5-mini"], online["usage"]["openai/gpt-5-mini"]
    assert (ub["requests"], ub["input_tokens"], ub["output_tokens"]) == (
        uo["requests"],
        uo["input_tokens"],
        uo["output_tokens"],
    )
    assert ub["cost_usd"] == pytest.approx(uo["cost_usd"] / 2)
    assert batched["summary"]["collapse_error"]["estimate"] == online["summary"]["collapse_error"]["estimate"]
