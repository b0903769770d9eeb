"""``anthropic/<model>``: the Anthropic Messages API (``POST {base}/v1/messages``) over ``httpx``.

No ``anthropic`` SDK: see :mod:`collapse_probe.models._http` for why and for the shared retry and
concurrency policy. The key comes from ``$ANTHROPIC_API_KEY`` (or the variable named by the option
``api_key_env``) and is sent in the ``x-api-key`` header with ``anthropic-version``; the base URL from
the option ``base_url``, ``$ANTHROPIC_BASE_URL`` or ``https://api.anthropic.com``.

Mapping from our OpenAI-layout histories: system messages go to the top-level ``system`` field;
assistant tool calls become ``tool_use`` blocks and ``tool`` messages ``tool_result`` blocks of a
user turn; consecutive turns of one role are merged into one turn. A history with no user or
assistant turn (a simulator opening a conversation from its system prompt alone) is sent with the
system text as the single user turn, since the API needs at least one message.

The API has neither ``n`` nor ``seed``: ``n`` samples are ``n`` concurrent calls, and no seed is sent.
``temperature`` must lie in [0, 1]; ``top_p`` is sent only when it is not 1, because recent models
refuse ``temperature`` and ``top_p`` together. Extra options: ``anthropic_version`` (``"2023-06-01"``)
and those of :mod:`collapse_probe.models.openai` except ``prompt_style``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.models._http import (
    COMMON_OPTIONS,
    APIChatModel,
    CallFailure,
    api_key_from_env,
    check_base_url,
    check_options,
    common_kwargs,
    history_tool_calls,
    message_text,
    normalize_finish_reason,
    split_system,
    tool_schema,
)
from collapse_probe.models._types import Completion, GenerationRequest, Message

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


def to_anthropic_messages(
    messages: Sequence[Message], prompt: str | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` in the Messages API layout (content as lists of blocks)."""
    system, rest = split_system(messages)
    out: list[dict[str, Any]] = []
    for m in rest:
        role = m.get("role")
        blocks: list[dict[str, Any]] = []
        if role == "tool":
            wire_role = "user"
            blocks.append(
                {"type": "tool_result", "tool_use_id": str(m.get("tool_call_id", "")), "content": message_text(m)}
            )
        elif role in ("user", "assistant"):
            wire_role = role
            text = message_text(m)
            if text:
                blocks.append({"type": "text", "text": text})
            if role == "assistant":
                for tc in history_tool_calls(m):
                    args = tc["arguments"]
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": str(tc["id"]),
                            "name": tc["name"],
                            "input": args if isinstance(args, dict) else {"raw": args},
                        }
                    )
        else:
            raise ConfigError(f"message role {role!r}: expected system, user, assistant or tool")
        if not blocks:
            continue  # the API refuses empty turns
        if out and out[-1]["role"] == wire_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": wire_role, "content": blocks})
    if not out:
        opening = system or prompt or ""
        return None, [{"role": "user", "content": [{"type": "text", "text": opening}]}]
    return system, out


def parse_messages_response(data: dict[str, Any]) -> Completion:
    """One completion from a Messages API response (text blocks joined; ``tool_use`` blocks as tool calls)."""
    content = data.get("content")
    if not isinstance(content, list):
        raise CallFailure(f"malformed response: no 'content' list in {json.dumps(data)[:200]}")
    texts, calls = [], []
    for block in content:
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            calls.append(
                {"name": block.get("name", ""), "arguments": dict(block.get("input") or {}), "id": block.get("id")}
            )
    usage = data.get("usage") or {}
    return Completion(
        text="".join(texts),
        finish_reason=normalize_finish_reason(data.get("stop_reason")),
        tool_calls=calls or None,
        n_tokens=int(usage["output_tokens"]) if "output_tokens" in usage else None,
    )


class AnthropicChatModel(APIChatModel):
    """Anthropic Messages API backend."""

    provider = "Anthropic"
    native_n = False

    def __init__(self, spec: str, model: str, *, anthropic_version: str = ANTHROPIC_VERSION, **kwargs: Any) -> None:
        super().__init__(spec, model, **kwargs)
        self.anthropic_version = anthropic_version

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.anthropic_version}
        if self._api_key is not None:
            headers["x-api-key"] = self._api_key.get()
        return headers

    def build_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The ``/v1/messages`` body of one sample of ``request``."""
        p = request.params
        if p.temperature > 1:
            raise ConfigError(f"Anthropic accepts temperature in [0, 1], got {p.temperature}")
        system, messages = to_anthropic_messages(request.messages, request.prompt)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": p.max_tokens,
            "messages": messages,
            "temperature": p.temperature,
        }
        if system:
            body["system"] = system
        if p.top_p != 1.0:
            body["top_p"] = p.top_p
        if p.stop:
            body["stop_sequences"] = list(p.stop)
        if request.tools:
            body["tools"] = [
                {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
                for s in map(tool_schema, request.tools)
            ]
        return body

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        return [parse_messages_response(await self._post("/v1/messages", self.build_body(request)))]


_OPTIONS = (*COMMON_OPTIONS, "anthropic_version")


def make_anthropic_model(spec: str, name: str, **options: Any) -> AnthropicChatModel:
    """Factory for ``anthropic/<model>`` (see the module docstring for options)."""
    check_options(options, _OPTIONS, "anthropic")
    key, key_env = api_key_from_env(
        [options.get("api_key_env") or "ANTHROPIC_API_KEY"], provider="Anthropic", required=True
    )
    base = options.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
    return AnthropicChatModel(
        spec,
        name,
        base_url=check_base_url(base, "anthropic base URL (option base_url or $ANTHROPIC_BASE_URL)"),
        api_key=key,
        api_key_env=key_env,
        anthropic_version=options.get("anthropic_version", ANTHROPIC_VERSION),
        **common_kwargs(options),
    )
