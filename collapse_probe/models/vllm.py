"""``vllm/<model>``: the vLLM offline engine on a local GPU, one engine call per batch.

The whole batch of requests goes to ``LLM.chat`` (or ``LLM.generate`` on raw transcripts when the
option ``prompt_style="transcript"`` is set and a request carries a ``prompt``), so vLLM's scheduler
decodes every conversation of a rollout step together. vLLM is imported when the model is built
(``pip install "collapse-probe[vllm]"``); the engine itself is started on first use.

Seeds: a request with a seed is expanded into ``n`` single-sample prompts, sample ``i`` with
``seed = request.sample_seed(i)``; prefix caching makes the repeated prompt nearly free. A request
without a seed is one prompt with ``SamplingParams(n=n)``, drawn from the engine's own generator,
which is seeded explicitly (option ``seed``; default a fresh random seed per engine, logged), so
unseeded requests are fresh draws in every run rather than the draws of vLLM's default seed 0.

Batch invariance: a per-request seed fixes a sample's random draws, but vLLM's kernels round
differently with the batch a request lands in, so the same seeded request can decode to another text
in another batch. The response cache and the Ray replica split rely on "samples fetched in several
ranges equal samples fetched at once"; that holds only with batch-invariant kernels, which this
backend turns on (``VLLM_BATCH_INVARIANT=1``, set before the engine starts, unless the variable is
already set or the option ``batch_invariant=false`` is given; vLLM supports it on NVIDIA GPUs of
compute capability 8.0 or more, and they cost some throughput). Without it, seeded samples are still
draws from the right distribution but not reproducible across batchings; the fingerprint records the
kernel mode, so the two kinds of samples never mix in the cache.

Log-probabilities: ``logprobs_mode="processed_logprobs"`` (the trainer's setting) reports them after
temperature *and* top-p, i.e. under the renormalised nucleus; they equal the learner's
temperature-scaled log-probabilities only at ``top_p = 1``, so a request with ``top_p < 1`` that asks
for log-probabilities from an engine in a ``processed`` mode is refused (a configuration error).

Processes: with CUDA already initialised in the calling process (a learner on the GPU), vLLM starts
its workers with ``spawn``, which re-imports the user's script; a script that builds the engine (or
runs the vLLM trainer) at top level must guard it with ``if __name__ == "__main__":``.

LoRA: build with ``enable_lora=True``; the option ``lora=PATH`` applies an adapter to every request,
:meth:`VLLMModel.with_lora` returns a view of the same engine that samples through another adapter
(its own spec, hence its own cache keys), and ``generate(requests, loras=[...])`` chooses an adapter
per request. Requests are grouped by adapter (and tool list), one engine call per group. An adapter
directory rewritten in place (a co-trained simulator's new checkpoint) gets a new adapter id, so
vLLM loads the new weights instead of serving its cached copy.

Tool schemas are handed to the chat template; the reply comes back as text (tool-call parsing is the
benchmark's business, as with the local backends).

Options: ``enable_lora`` (False), ``max_lora_rank``, ``max_loras``, ``lora``, ``prompt_style``
(``"chat"``/``"transcript"``), ``chat_template_kwargs``, ``batch_invariant`` (True), ``seed`` (the
engine seed; default random); every other option goes to ``vllm.LLM``
(``tensor_parallel_size``, ``gpu_memory_utilization``, ``max_model_len``, ``enforce_eager``,
``enable_sleep_mode``, ``dtype``, ...). The options vLLM rejects only at engine start are checked
when the model is configured (:func:`validate_engine_options`): a LoRA rank vLLM does not support
would otherwise surface minutes later as a failed engine.

Engine start: the engine is built once, in the thread that runs the event loop (vLLM versions before
0.10.2 install signal handlers and fail outside the main thread); :meth:`VLLMModel.start` builds it
eagerly (Ray replicas sharing a GPU start one after another). If it cannot start (not enough GPU
memory, an unsupported option, a missing model) that is a configuration error, raised as
:class:`EngineStartError` with vLLM's own reason and the option to change — never retried per
request and never recorded as infrastructure failures of conversations, which would turn a wrong
setting into a run of "every conversation failed".

Stop strings: a stop string inside the completion's leading whitespace does not end it, exactly as
in the local backend (:func:`collapse_probe.models._types.find_stop`); vLLM is given only the stop
strings that cannot match there, and the others are applied to its output with the shared rule.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Required, TypedDict

from collapse_probe.core._constraints import Integer, check_value
from collapse_probe.errors import ConfigError, require
from collapse_probe.models._options import LORA_RANKS, PROMPT_STYLES, VLLMOptions
from collapse_probe.models._types import Completion, GenerationRequest, GenerationResult, find_stop

logger = logging.getLogger(__name__)

BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"

MIN_VLLM_VERSION = (0, 19, 1)
"""Oldest vLLM this backend supports: 0.19.1 is the first release that works with transformers 5
(earlier ones pin ``transformers<5``, and model directories written by transformers 5 name
``"tokenizer_class": "TokenizersBackend"``, which transformers 4 rejects); it also has the V1
engine outside the main thread, ``chat_template_kwargs``, ``logprobs_mode`` and batch-invariant
kernels."""


class EngineStartError(ConfigError):
    """The vLLM engine could not start: a configuration error of the run, not an infra failure."""


def lora_rank_for_vllm(rank: int) -> int:
    """The smallest rank vLLM accepts that holds an adapter of rank ``rank``.

    vLLM sizes its LoRA buffers by ``max_lora_rank`` and accepts only :data:`LORA_RANKS`; an adapter of
    rank 12 is served with ``max_lora_rank=16``.

    >>> lora_rank_for_vllm(8), lora_rank_for_vllm(12), lora_rank_for_vllm(300)
    (8, 16, 320)
    """
    check_value(rank, "LoRA rank", [Integer(1)])
    for allowed in LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise ConfigError(f"LoRA rank {rank} is above the largest rank vLLM serves ({LORA_RANKS[-1]}); use --lora-r <= 512")


def validate_engine_options(options: Mapping[str, object]) -> dict[str, object]:
    """Check (and read from text) the ``vllm.LLM`` options that vLLM only rejects at engine start: the
    fields of :class:`~collapse_probe.models._options.VLLMOptions`.

    Returns a new dict: the options as ``vllm.LLM`` takes them (an open set, passed through).
    ``max_lora_rank`` must be one of :data:`LORA_RANKS`; use :func:`lora_rank_for_vllm` to round an
    adapter's rank up.
    """
    return VLLMOptions.parse(options).options()


def check_vllm_version(vllm: Any) -> None:
    """Refuse a vLLM older than :data:`MIN_VLLM_VERSION` with the reason (no check when unversioned)."""
    raw = getattr(vllm, "__version__", None)
    if not isinstance(raw, str):
        return
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", raw)
    if m is None:
        return
    found = tuple(int(x or 0) for x in m.groups())
    if found < MIN_VLLM_VERSION:
        need = ".".join(map(str, MIN_VLLM_VERSION))
        raise ConfigError(
            f"vLLM {raw} is not supported: the vllm backend needs vllm>={need} (older releases pin "
            f'transformers<5); pip install -U "collapse-probe[vllm]"'
        )


_START_HINTS = (
    (
        ("memory", "cuda out of memory", "kv cache", "free memory"),
        "lower gpu_memory_utilization or max_model_len (e.g. -M policy.gpu_memory_utilization=0.5), or free the GPU",
    ),
    (("lora rank", "max_lora_rank"), "set max_lora_rank to one of " + ", ".join(map(str, LORA_RANKS))),
    (("max_model_len", "max model len", "context length"), "lower max_model_len"),
    (("tensor_parallel", "tensor parallel"), "set tensor_parallel_size to at most the number of GPUs"),
    (
        ("batch_invariant", "batch invariant", "batch-invariant"),
        "this GPU may not support batch-invariant kernels; set batch_invariant=false",
    ),
    (
        ("not found", "no such file", "does not appear to have", "repository not found"),
        "check the model path or name after vllm/",
    ),
)


def _start_hint(reason: str) -> str:
    low = reason.lower()
    for needles, hint in _START_HINTS:
        if any(n in low for n in needles):
            return hint
    return "check the vllm options of this model"


@dataclass
class EngineCall:
    """One call of the vLLM engine: prompts that share a LoRA adapter and a tool list."""

    kind: str
    """``"chat"`` (``LLM.chat`` on message lists) or ``"generate"`` (``LLM.generate`` on raw prompts)."""
    lora: str | None
    tools: list[dict[str, object]] | None
    """The requests' OpenAI function schemas, handed to the chat template."""
    inputs: list[Any] = field(default_factory=list)
    """One message list (chat) or prompt string (generate) per engine prompt."""
    sampling: list[SamplingKwargs] = field(default_factory=list)
    """``vllm.SamplingParams`` keyword arguments, one per engine prompt."""
    owners: list[int] = field(default_factory=list)
    """Index of the request each engine prompt belongs to."""
    stops: list[tuple[str, ...]] = field(default_factory=list)
    """The request's stop strings, one tuple per engine prompt (applied to the output as well)."""


