"""Answers that are not answers: empty ``choices``, ``content: null``, empty or blank text.

A server under load sometimes answers HTTP 200 with no choice or a null message. Such a reply is
not a response (counting it would add an empty string to a collapse estimate or score a turn 0):
the parser raises :class:`EmptyAnswer`, :func:`retry_empty` asks again by the backend's retry
policy, and after the last retry the request fails as an infrastructure failure like any other.

A reply whose text is empty or only whitespace, with no tool call, is no answer either, whatever
the backend (a server returning ``content: ""``, a local model that stops at once). One rule,
:func:`is_blank`, decides it on every path, and a blank reply is asked again once: the rollout
engine (``play``, ``crossplay``, training rollouts) repeats the same request (a transient blank then
gets exactly the answer a fault-free run gets), the audit asks for fresh samples in place of the
blank ones (its samples of a state are exchangeable). What is still blank is an infrastructure
failure of that conversation (the audit: dropped and counted, and a state left with fewer than 2
replies is the failure), recorded and retried on the next run, never scored. The response cache
never stores a blank reply, so the re-ask and the rerun reach the model instead of replaying it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from collapse_probe.core._retry import RetryPolicy
from collapse_probe.models._http import CallFailure

T = TypeVar("T")


def is_blank(text: object, tool_calls: object = None) -> bool:
    """Whether a reply is no answer: its text is missing, empty or whitespace, and it calls no tool."""
    return not (isinstance(text, str) and text.strip()) and not tool_calls


class EmptyAnswer(CallFailure):
    """A reply without an answer (no choices, null content): retried, then an infrastructure failure."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


async def retry_empty(model: Any, call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` again while it raises :class:`EmptyAnswer`, by ``model.retry``'s policy."""
    policy: RetryPolicy = model.retry
    return await policy.call(call, retry_on=lambda exc: isinstance(exc, EmptyAnswer), label=model.spec, rng=model._rng)
