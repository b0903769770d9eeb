"""Reading a CooperBench dataset in the official layout.

A dataset root holds ``<repo>_task/task<ID>/`` folders; each task has ``feature<N>/`` folders with
``feature.md`` (the spec an agent reads), ``feature.patch`` (gold source change) and ``tests.patch``
(the hidden tests). Discovery follows the reference: repo folders sorted, ``task<int>`` and
``feature<int>`` folders only, tasks with fewer than two features skipped, and one instance per
unordered feature pair ``(i, j)``, ``i < j``; ``agent1`` gets ``i``, the smaller id. A subset file
``subsets/<name>.json`` (``lite``, ``flash`` upstream) restricts the pairs.

Docker-free tasks add ``repo/`` (the BASE tree) and a host-side ``run_tests.sh``; official tasks
name their upstream and BASE commit in ``setup.sh``/``Dockerfile`` and need a local copy of that
tree (see :func:`collapse_probe.benchmarks.cooperbench.find_base_tree`).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from collapse_probe.errors import ConfigError

ENV_VAR = "COLLAPSE_PROBE_COOPERBENCH_DATA"
DEMO_NAME = "cooperbench-demo"

_TASK_DIR = re.compile(r"^task(\d+)$")
_FEATURE_DIR = re.compile(r"^feature(\d+)$")


@dataclass(frozen=True)
class Feature:
    """One feature of a task: ``feature<fid>/``."""

    fid: int
    path: Path

    @property
    def spec(self) -> str:
        """The raw ``feature.md`` (the coop task text)."""
        return (self.path / "feature.md").read_text(encoding="utf-8")

    @property
    def patch_path(self) -> Path:
        return self.path / "feature.patch"

    @property
    def tests_path(self) -> Path:
        return self.path / "tests.patch"

    @property
    def gold_patch(self) -> str:
        return self.patch_path.read_text(encoding="utf-8")

    @property
    def title(self) -> str:
        """The ``**Title**:`` line of the spec (or its first non-empty line)."""
        for line in self.spec.splitlines():
            m = re.match(r"\s*\*\*Title\*\*:\s*(.+)", line)
            if m:
                return m.group(1).strip()
        return next((ln.strip("# ").strip() for ln in self.spec.splitlines() if ln.strip()), f"feature{self.fid}")


@dataclass(frozen=True)
class CooperTask:
    """One task folder ``<repo>/task<task_id>/`` with at least two features."""

    repo: str
    task_id: int
    path: Path
    features: dict[int, Feature] = field(hash=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.repo}/task{self.task_id}"

    @property
    def docker_free(self) -> bool:
        """Ships its BASE tree (``repo/``) and a host-side ``run_tests.sh``."""
        return (self.path / "repo").is_dir() and (self.path / "run_tests.sh").is_file()

    @cached_property
    def upstream(self) -> dict[str, str | None]:
        """``{"url", "base_commit"}`` read from ``setup.sh``/``Dockerfile`` (``None`` where absent)."""
        url = commit = None
        for fname in ("setup.sh", "Dockerfile"):
            p = self.path / fname
            if not p.is_file():
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
            commit = (
                commit
                or _first(r'BASE_COMMIT="?([0-9a-f]{7,40})', text)
                or _first(r"git checkout ([0-9a-f]{40})", text)
            )
            url = url or _first(r"git clone (https?://\S+?)(?:\.git)?[\s\"]", text)
        return {"url": url, "base_commit": commit}

    def pairs(self) -> list[tuple[int, int]]:
        """Every ``(i, j)`` with ``i < j`` (the reference's combinations of sorted ids)."""
        return list(itertools.combinations(sorted(self.features), 2))


@dataclass(frozen=True)
class PairRef:
    """One instance: a task and a feature pair (``agent1`` gets ``i``, ``agent2`` gets ``j``)."""

    task: CooperTask
    i: int
    j: int

    @property
    def pair_id(self) -> str:
        return f"{self.task.name}/f{self.i}_f{self.j}"


def _first(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text)
    return m.group(1) if m else None


def demo_dir() -> Path:
    """The shipped docker-free demo tasks (``collapse_probe/data/cooperbench-demo``; ``$COLLAPSE_PROBE_DATASETS``
    moves the datasets root)."""
    from collapse_probe.core._resources import dataset_path

    return dataset_path(DEMO_NAME)


def resolve_data_dir(data_dir: str | Path | None, *, demo: bool = False) -> Path:
    """The dataset root: ``data_dir``, else ``$COLLAPSE_PROBE_COOPERBENCH_DATA``; the demo uses the shipped
    tasks unless one of those is given. Accepts the root itself or a folder holding ``dataset/``."""
    raw = data_dir if data_dir is not None else os.environ.get(ENV_VAR)
    if raw is None or str(raw) == "":
        if demo:
            return demo_dir()
        raise ConfigError(
            f"cooperbench: no dataset given; pass --cooperbench-data DIR or set ${ENV_VAR} to the folder holding "
            "<repo>_task/task<ID>/ (the official dataset/ folder), or use --benchmark cooperbench-demo"
        )
    root = Path(raw).expanduser()
    if not root.is_dir():
        raise ConfigError(f"--cooperbench-data: {str(root)!r} is not a directory")
    if not _repo_dirs(root) and (root / "dataset").is_dir():
        root = root / "dataset"
    if not _repo_dirs(root):
        raise ConfigError(
            f"--cooperbench-data: {str(root)!r} holds no <repo>/task<ID>/feature<N>/ folders (expected the "
            "official dataset/ layout)"
        )
    return root


def _repo_dirs(root: Path) -> list[Path]:
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if any(_TASK_DIR.match(t.name) and t.is_dir() for t in d.iterdir()):
            out.append(d)
    return out


def discover_tasks(root: Path) -> list[CooperTask]:
    """All tasks under ``root`` in the reference's order (repo folders sorted, then task ids)."""
    tasks: list[CooperTask] = []
    for repo_dir in _repo_dirs(root):
        found = []
        for tdir in repo_dir.iterdir():
            m = _TASK_DIR.match(tdir.name)
            if not (m and tdir.is_dir()):
                continue
            feats = {}
            for fdir in tdir.iterdir():
                fm = _FEATURE_DIR.match(fdir.name)
                if fm and fdir.is_dir():
                    feats[int(fm.group(1))] = Feature(int(fm.group(1)), fdir)
            if len(feats) < 2:
                continue
            for f in feats.values():
                for needed in ("feature.md", "feature.patch", "tests.patch"):
                    if not (f.path / needed).is_file():
                        raise ConfigError(
                            f"cooperbench: {f.path / needed} is missing (each feature<N>/ needs {needed})"
                        )
            found.append(CooperTask(repo_dir.name, int(m.group(1)), tdir, dict(sorted(feats.items()))))
        tasks.extend(sorted(found, key=lambda t: t.task_id))
    return tasks


def subset_names(root: Path) -> list[str]:
    d = root / "subsets"
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def load_subset(root: Path, name: str) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """``(repo folder, task id) -> pairs`` of ``subsets/<name>.json``."""
    path = root / "subsets" / f"{name}.json"
    if not path.is_file():
        known = subset_names(root)
        raise ConfigError(f"--split: no subset {name!r} in {root / 'subsets'}; available: {', '.join(['all', *known])}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    entries = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected an object with a 'tasks' list")
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for k, e in enumerate(entries):
        try:
            repo = str(e["repo"])
            tid = int(str(e["task_id"]).removeprefix("task"))
            pairs = [(min(int(a), int(b)), max(int(a), int(b))) for a, b in e["pairs"]]
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"{path}: tasks[{k}] needs 'repo', 'task_id' and 'pairs' (a list of [feature, feature])"
            ) from None
        out.setdefault((repo, tid), []).extend(pairs)
    return out