class SamplingKwargs(TypedDict, total=False):
    """``vllm.SamplingParams`` keyword arguments (those this backend sets)."""

    n: Required[int]
    temperature: Required[float]
    top_p: Required[float]
    max_tokens: Required[int]
    seed: Required[int | None]
    stop: list[str]
    """The stop strings vLLM applies (not those starting with whitespace: see :func:`find_stop`)."""
    logprobs: int
    """Alternatives reported per token (1: the sampled token's log-probability is what is read)."""


def sampling_kwargs(request: GenerationRequest, n: int, seed: int | None, logprobs: bool = False) -> SamplingKwargs:
    """``vllm.SamplingParams`` keyword arguments for ``n`` samples of ``request`` with ``seed``
    (``logprobs``: report the sampled tokens' log-probabilities even when the request does not ask)."""
    p = request.params
    kwargs: SamplingKwargs = {
        "n": n,
        "temperature": p.temperature,
        "top_p": p.top_p,
        "max_tokens": p.max_tokens,
        "seed": seed,
    }
    engine_stops = [x for x in p.stop if x and not x[:1].isspace()]
    if engine_stops:
        # A stop string that starts with whitespace could match inside the leading whitespace, where
        # the local backend does not stop; those are applied to the output (find_stop), not by vLLM.
        kwargs["stop"] = engine_stops
    if p.logprobs or logprobs:
        kwargs["logprobs"] = 1  # top-1 plus the sampled token, which is what we read
    return kwargs


