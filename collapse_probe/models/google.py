"""``google/<model>`` and ``vertex/<model>``: Gemini ``generateContent`` through the official
``google-genai`` SDK (extra ``api``).

The SDK builds, authenticates and parses each call and raises its typed errors; concurrency, the one
retry policy (the SDK's retries stay off), per-sample seeds and usage accounting are
:mod:`collapse_probe.models._http`'s.

``google/<model>``: the Gemini Developer API. The key comes from ``$GEMINI_API_KEY`` or
``$GOOGLE_API_KEY`` (or the variable named by ``api_key_env``) and is sent in the
``x-goog-api-key`` header (never in the URL, where it would end up in logs); the base URL from the
option ``base_url``, ``$GOOGLE_GEMINI_BASE_URL`` or ``https://generativelanguage.googleapis.com``; the
API version from ``api_version`` (``"v1beta"``).

``vertex/<model>``: Gemini on Vertex AI (``genai.Client(vertexai=True)``), with Google
application-default credentials, the project from the option ``project`` or
``$GOOGLE_CLOUD_PROJECT`` and the location from ``location`` or ``$GOOGLE_CLOUD_LOCATION``
(default ``global``); or Vertex express mode with a key in ``$GOOGLE_API_KEY`` and no project.

Mapping: system messages become ``systemInstruction``; ``assistant`` turns have role ``model``;
assistant tool calls become ``functionCall`` parts and ``tool`` messages ``functionResponse`` parts
of a user turn; sampling goes to the generation config (``temperature``, ``topP``,
``maxOutputTokens``, ``stopSequences``, ``seed``, ``candidateCount``, ``responseLogprobs``). ``n``
samples are asked for as ``candidateCount`` (at most 8 per call); a model that refuses several
candidates is served by single-candidate calls from then on, each with its own per-sample seed.
Function schemas are reduced to the OpenAPI subset the API accepts. Gemini 3 signs its function
calls (``thoughtSignature``); the signature is kept on the returned tool call
(``"thought_signature"``, base64 as on the wire) and sent back with it, and a replayed call without
one carries the documented validator-skip value so that foreign histories are accepted.

A prompt blocked by the safety filter (no candidates, ``promptFeedback.blockReason``) is the model's
answer, not an infrastructure failure: it comes back as empty texts with finish reason
``content_filter``.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Required, TypedDict, cast, overload

from collapse_probe.errors import ConfigError, require
from collapse_probe.models._answers import EmptyAnswer, retry_empty
from collapse_probe.models._http import (
    APIChatModel,
    CallFailure,
    api_key_from_env,
    check_base_url,
    history_tool_calls,
    message_text,
    normalize_finish_reason,
    split_system,
    tool_schema,
)
from collapse_probe.models._options import GoogleOptions, VertexOptions
from collapse_probe.models._types import Completion, GenerationRequest, Message, ToolCallRecord

if TYPE_CHECKING:
    from google.genai.types import BatchJob

    from collapse_probe.models._batch import BatchCall, BatchOutcome


class FunctionCall(TypedDict, total=False):
    name: Required[str]
    args: Required[dict[str, object]]
    id: str
    """Answers only: the call's id, where the API gives one."""


class FunctionResponse(TypedDict):
    name: str
    response: dict[str, object]
    """The tool's JSON answer (a non-object answer as ``{"result": text}``)."""


class Part(TypedDict, total=False):
    """One part of a content (the REST wire form, camelCase)."""

    text: str
    functionCall: FunctionCall
    functionResponse: FunctionResponse
    thoughtSignature: str | bytes
    """Base64 text on the wire; the raw bytes in what the SDK is handed (it encodes them again)."""


class Content(TypedDict):
    role: str
    """``"user"`` or ``"model"``."""
    parts: list[Part]


class SystemInstruction(TypedDict):
    parts: list[Part]