def enumerate_pairs(root: Path, subset: str | None = None) -> list[PairRef]:
    """Every instance of the dataset (or of one subset), in the reference's order."""
    tasks = discover_tasks(root)
    if subset in (None, "", "all", "base"):
        return [PairRef(t, i, j) for t in tasks for i, j in t.pairs()]
    assert subset is not None
    wanted = load_subset(root, subset)
    out: list[PairRef] = []
    for t in tasks:
        chosen: set[tuple[int, int]] = set()
        for key in ((t.repo, t.task_id), (t.repo.removesuffix("_task"), t.task_id)):
            chosen.update(wanted.get(key, []))
        out.extend(PairRef(t, i, j) for i, j in t.pairs() if (i, j) in chosen)
    return out


def find_task(root: Path, name: str) -> CooperTask:
    for t in discover_tasks(root):
        if t.name == name:
            return t
    raise ConfigError(f"cooperbench: no task {name!r} under {root}")


def load_task(task_dir: str | Path) -> CooperTask:
    """The task in folder ``task_dir`` (``.../<repo>/task<ID>``)."""
    p = Path(task_dir).expanduser().resolve()
    m = _TASK_DIR.match(p.name)
    if not p.is_dir() or not m:
        raise ConfigError(f"cooperbench: {str(task_dir)!r} is not a task<ID>/ folder")
    feats = {}
    for fdir in p.iterdir():
        fm = _FEATURE_DIR.match(fdir.name)
        if fm and fdir.is_dir():
            feats[int(fm.group(1))] = Feature(int(fm.group(1)), fdir)
    return CooperTask(p.parent.name, int(m.group(1)), p, dict(sorted(feats.items())))


def task_summary(task: CooperTask) -> dict[str, object]:
    """One line of a task listing: name, feature ids, number of pairs and the upstream repository's fields."""
    return {"task": task.name, "features": list(task.features), "pairs": len(task.pairs()), **task.upstream}
