"""Stand-in for the ``vllm`` package (tests only): see ../README.md."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

__version__ = os.environ.get("STAND_IN_VLLM_VERSION", "0.19.1")


def _log(event: dict[str, Any]) -> None:
    path = os.environ.get("STAND_IN_VLLM_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, sort_keys=True, default=str) + "\n")


class SamplingParams:
    def __init__(self, n: int = 1, temperature: float = 1.0, top_p: float = 1.0, max_tokens: int = 16,
                 seed: int | None = None, stop: list[str] | None = None, logprobs: int | None = None) -> None:  # fmt: skip
        self.n, self.temperature, self.top_p, self.max_tokens = n, temperature, top_p, max_tokens
        self.seed, self.stop, self.logprobs = seed, list(stop or []), logprobs


@dataclass
class Logprob:
    logprob: float


@dataclass
class CompletionOutput:
    text: str
    token_ids: list[int]
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str


@dataclass
class RequestOutput:
    outputs: list[CompletionOutput] = field(default_factory=list)


class _Tokenizer:
    """One token per character (id = code point)."""

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(chr(i) for i in ids)


class LLM:
    def __init__(self, model: str, **options: Any) -> None:
        _log({"event": "build", "model": model, "options": options, "pid": os.getpid(), "t": time.time(),
              "batch_invariant_env": os.environ.get("VLLM_BATCH_INVARIANT")})  # fmt: skip
        reason = os.environ.get("STAND_IN_VLLM_REFUSE")
        if reason:
            raise ValueError(reason)
        time.sleep(float(os.environ.get("STAND_IN_VLLM_START_SECONDS", "0")))  # vLLM profiles the GPU here
        _log({"event": "built", "model": model, "pid": os.getpid(), "t": time.time()})
        self.model = model
        self.options = options
        self.asleep = False

    def get_tokenizer(self) -> _Tokenizer:
        return _Tokenizer()

    def sleep(self, level: int = 1) -> None:
        _log({"event": "sleep", "level": level})
        self.asleep = True

    def wake_up(self) -> None:
        _log({"event": "wake_up"})
        self.asleep = False

    def _answer(self, last: str, p: SamplingParams, lora: Any, index: int) -> CompletionOutput:
        if self.asleep:
            raise RuntimeError("engine is asleep")
        seed = p.seed if p.seed is not None else index
        template = os.environ.get("STAND_IN_VLLM_TEXT", "reply {seed} {lora}")
        text = template.format(seed=seed, lora=getattr(lora, "lora_name", None), last=last)[: p.max_tokens]
        finish = "length" if len(text) >= p.max_tokens else "stop"
        hits = [i for i in (text.find(s) for s in p.stop) if i >= 0]
        if hits:  # vLLM cuts at the first stop string anywhere, leading whitespace included
            cut = min(hits)
            stop = next(s for s in p.stop if text.find(s) == cut)
            ids = [ord(c) for c in text[: cut + len(stop)]]
            text, finish = text[:cut], "stop"
        else:
            ids = [ord(c) for c in text]
        logprobs = [{t: Logprob(-0.5)} for t in ids] if p.logprobs else None
        return CompletionOutput(text, ids, logprobs, finish)

    def _run(self, kind: str, inputs: list[Any], params: Any, lora_request: Any, **kw: Any) -> list[RequestOutput]:
        plist = params if isinstance(params, list) else [params] * len(inputs)
        _log({"event": kind, "n_prompts": len(inputs), "lora": getattr(lora_request, "lora_path", None),
              "lora_id": getattr(lora_request, "lora_int_id", None), "kwargs": sorted(kw)})  # fmt: skip
        outs = []
        for x, p in zip(inputs, plist, strict=True):
            last = x if isinstance(x, str) else str(x[-1].get("content", ""))
            outs.append(RequestOutput([self._answer(last, p, lora_request, i) for i in range(p.n)]))
        return outs

    def chat(self, messages: list[Any], sampling_params: Any, use_tqdm: bool = False,
             lora_request: Any = None, **kw: Any) -> list[RequestOutput]:  # fmt: skip
        return self._run("chat", messages, sampling_params, lora_request, **kw)

    def generate(self, prompts: list[str], sampling_params: Any, use_tqdm: bool = False,
                 lora_request: Any = None) -> list[RequestOutput]:  # fmt: skip
        return self._run("generate", prompts, sampling_params, lora_request)