class GenerationParams(TypedDict, total=False):
    """The body's ``generationConfig``: the sampling parameters."""

    temperature: float
    topP: float
    maxOutputTokens: int
    stopSequences: list[str]
    seed: int
    candidateCount: int
    """Samples in one call (left out for 1)."""
    responseLogprobs: bool


class FunctionDeclaration(TypedDict, total=False):
    name: Required[str]
    description: Required[str]
    parameters: dict[str, object]
    """The arguments' schema reduced by :func:`gemini_schema` (left out when there are none)."""


class Tool(TypedDict):
    functionDeclarations: list[FunctionDeclaration]


class GenerateContentBody(TypedDict, total=False):
    """The body of a ``generateContent`` call in the REST wire form (the fields this backend sends)."""

    contents: Required[list[Content]]
    generationConfig: Required[GenerationParams]
    systemInstruction: SystemInstruction
    tools: list[Tool]


class SdkRequest(TypedDict):
    """``generate_content`` keyword arguments (see :meth:`GeminiChatModel.sdk_request`)."""

    model: str
    contents: list[Content]
    config: dict[str, object]
    """The generation config with ``systemInstruction``, ``tools`` and ``http_options`` beside it."""


class AnswerPart(TypedDict, total=False):
    """One part of an answer's content."""

    text: str
    functionCall: FunctionCall
    thoughtSignature: str
    """Base64; sent back with the call when the conversation is replayed."""
    thought: bool
    """The part is a thought summary, not the answer."""


class AnswerContent(TypedDict, total=False):
    role: str
    parts: list[AnswerPart]


class LogprobCandidate(TypedDict, total=False):
    token: str
    logProbability: float


class LogprobsResult(TypedDict, total=False):
    chosenCandidates: list[LogprobCandidate]
    """The log-probability of each generated token."""


class Candidate(TypedDict, total=False):
    """One sample of an answer."""

    index: int
    content: AnswerContent
    finishReason: str
    logprobsResult: LogprobsResult


class PromptFeedback(TypedDict, total=False):
    blockReason: str
    """Set when the prompt itself was blocked (no candidates then)."""


class UsageMetadata(TypedDict, total=False):
    promptTokenCount: int
    toolUsePromptTokenCount: int
    candidatesTokenCount: int
    thoughtsTokenCount: int
    """Thinking tokens, billed as output."""


class GenerateContentAnswer(TypedDict, total=False):
    """The answer of a ``generateContent`` call in the REST wire form, as the API documents it (the keys
    read here). The parser checks each value as it reads it."""

    candidates: list[Candidate]
    promptFeedback: PromptFeedback
    usageMetadata: UsageMetadata
    modelVersion: str
    """The model version that answered."""


GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
"""Value the API documents for replayed function calls whose signature is unknown (the signature's
bytes; on the wire, like every signature, base64)."""
SKIP_THOUGHT_SIGNATURE_B64 = base64.b64encode(SKIP_THOUGHT_SIGNATURE.encode()).decode()

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


@overload
def gemini_schema(schema: Mapping[str, object]) -> dict[str, object]: ...


@overload
def gemini_schema(schema: object) -> object: ...


def gemini_schema(schema: object) -> object:
    """A JSON schema reduced to the OpenAPI subset of Gemini's ``Schema`` (unknown keys dropped)."""
    if isinstance(schema, list):
        return [gemini_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, object] = {}
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
) -> tuple[SystemInstruction | None, list[Content]]:
    """``(systemInstruction, contents)`` in the Gemini layout."""
    system, rest = split_system(messages)
    names_by_id: dict[str, str] = {}
    contents: list[Content] = []
    for m in rest:
        role = m.get("role")
        parts: list[Part] = []
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
                    part: Part = {
                        "functionCall": {"name": tc["name"], "args": args if isinstance(args, dict) else {"raw": args}}
                    }
                    signature = tc.get("thought_signature")
                    if signature or j == 0:
                        # Only the first of parallel calls carries a signature.
                        part["thoughtSignature"] = signature or SKIP_THOUGHT_SIGNATURE_B64
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
    instruction: SystemInstruction | None = {"parts": [{"text": system}]} if system else None
    return instruction, contents


