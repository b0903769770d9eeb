"""Shared machinery of the API backends: bounded concurrency, one retry policy, API keys, tool-call mapping.

The OpenAI, Azure OpenAI, Anthropic (direct, Bedrock, Vertex) and Gemini (Developer API, Vertex)
backends speak through the providers' official SDKs (``openai``, ``anthropic``, ``google-genai``;
extra ``api``): the SDK builds and authenticates each request, parses the answer and raises its typed
errors. What the SDKs do not do lives here, once for all providers:

* at most ``concurrency`` calls of one model are in flight per event loop (a queue of slots over
  a few SDK clients, each with a small connection pool); a call waiting to be retried does not hold
  a slot;
* **one retry policy**, ours (:mod:`collapse_probe.core._retry`, on tenacity, which every retried call in
  the package goes through), with the SDKs' own retries switched off (``max_retries=0``): a call
  that fails with HTTP 408/409/425/429/500/502/503/504/529, a timeout or a connection error is
  retried up to ``max_retries`` times with exponential backoff and jitter, never sooner than the
  server's ``Retry-After`` (or ``retry-after-ms``) asks, and not at all when it answers
  ``x-should-retry: false``; 400/401/403/404/422 are not retried. Ours rather than the SDKs' because
  the three SDKs (and LiteLLM) retry differently (google-genai not at all by default), because an SDK
  retry sleeps while holding its concurrency slot, and because the attempts a request took belong in
  its infrastructure-failure record ("gave up after N attempts"), which the SDKs do not report;
* a request whose calls still fail gets ``GenerationResult([], error=...)``: an infrastructure
  failure that pipelines record and exclude from scores, never an exception for the batch;
* API keys are read only from environment variables, are held in a :class:`Secret` that never prints,
  and are scrubbed from every error message;
* every answered call reports the token counts the server sent to the usage ledger
  (:mod:`collapse_probe.models._usage`), and the run's budget is checked before each call.

``n`` samples of one request are asked for natively where the provider supports it (one call with
``n``/``candidateCount``), topped up by single-sample calls when the provider returns fewer, and fully
emulated by ``n`` single-sample calls where it does not (or rejects the native form). An emulated
sample ``i`` is sent with the seed ``request.sample_seed(i)``, so cached and fresh samples line up.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import os
import random
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, TypeVar

from collapse_probe.core._retry import RetryPolicy
from collapse_probe.core._state import on_reset
from collapse_probe.errors import ConfigError, require
from collapse_probe.models._options import HTTPOptions
from collapse_probe.models._types import Completion, GenerationRequest, GenerationResult, Message, ToolCallRecord
from collapse_probe.models._usage import check_budget, record_usage

if TYPE_CHECKING:
    from collapse_probe.models._batch import BatchCall, BatchOutcome

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""HTTP statuses worth retrying: timeouts, conflicts, rate limits, server errors, overload (529)."""

FINISH_REASONS = {
    # OpenAI's vocabulary is the common one.
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    # Anthropic
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    # Gemini
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "MALFORMED_FUNCTION_CALL": "malformed_tool_call",
}


def normalize_finish_reason(reason: str | None) -> str | None:
    """Map a provider's finish reason to OpenAI's vocabulary (``stop``, ``length``, ``tool_calls``, ...)."""
    if reason is None:
        return None
    return FINISH_REASONS.get(reason, str(reason).lower())