def plan_engine_calls(
    requests: Sequence[GenerationRequest],
    loras: Sequence[str | None],
    prompt_style: str = "chat",
    logprobs: bool = False,
) -> list[EngineCall]:
    """Group requests into engine calls and expand seeded requests into per-sample prompts.

    Pure function (no vLLM needed): completions of the engine prompts, concatenated per owner in
    order, are the ``n`` samples of each request.
    """
    if prompt_style not in PROMPT_STYLES:
        raise ConfigError(f"option 'prompt_style': expected one of {PROMPT_STYLES}, got {prompt_style!r}")
    if len(loras) != len(requests):
        raise ConfigError(f"loras: expected one adapter (or None) per request, got {len(loras)} for {len(requests)}")
    calls: dict[tuple[str, str | None, str], EngineCall] = {}
    for ri, (r, lora) in enumerate(zip(requests, loras, strict=True)):
        transcript = prompt_style == "transcript" and r.prompt is not None
        kind = "generate" if transcript else "chat"
        tools = [dict(t) for t in r.tools] if (r.tools and not transcript) else None
        key = (kind, lora, json.dumps(tools, sort_keys=True) if tools else "")
        call = calls.setdefault(key, EngineCall(kind=kind, lora=lora, tools=tools))
        if kind == "generate":
            item: Any = r.prompt
        else:
            item = [dict(m) for m in r.messages] or [{"role": "user", "content": r.prompt or ""}]
        if r.params.seed is None:
            call.inputs.append(item)
            call.sampling.append(sampling_kwargs(r, r.n, None, logprobs))
            call.owners.append(ri)
            call.stops.append(tuple(r.params.stop))
        else:
            for i in range(r.n):
                call.inputs.append(item)
                call.sampling.append(sampling_kwargs(r, 1, r.sample_seed(i), logprobs))
                call.owners.append(ri)
                call.stops.append(tuple(r.params.stop))
    return list(calls.values())


