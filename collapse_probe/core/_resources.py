"""Files shipped inside the package: datasets under ``collapse_probe/data`` and the dashboard app.

Everything a run needs at run time lives inside ``collapse_probe`` and is located with
:mod:`importlib.resources`, so an installed wheel works from any directory. ``$COLLAPSE_PROBE_DATASETS``
points the datasets root elsewhere (a directory with the same layout: ``p4g/``, ``tau2-demo/``, ...).
"""

from __future__ import annotations

import atexit
import os
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

_extracted = ExitStack()
atexit.register(_extracted.close)


def package_path(*parts: str) -> Path:
    """A file system path to ``collapse_probe/<parts...>`` (extracted once if the package is zipped)."""
    ref = resources.files("collapse_probe").joinpath(*parts)
    if isinstance(ref, Path):
        return ref
    return _extracted.enter_context(resources.as_file(ref))


def datasets_dir() -> Path:
    """Root of the shipped datasets: ``collapse_probe/data`` (``$COLLAPSE_PROBE_DATASETS`` overrides)."""
    env = os.environ.get("COLLAPSE_PROBE_DATASETS")
    return Path(env) if env else package_path("data")


def dataset_path(*parts: str) -> Path:
    """A path under :func:`datasets_dir`, e.g. ``dataset_path(benchmark, "personas.jsonl")``."""
    return datasets_dir().joinpath(*parts)


def dashboard_app() -> Path:
    """The Streamlit app file served by ``collapse-probe dashboard``."""
    return package_path("dashboard", "app.py")
