"""Offline tests of the API backends against real HTTP servers on 127.0.0.1 that speak each wire format."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _servers import (  # noqa: E402 - the helper sits beside this file
    Recorded,
    Reply,
    WireServer,
    anthropic_messages,
    closed_port,
    flaky,
    gemini_generate,
    openai_chat,
    openai_router,
)

from collapse_probe.errors import ConfigError, MissingDependencyError  # noqa: E402
from collapse_probe.models import CachedModel, GenerationRequest, ResponseCache, SamplingParams, derive_seed  # noqa: E402
from collapse_probe.models._http import RetryPolicy, parse_retry_after  # noqa: E402
from collapse_probe.models.anthropic import make_anthropic_model  # noqa: E402
from collapse_probe.models.google import SKIP_THOUGHT_SIGNATURE, make_google_model  # noqa: E402
from collapse_probe.models.openai import make_openai_compatible_model, make_openai_model  # noqa: E402

KEY = "sk-test-SECRET-0123456789abcdef"
FAST = {"backoff_base": 0.01, "backoff_max": 0.05}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_order_details",
        "description": "Look up an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture
def keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, KEY)
    for var in ("GOOGLE_API_KEY", "COLLAPSE_PROBE_API_KEY", "COLLAPSE_PROBE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def req(text="hello", n=1, seed=None, system=None, **params) -> GenerationRequest:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return GenerationRequest(tuple(messages), n=n, params=SamplingParams(seed=seed, **params))


def run(model, requests):
    return asyncio.run(model.generate(requests))


# ------------------------------------------------------------------------------------------ OpenAI


def test_openai_request_and_response(keys):
    with WireServer(openai_router) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", **FAST)
        r = req("hi there", n=3, seed=7, system="You are a donor.", temperature=0.7, stop=("\nUser:",), max_tokens=20)
        [res] = run(model, [r])
    assert res.ok, res.error
    [call] = srv.requests
    assert call.path == "/v1/chat/completions"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert call.headers["user-agent"].startswith("AsyncOpenAI/Python") and call.headers["x-stainless-lang"] == "python"
    assert call.headers["x-stainless-retry-count"] == "0"  # the SDK's retries are off: ours is the one policy
    body = call.body
    assert body["model"] == "gpt-test" and body["n"] == 3 and body["seed"] == derive_seed(7, 0)
    assert body["temperature"] == 0.7 and body["max_completion_tokens"] == 20 and body["stop"] == ["\nUser:"]
    assert body["top_p"] == 1.0  # the run's sampling, even at the API default (a provider's default may differ)
    assert body["messages"][0] == {"role": "system", "content": "You are a donor."}
    assert [c.text for c in res.completions] == [f"hi there|seed={derive_seed(7, 0)}|i={i}" for i in range(3)]
    assert all(c.finish_reason == "stop" for c in res.completions)


def test_openai_tool_calls_and_logprobs(keys):
    history = (
        {"role": "user", "content": "where is my order?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "get_order_details", "arguments": {"order_id": "#W0"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        {"role": "user", "content": "CALL again please"},
    )
    r = GenerationRequest(history, tools=(TOOL,), params=SamplingParams(logprobs=True))
    with WireServer(openai_router) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", **FAST)
        [res] = run(model, [r])
    body = srv.requests[0].body
    assert body["tools"] == [TOOL]
    assert body["logprobs"] is True
    wire_call = body["messages"][1]["tool_calls"][0]
    assert wire_call == {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_order_details", "arguments": '{"order_id": "#W0"}'},
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'}
    [c] = res.completions
    assert c.tool_calls == [{"name": "get_order_details", "arguments": {"order_id": "#W1"}, "id": "call_abc0"}]
    assert c.finish_reason == "tool_calls" and c.text == ""
    # a plain answer with logprobs: one -0.5 per "|"-separated piece of the scripted text
    with WireServer(openai_router) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", **FAST)
        [res] = run(model, [req("a", logprobs=True)])
    assert res.completions[0].token_logprobs == [-0.5, -0.5, -0.5]
    assert res.completions[0].n_tokens == 3


def test_openai_compatible_inline_url_transcript_and_optional_key(keys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with WireServer(openai_router) as srv:
        spec = f"openai-compatible/Qwen/Qwen2.5-0.5B@{srv.url}/v1"
        model = make_openai_compatible_model(spec, spec.split("/", 1)[1], prompt_style="transcript", **FAST)
        transcript = GenerationRequest(
            ({"role": "user", "content": "Hi"},),
            n=2,
            prompt="Persuader: Hi\nDonor:",
            params=SamplingParams(seed=3, logprobs=True),
        )
        chat = req("chat only", temperature=1.0)
        res_t, res_c = run(model, [transcript, chat])
    assert model.model == "Qwen/Qwen2.5-0.5B" and model.base_url == srv.url + "/v1"
    by_path = {r.path: r for r in srv.requests}
    t = by_path["/v1/completions"]
    assert "authorization" not in t.headers
    assert t.body["prompt"] == "Persuader: Hi\nDonor:" and t.body["n"] == 2 and t.body["logprobs"] == 1
    assert t.body["max_tokens"] == 96 and t.body["seed"] == derive_seed(3, 0)
    assert [c.text for c in res_t.completions] == [f"i\nDonor:|seed={derive_seed(3, 0)}|i={i}" for i in range(2)]
    assert res_t.completions[0].token_logprobs == [-0.25, -1.0] and res_t.completions[0].finish_reason == "length"
    c = by_path["/v1/chat/completions"]
    assert c.body["temperature"] == 1.0 and c.body["top_p"] == 1.0  # a local server's defaults may differ: always sent
    assert res_c.completions[0].text.startswith("chat only|")
    # the key is optional and read from $COLLAPSE_PROBE_API_KEY first
    monkeypatch.setenv("COLLAPSE_PROBE_API_KEY", KEY)
    with WireServer(openai_router) as srv:
        model = make_openai_compatible_model("openai-compatible/m", "m", base_url=srv.url + "/v1")
        run(model, [req()])
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_openai_compatible_needs_base_url(keys, monkeypatch):
    with pytest.raises(ConfigError, match="COLLAPSE_PROBE_BASE_URL"):
        make_openai_compatible_model("openai-compatible/m", "m")
    monkeypatch.setenv("COLLAPSE_PROBE_BASE_URL", "http://127.0.0.1:9/v1")
    assert make_openai_compatible_model("openai-compatible/m", "m").base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match="http:// or https://"):
        make_openai_compatible_model("openai-compatible/m", "m", base_url="127.0.0.1:8000")
    with pytest.raises(ConfigError, match="unknown option.*'concurency'"):
        make_openai_compatible_model("openai-compatible/m", "m", concurency=4)
    with pytest.raises(ConfigError, match="concurrency"):
        make_openai_compatible_model("openai-compatible/m", "m", concurrency=0)


def test_native_n_rejected_falls_back_to_per_sample_seeds(keys):
    def no_n(rec: Recorded) -> Reply:
        if rec.body.get("n", 1) > 1:
            return Reply(400, {"error": {"message": "Only one completion choice is allowed"}})
        return openai_chat(rec)

    with WireServer(no_n) as srv:
        model = make_openai_compatible_model("openai-compatible/m", "m", base_url=srv.url + "/v1", **FAST)
        r = req("x", n=4, seed=11).with_samples(10, 4)
        [res] = run(model, [r])
        [res2] = run(model, [req("y", n=2, seed=1)])
    assert res.ok and res2.ok
    seeds = sorted(rec.body["seed"] for rec in srv.requests[1:5])
    assert seeds == sorted(derive_seed(11, 10 + i) for i in range(4))
    assert [c.text.split("|")[1] for c in res.completions] == [f"seed={derive_seed(11, 10 + i)}" for i in range(4)]
    # once rejected, the model stops asking for n > 1
    assert all("n" not in rec.body for rec in srv.requests[5:]) and len(srv.requests) == 7


def test_short_native_answer_is_topped_up(keys):
    def one_choice(rec: Recorded) -> Reply:  # like a server that ignores n
        rec.body.pop("n", None)
        return openai_chat(rec)

    with WireServer(one_choice) as srv:
        model = make_openai_compatible_model("openai-compatible/m", "m", base_url=srv.url + "/v1", **FAST)
        [res] = run(model, [req("x", n=3, seed=5)])
    assert res.ok and len(res.completions) == 3
    assert len(srv.requests) == 3
    assert sorted(r.body["seed"] for r in srv.requests) == sorted(derive_seed(5, i) for i in range(3))


# ---------------------------------------------------------------------------------------- Anthropic


def test_anthropic_request_and_response(keys):
    history = (
        {"role": "system", "content": "You are a customer."},
        {"role": "user", "content": "Hello"},
        {"role": "user", "content": "Are you there?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "toolu_9",
                    "type": "function",
                    "function": {"name": "get_order_details", "arguments": '{"order_id": "#W0"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_9", "content": "shipped"},
    )
    r = GenerationRequest(history, n=3, params=SamplingParams(temperature=0.5, seed=1, stop=("###",), max_tokens=50))
    with WireServer(anthropic_messages) as srv:
        model = make_anthropic_model("anthropic/claude-test", "claude-test", base_url=srv.url, **FAST)
        [res] = run(model, [r])
    assert res.ok, res.error
    assert len(srv.requests) == 3  # no n in the API: three calls
    call = srv.requests[0]
    assert call.path == "/v1/messages"
    # the official SDK sent it: its User-Agent, its Stainless headers, its API version; the key as it sends keys
    assert (
        call.headers["user-agent"].startswith("AsyncAnthropic/Python") and call.headers["x-stainless-lang"] == "python"
    )
    # the key as the Anthropic API authenticates keys: x-api-key (Authorization: Bearer is for OAuth tokens)
    assert call.headers.get("x-api-key") == KEY and "authorization" not in call.headers
    assert call.headers["anthropic-version"]
    body = call.body
    assert body["system"] == "You are a customer."
    assert body["max_tokens"] == 50 and body["temperature"] == 0.5 and body["stop_sequences"] == ["###"]
    assert "top_p" not in body and "seed" not in body and "n" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "Are you there?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_9", "name": "get_order_details", "input": {"order_id": "#W0"}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "shipped"}]},
    ]
    assert [c.text for c in res.completions] == ["Hello Are you there?|T=0.5"] * 3
    assert res.completions[0].finish_reason == "stop" and res.completions[0].n_tokens == 5  # usage.output_tokens


def test_anthropic_tools_and_bad_temperature(keys):
    with WireServer(anthropic_messages) as srv:
        model = make_anthropic_model("anthropic/claude-test", "claude-test", base_url=srv.url, **FAST)
        tool_req = GenerationRequest(({"role": "user", "content": "CALL it"},), tools=(TOOL,))
        res, bad = run(model, [tool_req, req("x", temperature=1.5)])
    assert srv.requests[0].body["tools"] == [
        {
            "name": "get_order_details",
            "description": "Look up an order.",
            "input_schema": TOOL["function"]["parameters"],
        }
    ]
    [c] = res.completions
    assert c.text == "Looking it up." and c.finish_reason == "tool_calls"
    assert c.tool_calls == [{"name": "get_order_details", "arguments": {"order_id": "#W1"}, "id": "toolu_01"}]
    assert not bad.ok and "temperature in [0, 1]" in bad.error and len(srv.requests) == 1


def test_anthropic_system_only_history_opens_with_a_user_turn(keys):
    with WireServer(anthropic_messages) as srv:
        model = make_anthropic_model("anthropic/claude-test", "claude-test", base_url=srv.url, **FAST)
        run(model, [GenerationRequest(({"role": "system", "content": "Open the conversation."},))])
    body = srv.requests[0].body
    assert "system" not in body
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Open the conversation."}]}]


# ------------------------------------------------------------------------------------------- Gemini


def test_gemini_request_and_response(keys):
    history = (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "again"},
    )
    r = GenerationRequest(
        history,
        n=3,
        params=SamplingParams(temperature=0.9, top_p=0.8, seed=4, stop=("END",), logprobs=True, max_tokens=33),
    )
    with WireServer(gemini_generate) as srv:
        model = make_google_model("google/gemini-test", "gemini-test", base_url=srv.url, **FAST)
        [res] = run(model, [r])
    assert res.ok, res.error
    [call] = srv.requests
    assert call.path == "/v1beta/models/gemini-test:generateContent"
    assert "key=" not in call.path and call.headers["x-goog-api-key"] == KEY
    assert call.headers["user-agent"].startswith("google-genai-sdk/")
    body = call.body
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["generationConfig"] == {
        "temperature": 0.9,
        "topP": 0.8,
        "maxOutputTokens": 33,
        "stopSequences": ["END"],
        "seed": derive_seed(4, 0),
        "candidateCount": 3,
        "responseLogprobs": True,
    }
    # thought parts are dropped, candidates come back in order
    assert [c.text for c in res.completions] == [f"again|seed={derive_seed(4, 0)}|i={i}" for i in range(3)]
    assert res.completions[0].token_logprobs == [-0.75] * 3 and res.completions[0].finish_reason == "stop"


def test_gemini_candidate_limit_falls_back_to_per_sample_calls(keys):
    with WireServer(lambda rec: gemini_generate(rec, max_candidates=1)) as srv:
        model = make_google_model("google/gemini-test", "gemini-test", base_url=srv.url, **FAST)
        [res] = run(model, [req("q", n=3, seed=2)])
    assert res.ok and len(res.completions) == 3
    singles = [r.body["generationConfig"] for r in srv.requests[1:]]
    assert all("candidateCount" not in g for g in singles)
    assert sorted(g["seed"] for g in singles) == sorted(derive_seed(2, i) for i in range(3))


def test_gemini_tools_signatures_and_blocked_prompt(keys):
    history = (
        {"role": "user", "content": "where?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "get_order_details", "arguments": {"order_id": "#W0"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        {"role": "user", "content": "CALL more"},
    )
    with WireServer(gemini_generate) as srv:
        model = make_google_model("google/gemini-test", "gemini-test", base_url=srv.url, **FAST)
        res, blocked = run(model, [GenerationRequest(history, tools=(TOOL,)), req("BLOCK this", n=2)])
    body = next(r.body for r in srv.requests if r.body.get("tools"))
    [decl] = body["tools"][0]["functionDeclarations"]
    assert decl["name"] == "get_order_details"
    assert decl["parameters"] == {  # additionalProperties dropped; the SDK spells types as the API's enum
        "type": "OBJECT",
        "properties": {"order_id": {"type": "STRING"}},
        "required": ["order_id"],
    }
    model_turn = body["contents"][1]
    assert model_turn["role"] == "model"
    assert model_turn["parts"] == [
        {
            "functionCall": {"name": "get_order_details", "args": {"order_id": "#W0"}},
            "thoughtSignature": base64.b64encode(SKIP_THOUGHT_SIGNATURE.encode()).decode(),
        }
    ]
    assert body["contents"][2]["parts"][0] == {
        "functionResponse": {"name": "get_order_details", "response": {"status": "shipped"}}
    }
    [c] = res.completions
    assert c.tool_calls == [
        {"name": "get_order_details", "arguments": {"order_id": "#W1"}, "id": "call_0", "thought_signature": "c2lnbmVk"}
    ]
    # a returned signature goes back with the call on the next turn
    follow = GenerationRequest(history + ({"role": "assistant", "content": None, "tool_calls": c.tool_calls},))
    assert model.build_body(follow)["contents"][-1]["parts"][0]["thoughtSignature"] == "c2lnbmVk"
    assert blocked.ok and [x.finish_reason for x in blocked.completions] == ["content_filter"] * 2


# ----------------------------------------------------------------------------- retries and failures


def test_retry_after_is_honoured_then_success(keys):
    failures = [
        Reply(429, {"error": {"message": "rate limited"}}, {"retry-after": "0.3"}),
        Reply(503, {"error": {"message": "overloaded"}}),
    ]
    with WireServer(flaky(openai_chat, failures)) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", **FAST)
        t0 = time.perf_counter()
        [res] = run(model, [req("x")])
        elapsed = time.perf_counter() - t0
    assert res.ok and len(srv.requests) == 3
    assert elapsed >= 0.3  # the backoff alone would be ~0.03 s


def test_gives_up_after_max_retries_and_spares_the_rest_of_the_batch(keys):
    def fail_some(rec: Recorded) -> Reply:
        if rec.body["messages"][-1]["content"] == "fail":
            return Reply(503, {"error": {"message": "upstream down"}})
        return openai_chat(rec)

    with WireServer(fail_some) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", max_retries=2, **FAST)
        good, bad = run(model, [req("fine"), req("fail")])
    assert good.ok and not bad.ok and bad.completions == []
    assert "HTTP 503" in bad.error and "upstream down" in bad.error and "gave up after 3 attempts" in bad.error
    assert sum(r.body["messages"][-1]["content"] == "fail" for r in srv.requests) == 3


def test_401_is_not_retried_and_the_key_never_leaks(keys):
    def reject(rec: Recorded) -> Reply:  # a server that echoes the key it got
        return Reply(401, {"error": {"message": f"Incorrect API key provided: {rec.headers['authorization']}"}})

    with WireServer(reject) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", **FAST)
        [res] = run(model, [req()])
    assert len(srv.requests) == 1
    assert "check the API key in $OPENAI_API_KEY" in res.error
    assert KEY not in res.error and KEY not in repr(model) and KEY not in str(vars(model))


def test_400_is_not_retried(keys):
    with WireServer(
        lambda rec: Reply(
            400, {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: bad"}}
        )
    ) as srv:
        model = make_anthropic_model("anthropic/c", "c", base_url=srv.url, **FAST)
        [res] = run(model, [req()])
    assert len(srv.requests) == 1 and "HTTP 400" in res.error and "messages: bad" in res.error


def test_gemini_bad_key_names_the_variable(keys):
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
        }
    }
    with WireServer(lambda rec: Reply(400, body)) as srv:
        model = make_google_model("google/g", "g", base_url=srv.url, **FAST)
        [res] = run(model, [req()])
    assert "check the API key in $GEMINI_API_KEY" in res.error and len(srv.requests) == 1


def test_unreachable_server_gives_a_clear_error(keys):
    port = closed_port()
    model = make_openai_compatible_model("openai-compatible/m", f"m@http://127.0.0.1:{port}/v1", max_retries=1, **FAST)
    [res] = run(model, [req()])
    assert (
        not res.ok
        and f"cannot connect to http://127.0.0.1:{port}/v1" in res.error
        and "gave up after 2 attempts" in res.error
    )


def test_timeout_is_an_error_result(keys):
    with WireServer(openai_chat, latency=1.0) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", timeout=0.2, max_retries=0)
        [res] = run(model, [req()])
    assert not res.ok and "within 0.2 s" in res.error


def test_missing_keys_raise_config_error_naming_the_variable(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match=r"\$OPENAI_API_KEY"):
        make_openai_model("openai/gpt-test", "gpt-test")
    with pytest.raises(ConfigError, match=r"\$ANTHROPIC_API_KEY"):
        make_anthropic_model("anthropic/c", "c")
    with pytest.raises(ConfigError, match=r"\$GEMINI_API_KEY or \$GOOGLE_API_KEY"):
        make_google_model("google/g", "g")
    with pytest.raises(ConfigError, match=r"\$MY_KEY"):
        make_openai_model("openai/gpt-test", "gpt-test", api_key_env="MY_KEY")


def test_concurrency_is_bounded(keys):
    with WireServer(openai_chat, latency=0.1) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", concurrency=4)
        t0 = time.perf_counter()
        results = run(model, [req(f"q{i}") for i in range(12)])
        elapsed = time.perf_counter() - t0
    assert all(r.ok for r in results)
    assert [r.completions[0].text.split("|")[0] for r in results] == [f"q{i}" for i in range(12)]
    assert srv.max_in_flight == 4
    assert elapsed >= 0.3  # 12 calls / 4 slots * 0.1 s


def test_through_the_registry_and_the_cache(keys):
    from collapse_probe.models import get_model

    with WireServer(openai_router) as srv:
        model = get_model(f"openai-compatible/m@{srv.url}/v1")
        cached = CachedModel(model, ResponseCache(os.environ["COLLAPSE_PROBE_CACHE"]))
        first = asyncio.run(cached.generate([req("x", n=3, seed=9)]))
        again = asyncio.run(cached.generate([req("x", n=5, seed=9)]))
    assert [c.text for c in again[0].completions[:3]] == [c.text for c in first[0].completions]
    # only samples 3..4 were asked for the second time, starting at sample 3's seed
    posts = [r for r in srv.requests if r.method == "POST"]  # the cache key's fingerprint asked GET /models once
    assert len(posts) == 2 and posts[1].body["n"] == 2 and posts[1].body["seed"] == derive_seed(9, 3)


# ------------------------------------------------------------------------------------------- pieces


def test_retry_after_parsing_and_backoff_bounds():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "soon"}) is None
    import random

    policy = RetryPolicy(backoff_base=1.0, backoff_max=8.0)
    rng = random.Random(0)
    for attempt, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 8.0)]:
        d = policy.delay(attempt, None, rng)
        assert cap / 2 <= d <= cap
    assert policy.delay(0, 5.0, rng) == 5.0


def test_a_call_waiting_to_be_retried_holds_no_concurrency_slot(keys):
    """concurrency=1: while the first request waits out its Retry-After, the second one is sent."""
    told = []

    def first_waits(rec: Recorded) -> Reply:
        text = rec.body["messages"][-1]["content"]
        told.append(text)
        if text == "first" and told.count("first") == 1:
            return Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.5"})
        return openai_chat(rec)

    with WireServer(first_waits) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", concurrency=1, **FAST)
        first, second = run(model, [req("first"), req("second")])
    assert first.ok and second.ok and len(srv.requests) == 3
    assert told == ["first", "second", "first"]  # holding the slot while waiting would send first twice, then second


def test_retry_after_beyond_the_limit_fails_at_once(keys):
    with WireServer(lambda rec: Reply(429, {"error": {"message": "quota"}}, {"retry-after": "3600"})) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1", max_retry_after=10, **FAST)
        [res] = run(model, [req()])
    assert len(srv.requests) == 1 and "retry after 3600 s" in res.error


# ------------------------------------------------------------------------------------------ LiteLLM


def test_litellm_request_building():
    from collapse_probe.models.litellm import LiteLLMChatModel

    model = LiteLLMChatModel("litellm/anthropic/claude-x", "anthropic/claude-x", base_url="", **FAST)
    r = GenerationRequest(
        ({"role": "user", "content": "hi"},), n=2, tools=(TOOL,), params=SamplingParams(seed=3, stop=("X",))
    )
    kw = model.build_kwargs(r, start=1)
    assert kw["model"] == "anthropic/claude-x" and kw["seed"] == derive_seed(3, 1) and kw["stop"] == ["X"]
    assert kw["num_retries"] == 0 and kw["drop_params"] is True and kw["tools"] == [TOOL] and "n" not in kw
    assert model.api_key_env == "ANTHROPIC_API_KEY"

    class RateLimitError(Exception):
        status_code = 429

    class AuthenticationError(Exception):
        status_code = 401

    assert model.classify_exception(RateLimitError("slow down")).retryable
    auth = model.classify_exception(AuthenticationError("bad key"))
    assert not auth.retryable and "$ANTHROPIC_API_KEY" in str(auth)


def test_litellm_missing_package_names_the_extra():
    try:
        import litellm  # noqa: F401

        pytest.skip("litellm is installed")
    except ImportError:
        pass
    from collapse_probe.models.litellm import make_litellm_model

    with pytest.raises(MissingDependencyError, match=r"collapse-probe\[litellm\]"):
        make_litellm_model("litellm/openai/gpt-x", "openai/gpt-x")


# --------------------------------------------------------------------------------------------- vLLM


def test_vllm_plan_expands_seeds_and_groups_by_adapter():
    from collapse_probe.models.vllm import plan_engine_calls

    seeded = req("a", n=3, seed=5, logprobs=True, stop=("\n",)).with_samples(4, 3)
    unseeded = req("b", n=2)
    transcript = GenerationRequest(({"role": "user", "content": "c"},), prompt="User: c\nBot:")
    adapted = req("d")
    plan = plan_engine_calls([seeded, unseeded, transcript, adapted], [None, None, None, "/ckpt/a"], "transcript")
    kinds = [(c.kind, c.lora) for c in plan]
    assert kinds == [("chat", None), ("generate", None), ("chat", "/ckpt/a")]
    chat = plan[0]
    assert chat.owners == [0, 0, 0, 1]
    assert [s["seed"] for s in chat.sampling] == [derive_seed(5, 4 + i) for i in range(3)] + [None]
    assert [s["n"] for s in chat.sampling] == [1, 1, 1, 2]
    assert (
        chat.sampling[0]["logprobs"] == 1
        and "stop" not in chat.sampling[0]  # a whitespace stop is applied to the output (find_stop)
        and chat.sampling[0]["max_tokens"] == 96
    )
    assert chat.inputs[0] == [{"role": "user", "content": "a"}]
    assert plan[1].inputs == ["User: c\nBot:"] and plan[1].owners == [2]
    assert plan[2].owners == [3]
    with pytest.raises(ConfigError, match="prompt_style"):
        plan_engine_calls([seeded], [None], "raw")


def test_vllm_missing_package_names_the_extra():
    try:
        import vllm  # noqa: F401

        pytest.skip("vllm is installed")
    except ImportError:
        pass
    from collapse_probe.models.vllm import make_vllm_model

    with pytest.raises(MissingDependencyError, match=r"collapse-probe\[vllm\]"):
        make_vllm_model("vllm/m", "m")


def test_request_json_is_plain(keys):
    # every body the backends build must be JSON-serialisable as is
    r = GenerationRequest(({"role": "user", "content": "hi"},), tools=(TOOL,), params=SamplingParams(seed=1))
    for model in (
        make_openai_model("openai/x", "x"),
        make_anthropic_model("anthropic/x", "x"),
        make_google_model("google/x", "x"),
    ):
        builder = getattr(model, "build_chat_body", None) or model.build_body
        json.dumps(builder(r))


def test_fingerprint_is_the_base_url_and_the_served_model(keys, monkeypatch):
    from _servers import anthropic_router

    with WireServer(openai_router) as srv:
        model = make_openai_model("openai/gpt-test", "gpt-test", base_url=srv.url + "/v1")
        assert model.fingerprint() == f"http:{srv.url}/v1#gpt-test-2025-08-07"
        assert srv.requests[0].method == "GET" and srv.requests[0].path == "/v1/models/gpt-test"
    with WireServer(anthropic_router) as srv:
        model = make_anthropic_model("anthropic/claude-x", "claude-x", base_url=srv.url)
        assert model.fingerprint() == f"http:{srv.url}#claude-x-20251001"
    # a server without a model endpoint: the requested name stands in, marked unverified
    with WireServer(lambda rec: Reply(404, {"error": {"message": "no such route"}})) as srv:
        model = make_openai_compatible_model("openai-compatible/m", f"m@{srv.url}/v1")
        assert model.fingerprint() == f"http:{srv.url}/v1#m (unverified)"


def test_cloud_variants_speak_through_the_sdks_cloud_clients(keys, monkeypatch):
    """Claude on Bedrock (SigV4-signed, the SDK's /model/{id}/invoke route) and Gemini on Vertex AI
    (express-mode key, the publisher route), each against a local server."""
    from collapse_probe.models.anthropic import make_bedrock_model
    from collapse_probe.models.google import make_vertex_model

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", KEY)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)

    def route(rec: Recorded) -> Reply:
        if "generateContent" in rec.path:
            return gemini_generate(rec)
        return anthropic_messages(Recorded(rec.method, rec.path, rec.headers, {"model": "x", **rec.body}))

    with WireServer(route) as srv:
        bedrock = make_bedrock_model("bedrock/anthropic.claude-x-v1:0", "anthropic.claude-x-v1:0", base_url=srv.url)
        vertex = make_vertex_model("vertex/gemini-x", "gemini-x", base_url=srv.url)
        [b] = run(bedrock, [req("hi", temperature=0.5)])
        [v] = run(vertex, [req("hi", seed=1)])
    assert b.ok and v.ok, (b.error, v.error)
    br, vr = srv.requests
    assert br.path == "/model/anthropic.claude-x-v1:0/invoke" and "model" not in br.body
    assert br.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIATESTKEY/")
    assert br.headers["user-agent"].startswith("AsyncAnthropicBedrock/Python")
    assert vr.path.endswith("/publishers/google/models/gemini-x:generateContent")
    assert vr.headers["x-goog-api-key"] == KEY and vr.body["generationConfig"]["seed"] == derive_seed(1, 0)
    with pytest.raises(ConfigError, match="AWS_REGION"):
        monkeypatch.delenv("AWS_REGION")
        monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
        make_bedrock_model("bedrock/m", "m")


def test_azure_deployment_route_and_key(monkeypatch):
    from collapse_probe.models.openai import make_azure_model

    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
    with WireServer(openai_router) as srv:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", srv.url)
        model = make_azure_model("azure/my-deploy", "my-deploy", **FAST)
        [res] = run(model, [req("hi", n=2, seed=3)])
    assert res.ok, res.error
    [call] = srv.requests
    assert call.path == "/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21"
    assert call.headers["api-key"] == KEY and call.headers["user-agent"].startswith("AsyncAzureOpenAI/Python")
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT")
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        make_azure_model("azure/d", "d")


def test_empty_anthropic_and_gemini_answers_are_retried_then_infra_failures(keys):
    # a message with no text and no tool call, and a candidate with no parts, are no answers
    empty_msg = Reply(200, {"id": "m", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
                            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 0}})  # fmt: skip
    with WireServer(flaky(anthropic_messages, [empty_msg])) as srv:
        model = make_anthropic_model("anthropic/claude-test", "claude-test", base_url=srv.url, max_retries=2, **FAST)
        [res] = run(model, [req("x")])
    assert res.ok and res.completions[0].text and len(srv.requests) == 2  # asked again, then a real answer
    with WireServer(lambda rec: empty_msg) as srv:
        model = make_anthropic_model("anthropic/claude-test", "claude-test", base_url=srv.url, max_retries=1, **FAST)
        [res] = run(model, [req("x")])
    assert not res.ok and "without text" in (res.error or "") and len(srv.requests) == 2
    empty_cand = Reply(200, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}],
                             "usageMetadata": {"promptTokenCount": 3}})  # fmt: skip
    with WireServer(lambda rec: empty_cand) as srv:
        model = make_google_model("google/gemini-test", "gemini-test", base_url=srv.url, max_retries=1, **FAST)
        [res] = run(model, [req("x")])
    assert not res.ok and "without text" in (res.error or "") and len(srv.requests) == 2


def test_every_parser_names_a_tool_call_without_an_id_by_its_place():
    from collapse_probe.models.anthropic import parse_messages_response
    from collapse_probe.models.google import parse_generate_content_response
    from collapse_probe.models.openai import parse_chat_response

    anthropic = parse_messages_response(
        {"content": [{"type": "text", "text": "one"}, {"type": "tool_use", "name": "get", "input": {"a": 1}}]}
    )
    chat = parse_chat_response(
        {"choices": [{"message": {"content": "", "tool_calls": [{}, {"function": {"name": "get"}}]}}]}
    )
    gemini = parse_generate_content_response(
        {"candidates": [{"content": {"parts": [{"text": "one"}, {"functionCall": {"name": "get", "args": {}}}]}}]}, 1
    )
    assert anthropic.tool_calls == [{"name": "get", "arguments": {"a": 1}, "id": "call_1"}]
    assert [c["id"] for c in chat[0].tool_calls or []] == ["call_0", "call_1"]
    assert [c["id"] for c in gemini[0].tool_calls or []] == ["call_1"]
