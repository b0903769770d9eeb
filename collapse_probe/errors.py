"""Error types shared by every subpackage.

``CollapseProbeError`` and its subclasses carry a message meant for a person: the CLI prints it
without a traceback. ``InfraError`` marks a failure of infrastructure (a provider outage, a model
that raised) as opposed to a result: pipelines record it and exclude it from scores, never score 0.
"""

from __future__ import annotations


class CollapseProbeError(Exception):
    """Base class for errors whose message is shown to the user as is."""


class ConfigError(CollapseProbeError, ValueError):
    """Bad input: a flag, file or field that does not hold what was expected."""


class CacheError(ConfigError):
    """The response cache cannot be used (corrupt, truncated, not a database): fatal for the run,
    never an infrastructure failure of the requests that hit it."""


class MissingDependencyError(CollapseProbeError, ImportError):
    """An optional dependency is not installed; the message names the pip command."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the optional package {package!r}, which is not installed. "
            f'Install it with: pip install "collapse-probe[{extra}]"'
        )


class InfraError(CollapseProbeError, RuntimeError):
    """A failure of infrastructure (network, provider, backend crash): never a score."""


class RunAbortedError(CollapseProbeError, RuntimeError):
    """Infrastructure the whole run stands on is gone (a Ray cluster that disappeared).

    Unlike a failed request this is not recorded per conversation or state: pipelines let it
    through, the run stops with its message, and what was recorded before resumes on the next run.
    """


def require(module: str, extra: str, purpose: str, package: str | None = None):  # noqa: ANN201
    """Import an optional module or raise :class:`MissingDependencyError` naming the extra.

    Args:
        module: importable module name, e.g. ``"transformers"``.
        extra: the collapse-probe extra that installs it, e.g. ``"local"``.
        purpose: what needs it, used in the error message.
        package: pip distribution name when it differs from ``module``.
    """
    import importlib
    import sys

    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(package or module, extra, purpose) from exc
    if getattr(found, "__file__", None) is None and hasattr(found, "__path__"):
        # a namespace package: only a directory of that name on sys.path (the checkout's datasets/ cards
        # when the Hugging Face datasets package is not installed), not the package itself
        sys.modules.pop(module, None)
        raise MissingDependencyError(package or module, extra, purpose)
    return found
