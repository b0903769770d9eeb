"""Scoring a pair of patches the way the reference evaluator does (``test_merged``), without Docker.

Procedure, per pair ``(i, j)`` with patches ``(p_i, p_j)`` (``agent1`` = ``i``):

1. Each patch is cleaned (:func:`~collapse_probe.benchmarks.cooperbench._patch.clean_patch`: quoting
   residue, trailing newline, test-file sections dropped).
2. From BASE, branch ``agent1``: ``git apply``, on failure ``git apply --3way``; a failed apply leaves
   the branch empty (not fatal); ``git add -A; git commit --allow-empty``. The same for ``agent2``.
3. On ``agent2``: ``git merge agent1 --no-commit --no-ff``; success -> ``naive``. Any conflict ->
   ``git merge --abort``, append ``* merge=union`` to ``.gitattributes`` (uncommitted), merge again;
   success -> ``union``; failure -> ``error`` and the pair fails.
4. The merged patch is ``git diff BASE HEAD``. For each feature separately: a fresh BASE, the merged
   patch, only that feature's ``tests.patch``, the task's test command. Feature passed <=> exit code 0
   and at least one passing test. Pair success <=> both passed.

Test commands: a docker-free task's own ``run_tests.sh <repo> <tests.patch> <merged.patch>``; an
official task's ``pytest`` line from its ``runner.sh``, run with this interpreter on the tree
(patches applied with ``runner.sh``'s flags: ``--ignore-whitespace --ignore-space-change``, fallback
``--3way``). Only pytest output is parsed (Python tasks); other languages are out of scope here.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

from collapse_probe.benchmarks.cooperbench._data import CooperTask, load_task
from collapse_probe.benchmarks.cooperbench._patch import clean_patch, preimage_blobs
from collapse_probe.benchmarks.cooperbench._sandbox import Limits, run_command
from collapse_probe.core._state import process_cache
from collapse_probe.errors import ConfigError

REPOS_ENV = "COLLAPSE_PROBE_COOPERBENCH_REPOS"
MergeStrategy = Literal["naive", "union", "error"]

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "cooperbench",
    "GIT_AUTHOR_EMAIL": "cooperbench@localhost",
    "GIT_COMMITTER_NAME": "cooperbench",
    "GIT_COMMITTER_EMAIL": "cooperbench@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_TERMINAL_PROMPT": "0",
}


class EvaluationError(RuntimeError):
    """The evaluation machinery itself failed (git missing, disk full): an infrastructure failure."""


def git(repo: Path, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo), **_GIT_ENV}
    try:
        r = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
             *args],
            cwd=str(repo), env=env, input=stdin, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise EvaluationError(f"git {' '.join(args[:2])} failed to run: {exc}") from exc
    if check and r.returncode != 0:
        raise EvaluationError(f"git {' '.join(args)} in {repo} failed: {(r.stderr or r.stdout).strip()[:500]}")
    return r


# ---- BASE trees --------------------------------------------------------------------------------


def repos_dir() -> Path:
    """Where local BASE trees of official tasks live: ``$COLLAPSE_PROBE_COOPERBENCH_REPOS`` or
    ``~/.cache/collapse-probe/cooperbench-repos`` (``<repo>_task/task<ID>/``)."""
    env = os.environ.get(REPOS_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "collapse-probe" / "cooperbench-repos"


def find_base_tree(task: CooperTask, repos: str | Path | None = None) -> Path:
    """The BASE tree of ``task``: its own ``repo/``, else ``<repos>/<repo>/task<ID>/``.

    Raises:
        ConfigError: neither exists (the message says where to put a checkout of which commit).
    """
    own = task.path / "repo"
    if own.is_dir():
        return own
    root = Path(repos).expanduser() if repos is not None else repos_dir()
    cand = root / task.repo / f"task{task.task_id}"
    if cand.is_dir():
        return cand
    up = task.upstream
    raise ConfigError(
        f"cooperbench: no BASE tree for {task.name}: the task has no repo/ and {cand} does not exist; put a "
        f"checkout of {up.get('url') or 'the upstream repository'} at commit {up.get('base_commit') or '?'} there "
        f"(or set ${REPOS_ENV}); Docker images are not used"
    )


def verify_base(task: CooperTask, tree: Path) -> list[str]:
    """Files whose content at ``tree`` differs from the pre-image named in the task's patches.

    Every ``index <blob>..`` line of every feature/tests patch names the git blob the patch was made
    on; an empty list means ``tree`` is the BASE those patches expect.
    """
    wanted: dict[str, str] = {}
    for f in task.features.values():
        for p in (f.patch_path, f.tests_path):
            for path, blob in preimage_blobs(p.read_text(encoding="utf-8", errors="replace")).items():
                wanted.setdefault(path, blob)
    bad = []
    for path, blob in sorted(wanted.items()):
        fp = tree / path
        if not fp.is_file():
            bad.append(f"{path}: missing")
            continue
        r = subprocess.run(["git", "hash-object", str(fp)], capture_output=True, text=True)
        if not r.stdout.strip().startswith(blob):
            bad.append(f"{path}: blob {r.stdout.strip()[:10]}, patches expect {blob}")
    return bad


@dataclass(frozen=True)
class BaseRepo:
    """A pristine git repository whose commit ``sha`` is BASE (clone it, never edit it)."""

    path: Path
    sha: str

    def clone(self, dest: Path) -> Path:
        dest.parent.mkdir(parents=True, exist_ok=True)
        git(dest.parent, "clone", "--quiet", "--no-hardlinks", str(self.path), str(dest))
        git(dest, "checkout", "--quiet", "--detach", self.sha)
        return dest


_BASES: dict[tuple[str, str], BaseRepo] = process_cache("benchmarks.cooperbench_bases", {})
_BASE_ROOT: list[Path] = []


def _scratch_root() -> Path:
    if not _BASE_ROOT:
        import atexit

        d = Path(tempfile.mkdtemp(prefix="cooperbench-base-"))
        atexit.register(shutil.rmtree, d, True)
        _BASE_ROOT.append(d)
    return _BASE_ROOT[0]


def base_repo(task: CooperTask, repos: str | Path | None = None) -> BaseRepo:
    """BASE of ``task`` as a git repository (built once per process from the BASE tree).

    The tree is copied without any ``.git`` and committed with a fixed author and date, so the BASE
    commit id is the same on every machine for the same files.
    """
    tree = find_base_tree(task, repos)
    key = (str(task.path), str(tree.resolve()))
    if key in _BASES and _BASES[key].path.is_dir():
        return _BASES[key]
    # a fresh directory, also after reset_caches() emptied _BASES (the old ones stay until exit)
    dest = Path(tempfile.mkdtemp(prefix=f"{task.repo}-task{task.task_id}-", dir=_scratch_root()))
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".venv")
    shutil.copytree(tree, dest, ignore=ignore, symlinks=True, dirs_exist_ok=True)
    git(dest, "init", "--quiet")
    git(dest, "add", "-A")
    git(dest, "commit", "--quiet", "--allow-empty", "-m", f"BASE of {task.name}")
    sha = git(dest, "rev-parse", "HEAD").stdout.strip()
    _BASES[key] = BaseRepo(dest, sha)
    return _BASES[key]


# ---- merge -------------------------------------------------------------------------------------


@dataclass
class MergeOutcome:
    strategy: MergeStrategy
    """``naive`` (plain merge), ``union`` (after a conflict) or ``error`` (union failed too)."""
    status: str
    """``clean``, ``conflicts`` or ``missing_input`` (a patch did not apply), as the reference names it."""
    merged: str
    applied: tuple[str, str]
    """Per agent: ``applied``, ``failed`` or ``skipped`` (empty patch)."""
    detail: str = ""


def _apply_and_commit(repo: Path, patch: str, label: str, workdir: Path) -> str:
    if not patch.strip():
        state = "skipped"
    else:
        pfile = workdir / f"{label}.patch"
        pfile.write_text(patch, encoding="utf-8")
        if git(repo, "apply", str(pfile), check=False).returncode == 0:
            state = "applied"
        elif git(repo, "apply", "--3way", str(pfile), check=False).returncode == 0:
            state = "applied"
        else:
            git(repo, "reset", "--quiet", "--hard", check=False)
            git(repo, "clean", "-fdq", check=False)
            state = "failed"
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", label)
    return state


def merge_patches(base: BaseRepo, patch1: str, patch2: str, workdir: Path) -> MergeOutcome:
    """Steps 2-3 of the procedure on a clone of ``base`` in ``workdir`` (patches already cleaned)."""
    repo = base.clone(workdir / "merge")
    git(repo, "checkout", "--quiet", "-b", "agent1", base.sha)
    a1 = _apply_and_commit(repo, patch1, "agent1", workdir)
    git(repo, "checkout", "--quiet", "-b", "agent2", base.sha)
    a2 = _apply_and_commit(repo, patch2, "agent2", workdir)
    status = "missing_input" if "failed" in (a1, a2) else "clean"
    r = git(repo, "merge", "agent1", "--no-commit", "--no-ff", check=False)
    if r.returncode == 0:
        git(repo, "commit", "--quiet", "--allow-empty", "-m", "merge")
        merged = git(repo, "diff", "--binary", base.sha, "HEAD").stdout
        return MergeOutcome("naive", status, merged, (a1, a2))
    git(repo, "merge", "--abort", check=False)
    status = "missing_input" if status == "missing_input" else "conflicts"
    git(repo, "checkout", "--quiet", "--force", "agent2")
    git(repo, "reset", "--quiet", "--hard")
    attrs = repo / ".gitattributes"
    prev = attrs.read_text(encoding="utf-8") if attrs.exists() else ""
    attrs.write_text(prev + ("" if not prev or prev.endswith("\n") else "\n") + "* merge=union\n", encoding="utf-8")
    r = git(repo, "merge", "agent1", "--no-commit", "--no-ff", check=False)
    if r.returncode != 0:
        detail = (r.stdout + r.stderr).strip()[-1000:]
        git(repo, "merge", "--abort", check=False)
        return MergeOutcome("error", status, "", (a1, a2), detail)
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "union merge")
    merged = git(repo, "diff", "--binary", base.sha, "HEAD").stdout
    return MergeOutcome("union", status, merged, (a1, a2))


# ---- tests -------------------------------------------------------------------------------------


@dataclass
class FeatureResult:
    fid: int
    passed: bool
    returncode: int
    n_passed: int
    n_failed: int
    output_tail: str = ""
    timed_out: bool = False


_PASSED = re.compile(r"(\d+) passed")
_FAILED = re.compile(r"(\d+) failed")
_ERRORS = re.compile(r"(\d+) errors?\b")


def parse_pytest(output: str) -> tuple[int, int]:
    """``(passed, failed + errors)`` from pytest's summary line (0 where absent)."""
    lines = [ln for ln in output.splitlines() if re.search(r"\d+ (passed|failed|errors?)\b", ln)]
    if not lines:
        return 0, 0
    last = lines[-1]
    p = _PASSED.search(last)
    f = _FAILED.search(last)
    e = _ERRORS.search(last)
    return (int(p.group(1)) if p else 0), (int(f.group(1)) if f else 0) + (int(e.group(1)) if e else 0)


