"""What the framework adapters share: the tested framework releases and the fixed set of logged figures.

Frameworks that gather per-sample logs into a batch (OpenRLHF's ``extra_logs``, verl's
``reward_extra_info``, ART's trajectory ``metrics``) need every sample to carry the same keys: a key
present in some samples and not others breaks their concatenation. :func:`fixed_scalars` gives every
sample the same keys from the first one on, NaN where nothing is measured yet.
"""

from __future__ import annotations

import importlib.metadata
import logging
import math
import re
from typing import TYPE_CHECKING, NoReturn

from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.integrations.monitor._core import CollapseMonitor, MonitorRow

logger = logging.getLogger("collapse_probe.integrations.monitor")

SCALAR_NAMES = (
    "epsilon",
    "epsilon_lo",
    "epsilon_hi",
    "reward_epsilon",
    "reward_epsilon_lo",
    "reward_epsilon_hi",
    "response_entropy",
    "strategy_entropy",
    "accumulated_epsilon",
    "sim_variance_share",
    "zero_std_share",
    "train_reward",
    "shadow_states",
    "alarms",
    "epsilon_pooled_hi",
    "reward_epsilon_pooled_hi",
    "zero_std_all_success",
    "zero_std_all_fail",
    "zero_std_sim_caused",
)
"""The names (after the monitor's prefix) of :meth:`CollapseMonitor.scalars`, in a fixed order."""

TESTED: dict[str, tuple[str, tuple[int, ...], tuple[int, ...]]] = {
    "verl": ("verl", (0, 9, 1), (0, 10)),
    "openrlhf": ("openrlhf", (0, 11, 2), (0, 12)),
    "art": ("openpipe-art", (0, 5, 23), (0, 6)),
    "trl": ("trl", (1, 16), (1, 17)),
}
"""adapter -> (distribution, lowest tested release, first release above the range): the same ranges as
the extras in pyproject.toml (a test checks that they agree)."""


def tested_range(adapter: str) -> str:
    """The tested releases of ``adapter``'s framework as a requirement string, e.g. ``>=0.9.1,<0.10``."""
    _, lo, hi = TESTED[adapter]
    return f">={'.'.join(map(str, lo))},<{'.'.join(map(str, hi))}"


def _release(version: str) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


_warned: set[str] = set()


def fixed_scalars(monitor: CollapseMonitor, row: MonitorRow | None) -> dict[str, float]:
    """Every name of :data:`SCALAR_NAMES` (with the monitor's prefix), from ``row`` where it has the
    figure and NaN elsewhere (also for every name when ``row`` is ``None``: no step closed yet)."""
    prefix = monitor.config.prefix
    have = monitor.scalars(row) if row is not None else {}
    return {prefix + n: float(have.get(prefix + n, math.nan)) for n in SCALAR_NAMES}


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def version_notice(adapter: str, installed: str | None) -> str | None:
    """One line when ``installed`` lies outside the releases ``adapter`` was tested with (else ``None``)."""
    dist, lo, hi = TESTED[adapter]
    if installed is None:
        return None
    release = _release(installed)
    if release is not None and lo <= release < hi:
        return None
    tested = tested_range(adapter)
    return (
        f"collapse_probe.integrations.monitor.{adapter}: tested with {dist}{tested}, installed {dist} {installed}; "
        f"it may not work (pip install 'collapse-probe[{adapter}]' installs a tested release)"
    )


def framework_error(adapter: str, error: BaseException) -> NoReturn:
    """The framework of ``adapter`` does not import: raise a :class:`ConfigError`, one line naming the
    tested releases, the installed one and the import error."""
    dist, tested = TESTED[adapter][0], tested_range(adapter)
    installed = installed_version(dist)
    have = f"installed {dist} {installed}" if installed else f"{dist} is not installed"
    raise ConfigError(
        f"collapse_probe.integrations.monitor.{adapter} needs {dist}{tested}; {have} ({type(error).__name__}: {error}); "
        f"pip install 'collapse-probe[{adapter}]', or see scripts/framework_env.sh"
    ) from error


def check_version(adapter: str, installed: str | None = None) -> str | None:
    """Say once per process, in one line (a warning), that the installed framework is outside the
    releases ``adapter`` was tested with; returns that line (``None``: inside the range)."""
    notice = version_notice(adapter, installed if installed is not None else installed_version(TESTED[adapter][0]))
    if notice and adapter not in _warned:
        _warned.add(adapter)
        logger.warning(notice)
    return notice