class Secret:
    """An API key that never shows itself in ``repr``, ``str``, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        from collapse_probe.core._secrets import register_secret

        self._value = value
        register_secret(value)  # scrubbed from every file and terminal line, and refused in replies

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def api_key_from_env(names: Sequence[str], *, provider: str, required: bool) -> tuple[Secret | None, str]:
    """Read an API key from the first set variable in ``names``.

    Returns:
        ``(key or None, name of the variable used or to use)``.

    Raises:
        ConfigError: when ``required`` and none of the variables is set; the message names them. A
            name that is not an environment variable's (a key pasted into ``api_key_env``) is refused
            without showing it, and registered as a secret.
    """
    import re

    from collapse_probe.core._secrets import register_secret

    for name in names:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            register_secret(name if isinstance(name, str) else None)
            raise ConfigError(
                f"option 'api_key_env' of the {provider} backend: expected the name of an environment variable "
                "(letters, digits and _), got a value that is not one (not shown: it may be a key; keys are read "
                "only from the environment: export KEY=... and pass api_key_env=KEY)"
            )
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return Secret(value), name
    if required:
        alts = " or ".join(f"${n}" for n in names)
        raise ConfigError(
            f"the {provider} backend needs an API key: set the environment variable {alts} "
            "(keys are read only from the environment)"
        )
    return None, names[0]


def check_base_url(url: str, where: str) -> str:
    """Validate a base URL (``http(s)://...``) and strip the trailing slash."""
    from collapse_probe.core._secrets import redact_url

    url = url.strip()
    shown = redact_url(url)  # registers the URL's credentials as secrets of this process
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: expected a base URL starting with http:// or https://, got {shown!r}")
    return url.rstrip("/")


# --------------------------------------------------------------------------------------------- retries


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed call is worth another attempt (a :class:`CallFailure` classified so)."""
    return isinstance(exc, CallFailure) and exc.retryable


class CallFailure(Exception):
    """One failed API call, classified as retryable or not."""

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); ``None`` if absent."""
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def provider_error_message(body: Any, fallback: str = "") -> str:
    """The human part of an error body: ``error.message`` (OpenAI, Anthropic, Google) or the raw text."""
    if isinstance(body, (bytes, str)):
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            return (text.strip() or fallback)[:500]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if isinstance(err, str):
            return err[:500]
        if body.get("message"):
            return str(body["message"])[:500]
        return json.dumps(body)[:500]
    return fallback[:500]


def secret_in_reply(completions: Sequence[Completion]) -> str | None:
    """Why these completions may not be kept (a reply that holds a configured API key or URL
    credential: a server echoing the request's headers), or ``None``.

    Such a reply is an infrastructure failure of its request: recorded, asked again on the next run,
    never cached, stored or scored.
    """
    from collapse_probe.core._secrets import contains_secret

    for c in completions:
        parts = [c.text] + [json.dumps(tc, default=str) for tc in c.tool_calls or []]
        if any(contains_secret(p) for p in parts):
            return (
                "the reply holds a configured secret (an API key or base-URL credential the server echoed); "
                "refused: not cached, stored or scored"
            )
    return None


# ------------------------------------------------------------------------------------- messages, tools


def message_text(message: Message) -> str:
    """The text of a message whose content is a string, ``None`` or a list of OpenAI content parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type", "text") == "text"
        )
    return str(content)


class FunctionSchema(TypedDict):
    """A tool as every provider's request builder reads it (OpenAI's function-schema layout)."""

    name: str
    description: str
    parameters: dict[str, object]
    """The arguments' JSON Schema (``{"type": "object", "properties": {...}}``), passed on untouched."""


def tool_schema(tool: Mapping[str, object]) -> FunctionSchema:
    """``{"name", "description", "parameters"}`` from an OpenAI tool (``{"type": "function", "function": ...}``)
    or a bare function schema."""
    fn = tool.get("function", tool) if tool.get("type", "function") == "function" else tool
    if not isinstance(fn, Mapping) or not fn.get("name"):
        raise ConfigError(f"tool schema {dict(tool)!r}: expected an OpenAI function schema with a 'name'")
    params: dict[str, object] = dict(fn.get("parameters") or {"type": "object", "properties": {}})
    return {"name": str(fn["name"]), "description": str(fn.get("description", "")), "parameters": params}


