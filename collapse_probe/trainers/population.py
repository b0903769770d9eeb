"""The population pool of Population Co-Training: a FIFO of the K most recent simulator adapter snapshots.

On disk a pool is a directory::

    pool/
      manifest.json          {"schema": "collapse-probe/pool/v1", "pool_size": K,
                              "members": [{"step": 3, "path": "step-00000003"}, ...],   # oldest first
                              "evicted": [{"step": 1, "path": "step-00000001"}, ...]}
      step-00000003/         adapter_config.json + adapter_model.safetensors (peft save_pretrained)

``members`` holds at most ``K`` snapshots, oldest first; pushing a new one when the pool is full
evicts the oldest (first in, first out). One member is drawn uniformly per rollout batch. The
manifest is rewritten atomically, so a pool is restartable from it at any time; snapshot
directories that left the pool are deleted by :meth:`PopulationPool.prune` (the trainer prunes
after a checkpoint, so a checkpoint's copy of the member list always points at files that exist).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from collapse_probe.core.limits import check_int
from collapse_probe.errors import ConfigError
from collapse_probe.rollout import write_json_atomic

POOL_SCHEMA = "collapse-probe/pool/v1"
MANIFEST = "manifest.json"


class PoolMember(TypedDict):
    """One snapshot of the pool: the training step it was taken at and its directory in the pool."""

    step: int
    path: str
    """Directory name under the pool directory (``step-00000040``)."""


class PoolState(TypedDict):
    """The pool's members and the members it evicted (stored in checkpoints)."""

    members: list[PoolMember]
    evicted: list[PoolMember]


class PopulationPool:
    """A FIFO pool of adapter snapshots in a directory (see the module docstring).

    Args:
        directory: the pool directory (created when missing).
        pool_size: ``K``, the most snapshots kept.
    """

    def __init__(self, directory: str | Path, pool_size: int) -> None:
        check_int(pool_size, "--pool-size")
        self.directory = Path(directory)
        self.pool_size = pool_size
        self.members: list[PoolMember] = []
        self.evicted: list[PoolMember] = []

    # ---- persistence ------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: str | Path, pool_size: int) -> PopulationPool:
        """Open a pool, reading its manifest when there is one.

        Raises:
            ConfigError: the manifest is not valid JSON, is not a pool manifest, lists a member whose
                files are missing, or was written with another pool size.
        """
        pool = cls(directory, pool_size)
        path = pool.directory / MANIFEST
        if not path.exists():
            return pool
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict) or data.get("schema") != POOL_SCHEMA:
            raise ConfigError(f"{path}: expected a pool manifest with schema {POOL_SCHEMA!r}")
        if data.get("pool_size") != pool_size:
            raise ConfigError(
                f"{path}: the pool was built with --pool-size {data.get('pool_size')!r}, not {pool_size}; "
                "use the same size or another pool directory"
            )
        members = data.get("members")
        if not isinstance(members, list) or not all(_is_member(m) for m in members):
            raise ConfigError(f"{path}: field 'members' must be a list of {{'step': int, 'path': str}}")
        pool.members = [_member(m) for m in members]
        pool.evicted = [_member(m) for m in data.get("evicted", []) if _is_member(m)]
        for m in pool.members:
            if not (pool.directory / m["path"]).is_dir():
                raise ConfigError(f"{path}: member {m['path']!r} is listed but its directory is missing")
        return pool

    def write_manifest(self) -> None:
        """Write ``manifest.json`` atomically."""
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.directory / MANIFEST,
            {"schema": POOL_SCHEMA, "pool_size": self.pool_size, "members": self.members, "evicted": self.evicted},
        )

    def state(self) -> PoolState:
        """The member list and eviction record (stored in checkpoints)."""
        return PoolState(members=[_member(m) for m in self.members], evicted=[_member(m) for m in self.evicted])

    def restore(self, state: Mapping[str, Any]) -> None:
        """Return to a saved :meth:`state` (on resume) and rewrite the manifest.

        Raises:
            ConfigError: a member's directory no longer exists.
        """
        members = list(state.get("members", []))
        for m in members:
            if not _is_member(m) or not (self.directory / m["path"]).is_dir():
                raise ConfigError(f"pool {self.directory}: checkpointed member {m!r} is missing on disk")
        self.members = [_member(m) for m in members]
        self.evicted = [_member(m) for m in state.get("evicted", []) if _is_member(m)]
        self.write_manifest()

    # ---- FIFO -------------------------------------------------------------------------------

    def push(self, step: int, save: Callable[[Path], None]) -> list[PoolMember]:
        """Save a new snapshot with ``save(directory)`` and append it; evict the oldest beyond ``K``.

        The snapshot is written to a scratch directory and renamed into place, then the manifest is
        rewritten. Returns the evicted members (their files stay until :meth:`prune`).
        """
        name = f"step-{step:08d}"
        if any(m["path"] == name for m in self.members):
            raise ConfigError(f"pool {self.directory}: a snapshot of step {step} is already a member")
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / name
        tmp = self.directory / f".{name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        save(tmp)
        if final.exists():  # left by an interrupted step that never reached its checkpoint
            shutil.rmtree(final)
        os.rename(tmp, final)
        self.members.append({"step": int(step), "path": name})
        evicted = []
        while len(self.members) > self.pool_size:
            evicted.append(self.members.pop(0))
        self.evicted.extend(evicted)
        self.write_manifest()
        return evicted

    def sample(self, rng: random.Random) -> PoolMember:
        """One member drawn uniformly.

        Raises:
            ConfigError: the pool is empty.
        """
        if not self.members:
            raise ConfigError(f"pool {self.directory} is empty")
        return self.members[rng.randrange(len(self.members))]

    def member_dir(self, member: PoolMember) -> Path:
        return self.directory / member["path"]

    def prune(self, protect: set[str] | None = None) -> list[str]:
        """Delete snapshot directories that are not members (nor in ``protect``); return their names."""
        keep = {m["path"] for m in self.members} | (protect or set())
        removed: list[str] = []
        if not self.directory.is_dir():
            return removed
        for d in sorted(self.directory.iterdir()):
            if d.is_dir() and d.name.startswith("step-") and d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d.name)
        return removed

    def __len__(self) -> int:
        return len(self.members)


def _member(m: PoolMember) -> PoolMember:
    """A copy of a member holding its two fields."""
    return PoolMember(step=m["step"], path=m["path"])


def _is_member(m: Any) -> TypeGuard[PoolMember]:
    return (
        isinstance(m, dict)
        and isinstance(m.get("step"), int)
        and isinstance(m.get("path"), str)
        and "/" not in m["path"]
        and bool(m["path"])
    )
