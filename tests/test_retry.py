"""The one retry policy (``collapse_probe/core/_retry.py``): its waits, its give-ups, and that no other
retry loop is written by hand anywhere in the package."""

from __future__ import annotations

import ast
import asyncio
import logging
import random
import time
from pathlib import Path

import pytest

from collapse_probe.core._retry import RetryPolicy

PACKAGE = Path(__file__).resolve().parents[1] / "collapse_probe"

NOT_RETRY_LOOPS = {
    ("rollout/_rundir.py", "RunLock.acquire"): (
        "a lock-acquisition protocol, not a retry of a failed call: each round follows the lock file "
        "to the inode now at its path (its holder may have released and unlinked it after we opened "
        "it), and a held lock is looked at twice more 50 ms apart only because a dashboard probing it "
        "holds it for microseconds; no backoff, no Retry-After, nothing transient to wait out"
    ),
}
"""Loops that look like retry loops to :func:`retry_loops` and are something else, with the reason."""


class Transient(Exception):
    def __init__(self, message: str = "busy", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.retryable = True


def _sleep_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name)
            and f.value.id in ("time", "asyncio")) or (isinstance(f, ast.Name) and f.id == "sleep")  # fmt: skip


def retry_loops(source: str) -> list[tuple[str, int]]:
    """``(qualified function, line)`` of every loop that retries by hand: ``for attempt in range(...)``
    (or ``tries``/``retries``), or a loop that catches an exception and sleeps."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, where: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, [*where, child.name])
                continue
            if isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                counted = (
                    isinstance(child, (ast.For, ast.AsyncFor))
                    and isinstance(child.target, ast.Name)
                    and any(w in child.target.id.lower() for w in ("attempt", "tries", "retr"))
                    and isinstance(child.iter, ast.Call)
                    and isinstance(child.iter.func, ast.Name)
                    and child.iter.func.id == "range"
                )
                inner = list(ast.walk(child))
                catches_and_sleeps = any(isinstance(n, ast.Try) for n in inner) and any(map(_sleep_call, inner))
                if counted or catches_and_sleeps:
                    found.append((".".join(where) or "<module>", child.lineno))
            visit(child, where)

    visit(ast.parse(source), [])
    return found


def test_no_hand_written_retry_loop_outside_the_policy():
    offenders = []
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).as_posix()
        if rel == "core/_retry.py" or rel.startswith("data/"):
            continue
        for where, line in retry_loops(f.read_text(encoding="utf-8")):
            if (rel, where) not in NOT_RETRY_LOOPS:
                offenders.append(f"collapse_probe/{rel}:{line} ({where})")
    assert not offenders, "retry through collapse_probe.core._retry.RetryPolicy instead of a loop: " + ", ".join(
        offenders
    )


def test_the_loop_detector_sees_the_shapes_it_forbids():
    assert retry_loops("for attempt in range(3):\n    pass\n") == [("<module>", 1)]
    sleeps = "async def f():\n    while True:\n        try:\n            return 1\n        except E:\n            await asyncio.sleep(1)\n"
    assert retry_loops(sleeps) == [("f", 2)]
    assert retry_loops("def g():\n    while poll():\n        time.sleep(1)\n") == []  # polling is not retrying
    assert retry_loops("for i in range(3):\n    try:\n        x()\n    except E:\n        pass\n") == []


def _run(policy: RetryPolicy, outcomes: list[object], **kw):
    """Call an attempt that raises or returns ``outcomes`` in turn; (result or exception, calls, s)."""
    calls = []

    async def attempt():
        calls.append(time.perf_counter())
        out = outcomes[len(calls) - 1]
        if isinstance(out, BaseException):
            raise out
        return out

    t0 = time.perf_counter()
    try:
        got: object = asyncio.run(policy.call(attempt, retry_on=lambda e: isinstance(e, Transient), label="m", **kw))
    except Exception as exc:  # noqa: BLE001 - the test looks at what the policy raised
        got = exc
    return got, calls, time.perf_counter() - t0


def test_retry_after_is_the_floor_of_the_wait():
    policy = RetryPolicy(max_retries=3, backoff_base=0.001, backoff_max=0.002)
    got, calls, _ = _run(policy, [Transient(retry_after=0.3), "ok"])
    assert got == "ok" and len(calls) == 2
    assert calls[1] - calls[0] >= 0.3  # the backoff alone would be ~1 ms
    got, calls, _ = _run(policy, [Transient(), Transient(), "ok"])
    assert got == "ok" and calls[-1] - calls[0] < 0.25


def test_backoff_doubles_with_jitter_and_is_capped():
    policy = RetryPolicy(backoff_base=1.0, backoff_max=8.0)
    rng = random.Random(0)
    for attempt, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 8.0), (40, 8.0)]:
        assert all(cap / 2 <= policy.delay(attempt, None, rng) <= cap for _ in range(200))
    assert policy.delay(3, 20.0, rng) == 20.0 and 4.0 <= policy.delay(3, 0.5, rng) <= 8.0


def test_a_server_asking_past_max_retry_after_fails_at_once():
    policy = RetryPolicy(max_retries=5, backoff_base=0.001, max_retry_after=10)
    exc = Transient("HTTP 429: quota", retry_after=3600)
    got, calls, elapsed = _run(policy, [exc, "never"])
    assert got is exc and len(calls) == 1 and elapsed < 1
    assert "retry after 3600 s" in str(exc) and exc.retryable is False and exc.attempts == 1
    # exactly at the limit is still honoured
    got, calls, _ = _run(RetryPolicy(backoff_base=0.001, max_retry_after=0.05), [Transient(retry_after=0.05), "ok"])
    assert got == "ok" and len(calls) == 2


def test_gives_up_after_max_retries_and_says_how_many_attempts(caplog):
    policy = RetryPolicy(max_retries=2, backoff_base=0.001)
    with caplog.at_level(logging.INFO, logger="collapse_probe"):
        got, calls, _ = _run(policy, [Transient("HTTP 503"), Transient("HTTP 503"), Transient("HTTP 503"), "never"])
    assert isinstance(got, Transient) and len(calls) == 3 and got.attempts == 3
    assert str(got) == "HTTP 503 (gave up after 3 attempts)"
    retries = [r.getMessage() for r in caplog.records if "; retry " in r.getMessage()]
    assert len(retries) == 2 and retries[0].startswith("m: HTTP 503; retry 1/2 in ")


def test_what_is_not_retryable_is_raised_unchanged_at_once():
    policy = RetryPolicy(max_retries=4, backoff_base=0.001)
    bad = ValueError("HTTP 400: bad request")
    got, calls, _ = _run(policy, [bad])
    assert got is bad and len(calls) == 1 and str(bad) == "HTTP 400: bad request"
    got, calls, _ = _run(policy, [Transient(), bad])  # a permanent failure after a retry names the count
    assert got is bad and len(calls) == 2 and str(bad).endswith("(gave up after 2 attempts)")


def test_zero_retries_is_one_attempt():
    got, calls, _ = _run(RetryPolicy(max_retries=0), [Transient("x"), "never"])
    assert isinstance(got, Transient) and len(calls) == 1 and str(got) == "x"


def test_the_wait_holds_no_slot():
    """Concurrency 1: while the first call waits out its Retry-After, the second one runs."""
    policy = RetryPolicy(max_retries=1, backoff_base=0.001)
    events: list[str] = []

    async def main():
        slot = asyncio.Semaphore(1)
        tries = {"a": 0}

        def attempt(name: str):
            async def once():
                async with slot:
                    events.append(f"{name} starts")
                    await asyncio.sleep(0.01)
                    if name == "a" and tries["a"] == 0:
                        tries["a"] += 1
                        raise Transient(retry_after=0.3)
                    events.append(f"{name} done")
                    return name

            return once

        async def second():
            await asyncio.sleep(0.05)  # after the first call failed and began waiting
            return await policy.call(attempt("b"), retry_on=lambda e: True, label="b")

        return await asyncio.gather(policy.call(attempt("a"), retry_on=lambda e: True, label="a"), second())

    assert asyncio.run(main()) == ["a", "b"]
    assert events == ["a starts", "b starts", "b done", "a starts", "a done"]


def test_blocking_calls_use_the_same_policy():
    policy = RetryPolicy(max_retries=2, backoff_base=0.001)
    seen = []

    def attempt():
        seen.append(1)
        if len(seen) < 3:
            raise Transient()
        return "up"

    assert policy.call_sync(attempt, retry_on=lambda e: isinstance(e, Transient), label="ray") == "up"
    assert len(seen) == 3
    with pytest.raises(Transient, match=r"gave up after 3 attempts"):
        policy.call_sync(lambda: (_ for _ in ()).throw(Transient("down")), retry_on=lambda e: True, label="ray")