@functools.lru_cache(maxsize=64)
def runner_pytest_args(runner: Path) -> tuple[str, ...]:
    """The arguments of the last ``python -m pytest`` line of an official ``runner.sh``."""
    args: list[str] | None = None
    for line in runner.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.match(r"\s*(?:\S*/)?python[\d.]*\s+-m\s+pytest\b(.*)$", line)
        if m:
            toks = shlex.split(m.group(1), comments=True)
            cut = next((k for k, t in enumerate(toks) if t in ("|", "||", "&&", ";", "2>&1", ">", "&>")), len(toks))
            args = toks[:cut]
    if args is None:
        raise ConfigError(
            f"cooperbench: {runner} has no 'python -m pytest' line; only Python tasks run without Docker here"
        )
    return tuple(args)


_APPLY = "git apply --ignore-whitespace --ignore-space-change {p} || git apply --3way {p}"


def run_feature_tests(
    task: CooperTask, base: BaseRepo, fid: int, patch: str | None, workdir: Path, limits: Limits | None = None
) -> FeatureResult:
    """Feature ``fid``'s tests on a fresh BASE with ``patch`` (the merged patch) applied.

    An empty ``patch`` fails without running (the reference's runner cannot apply an empty file);
    ``None`` runs the tests on BASE itself (to check that they fail there).
    """
    limits = limits or Limits(wall_s=600, cpu_s=600)
    feature = task.features[fid]
    tree = base.clone(workdir / f"test-f{fid}")
    pfile = workdir / f"merged-f{fid}.patch"
    pfile.write_text(patch or "", encoding="utf-8")
    tests = feature.tests_path.resolve()
    if task.docker_free:
        cmd = f"bash {shlex.quote(str((task.path / 'run_tests.sh').resolve()))} {shlex.quote(str(tree))} " \
              f"{shlex.quote(str(tests))}" + (f" {shlex.quote(str(pfile))}" if patch is not None else "")  # fmt: skip
    else:
        pytest_args = " ".join(shlex.quote(a) for a in runner_pytest_args(task.path / "runner.sh"))
        cmd = (
            "set -e\n"
            + (_APPLY.format(p=shlex.quote(str(pfile))) + "\n" if patch is not None else "")
            + _APPLY.format(p=shlex.quote(str(tests)))
            + f"\n{shlex.quote(sys.executable)} -m pytest -p no:cacheprovider {pytest_args}\n"
        )
    home = workdir / f"home-f{fid}"
    home.mkdir(exist_ok=True)
    env = {"PYTHONPATH": str(tree)}
    if patch is not None and not patch.strip():
        res_rc, out, timed_out = 1, "empty patch: nothing to apply (the reference's runner fails on it)", False
    else:
        res = run_command(cmd, tree, limits=limits, home=home, env_extra=env)
        res_rc, out, timed_out = res.returncode, res.output, res.timed_out
    n_pass, n_fail = parse_pytest(out)
    return FeatureResult(fid, res_rc == 0 and n_pass > 0, res_rc, n_pass, n_fail, out[-3000:], timed_out)


