"""``play`` against hosted-model specs whose SDKs are pointed at local servers by their standard
environment variables: the calls come from the official SDKs and ``results.json``'s ``usage`` holds
exactly the token counts the servers reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _servers import WireServer, anthropic_router, openai_router  # noqa: E402

from collapse_probe.cli import main  # noqa: E402

KEY = "sk-local-SECRET-abcdef0123456789"


def reported_usage(srv: WireServer) -> dict[str, int]:
    """Token counts the server put in its answers, summed over the calls it answered."""
    total = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    for rec in srv.requests:
        if rec.method != "POST":
            continue
        reply = srv.handler(rec).body
        u = reply["usage"]
        total["requests"] += 1
        total["input_tokens"] += (
            u.get("prompt_tokens", u.get("input_tokens", 0))
            + u.get("cache_creation_input_tokens", 0)
            + u.get("cache_read_input_tokens", 0)
        )
        total["output_tokens"] += u.get("completion_tokens", u.get("output_tokens", 0))
    return total


@pytest.mark.parametrize(
    ("sim", "router", "env", "agent", "price"),
    [
        (
            "openai/gpt-5-mini",
            openai_router,
            {"OPENAI_BASE_URL": "{url}/v1", "OPENAI_API_KEY": KEY},
            "AsyncOpenAI/Python",
            (0.25, 2.0),
        ),
        (
            "anthropic/claude-haiku-4-5",
            anthropic_router,
            {"ANTHROPIC_BASE_URL": "{url}", "ANTHROPIC_API_KEY": KEY},
            "AsyncAnthropic/Python",
            (1.0, 5.0),
        ),
    ],
)
def test_play_through_the_official_sdk_records_the_servers_usage(
    sim, router, env, agent, price, tmp_path, monkeypatch, write_scripted, fresh_models, capsys
):
    policy = write_scripted([("Would you donate to Save the Children?", 0.5), ("Kids need help today.", 0.5)])
    out = tmp_path / "run"
    with WireServer(router) as srv:
        for var, value in env.items():
            monkeypatch.setenv(var, value.format(url=srv.url))
        code = main(["play", "--policy", policy, "--sim", sim, "--tasks", "2", "--rollouts", "2", "--max-turns", "2",
                     "--no-progress", "--out", str(out)])  # fmt: skip
    assert code == 0
    posts = [r for r in srv.requests if r.method == "POST"]
    assert len(posts) >= 2 * 2 * 2  # 4 conversations x at least 2 simulator turns
    for rec in posts:  # every call came from the official SDK
        assert rec.headers["user-agent"].startswith(agent)
        assert rec.headers["x-stainless-lang"] == "python" and rec.headers["x-stainless-retry-count"] == "0"
    results = json.loads((out / "results.json").read_text())
    usage = results["usage"][sim]
    expected = reported_usage(srv)
    assert expected["input_tokens"] > 0 and expected["output_tokens"] > 0
    assert {k: usage[k] for k in expected} == expected
    cost = (expected["input_tokens"] * price[0] + expected["output_tokens"] * price[1]) / 1e6
    assert usage["cost_usd"] == pytest.approx(cost, rel=1e-6)
    assert results["usage"][policy]["cost_usd"] == 0.0  # a scripted model costs nothing
    printed = capsys.readouterr().out
    assert f"{sim}: {expected['requests']} calls" in printed
    # the key reached the server only in its auth header, and nowhere on disk
    for f in out.iterdir():
        assert KEY not in f.read_text(errors="replace"), f.name