def parse_generate_content_response(data: GenerateContentAnswer, k: int) -> list[Completion]:
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
        texts: list[str] = []
        calls: list[ToolCallRecord] = []
        for j, part in enumerate((cand.get("content") or {}).get("parts") or []):
            if part.get("thought"):
                continue  # thought summaries are not the answer
            if "text" in part:
                texts.append(part["text"])
            elif "functionCall" in part:
                fc = part["functionCall"]
                call: ToolCallRecord = {
                    "name": fc.get("name", ""),
                    "arguments": dict(fc.get("args") or {}),
                    "id": fc.get("id") or f"call_{j}",
                }
                if part.get("thoughtSignature"):
                    call["thought_signature"] = part["thoughtSignature"]
                calls.append(call)
        finish = str(cand.get("finishReason") or "")
        if (
            not calls
            and not "".join(texts).strip()
            and finish not in ("SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION")
        ):
            # no text and no call, and not a safety block: not an answer (retried, then an infra failure)
            raise EmptyAnswer(f"the server returned a candidate without text or call (finishReason {finish or 'none'})")
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


def _genai() -> Any:
    return require("google.genai", "api", "the google and vertex backends", package="google-genai")


def _sdk_contents(contents: list[Content]) -> list[Content]:
    """Wire-form contents with signatures as the bytes the SDK expects (it base64-encodes them again)."""
    out: list[Content] = []
    for c in contents:
        parts: list[Part] = []
        for part in c["parts"]:
            if isinstance(part.get("thoughtSignature"), str):
                part = {**part, "thoughtSignature": base64.b64decode(part["thoughtSignature"])}
            parts.append(part)
        out.append({**c, "parts": parts})
    return out