def parse_arguments(raw: object) -> dict[str, object] | str:
    """Tool-call arguments as a dict; a string that is not a JSON object is returned unchanged."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        return value if isinstance(value, dict) else raw
    return str(raw)


def history_tool_calls(message: Message) -> list[ToolCallRecord]:
    """Tool calls of an assistant message as ``[{"id", "name", "arguments": dict | str, ...}]``.

    Accepts OpenAI's wire form (``{"id", "type", "function": {"name", "arguments": str}}``) and the
    :class:`Completion` form (``{"id", "name", "arguments"}``); the latter's ``thought_signature`` is kept.
    The id and name are replayed as the conversation holds them (:attr:`Message.tool_calls` is not checked).
    """
    out = []
    for j, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function")
        call: ToolCallRecord
        if "function" in tc and isinstance(fn, Mapping):
            call = {
                "id": tc.get("id") or f"call_{j}",
                "name": fn.get("name", ""),
                "arguments": parse_arguments(fn.get("arguments")),
            }
        else:
            call = {
                "id": tc["id"] if "id" in tc else f"call_{j}",
                "name": tc["name"],
                "arguments": parse_arguments(tc.get("arguments")),
            }
            if "thought_signature" in tc:
                call["thought_signature"] = tc["thought_signature"]
        out.append(call)
    return out


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """Pull system messages out (joined by a blank line) for APIs with a top-level system field."""
    system = [message_text(m) for m in messages if m.get("role") in ("system", "developer")]
    rest = [m for m in messages if m.get("role") not in ("system", "developer")]
    joined = "\n\n".join(s for s in system if s)
    return (joined or None), rest


# ----------------------------------------------------------------------------------------- base class


CONNECTIONS_PER_CLIENT = 4
"""Connections per pooled HTTP client. An HTTP client's connection pool does work proportional to its
size on every request (encode/httpx#3215): one client with 64 connections ran 256 calls of 100 ms
in ~4 s on two cores, sixteen clients of four in ~0.65 s. So the concurrency slots are spread over
several SDK clients, each wrapping a small pool."""

_SSL_CONTEXT: Any = None


def _forget_ssl_context() -> None:
    global _SSL_CONTEXT
    _SSL_CONTEXT = None


on_reset("models.tls_context", _forget_ssl_context)


def _ssl_context() -> Any:
    """One TLS context per process: building one (loading the CA bundle) costs ~0.3 s per client."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        import ssl

        _SSL_CONTEXT = ssl.create_default_context()
        with contextlib.suppress(ImportError):
            import certifi

            _SSL_CONTEXT.load_verify_locations(certifi.where())
    return _SSL_CONTEXT


@dataclass
class _LoopState:
    """SDK clients and concurrency slots of one event loop; a slot is a client with a free connection."""

    clients: list[Any] = field(default_factory=list)
    http_clients: list[Any] = field(default_factory=list)
    slots: asyncio.Queue[Any] | None = None
    users: int = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Any]:
        """Hold one of the ``concurrency`` slots for the duration of one call."""
        assert self.slots is not None
        client = await self.slots.get()
        try:
            yield client
        finally:
            self.slots.put_nowait(client)


T = TypeVar("T")


