"""collapse-probe: diagnose and fix simulator collapse in multi-agent RL for LLM agents.

The public API, one call per run kind, each taking its typed config (or the config's fields as
keywords) and returning its result::

    import collapse_probe

    res = collapse_probe.audit(sim="smollm2", samples=20, out="runs/audit")
    matrix = collapse_probe.crossplay(policies=["smollm2"], simulators=["smollm2", "vs:smollm2"], out="runs/x")
    verdict = collapse_probe.gate("runs/x", "smollm2", min_transfer=0.8)
    trained = collapse_probe.train(TrainConfig(...), out="runs/train")
    lab = collapse_probe.lab(method="population")

and ``await collapse_probe.audit_async(...)`` (``crossplay_async``, ``gate_async``,
``train_async``, ``lab_async``) in async code. ``collapse_probe.audit``, ``.crossplay`` and
``.gate`` are also the modules they always were (``from collapse_probe.audit import run_audit``).
Everything loads on first use: ``import collapse_probe`` imports no benchmark, model or torch.
``collapse_probe.reset_caches()`` empties what the process built once and keeps (backends, loaded
weights, encoders, file fingerprints, benchmark data): the next run builds and reads them anew.

Subpackages, one per concept, bottom layer first (docs/architecture.md):

- :mod:`collapse_probe.models` — batched chat-model backends and the response cache.
- :mod:`collapse_probe.simulators` — a simulator is a model plus a sampling mode.
- :mod:`collapse_probe.benchmarks` — arenas (tasks, environment, reward).
- :mod:`collapse_probe.rollout` — the batched multi-turn engine and run directories.
- :mod:`collapse_probe.metrics` — partitioners and collapse estimators (pure functions).
- :mod:`collapse_probe.audit`, :mod:`~collapse_probe.crossplay`, :mod:`~collapse_probe.gate`,
  :mod:`collapse_probe.trainers`, :mod:`collapse_probe.monitor` — the pipelines.
- :mod:`collapse_probe.report` — HTML reports and terminal tables.
"""

from __future__ import annotations

from typing import Any

from collapse_probe._version import __version__
from collapse_probe.errors import CollapseProbeError, ConfigError, InfraError

__all__ = [
    "CollapseProbeError",
    "ConfigError",
    "InfraError",
    "__version__",
    "audit",
    "audit_async",
    "crossplay",
    "crossplay_async",
    "gate",
    "gate_async",
    "lab",
    "lab_async",
    "reset_caches",
    "train",
    "train_async",
]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that ``import collapse_probe`` stays cheap. ``audit``, ``crossplay``
    # and ``gate`` are the (callable) modules; Python then keeps them as attributes of the package.
    if name in ("audit", "audit_async"):
        import collapse_probe.audit as audit

        return audit if name == "audit" else audit.audit_async
    if name in ("crossplay", "crossplay_async"):
        import collapse_probe.crossplay as crossplay

        return crossplay if name == "crossplay" else crossplay.crossplay_async
    if name in ("gate", "gate_async"):
        import collapse_probe.gate as gate

        return gate if name == "gate" else gate.gate_async
    if name in ("train", "train_async", "lab", "lab_async"):
        from collapse_probe.trainers import _api

        return getattr(_api, name)
    if name == "reset_caches":
        from collapse_probe._state import reset_caches

        return reset_caches
    raise AttributeError(f"module 'collapse_probe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