def completions_from_output(output: Any, stop: Sequence[str] = (), decode: Any = None) -> list[Completion]:
    """Our completions from one ``vllm.RequestOutput``.

    ``stop`` are the request's stop strings: those vLLM was not given (see :func:`sampling_kwargs`)
    end the text here with the local backend's rule; ``decode`` (token ids -> text, the engine's
    tokenizer) then cuts the token ids after the token that completed the stop string, as the local
    backend keeps them.
    """
    out = []
    for c in output.outputs:
        token_ids = list(c.token_ids)
        token_logprobs = None
        if c.logprobs is not None:
            token_logprobs = [float(step[tok].logprob) for tok, step in zip(c.token_ids, c.logprobs, strict=False)]
        text, finish = c.text, c.finish_reason
        hit = find_stop(text, stop) if stop else None
        if hit is not None:
            end, length = hit
            text, finish = text[:end], "stop"
            if decode is not None:
                keep = len(token_ids)
                for k in range(1, len(token_ids) + 1):
                    if len(decode(token_ids[:k])) >= end + length:
                        keep = k
                        break
                token_ids = token_ids[:keep]
                if token_logprobs is not None:
                    token_logprobs = token_logprobs[:keep]
        out.append(
            Completion(
                text=text,
                token_logprobs=token_logprobs,
                finish_reason=finish,
                n_tokens=len(token_ids),
                token_ids=token_ids,
            )
        )
    return out


