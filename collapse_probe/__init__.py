"""collapse-probe: diagnose and fix simulator collapse in multi-agent RL for LLM agents.

The public API lives in subpackages, one per concept:

- :mod:`collapse_probe.models` — batched chat-model backends and the response cache.
- :mod:`collapse_probe.simulators` — a simulator is a model plus a sampling mode.
- :mod:`collapse_probe.benchmarks` — arenas (tasks, environment, reward).
- :mod:`collapse_probe.rollout` — the batched multi-turn engine and run directories.
- :mod:`collapse_probe.metrics` — partitioners and collapse estimators.
- :mod:`collapse_probe.trainers` — reference trainers and the tabular collapse lab.
- :mod:`collapse_probe.report` — JSON results, HTML reports and terminal tables.
"""

from collapse_probe._version import __version__
from collapse_probe.errors import CollapseProbeError, ConfigError, InfraError

__all__ = ["CollapseProbeError", "ConfigError", "InfraError", "__version__"]
