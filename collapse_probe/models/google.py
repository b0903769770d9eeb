"""``google/<model>``: the Gemini API ``generateContent`` REST method over ``httpx``.

``POST {base}/v1beta/models/{model}:generateContent`` with the key in the ``x-goog-api-key`` header
(never in the URL, where it would end up in logs). No ``google-genai`` SDK: see
:mod:`collapse_probe.models._http` for why and for the shared retry and concurrency policy. The key
comes from ``$GEMINI_API_KEY`` or ``$GOOGLE_API_KEY`` (or the variable named by ``api_key_env``); the
base URL from the option ``base_url``, ``$GOOGLE_GEMINI_BASE_URL`` or
``https://generativelanguage.googleapis.com``; the API version from ``api_version`` (``"v1beta"``).

Mapping: system messages become ``systemInstruction``; ``assistant`` turns have role ``model``;
assistant tool calls become ``functionCall`` parts and ``tool`` messages ``functionResponse`` parts
of a user turn; sampling goes to ``generationConfig`` (``temperature``, ``topP``,
``maxOutputTokens``, ``stopSequences``, ``seed``, ``candidateCount``, ``responseLogprobs``). ``n``
samples are asked for as ``candidateCount`` (at most 8 per call); a model that refuses several
candidates is served by single-candidate calls from then on, each with its own per-sample seed.
Function schemas are reduced to the OpenAPI subset the API accepts. Gemini 3 signs its function
calls (``thoughtSignature``); the signature is kept on the returned tool call
(``"thought_signature"``) and sent back with it, and a replayed call without one is marked with the
documented validator-skip value so that foreign histories are accepted.

A prompt blocked by the safety filter (no candidates, ``promptFeedback.blockReason``) is the model's
answer, not an infrastructure failure: it comes back as empty texts with finish reason
``content_filter``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
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

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
"""Value the API documents for replayed function calls whose signature is unknown."""

_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)


def gemini_schema(schema: Any) -> Any:
    """A JSON schema reduced to the OpenAPI subset of Gemini's ``Schema`` (unknown keys dropped)."""
    if isinstance(schema, list):
        return [gemini_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: gemini_schema(v) for name, v in value.items()}
        elif key in ("items", "anyOf"):
            out[key] = gemini_schema(value)
        elif key == "type" and isinstance(value, list):
            # ["string", "null"] -> type string, nullable
            kinds = [v for v in value if v != "null"]
            out["type"] = kinds[0] if kinds else "string"
            if "null" in value:
                out["nullable"] = True
        else:
            out[key] = value
    return out


