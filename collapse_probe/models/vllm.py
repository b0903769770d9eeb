"""``vllm/<model>``: the vLLM offline engine on a local GPU, one engine call per batch.

The whole batch of requests goes to ``LLM.chat`` (or ``LLM.generate`` on raw transcripts when the
option ``prompt_style="transcript"`` is set and a request carries a ``prompt``), so vLLM's scheduler
decodes every conversation of a rollout step together. vLLM is imported when the model is built
(``pip install "collapse-probe[vllm]"``); the engine itself is started on first use.

Seeds: a request with a seed is expanded into ``n`` single-sample prompts, sample ``i`` with
``seed = request.sample_seed(i)``, so that samples fetched in several ranges equal samples fetched at
once (the cache relies on it); prefix caching makes the repeated prompt nearly free. A request without
a seed is one prompt with ``SamplingParams(n=n)``.

LoRA: build with ``enable_lora=True``; the option ``lora=PATH`` applies an adapter to every request,
:meth:`VLLMModel.with_lora` returns a view of the same engine that samples through another adapter
(its own spec, hence its own cache keys), and ``generate(requests, loras=[...])`` chooses an adapter
per request. Requests are grouped by adapter (and tool list), one engine call per group. An adapter
directory rewritten in place (a co-trained simulator's new checkpoint) gets a new adapter id, so
vLLM loads the new weights instead of serving its cached copy.

Tool schemas are handed to the chat template; the reply comes back as text (tool-call parsing is the
benchmark's business, as with the local backends).

Options: ``enable_lora`` (False), ``max_lora_rank``, ``max_loras``, ``lora``, ``prompt_style``
(``"chat"``/``"transcript"``), ``chat_template_kwargs``; every other option goes to ``vllm.LLM``
(``tensor_parallel_size``, ``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ...).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError, require
from collapse_probe.models._types import Completion, GenerationRequest, GenerationResult

PROMPT_STYLES = ("chat", "transcript")


@dataclass
class EngineCall:
    """One call of the vLLM engine: prompts that share a LoRA adapter and a tool list."""

    kind: str
    """``"chat"`` (``LLM.chat`` on message lists) or ``"generate"`` (``LLM.generate`` on raw prompts)."""
    lora: str | None
    tools: list[dict[str, Any]] | None
    inputs: list[Any] = field(default_factory=list)
    """One message list (chat) or prompt string (generate) per engine prompt."""
    sampling: list[dict[str, Any]] = field(default_factory=list)
    """``vllm.SamplingParams`` keyword arguments, one per engine prompt."""
    owners: list[int] = field(default_factory=list)
    """Index of the request each engine prompt belongs to."""


def sampling_kwargs(request: GenerationRequest, n: int, seed: int | None) -> dict[str, Any]:
    """``vllm.SamplingParams`` keyword arguments for ``n`` samples of ``request`` with ``seed``."""
    p = request.params
    kwargs: dict[str, Any] = {
        "n": n,
        "temperature": p.temperature,
        "top_p": p.top_p,
        "max_tokens": p.max_tokens,
        "seed": seed,
    }
    if p.stop:
        kwargs["stop"] = list(p.stop)
    if p.logprobs:
        kwargs["logprobs"] = 1  # top-1 plus the sampled token, which is what we read
    return kwargs


def plan_engine_calls(
    requests: Sequence[GenerationRequest], loras: Sequence[str | None], prompt_style: str = "chat"
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
            call.sampling.append(sampling_kwargs(r, r.n, None))
            call.owners.append(ri)
        else:
            for i in range(r.n):
                call.inputs.append(item)
                call.sampling.append(sampling_kwargs(r, 1, r.sample_seed(i)))
                call.owners.append(ri)
    return list(calls.values())


def completions_from_output(output: Any) -> list[Completion]:
    """Our completions from one ``vllm.RequestOutput``."""
    out = []
    for c in output.outputs:
        token_logprobs = None
        if c.logprobs is not None:
            token_logprobs = [float(step[tok].logprob) for tok, step in zip(c.token_ids, c.logprobs, strict=False)]
        out.append(
            Completion(
                text=c.text,
                token_logprobs=token_logprobs,
                finish_reason=c.finish_reason,
                n_tokens=len(c.token_ids),
                token_ids=list(c.token_ids),
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
        chat_template_kwargs: dict[str, Any] | None = None,
        **engine_options: Any,
    ) -> None:
        if prompt_style not in PROMPT_STYLES:
            raise ConfigError(f"option 'prompt_style': expected one of {PROMPT_STYLES}, got {prompt_style!r}")
        if lora is not None and not enable_lora:
            raise ConfigError("option 'lora' needs enable_lora=True for the vllm backend")
        self.spec = spec
        self.model = model
        self.enable_lora = enable_lora
        self.lora = lora
        self.prompt_style = prompt_style
        self.chat_template_kwargs = chat_template_kwargs
        self.engine_options = engine_options
        self._shared = _Engine()

    def __repr__(self) -> str:
        return f"VLLMModel(spec={self.spec!r}, lora={self.lora!r})"

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
        """The ``vllm.LLM`` (started on first use, shared by :meth:`with_lora` views)."""
        with self._shared.lock:
            if self._shared.llm is None:
                vllm = require("vllm", "vllm", "the vllm backend")
                self._shared.llm = vllm.LLM(model=self.model, enable_lora=self.enable_lora, **self.engine_options)
            return self._shared.llm

    async def generate(
        self, requests: Sequence[GenerationRequest], loras: Sequence[str | None] | None = None
    ) -> list[GenerationResult]:
        """One result per request; ``loras`` optionally names an adapter per request."""
        if loras is None:
            loras = [self.lora] * len(requests)
        elif any(loras) and not self.enable_lora:
            raise ConfigError("per-request LoRA adapters need the vllm backend built with enable_lora=True")
        plan = plan_engine_calls(requests, loras, self.prompt_style)
        return await asyncio.to_thread(self._run_plan, requests, plan)

    def _run_plan(self, requests: Sequence[GenerationRequest], plan: list[EngineCall]) -> list[GenerationResult]:
        comps: list[list[Completion]] = [[] for _ in requests]
        errors: dict[int, str] = {}
        for call in plan:
            try:
                outputs = self._run_call(call)
            except Exception:  # noqa: BLE001 - isolate the bad request instead of failing the batch
                outputs = None
            if outputs is not None:
                for owner, output in zip(call.owners, outputs, strict=True):
                    comps[owner].extend(completions_from_output(output))
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
                )
                try:
                    for output in self._run_call(single):
                        comps[owner].extend(completions_from_output(output))
                except Exception as exc:  # noqa: BLE001
                    errors[owner] = f"{self.spec}: vLLM failed on this request: {type(exc).__name__}: {exc}"
        return [
            GenerationResult([], error=errors[i]) if i in errors else GenerationResult(comps[i])
            for i in range(len(requests))
        ]

    def _run_call(self, call: EngineCall) -> list[Any]:
        vllm = require("vllm", "vllm", "the vllm backend")
        llm = self.engine()
        params = [vllm.SamplingParams(**kw) for kw in call.sampling]
        lora_request = self._shared.lora_request(call.lora) if call.lora else None
        with self._shared.lock:
            if call.kind == "generate":
                return list(llm.generate(call.inputs, params, use_tqdm=False, lora_request=lora_request))
            extra: dict[str, Any] = {}
            if call.tools:
                extra["tools"] = call.tools
            if self.chat_template_kwargs:
                extra["chat_template_kwargs"] = self.chat_template_kwargs
            return list(llm.chat(call.inputs, params, use_tqdm=False, lora_request=lora_request, **extra))


class _Engine:
    """The engine and LoRA-id table shared by a model and its :meth:`VLLMModel.with_lora` views."""

    def __init__(self) -> None:
        self.llm: Any = None
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
    require("vllm", "vllm", "the vllm backend")
    return VLLMModel(spec, name, **options)