# ---- public entry points -----------------------------------------------------------------------


class FeatureTestRecord(TypedDict):
    """A :class:`FeatureResult` in a result's record (without its output)."""

    fid: int
    passed: bool
    returncode: int
    n_passed: int
    n_failed: int
    timed_out: bool


class PairResultRecord(TypedDict):
    """:meth:`PairResult.to_dict`: the pair's outcome as the episode's score info holds it."""

    success: bool
    passed: tuple[bool, bool]
    merge: MergeStrategy
    merge_status: str
    applied: tuple[str, str]
    features: tuple[int, int]
    merged_patch: NotRequired[str]
    """Only ``with_patch``."""
    tests: list[FeatureTestRecord]
    detail: str


class GoldPairRow(TypedDict):
    """One row of :func:`gold_pair_table`."""

    pair: list[int]
    success: bool
    passed: list[bool]
    merge: MergeStrategy
    merge_status: str


@dataclass
class PairResult:
    """The outcome of one pair: ``success`` only when both features' tests pass on the merge."""

    success: bool
    passed: tuple[bool, bool]
    merge: MergeStrategy
    merge_status: str
    applied: tuple[str, str]
    features: tuple[int, int]
    merged_patch: str = field(repr=False, default="")
    tests: list[FeatureResult] = field(default_factory=list, repr=False)
    detail: str = ""

    def to_dict(self, *, with_patch: bool = False) -> PairResultRecord:
        """The result as JSON-ready data, in field order (``merged_patch`` only ``with_patch``)."""
        tests: list[FeatureTestRecord] = [
            {"fid": t.fid, "passed": t.passed, "returncode": t.returncode, "n_passed": t.n_passed,
             "n_failed": t.n_failed, "timed_out": t.timed_out}
            for t in self.tests
        ]  # fmt: skip
        if with_patch:
            return {"success": self.success, "passed": self.passed, "merge": self.merge,
                    "merge_status": self.merge_status, "applied": self.applied, "features": self.features,
                    "merged_patch": self.merged_patch, "tests": tests, "detail": self.detail}  # fmt: skip
        return {"success": self.success, "passed": self.passed, "merge": self.merge, "merge_status": self.merge_status,
                "applied": self.applied, "features": self.features, "tests": tests, "detail": self.detail}  # fmt: skip

    def reward(self, partial: bool = False, own: int = 0) -> float:
        """1 on success; with ``partial``, 0.5 when feature ``own`` (0 or 1) passed (SCOPE's variant)."""
        if self.success:
            return 1.0
        return 0.5 if partial and self.passed[own] else 0.0


