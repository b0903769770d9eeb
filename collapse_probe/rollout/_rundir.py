"""Run directories: ``config.json`` + append-only JSONL records + ``results.json``.

A record is appended (and flushed to disk) as soon as its unit of work finishes, so a run killed at
any point resumes without redoing or duplicating work. A kill during a write can leave a torn last
line; :meth:`RunDir.read_jsonl` drops it (and :meth:`RunDir.repair` truncates it) so the unit is
simply redone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError


class RunDir:
    """A run directory on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def create(self, config: dict[str, Any], *, kind: str, resume: bool = True) -> None:
        """Create the directory and write ``config.json``; on resume, check the config matches.

        Raises:
            ConfigError: the directory holds a run of another kind or another configuration.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        cfg_path = self.path / "config.json"
        full = {"kind": kind, **config}
        if cfg_path.exists():
            try:
                old = json.loads(cfg_path.read_text())
            except json.JSONDecodeError:
                old = None
            if old is not None and resume:
                diff = {k for k in set(old) | set(full) if k not in _VOLATILE and old.get(k) != full.get(k)}
                if diff:
                    raise ConfigError(
                        f"{cfg_path}: this run directory holds a run with a different configuration "
                        f"(differs in: {', '.join(sorted(diff))}); use another --out or delete the directory"
                    )
                return
        write_json_atomic(cfg_path, full)

    def append_jsonl(self, name: str, record: dict[str, Any]) -> None:
        """Append one record and flush it to disk."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / name, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False, default=_json_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_jsonl(self, name: str) -> list[dict[str, Any]]:
        """All complete records of ``name`` (a torn last line from a kill is ignored)."""
        return list(iter_jsonl(self.path / name))

    def repair(self, name: str) -> int:
        """Truncate a torn last line left by a kill; return the number of bytes removed."""
        p = self.path / name
        if not p.exists():
            return 0
        data = p.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        with open(p, "r+b") as f:
            f.truncate(keep)
        return len(data) - keep

    def write_results(self, results: dict[str, Any], name: str = "results.json") -> Path:
        p = self.path / name
        write_json_atomic(p, results)
        return p


_VOLATILE = {"created", "resumed", "version"}


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the complete JSON records of a JSONL file; a torn final line is skipped.

    Raises:
        ConfigError: a line in the middle of the file is not valid JSON (the file is corrupt).
    """
    p = Path(path)
    if not p.exists():
        return
    lines = p.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i >= len(lines) - 2 and not p.read_text(encoding="utf-8").endswith("\n"):
                return  # torn last line from a kill mid-write
            raise ConfigError(f"{p}: line {i + 1} is not valid JSON; the file is corrupt") from None


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON to a temp file and rename it over ``path`` (readers never see half a file)."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default) + "\n", encoding="utf-8")
    os.replace(tmp, p)


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
