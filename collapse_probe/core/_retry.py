"""The one retry policy: every call that can fail for a while is retried here, on tenacity.

A failure is retried when the caller's ``retry_on`` says it is transient (HTTP 429/5xx, a timeout, a
dropped connection, an empty answer, a replica that died). The wait before retry ``k`` (``k`` from
1) is exponential with jitter, ``backoff_base * 2**(k-1)`` capped at ``backoff_max`` and drawn in
``[wait/2, wait]`` (jitter spreads the synchronized retries of a batch apart), and never shorter than
what the server asked for: an exception's ``retry_after`` attribute (seconds, from ``Retry-After`` or
``retry-after-ms``) is the floor. A server asking for longer than ``max_retry_after`` makes the call
fail at once (waiting an hour for a quota would look like a stalled run).

The wait happens between attempts, outside whatever the attempt holds: a caller takes its
concurrency slot inside the attempt, so a call waiting to be retried leaves its slot to the others.
After the last attempt the exception is raised again with what happened appended ("gave up after 3
attempts", "the server asks to retry after 3600 s") and the count on ``exc.attempts``, for the
infrastructure-failure record. Each retry logs one ``"...; retry k/n in s"`` line at INFO on a
``collapse_probe`` logger, which the run's reliability tally (:mod:`collapse_probe.core._observe`) counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypedDict, TypeVar

import tenacity

logger = logging.getLogger(__name__)
T = TypeVar("T")


def retry_after_of(exc: BaseException | None) -> float | None:
    """The wait the server asked for, in seconds (an exception's ``retry_after``), or ``None``."""
    value = getattr(exc, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class _RetryingOptions(TypedDict):
    """The keywords a policy gives ``tenacity.Retrying`` / ``tenacity.AsyncRetrying``."""

    stop: tenacity.stop.stop_base
    wait: Callable[[tenacity.RetryCallState], float]
    """The delay before the next try (:meth:`RetryPolicy.delay`)."""
    retry: tenacity.retry_base
    before_sleep: Callable[[tenacity.RetryCallState], None]
    """Logs the retry."""
    reraise: bool


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; the server's ``Retry-After`` is a lower bound on the wait."""

    max_retries: int = 6
    """Retries after the first attempt (so ``max_retries + 1`` attempts in all)."""
    backoff_base: float = 0.5
    """Wait before the first retry, doubled at each further retry (before jitter)."""
    backoff_max: float = 30.0
    """Upper bound of the exponential wait."""
    max_retry_after: float = 120.0
    """Longest ``Retry-After`` honoured; a server asking for longer makes the call fail at once."""

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        backoff = min(self.backoff_max, self.backoff_base * (2**attempt))
        wait = backoff * (0.5 + 0.5 * rng.random())
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait

    def asks_too_long(self, exc: BaseException | None) -> bool:
        """Whether the server asked to wait longer than :attr:`max_retry_after`."""
        after = retry_after_of(exc)
        return after is not None and after > self.max_retry_after

    async def call(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        retry_on: Callable[[BaseException], bool],
        label: str,
        rng: random.Random | None = None,
        redact: Callable[[str], str] = str,
    ) -> T:
        """Await ``attempt()`` until it returns, retrying what ``retry_on`` accepts (asyncio sleeps).

        Args:
            attempt: one try; it takes (and gives back) whatever slot it needs itself.
            retry_on: whether an exception is transient.
            label: what is being called, for the retry log line (a model spec).
            rng: jitter source (a backend keeps one per model).
            redact: scrubs secrets from the logged message.
        """
        tries = [0]

        async def counted() -> T:
            tries[0] += 1
            return await attempt()

        retrying = tenacity.AsyncRetrying(sleep=asyncio.sleep, **self._tenacity(retry_on, label, rng, redact))
        try:
            return await retrying(counted)
        except Exception as exc:
            self._gave_up(exc, tries[0])
            raise

    def call_sync(
        self,
        attempt: Callable[[], T],
        *,
        retry_on: Callable[[BaseException], bool],
        label: str,
        rng: random.Random | None = None,
        redact: Callable[[str], str] = str,
    ) -> T:
        """:meth:`call` for blocking code (``time.sleep`` between attempts)."""
        tries = [0]

        def counted() -> T:
            tries[0] += 1
            return attempt()

        retrying = tenacity.Retrying(sleep=time.sleep, **self._tenacity(retry_on, label, rng, redact))
        try:
            return retrying(counted)
        except Exception as exc:
            self._gave_up(exc, tries[0])
            raise

    def _tenacity(
        self,
        retry_on: Callable[[BaseException], bool],
        label: str,
        rng: random.Random | None,
        redact: Callable[[str], str],
    ) -> _RetryingOptions:
        jitter = rng if rng is not None else random.Random()

        waits: list[float] = [0.0]

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome is not None else None
            waits[0] = self.delay(state.attempt_number - 1, retry_after_of(exc), jitter)
            return waits[0]

        def transient(exc: BaseException) -> bool:
            return retry_on(exc) and not self.asks_too_long(exc)

        def log_retry(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            wait_s = waits[0]
            logger.info(
                "%s: %s; retry %d/%d in %.2f s", label, redact(str(exc)), state.attempt_number, self.max_retries, wait_s
            )

        return {
            "stop": tenacity.stop_after_attempt(self.max_retries + 1),
            "wait": wait,
            "retry": tenacity.retry_if_exception(transient),
            "before_sleep": log_retry,
            "reraise": True,
        }

    def _gave_up(self, exc: Exception, tries: int) -> None:
        """Say on the exception why the retries ended: the count, and a ``Retry-After`` beyond the limit."""
        if self.asks_too_long(exc):
            if hasattr(exc, "retryable"):
                exc.retryable = False  # what the server asked for is final for this call
            exc.args = (f"{exc} (the server asks to retry after {retry_after_of(exc):.0f} s)",)
        if tries > 1:
            exc.args = (f"{exc} (gave up after {tries} attempts)",)
        if not hasattr(exc, "attempts"):  # nested policies: the innermost one counted the calls it made
            with contextlib.suppress(AttributeError):  # an exception class with __slots__ keeps no count
                exc.attempts = tries  # type: ignore[attr-defined]