def _as_task(task: CooperTask | str | Path) -> CooperTask:
    return task if isinstance(task, CooperTask) else load_task(task)


def _read(p: str | Path | None) -> str:
    """Patch text from text, a :class:`~pathlib.Path`, or a one-line string naming an existing file."""
    if p is None:
        return ""
    if isinstance(p, Path):
        return p.read_text(encoding="utf-8")
    if p and "\n" not in p and len(p) < 4096 and Path(p).is_file():
        return Path(p).read_text(encoding="utf-8")
    return p


def evaluate_pair(
    task_dir: CooperTask | str | Path,
    features: tuple[int, int],
    patches: tuple[str | Path | None, str | Path | None],
    *,
    repos: str | Path | None = None,
    limits: Limits | None = None,
) -> PairResult:
    """Merge ``patches`` (agent1's for ``features[0]``, agent2's for ``features[1]``) and test each feature.

    ``features`` may be given in either order; the smaller id is agent1's, and the patches follow
    their features. Patches are text, or a path (a :class:`~pathlib.Path`, or a one-line string naming
    a file) that is read; ``None`` or ``""`` is an empty patch.
    """
    task = _as_task(task_dir)
    i, j = features
    p_i, p_j = _read(patches[0]), _read(patches[1])
    if i > j:
        i, j, p_i, p_j = j, i, p_j, p_i
    for f in (i, j):
        if f not in task.features:
            raise ConfigError(f"cooperbench: {task.name} has no feature {f} (features: {list(task.features)})")
    if i == j:
        raise ConfigError(f"cooperbench: a pair needs two different features, got ({i}, {j})")
    base = base_repo(task, repos)
    with tempfile.TemporaryDirectory(prefix="cooperbench-eval-") as tmp:
        work = Path(tmp)
        m = merge_patches(base, clean_patch(p_i), clean_patch(p_j), work)
        if m.strategy == "error":
            return PairResult(False, (False, False), "error", m.status, m.applied, (i, j), "", [], m.detail)
        results = [run_feature_tests(task, base, f, m.merged, work, limits) for f in (i, j)]
    passed = (results[0].passed, results[1].passed)
    return PairResult(all(passed), passed, m.strategy, m.status, m.applied, (i, j), m.merged, results)