class APIChatModel:
    """Base of the API backends (see the module docstring for the shared policy).

    Subclasses implement :meth:`_new_client` (an SDK client over one pooled HTTP client) and
    :meth:`_call`, one API call asking for ``k`` samples of a request, which sends through
    :meth:`_send`; they set :attr:`native_n` / :attr:`max_native_n`.
    """

    provider: str = "API"
    """Provider name used in error messages."""
    native_n: ClassVar[bool] = False
    """Whether the API can return several samples for one call."""
    max_native_n: ClassVar[int] = 1
    reports_usage: ClassVar[bool] = True
    """Every answered call reports the server's token counts to the usage ledger itself."""
    supports_batch: bool = False
    """Whether the provider has a batch API this backend can submit to (see ``models/_batch.py``)."""

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        base_url: str,
        api_key: Secret | None,
        api_key_env: str,
        concurrency: int = 16,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_after: float = 120.0,
        timeout: float = 120.0,
        extra_body: Mapping[str, object] | None = None,
        native_n: bool | None = None,
    ) -> None:
        self.spec = spec
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self._api_key = api_key
        # the bounds of the options model, whoever builds the model (a factory has checked them already)
        options = HTTPOptions.parse(
            {
                "concurrency": concurrency,
                "max_retries": max_retries,
                "backoff_base": backoff_base,
                "backoff_max": backoff_max,
                "max_retry_after": max_retry_after,
                "timeout": timeout,
                "extra_body": dict(extra_body) if isinstance(extra_body, Mapping) else extra_body,
            }
        )
        self.concurrency = options.concurrency
        self.retry = RetryPolicy(
            max_retries=options.max_retries,
            backoff_base=float(options.backoff_base),
            backoff_max=float(options.backoff_max),
            max_retry_after=float(options.max_retry_after),
        )
        self.timeout = float(options.timeout)
        self.extra_body = dict(options.extra_body or {})
        self._native_n = self.native_n if native_n is None else bool(native_n)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._rng = random.Random()
        self._fingerprint: str | None = None
        self.calls = 0
        """API calls sent (attempts, retries included)."""
        self.served_models: set[str] = set()
        """Model names the server reported in its answers (``model`` / ``modelVersion``)."""

    def __repr__(self) -> str:
        from collapse_probe.core._secrets import redact_url

        return f"{type(self).__name__}(spec={self.spec!r}, base_url={redact_url(self.base_url)!r})"

    # -- identity

    def fingerprint(self) -> str:
        """What answers: the base URL and the model name the server reports (memoised; see
        :func:`collapse_probe.core._identity.http_fingerprint`).

        The served name comes from the provider's model endpoint (:meth:`_served_model_name`), which
        resolves an alias to its snapshot (``claude-haiku-4-5`` -> ``claude-haiku-4-5-20251001``); a
        server without one (many OpenAI-compatible servers) is identified by the name asked for.
        """
        if self._fingerprint is None:
            try:
                served = self._served_model_name() or self.model
            except Exception as exc:  # noqa: BLE001 - no model endpoint: identify by the requested name
                logger.debug("%s: model lookup failed (%s); fingerprint uses the requested name", self.spec, exc)
                served = self.model
            from collapse_probe.core._identity import http_fingerprint

            self._fingerprint = http_fingerprint(self.base_url, self.model, served)
        return self._fingerprint

    def _served_model_name(self) -> str | None:
        """The model's name as the server reports it (a blocking lookup, done once)."""
        return None

    # -- the ChatModel interface

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, in order; failed requests carry ``error`` (see module docstring).

        With batching on (:mod:`collapse_probe.models._batch`) the calls go to the provider's batch API.
        """
        from collapse_probe.models._batch import SETTINGS, generate_batch

        async with self._session():
            if requests and self.can_batch(requests) and SETTINGS.wants(self, sum(r.n for r in requests)):
                return await generate_batch(self, requests)
            return list(await asyncio.gather(*(self._generate_one(r) for r in requests)))

    # -- batch API (providers that have one override these; see models/_batch.py)

    def can_batch(self, requests: Sequence[GenerationRequest]) -> bool:
        """Whether these requests can go into one provider batch."""
        return self.supports_batch

    def batch_line(self, request: GenerationRequest, start: int, k: int) -> tuple[str, Mapping[str, object]]:
        """``(endpoint path, wire-form body)`` of the call for samples ``start .. start + k - 1``."""
        raise NotImplementedError

    async def batch_submit(self, items: Sequence[tuple[BatchCall, str, Mapping[str, object]]]) -> str:
        """Submit ``(call, path, body)`` items as one batch; return its id."""
        raise NotImplementedError

    async def batch_poll(self, batch_id: str) -> tuple[bool, int]:
        """``(ended, calls answered so far)`` of a batch."""
        raise NotImplementedError

    async def batch_results(self, batch_id: str) -> dict[str, BatchOutcome]:
        """custom id -> :class:`~collapse_probe.models._batch.BatchOutcome` of an ended batch."""
        raise NotImplementedError

    def parse_batch_answer(self, data: dict[str, object], request: GenerationRequest, k: int) -> list[Completion]:
        """Completions of one batch answer (usage charged at the batch price)."""
        raise NotImplementedError

    async def _generate_one(self, request: GenerationRequest) -> GenerationResult:
        try:
            completions = await self._sample(request)
        except CallFailure as exc:
            return GenerationResult([], error=self.redact(f"{self.spec}: {exc}"))
        except ConfigError as exc:
            return GenerationResult([], error=self.redact(f"{self.spec}: bad request: {exc}"))
        if len(completions) != request.n:
            return GenerationResult(
                [], error=f"{self.spec}: asked for {request.n} samples, the API returned {len(completions)}"
            )
        leak = secret_in_reply(completions)
        if leak is not None:
            return GenerationResult([], error=f"{self.spec}: {leak}")
        return GenerationResult(completions)

    # -- n samples: native, topped up, or emulated

    async def _sample(self, request: GenerationRequest) -> list[Completion]:
        if request.n == 1 or not self._native_n:
            return await self._gather([self._call(request, i, 1) for i in range(request.n)])
        size = max(1, self.max_native_n)
        chunks = [(s, min(size, request.n - s)) for s in range(0, request.n, size)]
        parts = await self._gather([self._native_chunk(request, s, k) for s, k in chunks])
        return parts

    async def _native_chunk(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        if k > 1 and self._native_n:
            try:
                got = await self._call(request, start, k)
            except CallFailure as exc:
                if exc.status not in (400, 422):
                    raise
                # Some servers (llama.cpp, some models) reject n > 1: emulate from now on.
                logger.warning(
                    "%s rejected %d samples in one call (%s); emulating with single calls", self.spec, k, exc
                )
                self._native_n = False
                got = []
        else:
            got = []
        got = got[:k]
        if len(got) < k:
            more = await self._gather([self._call(request, start + i, 1) for i in range(len(got), k)])
            got = got + more
        return got

    async def _gather(self, calls: Sequence[Awaitable[list[Completion]]]) -> list[Completion]:
        """Run calls concurrently, concatenating their completions; the first failure cancels the rest."""
        if len(calls) == 1:
            return list(await calls[0])
        tasks = [asyncio.ensure_future(c) for c in calls]
        try:
            done = await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return [c for part in done for c in part]

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        """One API call for samples ``start .. start + k - 1`` of ``request`` (seed of sample ``start``)."""
        raise NotImplementedError

    # -- SDK clients

    def _new_client(self, http_client: Any) -> Any:
        """An SDK client (SDK retries off, our timeout) sending through ``http_client``."""
        raise NotImplementedError

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's exception classes that a call may raise (classified by :meth:`classify_error`)."""
        return ()

    def _new_http_client(self, size: int) -> Any:
        """One small pooled ``httpx2`` client (the HTTP library the SDKs are built on)."""
        httpx2 = require("httpx2", "api", f"the {self.provider} backend")
        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(self.timeout, connect=min(self.timeout, 30.0)),
            limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size),
            verify=_ssl_context(),
            follow_redirects=True,
        )

    def _sdk_timeout(self) -> Any:
        httpx2 = require("httpx2", "api", f"the {self.provider} backend")
        return httpx2.Timeout(self.timeout, connect=min(self.timeout, 30.0))

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[_LoopState]:
        """The SDK clients and concurrency slots of the running event loop, shared by concurrent calls."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopState()
        if state.users == 0:
            state.slots = asyncio.Queue()
            n_clients = -(-self.concurrency // CONNECTIONS_PER_CLIENT)
            for i in range(n_clients):
                size = min(CONNECTIONS_PER_CLIENT, self.concurrency - i * CONNECTIONS_PER_CLIENT)
                http_client = self._new_http_client(size)
                client = self._new_client(http_client)
                state.http_clients.append(http_client)
                state.clients.append(client)
                for _ in range(size):
                    state.slots.put_nowait(client)
        state.users += 1
        try:
            yield state
        finally:
            state.users -= 1
            if state.users == 0:
                http_clients, state.http_clients, state.clients, state.slots = state.http_clients, [], [], None
                await asyncio.gather(*(c.aclose() for c in http_clients), return_exceptions=True)

    async def _send(self, send: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``send(sdk_client)`` under a concurrency slot, retrying failures by the policy."""
        async with self._session() as state:

            async def once() -> T:
                check_budget(self.spec)
                try:
                    async with state.slot() as client:
                        self.calls += 1
                        # the timeout bounds the whole request: the transport's own timeout is per read,
                        # so a server trickling a byte a second would otherwise hold the call forever
                        return await asyncio.wait_for(send(client), self.timeout)
                except asyncio.TimeoutError:
                    raise CallFailure(
                        f"no complete answer from {self.base_url} within {self.timeout:g} s (the whole request; "
                        "raise it with -M ROLE.timeout=SECONDS)",
                        retryable=True,
                    ) from None
                except CallFailure:
                    raise
                except self._sdk_errors() as exc:
                    raise self.classify_error(exc) from None

            return await self._retrying(once)

    async def _retrying(self, attempt_once: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt_once`` until it returns, retrying the retryable :class:`CallFailure` it raises."""
        return await self.retry.call(
            attempt_once, retry_on=is_retryable, label=self.spec, rng=self._rng, redact=self.redact
        )

    def classify_error(self, exc: BaseException) -> CallFailure:
        """Map an SDK exception to a :class:`CallFailure` with a message that says what to check.

        The Stainless-built SDKs (openai, anthropic) raise ``APIStatusError`` subclasses with
        ``status_code``, ``response`` and the parsed ``body``, ``APITimeoutError`` and
        ``APIConnectionError``; google-genai raises ``errors.APIError`` with ``code`` and ``message``
        and lets transport errors through.
        """
        name = type(exc).__name__
        status = getattr(exc, "status_code", None)
        if not isinstance(status, int):
            code = getattr(exc, "code", None)
            status = code if isinstance(code, int) and 100 <= code < 600 else None
        if status is None:
            if "Timeout" in name:
                return CallFailure(f"{name}: no answer from {self.base_url} within {self.timeout:g} s", retryable=True)
            if "Connect" in name or "Connection" in name:
                cause = exc.__cause__ or exc.__context__
                why = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
                return CallFailure(
                    f"cannot connect to {self.base_url} ({why}); is the server running and is the base URL right?",
                    retryable=True,
                )
            if "UnsupportedProtocol" in name:
                return CallFailure(f"bad base URL {self.base_url!r}: {exc}")
            return CallFailure(f"error talking to {self.base_url}: {name}: {exc}", retryable=True)
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        body = getattr(exc, "body", None)
        if body is None and response is not None:
            with contextlib.suppress(Exception):
                body = response.text
        detail = provider_error_message(body, fallback=str(getattr(exc, "message", None) or exc))
        if status == 401 or (status == 400 and "api key" in detail.lower()):
            # Gemini answers a bad key with 400 API_KEY_INVALID rather than 401.
            msg = f"{self.provider} rejected the API key (HTTP {status}: {detail}); check the API key in ${self.api_key_env}"
            if self._api_key is None:
                msg = f"{self.provider} needs an API key (HTTP {status}: {detail}); set ${self.api_key_env}"
        elif status == 403:
            msg = (
                f"{self.provider} refused access (HTTP 403: {detail}); check that the key in ${self.api_key_env} "
                f"may use model {self.model!r}"
            )
        elif status == 404:
            msg = f"not found (HTTP 404) at {self.base_url}: {detail}; check the model name {self.model!r} and the base URL"
        elif status in RETRY_STATUSES:
            msg = f"HTTP {status} from {self.provider}: {detail}"
        else:
            msg = f"{self.provider} rejected the request (HTTP {status}): {detail}"
        retryable = status in RETRY_STATUSES
        should = str(headers.get("x-should-retry", "")).lower()
        if should in ("true", "false"):  # the server's own verdict, which the SDKs also honour
            retryable = should == "true"
        return CallFailure(msg, status=status, retryable=retryable, retry_after=parse_retry_after(headers))

    def redact(self, text: str) -> str:
        """Remove every configured secret from ``text`` (a server or the transport may echo the key,
        raw, as ``Bearer ...``, escaped, or line by line for a key with an embedded newline) and the
        credentials of any URL in it (:func:`collapse_probe.core._secrets.scrub`)."""
        from collapse_probe.core._secrets import scrub

        if self._api_key is not None and self._api_key.get():
            text = text.replace(self._api_key.get(), "***")
        return scrub(text)

    def record_usage(
        self, input_tokens: int | None, output_tokens: int | None, served: str | None = None, *, batch: bool = False
    ) -> None:
        """Report one answered call's token counts (as the server reported them) to the usage ledger.

        Raises:
            CallFailure: a count that is not a whole number >= 0 (a server reporting ``-5`` tokens):
                the call is an infrastructure failure, and nothing is recorded (a negative count in
                ``usage.json`` would be refused when the run resumes).
        """
        for label, n in (("input", input_tokens), ("output", output_tokens)):
            if n is None:
                continue
            if (
                isinstance(n, bool)
                or not isinstance(n, int | float)
                or n != n
                or n < 0
                or n == float("inf")
                or int(n) != n
            ):
                raise CallFailure(
                    f"the server reported {n!r} {label} tokens; expected a whole number >= 0 (answer not used, "
                    "usage not recorded)",
                    retryable=True,
                )
        input_tokens = None if input_tokens is None else int(input_tokens)
        output_tokens = None if output_tokens is None else int(output_tokens)
        if served:
            self.served_models.add(str(served))
        record_usage(self.spec, model=self.model, input_tokens=input_tokens, output_tokens=output_tokens, batch=batch)


async def sdk_post(
    client: Any, path: str, body: Mapping[str, object], headers: Mapping[str, object] | None = None
) -> Any:
    """POST a wire-form ``body`` through an SDK client's own request method; return the JSON answer.

    ``client.post`` is the Stainless SDKs' (openai, anthropic) documented way to send a request
    body as is: the SDK still authenticates, sets its headers, applies its timeout and raises its
    typed errors, but does not re-transform a body already in wire form or build typed response
    objects that would only be turned back into dicts. That halves the client's CPU time per call,
    which is what bounds throughput at high concurrency (``benchmarks/http_concurrency.py``).
    """
    import httpx2

    options: dict[str, object] = {"headers": dict(headers)} if headers else {}
    resp = await client.post(path, body=dict(body), cast_to=httpx2.Response, options=options)
    try:
        return resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        raise CallFailure(
            f"HTTP {resp.status_code} from {path} is not JSON: {resp.text[:200]!r}", retryable=True
        ) from None
