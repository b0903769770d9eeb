"""Usage and cost accounting: price table lookups, the ledger's arithmetic, and budgets that stop a
run cleanly and let it resume with the spend carried over."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _servers import WireServer, openai_router  # noqa: E402
from test_sdk_play import KEY, reported_usage  # noqa: E402

from collapse_probe.cli import main  # noqa: E402
from collapse_probe.errors import ConfigError  # noqa: E402
from collapse_probe.models._usage import LEDGER, UsageLedger, find_price, load_price_table  # noqa: E402


def test_price_lookup_snapshots_families_and_unknowns():
    table = load_price_table()
    mini = find_price(table, "openai/gpt-5-mini", "gpt-5-mini")
    assert mini is not None and (mini.input, mini.output, mini.batch_discount) == (0.25, 2.0, 0.5)
    assert find_price(table, "openai/x", "gpt-5-mini-2025-08-07") == mini  # a dated snapshot
    assert find_price(table, "openai/x", "gpt-5-pro") is None  # a longer name is another model
    assert find_price(table, "azure/x", "gpt-5-mini") == mini  # Azure falls back to OpenAI's list price
    haiku = find_price(table, "anthropic/x", "claude-haiku-4-5")
    assert find_price(table, "bedrock/x", "us.anthropic.claude-haiku-4-5-20251001-v1:0") == haiku
    assert find_price(table, "vertex-anthropic/x", "claude-haiku-4-5@20251001") == haiku
    assert find_price(table, "openai-compatible/x", "gpt-5-mini") is None  # a self-hosted server has no list price


def test_ledger_costs_batch_discount_free_local_and_unknown(tmp_path):
    ledger = UsageLedger()
    ledger.record("openai/gpt-5-mini", model="gpt-5-mini", input_tokens=1_000_000, output_tokens=500_000)
    ledger.record("openai/gpt-5-mini", model="gpt-5-mini", input_tokens=1_000_000, output_tokens=0, batch=True)
    ledger.record("local/smollm2-135m", model="smollm2", input_tokens=0, output_tokens=10)
    ledger.record("openai-compatible/q@http://h/v1", model="q", input_tokens=5, output_tokens=5)
    snap = ledger.snapshot()
    assert snap["openai/gpt-5-mini"].cost_usd == pytest.approx(0.25 + 1.0 + 0.125)
    assert snap["openai/gpt-5-mini"].requests == 2 and snap["openai/gpt-5-mini"].input_tokens == 2_000_000
    assert snap["local/smollm2-135m"].cost_usd == 0.0
    assert snap["openai-compatible/q@http://h/v1"].cost_usd is None
    # an override file replaces entries one by one and is validated at the boundary
    table = tmp_path / "prices.toml"
    table.write_text(
        '[openai-compatible]\n"q" = { input = 1.0, output = 2.0 }\n[openai]\n"gpt-5-mini" = { input = 9.0, output = 9.0 }\n'
    )
    ledger.configure(price_table=str(table))
    assert ledger.cost("openai-compatible/q@http://h/v1", "q", 1_000_000, 1_000_000, False) == 3.0
    assert ledger.cost("openai/gpt-5-mini", "gpt-5-mini", 1_000_000, 0, True) == 4.5
    assert ledger.cost("anthropic/x", "claude-haiku-4-5", 1_000_000, 0, False) == 1.0  # untouched entries stay
    table.write_text('[openai]\n"m" = { input = "cheap" }\n')
    with pytest.raises(ConfigError, match="input = USD per 1M tokens"):
        ledger.configure(price_table=str(table))
    table.write_text('batch_discount = 0.5\n[openai]\n"m" = { input = 1.0, output = 2.0 }\n')
    with pytest.raises(ConfigError, match=r"batch_discount must be a table of provider = factor in \(0, 1\], got 0.5"):
        ledger.configure(price_table=str(table))
    with pytest.raises(ConfigError, match="--cost-limit"):
        ledger.configure(cost_limit=-1)


@pytest.fixture
def openai_env(monkeypatch, fresh_models):
    monkeypatch.setattr(LEDGER, "run", None)
    yield monkeypatch
    LEDGER.configure()  # no budget for the tests that follow


def test_token_limit_stops_cleanly_and_the_run_resumes_with_its_spend(tmp_path, openai_env, write_scripted, capsys):
    policy = write_scripted([("Would you donate?", 1.0)])
    out = tmp_path / "run"
    args = ["play", "--policy", policy, "--sim", "openai/gpt-5-mini", "--tasks", "2", "--rollouts", "2",
            "--max-turns", "2", "--max-live", "1", "--no-progress", "--out", str(out)]  # fmt: skip
    with WireServer(openai_router) as srv:
        openai_env.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        openai_env.setenv("OPENAI_API_KEY", KEY)
        assert main([*args, "--token-limit", "1"]) == 3
        err = capsys.readouterr().err
        assert "stopped: token limit 1 reached" in err and "higher limit to resume" in err
        assert not (out / "results.json").exists()
        stopped = json.loads((out / "usage.json").read_text())["usage"]["openai/gpt-5-mini"]
        assert stopped["requests"] == 1  # the one call made before the limit was reached, recorded
        assert not (out / "conversations.jsonl").exists() or not (out / "conversations.jsonl").read_text().strip()
        first = reported_usage(srv)
        assert {k: stopped[k] for k in first} == first

        assert main(args) == 0  # the same command without the limit resumes
        results = json.loads((out / "results.json").read_text())
    assert results["summary"]["n"] == 4
    total = reported_usage(srv)  # every call of both processes (the first answer came from the cache)
    assert {k: results["usage"]["openai/gpt-5-mini"][k] for k in total} == total


def test_cost_limit_without_a_price_refuses_to_guess(tmp_path, openai_env, write_scripted, capsys):
    policy = write_scripted([("Would you donate?", 1.0)])
    with WireServer(openai_router) as srv:
        spec = f"openai-compatible/m@{srv.url}/v1"
        code = main(["play", "--policy", policy, "--sim", spec, "--tasks", "1", "--rollouts", "1", "--max-turns", "1",
                     "--no-progress", "--cost-limit", "0.01", "--out", str(tmp_path / "run")])  # fmt: skip
    assert code == 3
    assert f"no price for {spec}" in capsys.readouterr().err


def test_local_models_are_counted_free_with_or_without_the_cache(tmp_path, openai_env, write_scripted):
    policy = write_scripted([("Would you donate?", 1.0)])
    sim = write_scripted([("Maybe [DONATE $1]", 1.0)], name="sim.json")
    for flag in ([], ["--no-cache"]):
        out = tmp_path / f"run{len(flag)}"
        assert main(["play", "--policy", policy, "--sim", sim, "--tasks", "1", "--rollouts", "2", "--max-turns", "1",
                     "--no-progress", "--out", str(out), *flag]) == 0  # fmt: skip
        usage = json.loads((out / "results.json").read_text())["usage"]
        assert set(usage) == {policy, sim} and all(u["cost_usd"] == 0.0 for u in usage.values())
        assert all(u["requests"] > 0 for u in usage.values())