def evaluate_solo(
    task_dir: CooperTask | str | Path,
    features: tuple[int, int],
    patch: str | Path | None,
    *,
    repos: str | Path | None = None,
    limits: Limits | None = None,
) -> PairResult:
    """The solo baseline: one patch implementing both features, tested per feature, no merge."""
    task = _as_task(task_dir)
    i, j = sorted(features)
    base = base_repo(task, repos)
    text = clean_patch(_read(patch))
    with tempfile.TemporaryDirectory(prefix="cooperbench-solo-") as tmp:
        work = Path(tmp)
        # Apply like a branch would, so a patch that does not apply scores as an empty one.
        repo = base.clone(work / "solo")
        state = _apply_and_commit(repo, text, "solo", work)
        merged = git(repo, "diff", "--binary", base.sha, "HEAD").stdout
        results = [run_feature_tests(task, base, f, merged, work, limits) for f in (i, j)]
    passed = (results[0].passed, results[1].passed)
    return PairResult(all(passed), passed, "naive", "clean" if state != "failed" else "missing_input",
                      (state, state), (i, j), merged, results)  # fmt: skip


def run_patch_test(
    task_dir: CooperTask | str | Path,
    fid: int,
    patch: str | Path | None,
    *,
    repos: str | Path | None = None,
    limits: Limits | None = None,
) -> FeatureResult:
    """Feature ``fid``'s tests with one patch (the gold check; no cleaning, no merge); ``None``: on BASE."""
    task = _as_task(task_dir)
    base = base_repo(task, repos)
    with tempfile.TemporaryDirectory(prefix="cooperbench-one-") as tmp:
        return run_feature_tests(task, base, fid, None if patch is None else _read(patch), Path(tmp), limits)


def gold_pair_table(task: CooperTask, pairs: Sequence[tuple[int, int]] | None = None,
                    repos: str | Path | None = None) -> list[GoldPairRow]:  # fmt: skip
    """Evaluate the gold patches of every pair of ``task`` (the oracle of the procedure)."""
    rows: list[GoldPairRow] = []
    for i, j in pairs or task.pairs():
        r = evaluate_pair(task, (i, j), (task.features[i].patch_path, task.features[j].patch_path), repos=repos)
        rows.append({"pair": [i, j], "success": r.success, "passed": list(r.passed), "merge": r.merge,
                     "merge_status": r.merge_status})  # fmt: skip
    return rows
