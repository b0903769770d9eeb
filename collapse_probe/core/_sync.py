"""Run a coroutine to completion from synchronous code, with or without a running event loop.

The synchronous entry points (:func:`~collapse_probe.pipelines.play.run_play`,
:func:`~collapse_probe.pipelines.crossplay.run_crossplay`, :func:`~collapse_probe.pipelines.audit.run_audit`, ...) wrap
async ones with :func:`run_sync`. Without a running loop it is ``asyncio.run``; inside one (a Jupyter
cell, an async web handler) ``asyncio.run`` would fail, so the coroutine runs on its own loop in a
worker thread while the caller waits. Async code can await the ``*_async`` entry points directly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion and return its result (see the module docstring)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="collapse-probe") as pool:
        return pool.submit(asyncio.run, coro).result()