class VLLMModel:
    """A model served by an in-process vLLM engine."""

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        enable_lora: bool = False,
        lora: str | None = None,
        prompt_style: str = "chat",
        chat_template_kwargs: dict[str, object] | None = None,
        logprobs: bool = False,
        **engine_options: Any,
    ) -> None:
        own = {"enable_lora": enable_lora, "lora": lora, "prompt_style": prompt_style}
        engine_options = VLLMOptions.parse({**own, **engine_options}).options()
        for name in own:
            engine_options.pop(name, None)
        self.batch_invariant = bool(engine_options.pop("batch_invariant", True))
        """Ask vLLM for batch-invariant kernels (``VLLM_BATCH_INVARIANT=1``) when the engine starts."""
        self.engine_seed: int | None = engine_options.pop("seed", None)
        """The engine's seed (drawn at start when not given): the randomness of unseeded requests."""
        self.spec = spec
        self.model = model
        self.enable_lora = enable_lora
        self.lora = lora
        self.prompt_style = prompt_style
        self.chat_template_kwargs = chat_template_kwargs
        self.logprobs = logprobs
        """Report token log-probabilities on every request (the trainer's rollouts need them)."""
        self.engine_options = engine_options
        self._shared = _Engine()

    def __repr__(self) -> str:
        return f"VLLMModel(spec={self.spec!r}, lora={self.lora!r})"

    def fingerprint(self) -> str:
        """Model identity: content hash of a local model directory, else its name and revision, plus
        the content hash of the LoRA adapter when one applies, and the numerics: the requested
        ``dtype`` (``auto``: vLLM's choice for the checkpoint), ``quantization`` when set, the
        device and whether the kernels are batch-invariant (they round differently)."""
        from collapse_probe.core._identity import file_fingerprint, numerics_fingerprint

        base = file_fingerprint(self.model) if Path(self.model).exists() else f"hf:{self.model}"
        revision = self.engine_options.get("revision")
        if revision:
            base += f"@{revision}"
        if self.lora:
            base += f"+lora:{file_fingerprint(self.lora)}"
        return numerics_fingerprint(
            base,
            dtype=str(self.engine_options.get("dtype") or "auto"),
            quantization=self.engine_options.get("quantization"),
            device="cuda",
            kernels="batch-invariant" if self._batch_invariant_kernels() else "default",
        )

    def _batch_invariant_kernels(self) -> bool:
        """Whether the engine runs (or will run) with batch-invariant kernels: the process-wide
        ``VLLM_BATCH_INVARIANT`` when set (every engine started here reads it), else the option."""
        env = os.environ.get(BATCH_INVARIANT_ENV)
        if env is not None:
            return env.strip() not in ("", "0")
        return self.batch_invariant

    def with_lora(self, path: str | Path, name: str | None = None) -> VLLMModel:
        """A view of this engine that samples through the LoRA adapter at ``path``."""
        if not self.enable_lora:
            raise ConfigError("with_lora needs the vllm backend built with enable_lora=True")
        view = object.__new__(VLLMModel)
        view.__dict__.update(self.__dict__)
        view.lora = str(path)
        view.spec = f"{self.spec}+lora:{name or Path(path).name}"
        return view

    def engine(self) -> Any:
        """The ``vllm.LLM`` (started on first use, shared by :meth:`with_lora` views).

        Raises:
            EngineStartError: the engine could not start; raised again, without a new attempt, on
                every later call (a second engine would fail the same way and hold GPU memory).
        """
        with self._shared.lock:
            if self._shared.start_error is not None:
                raise self._shared.start_error
            if self._shared.llm is None:
                vllm = require("vllm", "vllm", "the vllm backend")
                check_vllm_version(vllm)
                if self.batch_invariant:
                    # read by the engine process when it starts; a value the user set is kept
                    os.environ.setdefault(BATCH_INVARIANT_ENV, "1")
                if self.engine_seed is None:
                    self.engine_seed = secrets.randbelow(2**31)
                    logger.info("%s: engine seed %d (unseeded requests draw from it)", self.spec, self.engine_seed)
                try:
                    self._shared.llm = vllm.LLM(
                        model=self.model, enable_lora=self.enable_lora, seed=self.engine_seed, **self.engine_options
                    )
                except Exception as exc:  # noqa: BLE001 - any start failure is reported once, with vLLM's reason
                    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
                    self._shared.start_error = EngineStartError(
                        f"{self.spec}: the vLLM engine could not start ({reason}); {_start_hint(reason)}"
                    )
                    raise self._shared.start_error from None
            return self._shared.llm

    def start(self) -> None:
        """Build the engine now (it is otherwise built on first use).

        Raises:
            EngineStartError: as :meth:`engine`.
        """
        self.engine()

    def sleep(self) -> None:
        """Release the engine's GPU memory (weights and KV cache) while a learner step runs.

        Needs ``enable_sleep_mode=True``; a no-op otherwise or before the engine started.
        """
        with self._shared.lock:
            if (
                self._shared.llm is not None
                and self.engine_options.get("enable_sleep_mode")
                and not self._shared.asleep
            ):
                self._shared.llm.sleep(level=1)
                self._shared.asleep = True

    def wake_up(self) -> None:
        """Reload what :meth:`sleep` released, before the next rollouts."""
        with self._shared.lock:
            if self._shared.llm is not None and self._shared.asleep:
                self._shared.llm.wake_up()
                self._shared.asleep = False

    async def generate(
        self, requests: Sequence[GenerationRequest], loras: Sequence[str | None] | None = None
    ) -> list[GenerationResult]:
        """One result per request; ``loras`` optionally names an adapter per request."""
        if loras is None:
            loras = [self.lora] * len(requests)
        elif any(loras) and not self.enable_lora:
            raise ConfigError("per-request LoRA adapters need the vllm backend built with enable_lora=True")
        self._check_logprobs_mode(requests)
        plan = plan_engine_calls(requests, loras, self.prompt_style, self.logprobs)
        # Start the engine here, in the thread that runs the event loop (the main thread for the CLI),
        # not in the worker thread below; a start failure propagates as EngineStartError.
        self.engine()
        self.wake_up()
        return await asyncio.to_thread(self._run_plan, requests, plan)

    def _check_logprobs_mode(self, requests: Sequence[GenerationRequest]) -> None:
        """Refuse log-probabilities that would silently mean another distribution (see the module doc)."""
        mode = str(self.engine_options.get("logprobs_mode") or "raw_logprobs")
        if not mode.startswith("processed"):
            return
        for r in requests:
            if (r.params.logprobs or self.logprobs) and r.params.top_p < 1:
                raise ConfigError(
                    f"{self.spec}: logprobs_mode={mode!r} reports log-probabilities under the top-p nucleus, which "
                    f"differ from the model's at top_p={r.params.top_p:g}; use top_p=1 or logprobs_mode='raw_logprobs'"
                )

    def _run_plan(self, requests: Sequence[GenerationRequest], plan: list[EngineCall]) -> list[GenerationResult]:
        comps: list[list[Completion]] = [[] for _ in requests]
        errors: dict[int, str] = {}
        decode = self._decoder()
        for call in plan:
            try:
                outputs = self._run_call(call)
            except EngineStartError:
                raise
            except Exception:  # noqa: BLE001 - isolate the bad request instead of failing the batch
                outputs = None
            if outputs is not None:
                for owner, output, stop in zip(call.owners, outputs, call.stops, strict=True):
                    comps[owner].extend(completions_from_output(output, stop, decode))
                continue
            # The engine refused the group (a prompt too long, a bad adapter): retry request by request.
            for owner in dict.fromkeys(call.owners):
                idx = [j for j, o in enumerate(call.owners) if o == owner]
                single = EngineCall(
                    call.kind,
                    call.lora,
                    call.tools,
                    [call.inputs[j] for j in idx],
                    [call.sampling[j] for j in idx],
                    [owner] * len(idx),
                    [call.stops[j] for j in idx],
                )
                try:
                    for output, stop in zip(self._run_call(single), single.stops, strict=True):
                        comps[owner].extend(completions_from_output(output, stop, decode))
                except EngineStartError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    errors[owner] = f"{self.spec}: vLLM failed on this request: {type(exc).__name__}: {exc}"
        return [
            GenerationResult([], error=errors[i]) if i in errors else GenerationResult(comps[i])
            for i in range(len(requests))
        ]

    def _decoder(self) -> Any:
        """Token ids -> text with the engine's tokenizer (``None`` when the engine has none)."""
        get = getattr(self.engine(), "get_tokenizer", None)
        tok = get() if callable(get) else None
        if tok is None:
            return None
        return lambda ids: tok.decode(ids, skip_special_tokens=True)

    def _run_call(self, call: EngineCall) -> list[Any]:
        vllm = require("vllm", "vllm", "the vllm backend")
        llm = self.engine()
        params = [vllm.SamplingParams(**kw) for kw in call.sampling]
        lora_request = self._shared.lora_request(call.lora) if call.lora else None
        with self._shared.lock:
            if call.kind == "generate":
                return list(llm.generate(call.inputs, params, use_tqdm=False, lora_request=lora_request))
            extra: dict[str, object] = {}
            if call.tools:
                extra["tools"] = call.tools
            if self.chat_template_kwargs:
                extra["chat_template_kwargs"] = self.chat_template_kwargs
            return list(llm.chat(call.inputs, params, use_tqdm=False, lora_request=lora_request, **extra))