def to_gemini_contents(
    messages: Sequence[Message], prompt: str | None = None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(systemInstruction, contents)`` in the Gemini layout."""
    system, rest = split_system(messages)
    names_by_id: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for m in rest:
        role = m.get("role")
        parts: list[dict[str, Any]] = []
        if role == "tool":
            wire_role = "user"
            name = m.get("name") or names_by_id.get(str(m.get("tool_call_id")), "")
            text = message_text(m)
            try:
                response = json.loads(text)
            except json.JSONDecodeError:
                response = None
            if not isinstance(response, dict):
                response = {"result": text}
            parts.append({"functionResponse": {"name": name, "response": response}})
        elif role in ("user", "assistant"):
            wire_role = "user" if role == "user" else "model"
            text = message_text(m)
            if text:
                parts.append({"text": text})
            if role == "assistant":
                for j, tc in enumerate(history_tool_calls(m)):
                    names_by_id[str(tc["id"])] = tc["name"]
                    args = tc["arguments"]
                    part: dict[str, Any] = {
                        "functionCall": {"name": tc["name"], "args": args if isinstance(args, dict) else {"raw": args}}
                    }
                    signature = tc.get("thought_signature")
                    if signature or j == 0:
                        # Only the first of parallel calls carries a signature.
                        part["thoughtSignature"] = signature or SKIP_THOUGHT_SIGNATURE
                    parts.append(part)
        else:
            raise ConfigError(f"message role {role!r}: expected system, user, assistant or tool")
        if not parts:
            continue
        if contents and contents[-1]["role"] == wire_role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": wire_role, "parts": parts})
    if not contents:
        return None, [{"role": "user", "parts": [{"text": system or prompt or ""}]}]
    instruction = {"parts": [{"text": system}]} if system else None
    return instruction, contents


def parse_generate_content_response(data: dict[str, Any], k: int) -> list[Completion]:
    """Completions of a ``generateContent`` response, in candidate order."""
    candidates = data.get("candidates")
    if not candidates:
        feedback = data.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            return [Completion(text="", finish_reason="content_filter") for _ in range(k)]
        raise CallFailure(f"malformed response: no candidates in {json.dumps(data)[:200]}")
    out = []
    usage = data.get("usageMetadata") or {}
    for cand in sorted(candidates, key=lambda c: c.get("index", 0)):
        texts, calls = [], []
        for j, part in enumerate((cand.get("content") or {}).get("parts") or []):
            if part.get("thought"):
                continue  # thought summaries are not the answer
            if "text" in part:
                texts.append(part["text"])
            elif "functionCall" in part:
                fc = part["functionCall"]
                call = {
                    "name": fc.get("name", ""),
                    "arguments": dict(fc.get("args") or {}),
                    "id": fc.get("id") or f"call_{j}",
                }
                if part.get("thoughtSignature"):
                    call["thought_signature"] = part["thoughtSignature"]
                calls.append(call)
        chosen = (cand.get("logprobsResult") or {}).get("chosenCandidates")
        token_logprobs = [float(c.get("logProbability", 0.0)) for c in chosen] if chosen is not None else None
        n_tokens = len(token_logprobs) if token_logprobs is not None else None
        if n_tokens is None and len(candidates) == 1 and "candidatesTokenCount" in usage:
            n_tokens = int(usage["candidatesTokenCount"])
        out.append(
            Completion(
                text="".join(texts),
                token_logprobs=token_logprobs,
                finish_reason=normalize_finish_reason(cand.get("finishReason")),
                tool_calls=calls or None,
                n_tokens=n_tokens,
            )
        )
    return out


class GeminiChatModel(APIChatModel):
    """Gemini API ``generateContent`` backend."""

    provider = "Google Gemini"
    native_n = True
    max_native_n = 8

    def __init__(self, spec: str, model: str, *, api_version: str = "v1beta", **kwargs: Any) -> None:
        super().__init__(spec, model.removeprefix("models/"), **kwargs)
        self.api_version = api_version

    def _headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key.get()} if self._api_key is not None else {}

    @property
    def path(self) -> str:
        return f"/{self.api_version}/models/{self.model}:generateContent"

    def build_body(self, request: GenerationRequest, start: int = 0, k: int = 1) -> dict[str, Any]:
        """The ``generateContent`` body asking for samples ``start .. start + k - 1``."""
        p = request.params
        instruction, contents = to_gemini_contents(request.messages, request.prompt)
        config: dict[str, Any] = {"temperature": p.temperature, "topP": p.top_p, "maxOutputTokens": p.max_tokens}
        if p.stop:
            config["stopSequences"] = list(p.stop)
        seed = request.sample_seed(start)
        if seed is not None:
            config["seed"] = seed
        if k > 1:
            config["candidateCount"] = k
        if p.logprobs:
            config["responseLogprobs"] = True
        body: dict[str, Any] = {"contents": contents, "generationConfig": config}
        if instruction:
            body["systemInstruction"] = instruction
        if request.tools:
            decls = []
            for s in map(tool_schema, request.tools):
                decl = {"name": s["name"], "description": s["description"]}
                if s["parameters"].get("properties"):
                    decl["parameters"] = gemini_schema(s["parameters"])
                decls.append(decl)
            body["tools"] = [{"functionDeclarations": decls}]
        return body

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        data = await self._post(self.path, self.build_body(request, start, k))
        return parse_generate_content_response(data, k)


_OPTIONS = (*COMMON_OPTIONS, "api_version")


def make_google_model(spec: str, name: str, **options: Any) -> GeminiChatModel:
    """Factory for ``google/<model>`` (see the module docstring for options)."""
    check_options(options, _OPTIONS, "google")
    names = [options["api_key_env"]] if options.get("api_key_env") else ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
    key, key_env = api_key_from_env(names, provider="Google Gemini", required=True)
    base = options.get("base_url") or os.environ.get("GOOGLE_GEMINI_BASE_URL") or GEMINI_BASE_URL
    return GeminiChatModel(
        spec,
        name,
        base_url=check_base_url(base, "google base URL (option base_url or $GOOGLE_GEMINI_BASE_URL)"),
        api_key=key,
        api_key_env=key_env,
        api_version=options.get("api_version", "v1beta"),
        **common_kwargs(options),
    )
