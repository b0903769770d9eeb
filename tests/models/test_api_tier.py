"""One real call per provider through its official SDK (``-m api``; each test skips without its key).

    OPENAI_API_KEY=... ANTHROPIC_API_KEY=... GEMINI_API_KEY=... pytest -m api tests/models/test_api_tier.py

Each call asks for two short samples with a seed and checks that they came back, that the server's
token counts reached the usage ledger with a price, and that the key is in no error or result.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from collapse_probe.models import GenerationRequest, SamplingParams
from collapse_probe.models._usage import UsageLedger

pytestmark = pytest.mark.api

PROVIDERS = [
    ("openai/gpt-5-mini", ("OPENAI_API_KEY",), {"extra_body": {"reasoning_effort": "minimal"}}),
    ("anthropic/claude-haiku-4-5", ("ANTHROPIC_API_KEY",), {}),
    ("google/gemini-2.5-flash-lite", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), {}),
]


@pytest.mark.parametrize(("spec", "keys", "options"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_one_real_call(spec, keys, options, monkeypatch, fresh_models):
    key = next((os.environ[k] for k in keys if os.environ.get(k)), None)
    if key is None:
        pytest.skip(f"set ${' or $'.join(keys)} to run")
    from collapse_probe.models import get_model

    ledger = UsageLedger()
    monkeypatch.setattr("collapse_probe.models._usage.LEDGER", ledger)
    model = get_model(spec, **options)
    request = GenerationRequest(
        ({"role": "user", "content": "Name one colour. One word."},),
        n=2,
        params=SamplingParams(temperature=1.0, max_tokens=256, seed=1),
    )
    [res] = asyncio.run(model.generate([request]))
    assert res.ok, res.error
    assert len(res.completions) == 2 and all(c.text.strip() for c in res.completions)
    usage = ledger.snapshot()[spec]
    assert usage.requests >= 1 and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.cost_usd is not None and usage.cost_usd > 0
    assert key not in repr(res) and key not in model.fingerprint()