class _Engine:
    """The engine and LoRA-id table shared by a model and its :meth:`VLLMModel.with_lora` views."""

    def __init__(self) -> None:
        self.llm: Any = None
        self.start_error: EngineStartError | None = None
        self.asleep = False
        self.lock = threading.RLock()
        self._lora_ids: dict[tuple[str, float], int] = {}

    def lora_request(self, path: str) -> Any:
        from vllm.lora.request import LoRARequest

        p = Path(path)
        if not p.exists():
            raise ConfigError(f"LoRA adapter {path!r} does not exist")
        # A new id whenever the adapter files change, so a rewritten checkpoint is reloaded.
        stamp = max((f.stat().st_mtime for f in p.rglob("*") if f.is_file()), default=p.stat().st_mtime)
        key = (str(p.resolve()), stamp)
        if key not in self._lora_ids:
            self._lora_ids[key] = len(self._lora_ids) + 1
        lora_id = self._lora_ids[key]
        return LoRARequest(f"adapter-{lora_id}", lora_id, str(p.resolve()))


def make_vllm_model(spec: str, name: str, **options: Any) -> VLLMModel:
    """Factory for ``vllm/<model>`` (a Hugging Face id or a local directory)."""
    opts = VLLMOptions.parse(options)
    require("vllm", "vllm", "the vllm backend")
    return VLLMModel(spec, name, **opts.options())
