"""collapse-probe: diagnose and fix simulator collapse in multi-agent RL for LLM agents.

The public API, one call per run kind, each taking its typed config (or the config's fields as
keywords) and returning its result::

    import collapse_probe

    res = collapse_probe.audit(sim="smollm2", samples=20, out="runs/audit")
    matrix = collapse_probe.crossplay(policies=["smollm2"], simulators=["smollm2", "vs:smollm2"], out="runs/x")
    verdict = collapse_probe.gate("runs/x", "smollm2", min_transfer=0.8)
    trained = collapse_probe.train(TrainConfig(...), out="runs/train")
    lab = collapse_probe.lab(method="population")
    effects = collapse_probe.compare(["run-a.json", "run-b.json"], out="runs/compare")

and ``await collapse_probe.audit_async(...)`` (``crossplay_async``, ``gate_async``,
``train_async``, ``lab_async``) in async code. Each returns its typed results model
(:class:`~collapse_probe.results.AuditResults`, ``CrossplayResults``, ``GateResults``,
``TrainResults``, ``LabRunResults``), and the configs are here too (``AuditConfig``,
``CrossplayConfig``, ``TrainConfig``, ``LabConfig``). The functions are typed for a checker
(``py.typed``; the imports under ``TYPE_CHECKING`` below): ``mypy --strict`` sees their
parameters and results. Everything loads on first use: ``import collapse_probe`` imports no benchmark, model or torch.
``collapse_probe.reset_caches()`` empties what the process built once and keeps (backends, loaded
weights, encoders, file fingerprints, benchmark data): the next run builds and reads them anew.

Subpackages, one per concept, bottom layer first (docs/architecture.md):

- :mod:`collapse_probe.core` — files, JSONL, config files, constraints, secrets, retry, limits.
- :mod:`collapse_probe.results` — typed results models and records, with their schemas.
- :mod:`collapse_probe.models` — batched chat-model backends and the response cache.
- :mod:`collapse_probe.simulators` — a simulator is a model plus a sampling mode.
- :mod:`collapse_probe.benchmarks` — arenas (tasks, environment, reward).
- :mod:`collapse_probe.rollout` — the batched multi-turn engine and run directories.
- :mod:`collapse_probe.metrics` — partitioners and collapse estimators (pure functions).
- :mod:`collapse_probe.pipelines` — play, crossplay, gate, audit, compare (their public face is the
  function of the same name here); :mod:`collapse_probe.trainers` — the reference trainers and the lab.
- :mod:`collapse_probe.integrations` — the collapse monitor inside RL frameworks, published formats.
- :mod:`collapse_probe.report` — HTML reports and terminal tables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from collapse_probe._version import __version__
from collapse_probe.errors import CollapseProbeError, ConfigError, InfraError

if TYPE_CHECKING:  # what a type checker sees; at run time each name loads on first use (__getattr__)
    from collapse_probe.core._state import reset_caches
    from collapse_probe.pipelines.audit._api import audit, audit_async
    from collapse_probe.pipelines.audit._config import AuditConfig
    from collapse_probe.pipelines.compare import CompareConfig, compare
    from collapse_probe.pipelines.crossplay import CrossplayConfig, crossplay, crossplay_async
    from collapse_probe.pipelines.gate import gate, gate_async
    from collapse_probe.results import (
        AuditResults,
        CompareResults,
        CrossplayResults,
        GateResults,
        LabRunResults,
        TrainResults,
    )
    from collapse_probe.trainers._api import lab, lab_async, train, train_async
    from collapse_probe.trainers.config import TrainConfig
    from collapse_probe.trainers.lab import LabConfig

__all__ = [
    "AuditConfig",
    "AuditResults",
    "CollapseProbeError",
    "CompareConfig",
    "CompareResults",
    "ConfigError",
    "CrossplayConfig",
    "CrossplayResults",
    "GateResults",
    "InfraError",
    "LabConfig",
    "LabRunResults",
    "TrainConfig",
    "TrainResults",
    "__version__",
    "audit",
    "audit_async",
    "compare",
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

_LAZY = {
    "audit": "collapse_probe.pipelines.audit._api",
    "audit_async": "collapse_probe.pipelines.audit._api",
    "AuditConfig": "collapse_probe.pipelines.audit._config",
    "crossplay": "collapse_probe.pipelines.crossplay",
    "crossplay_async": "collapse_probe.pipelines.crossplay",
    "CrossplayConfig": "collapse_probe.pipelines.crossplay",
    "compare": "collapse_probe.pipelines.compare",
    "CompareConfig": "collapse_probe.pipelines.compare",
    "CompareResults": "collapse_probe.results",
    "gate": "collapse_probe.pipelines.gate",
    "gate_async": "collapse_probe.pipelines.gate",
    "train": "collapse_probe.trainers._api",
    "train_async": "collapse_probe.trainers._api",
    "lab": "collapse_probe.trainers._api",
    "lab_async": "collapse_probe.trainers._api",
    "TrainConfig": "collapse_probe.trainers.config",
    "LabConfig": "collapse_probe.trainers.lab",
    "AuditResults": "collapse_probe.results",
    "CrossplayResults": "collapse_probe.results",
    "GateResults": "collapse_probe.results",
    "LabRunResults": "collapse_probe.results",
    "TrainResults": "collapse_probe.results",
    "reset_caches": "collapse_probe.core._state",
}
"""Public name -> the module that defines it (imported on first use, so ``import collapse_probe`` stays cheap)."""


if not TYPE_CHECKING:  # a checker sees the names above and nothing else (no catch-all ``Any``)

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'collapse_probe' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups find it without this hook
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