class GeminiChatModel(APIChatModel):
    """Gemini ``generateContent`` backend (Developer API or Vertex AI) via the ``google-genai`` SDK."""

    provider = "Google Gemini"
    native_n = True
    max_native_n = 8
    supports_batch = True

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        api_version: str = "v1beta",
        vertex: bool = False,
        project: str | None = None,
        location: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(spec, model.removeprefix("models/"), **kwargs)
        self.api_version = api_version
        self.vertex, self.project, self.location = vertex, project, location
        if vertex:
            self.provider = "Gemini on Vertex AI"
            self.supports_batch = False  # Vertex batch jobs read and write Cloud Storage / BigQuery
        self._batches: dict[str, BatchJob] = {}

    @property
    def path(self) -> str:
        return f"/{self.api_version}/models/{self.model}:generateContent"

    def _http_options(self, http_client: Any = None, timeout: float | None = None) -> Any:
        types = _genai().types
        options: dict[str, object] = {
            "timeout": int((timeout or self.timeout) * 1000),
            "retry_options": types.HttpRetryOptions(attempts=1),  # one policy: ours
        }
        if self.base_url and not (self.vertex and self.base_url == VERTEX_DEFAULT):
            options["base_url"] = self.base_url
        if not self.vertex:
            options["api_version"] = self.api_version
        if http_client is not None:
            options["httpx_async_client"] = http_client
        return types.HttpOptions(**options)

    def _client_kwargs(self, http_client: Any = None, timeout: float | None = None) -> dict[str, object]:
        """Keyword arguments of the SDK client's constructor."""
        kwargs: dict[str, object] = {"http_options": self._http_options(http_client, timeout)}
        if self.vertex:
            kwargs["vertexai"] = True
            if self.project:
                kwargs.update(project=self.project, location=self.location or "global")
            elif self._api_key is not None:
                kwargs["api_key"] = self._api_key.get()
        else:
            kwargs["api_key"] = self._api_key.get() if self._api_key is not None else None
        return kwargs

    def _new_client(self, http_client: Any) -> Any:
        return _genai().Client(**self._client_kwargs(http_client))

    def sync_client(self) -> Any:
        """A blocking SDK client (model lookups, batches)."""
        return _genai().Client(**self._client_kwargs())

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        import httpx2

        errors: tuple[type[BaseException], ...] = (_genai().errors.APIError, httpx2.TransportError)
        try:
            import httpx

            errors = (*errors, httpx.TransportError)
        except ImportError:
            pass
        return errors

    def _served_model_name(self) -> str | None:
        info = _genai().Client(**self._client_kwargs(timeout=10.0)).models.get(model=self.model)
        version = getattr(info, "version", None)
        return f"{info.name}@{version}" if version else str(info.name)

    def build_body(self, request: GenerationRequest, start: int = 0, k: int = 1) -> GenerateContentBody:
        """The ``generateContent`` body (wire form) asking for samples ``start .. start + k - 1``."""
        p = request.params
        instruction, contents = to_gemini_contents(request.messages, request.prompt)
        config: GenerationParams = {"temperature": p.temperature, "topP": p.top_p, "maxOutputTokens": p.max_tokens}
        if p.stop:
            config["stopSequences"] = list(p.stop)
        seed = request.sample_seed(start)
        if seed is not None:
            config["seed"] = seed
        if k > 1:
            config["candidateCount"] = k
        if p.logprobs:
            config["responseLogprobs"] = True
        body: GenerateContentBody = {"contents": contents, "generationConfig": config}
        if instruction:
            body["systemInstruction"] = instruction
        if request.tools:
            decls = []
            for s in map(tool_schema, request.tools):
                decl: FunctionDeclaration = {"name": s["name"], "description": s["description"]}
                if s["parameters"].get("properties"):
                    decl["parameters"] = gemini_schema(s["parameters"])
                decls.append(decl)
            body["tools"] = [{"functionDeclarations": decls}]
        return body

    def sdk_request(self, body: GenerateContentBody) -> SdkRequest:
        """``generate_content`` keyword arguments for a wire-form body."""
        config: dict[str, object] = dict(body["generationConfig"])
        if "systemInstruction" in body:
            config["systemInstruction"] = body["systemInstruction"]
        if "tools" in body:
            config["tools"] = body["tools"]
        if self.extra_body:
            config["http_options"] = {"extra_body": self.extra_body}
        return {"model": self.model, "contents": _sdk_contents(body["contents"]), "config": config}

    # -- Gemini batch mode (inlined requests)

    def batch_line(self, request: GenerationRequest, start: int, k: int) -> tuple[str, GenerateContentBody]:
        return self.path, self.build_body(request, start, k)

    async def batch_submit(self, items: Sequence[tuple[BatchCall, str, Mapping[str, object]]]) -> str:
        src = []
        for call, _path, body in items:
            kwargs = self.sdk_request(cast(GenerateContentBody, body))  # built by batch_line
            kwargs["config"].pop("http_options", None)
            src.append({**kwargs, "metadata": {"key": call.custom_id}})
        job = await self._send(
            lambda c: c.aio.batches.create(model=self.model, src=src, config={"display_name": "collapse-probe"})
        )
        return str(job.name)

    async def batch_poll(self, batch_id: str) -> tuple[bool, int]:
        job = await self._send(lambda c: c.aio.batches.get(name=batch_id))
        self._batches[batch_id] = job
        state = getattr(job.state, "value", str(job.state))
        done = state in ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")
        stats = getattr(job, "completion_stats", None)
        answered = int(getattr(stats, "successful_count", 0) or 0) + int(getattr(stats, "failed_count", 0) or 0)
        return done, answered

    async def batch_results(self, batch_id: str) -> dict[str, BatchOutcome]:
        from collapse_probe.models._batch import MISSING, BatchOutcome

        job: Any = self._batches.get(batch_id)
        if job is None:
            job = await self._send(lambda c: c.aio.batches.get(name=batch_id))
        out: dict[str, BatchOutcome] = {}
        for r in (job.dest.inlined_responses if job.dest is not None else None) or []:
            key = (r.metadata or {}).get("key")
            if key is None:
                continue
            if r.error is not None or r.response is None:
                err = r.error.model_dump(exclude_none=True) if r.error is not None else {}
                out[key] = BatchOutcome(error=str(err.get("message") or err or "no response"))
                continue
            data = r.response.model_dump(mode="json", by_alias=True, exclude_none=True)
            data.pop("sdkHttpResponse", None)
            out[key] = BatchOutcome(data=data)
        state = getattr(job.state, "value", str(job.state))
        if state != "JOB_STATE_SUCCEEDED":
            out[MISSING] = BatchOutcome(error=f"the batch ended as {state}")
        return out

    def parse_batch_answer(self, data: dict[str, object], request: GenerationRequest, k: int) -> list[Completion]:
        return self.parse_answer(cast(GenerateContentAnswer, data), k, batch=True)

    def parse_answer(self, data: GenerateContentAnswer, k: int, batch: bool = False) -> list[Completion]:
        """Completions of one answered call (a wire-form dict); its usage goes to the ledger."""
        usage = data.get("usageMetadata") or {}
        inp = int(usage.get("promptTokenCount") or 0) + int(usage.get("toolUsePromptTokenCount") or 0)
        # thinking tokens are billed as output
        out = int(usage.get("candidatesTokenCount") or 0) + int(usage.get("thoughtsTokenCount") or 0)
        self.record_usage(inp, out, data.get("modelVersion"), batch=batch)
        return parse_generate_content_response(data, k)

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        return await retry_empty(self, lambda: self._call_once(request, start, k))

    async def _call_once(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        kwargs = self.sdk_request(self.build_body(request, start, k))
        resp = await self._send(lambda c: c.aio.models.generate_content(**kwargs))
        data = resp.model_dump(mode="json", by_alias=True, exclude_none=True)
        data.pop("sdkHttpResponse", None)
        return self.parse_answer(data, k)


VERTEX_DEFAULT = "https://aiplatform.googleapis.com"


def make_google_model(spec: str, name: str, **options: Any) -> GeminiChatModel:
    """Factory for ``google/<model>`` (see the module docstring for options)."""
    opts = GoogleOptions.parse(options)
    _genai()
    names = [opts.api_key_env] if opts.api_key_env else ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
    key, key_env = api_key_from_env(names, provider="Google Gemini", required=True)
    base = opts.base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or GEMINI_BASE_URL
    return GeminiChatModel(
        spec,
        name,
        base_url=check_base_url(base, "google base URL (option base_url or $GOOGLE_GEMINI_BASE_URL)"),
        api_key=key,
        api_key_env=key_env,
        api_version=opts.api_version,
        **opts.common(),
    )


def make_vertex_model(spec: str, name: str, **options: Any) -> GeminiChatModel:
    """Factory for ``vertex/<model>``: Gemini on Vertex AI (see the module docstring)."""
    opts = VertexOptions.parse(options)
    _genai()
    project = opts.project or os.environ.get("GOOGLE_CLOUD_PROJECT")
    location = opts.location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "global"
    key = None
    key_env = "GOOGLE_APPLICATION_CREDENTIALS"
    if not project:
        key, key_env = api_key_from_env([opts.api_key_env or "GOOGLE_API_KEY"], provider="Vertex AI", required=False)
        if key is None:
            raise ConfigError(
                f"model spec {spec!r}: the vertex backend needs a Google Cloud project ($GOOGLE_CLOUD_PROJECT or the "
                "option project, with application-default credentials) or an express-mode key in $GOOGLE_API_KEY"
            )
    base = opts.base_url or VERTEX_DEFAULT
    return GeminiChatModel(
        spec,
        name,
        vertex=True,
        project=project,
        location=location,
        base_url=check_base_url(base, "vertex base URL (option base_url)"),
        api_key=key,
        api_key_env=key_env,
        **opts.common(),
    )
