"""``litellm/<provider>/<model>``: any provider LiteLLM routes to, through ``litellm.acompletion``.

For the providers it has no native backend for (Bedrock, Vertex, Mistral, Groq, ...). LiteLLM is an
optional dependency (``pip install "collapse-probe[litellm]"``) imported when the model is built; it
reads each provider's key from that provider's usual environment variable. The calls go through the
same concurrency bound and the one retry policy of the SDK backends (:mod:`collapse_probe.models._http`),
so LiteLLM's own retries stay off (``num_retries=0``): one policy, not two stacked; the usage LiteLLM
reports goes to the usage ledger. ``drop_params`` is on, so a
parameter a provider lacks (``seed`` on Anthropic) is dropped rather than refused. ``n`` samples are
``n`` calls with per-sample seeds unless the option ``native_n=True`` asks for ``n`` in one call.

Options: ``base_url`` (LiteLLM's ``api_base``), ``concurrency``, ``max_retries``, ``backoff_base``,
``backoff_max``, ``max_retry_after``, ``timeout``, ``extra_body`` (extra ``acompletion`` arguments),
``native_n``.
"""

from __future__ import annotations

import os
import re
from typing import Any, cast

from collapse_probe.core._secrets import register_env_secrets
from collapse_probe.errors import require
from collapse_probe.models._http import (
    RETRY_STATUSES,
    APIChatModel,
    CallFailure,
    check_base_url,
    parse_retry_after,
)
from collapse_probe.models._options import LiteLLMOptions
from collapse_probe.models._types import Completion, GenerationRequest, Message
from collapse_probe.models._usage import check_budget
from collapse_probe.models.openai import ChatAnswer, openai_tool, parse_chat_response, to_openai_messages


class _NoClient:
    async def aclose(self) -> None:
        pass


KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "cohere": "COHERE_API_KEY",
}
"""Where LiteLLM looks for common providers' keys (used in error messages only)."""

_SECRET_NAME = re.compile(r"(_API_KEY|_KEY|_TOKEN|_SECRET)$")


class LiteLLMChatModel(APIChatModel):
    """A model behind ``litellm.acompletion``."""

    provider = "LiteLLM"
    native_n = False
    max_native_n = 128

    def __init__(self, spec: str, model: str, **kwargs: Any) -> None:
        provider = model.split("/", 1)[0] if "/" in model else "openai"
        key_env = KEY_VARIABLES.get(provider, f"{provider.upper()}_API_KEY")
        super().__init__(spec, model, api_key=None, api_key_env=key_env, **kwargs)

    def build_kwargs(self, request: GenerationRequest, start: int = 0, k: int = 1) -> dict[str, object]:
        """The ``litellm.acompletion`` keyword arguments for samples ``start .. start + k - 1``
        (an open set: ``extra_body`` is merged in)."""
        p = request.params
        messages: list[Message] = list(request.messages) or [{"role": "user", "content": request.prompt or ""}]
        kwargs: dict[str, object] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "temperature": p.temperature,
            "top_p": p.top_p,
            "max_tokens": p.max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,
            "drop_params": True,
        }
        if k > 1:
            kwargs["n"] = k
        if p.stop:
            kwargs["stop"] = list(p.stop)
        seed = request.sample_seed(start)
        if seed is not None:
            kwargs["seed"] = seed
        if p.logprobs:
            kwargs["logprobs"] = True
        if request.tools:
            kwargs["tools"] = [openai_tool(t) for t in request.tools]
        if self.base_url:
            kwargs["api_base"] = self.base_url
        kwargs.update(self.extra_body)
        return kwargs

    def classify_exception(self, exc: Exception) -> CallFailure:
        """Map a LiteLLM exception (OpenAI-style classes with ``status_code``) to a :class:`CallFailure`."""
        name = type(exc).__name__
        status = getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        detail = f"{name}: {exc}"
        if status == 401 or name == "AuthenticationError":
            return CallFailure(f"{detail}; check the API key in ${self.api_key_env}", status=401)
        if "Timeout" in name or name in ("APIConnectionError", "ServiceUnavailableError", "InternalServerError"):
            return CallFailure(detail, status=status, retryable=True)
        if status in RETRY_STATUSES or name == "RateLimitError":
            headers = getattr(getattr(exc, "response", None), "headers", None) or {}
            return CallFailure(detail, status=status, retryable=True, retry_after=parse_retry_after(headers))
        return CallFailure(detail, status=status)

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        litellm = require("litellm", "litellm", "the litellm backend")
        kwargs = self.build_kwargs(request, start, k)
        async with self._session() as state:

            async def once() -> ChatAnswer:
                check_budget(self.spec)
                async with state.slot():
                    self.calls += 1
                    try:
                        resp = await litellm.acompletion(**kwargs)
                    except Exception as exc:  # noqa: BLE001 - every LiteLLM failure is classified, none escapes
                        raise self.classify_exception(exc) from None
                # LiteLLM answers in the OpenAI layout; parse_chat_response checks every value it reads
                return cast(ChatAnswer, resp.model_dump() if hasattr(resp, "model_dump") else dict(resp))

            data = await self._retrying(once)
        usage = data.get("usage") or {}
        self.record_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"), data.get("model"))
        return parse_chat_response(data)

    def _new_client(self, http_client: Any) -> Any:
        return None  # LiteLLM keeps its own clients; the slots only bound concurrency

    def _new_http_client(self, size: int) -> Any:
        return _NoClient()

    def redact(self, text: str) -> str:
        """Scrub the values of every key-like environment variable (LiteLLM holds keys we never see:
        they are registered as the model is built, :func:`make_litellm_model`) and every registered secret."""
        for name, value in os.environ.items():
            if len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
                text = text.replace(value, "***")
        return super().redact(text)


def make_litellm_model(spec: str, name: str, **options: Any) -> LiteLLMChatModel:
    """Factory for ``litellm/<provider>/<model>``; needs the ``litellm`` package (extra ``litellm``)."""
    opts = LiteLLMOptions.parse(options)
    require("litellm", "litellm", "the litellm backend")
    # LiteLLM reads each provider's key itself: every key-like variable is a secret of this process,
    # scrubbed from every file and terminal line and refused in replies, like the SDK backends' keys
    register_env_secrets([n for n in os.environ if _SECRET_NAME.search(n)], min_length=8)
    base = opts.base_url
    return LiteLLMChatModel(
        spec,
        name,
        base_url=check_base_url(base, "litellm option base_url") if base else "",
        **opts.common(),
    )
