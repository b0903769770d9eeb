"""Keep the training run's random streams untouched by the monitor's own work.

Everything the monitor computes (partitions, encoders loaded on first use, bootstrap bias
corrections, shadow calls to callables) runs inside :func:`rng_isolated`, which restores Python's
``random``, numpy's legacy global generator, torch's CPU and CUDA generators and torch's thread count
on exit. Without it, loading a sentence encoder (which initialises weights before loading them) would
advance torch's global generator, and the trained weights would then differ between a run with the
monitor and one without: the identity the monitor promises.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np


@contextlib.contextmanager
def rng_isolated() -> Iterator[None]:
    """Run the body with every global random stream saved before and restored after."""
    py_state = random.getstate()
    np_state = np.random.get_state()
    torch: Any = sys.modules.get("torch")  # only if the process already uses torch: never import it here
    t_state = cuda_states = threads = None
    if torch is not None:
        t_state = torch.get_rng_state()
        threads = torch.get_num_threads()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            cuda_states = torch.cuda.get_rng_state_all()
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch = sys.modules.get("torch")
        if torch is not None:
            if t_state is not None:
                torch.set_rng_state(t_state)
            if threads is not None and torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            if cuda_states is not None:
                torch.cuda.set_rng_state_all(cuda_states)
