"""CooperBench: discovery, patch cleaning, the merge/evaluation procedure and the two-agent arena."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collapse_probe.benchmarks.cooperbench import (
    Limits,
    clean_patch,
    demo_dir,
    discover_tasks,
    enumerate_pairs,
    evaluate_pair,
    extract_messages,
    find_base_tree,
    load_task,
    resolve_data_dir,
    run_command,
    sanitize,
)
from collapse_probe.benchmarks.cooperbench._evaluate import base_repo, merge_patches
from collapse_probe.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO.parent / "shared" / "datasets" / "cooperbench" / "example"
DEMO = demo_dir()


def _task(name: str):
    return next(t for t in discover_tasks(DEMO) if t.name == name)


def _gold(task, fid: int) -> str:
    return task.features[fid].gold_patch


# ---- discovery -----------------------------------------------------------------------------


def test_demo_layout_and_pair_enumeration():
    tasks = discover_tasks(DEMO)
    assert len(tasks) >= 4
    assert [t.repo for t in tasks] == sorted(t.repo for t in tasks)
    pairs = enumerate_pairs(DEMO)
    assert len(pairs) >= 12
    for p in pairs:
        assert p.i < p.j  # agent1 gets the smaller feature id
        assert p.task.docker_free
    assert pairs[0].pair_id == f"{tasks[0].name}/f1_f2"
    assert len(pairs) == sum(len(t.features) * (len(t.features) - 1) // 2 for t in tasks)


def test_example_layout():
    if not EXAMPLE.is_dir():
        pytest.skip("the CooperBench example is not present at ../shared/datasets/cooperbench/example")
    root = resolve_data_dir(EXAMPLE)
    (task,) = discover_tasks(root)
    assert task.name == "samuelcolvin_dirty_equals_task/task43"
    assert sorted(task.features) == list(range(1, 10))
    assert len(enumerate_pairs(root)) == 36
    assert task.upstream["base_commit"] == "593bcccf738ab8b724d7cb860881d74344171f5f"
    assert not task.docker_free


def test_subset_file_restricts_pairs(tmp_path):
    root = tmp_path / "ds"
    import shutil

    shutil.copytree(DEMO / "demo_minstats_task", root / "demo_minstats_task")
    (root / "subsets").mkdir()
    spec = {"name": "lite", "tasks": [{"repo": "demo_minstats", "task_id": 4, "pairs": [[3, 1]]}]}
    (root / "subsets" / "lite.json").write_text(json.dumps(spec))
    assert [p.pair_id for p in enumerate_pairs(root, "lite")] == ["demo_minstats_task/task4/f1_f3"]
    with pytest.raises(ConfigError, match="no subset 'flash'"):
        enumerate_pairs(root, "flash")


def test_bad_data_dir_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("COLLAPSE_PROBE_COOPERBENCH_DATA", raising=False)
    with pytest.raises(ConfigError, match="--cooperbench-data"):
        resolve_data_dir(tmp_path)
    with pytest.raises(ConfigError, match="COLLAPSE_PROBE_COOPERBENCH_DATA"):
        resolve_data_dir(None)
    monkeypatch.setenv("COLLAPSE_PROBE_COOPERBENCH_DATA", str(DEMO))
    assert resolve_data_dir(None) == DEMO


# ---- patch cleaning ------------------------------------------------------------------------


def _section(path: str, body: str = "+x\n") -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -0,0 +1 @@\n{body}"


@pytest.mark.parametrize(
    "path,dropped",
    [
        ("pkg/tests/test_a.py", True),
        ("tests/test_a.py", True),
        ("src/test/x.py", True),
        ("pkg/a_test.py", True),
        ("pkg/tests.py", True),
        ("pkg/core.py", False),
        ("chi/mux_test.go", False),  # the reference keeps Go and TS test files
        ("src/__tests__/a.ts", False),
        ("pkg/Tests/x.py", False),  # case-sensitive
    ],
)
def test_clean_patch_drops_test_sections(path, dropped):
    patch = _section("pkg/core2.py") + _section(path)
    cleaned = clean_patch(patch)
    assert (f"b/{path}" not in cleaned) == dropped
    assert "pkg/core2.py" in cleaned


def test_sanitize():
    assert sanitize("a'\\''b") == "a'b\n"
    assert sanitize("") == "" and sanitize("  \n") == ""


# ---- evaluation on the demo tasks ----------------------------------------------------------


def test_gold_pair_that_conflicts_succeeds_by_union_merge():
    task = _task("demo_minstats_task/task4")
    r = evaluate_pair(task.path, (1, 2), (_gold(task, 1), _gold(task, 2)))
    assert r.merge == "union" and r.merge_status == "conflicts"
    assert r.passed == (True, True) and r.success


def test_gold_pair_with_clean_merge_succeeds_and_order_is_normalised():
    task = _task("demo_textkit_task/task1")
    paths = (str(task.features[3].patch_path), task.features[2].patch_path)  # patch files, as str and Path
    r = evaluate_pair(task, (3, 2), paths)  # features given out of order
    assert r.features == (2, 3)
    assert r.merge == "naive" and r.success and r.passed == (True, True)


def test_gold_pair_that_union_merges_badly_fails():
    task = _task("demo_textkit_task/task1")
    r = evaluate_pair(task, (1, 2), (_gold(task, 1), _gold(task, 2)))
    assert r.merge == "union" and not r.success


def test_union_failure_is_an_error_and_the_pair_fails():
    """A modify/delete conflict cannot be union-merged: the pair fails without running tests."""
    task = _task("demo_confparse_task/task3")
    r = evaluate_pair(task, (1, 4), (_gold(task, 1), _gold(task, 4)))
    assert (r.merge, r.merge_status) == ("error", "conflicts")
    assert r.passed == (False, False) and not r.success and r.tests == []
    assert "modify/delete" in r.detail


def test_gold_with_empty_partner_fails():
    task = _task("demo_minstats_task/task4")
    r = evaluate_pair(task, (1, 3), (_gold(task, 1), ""))
    assert r.merge == "naive"
    assert r.passed == (True, False) and not r.success
    assert r.applied == ("applied", "skipped")
    assert r.reward() == 0.0 and r.reward(partial=True, own=0) == 0.5 and r.reward(partial=True, own=1) == 0.0


def test_broken_patch_fails_and_leaves_its_branch_empty():
    import re

    task = _task("demo_minstats_task/task4")
    gold = _gold(task, 3)
    # Context that is not in BASE and no blob ids: neither a plain nor a 3-way apply can work.
    unappliable = re.sub(r"^index .*\n", "", gold, flags=re.M).replace("    mid = len(s) // 2", "    mid = len(s) // 3")
    r = evaluate_pair(task, (1, 3), (_gold(task, 1), unappliable))
    assert r.applied == ("applied", "failed") and r.merge_status == "missing_input"
    assert r.passed == (True, False) and not r.success
    # Applies, but does not run.
    syntax_error = gold.replace("def percentile(xs, q):", "def percentile(xs, q)")
    r = evaluate_pair(task, (1, 3), (_gold(task, 1), syntax_error))
    assert r.applied == ("applied", "applied") and not r.success and r.passed == (False, False)


def test_test_file_edits_earn_nothing():
    """A patch that makes the hidden tests trivially pass by editing test files is cut before merging."""
    task = _task("demo_minstats_task/task4")
    cheat = (
        "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/conftest.py\n@@ -0,0 +1,2 @@\n+import minstats\n+minstats.percentile = lambda xs, q: 0\n"
    )
    r = evaluate_pair(task, (1, 3), (_gold(task, 1), cheat))
    assert r.applied == ("applied", "skipped")  # nothing left of the cheat after cleaning
    assert "conftest" not in r.merged_patch
    assert r.passed == (True, False) and not r.success


def test_merge_only_path_is_fast_and_deterministic(tmp_path):
    task = _task("demo_inventory_task/task2")
    base = base_repo(task)
    assert base_repo(task).sha == base.sha
    import collapse_probe

    collapse_probe.reset_caches()  # built again in a directory of its own, with the same commit
    again = base_repo(task)
    assert again.sha == base.sha and again.path != base.path and base.path.is_dir()
    m = merge_patches(base, clean_patch(_gold(task, 1)), clean_patch(_gold(task, 2)), tmp_path)
    assert m.strategy == "union" and "total_value" in m.merged and "low_stock" in m.merged


def test_missing_base_tree_names_where_to_put_it(tmp_path, monkeypatch):
    if not EXAMPLE.is_dir():
        pytest.skip("the CooperBench example is not present")
    monkeypatch.setenv("COLLAPSE_PROBE_COOPERBENCH_REPOS", str(tmp_path))
    task = load_task(EXAMPLE / "samuelcolvin_dirty_equals_task" / "task43")
    with pytest.raises(ConfigError, match="593bcccf738ab8b724d7cb860881d74344171f5f"):
        find_base_tree(task)


# ---- sandbox -------------------------------------------------------------------------------


def test_sandbox_env_has_no_secrets_and_limits_hold(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    r = run_command("env", tmp_path)
    assert r.returncode == 0 and "sk-should-not-leak" not in r.output and f"HOME={tmp_path}" in r.output
    r = run_command("sleep 20", tmp_path, limits=Limits(wall_s=1))
    assert r.timed_out and r.returncode != 0
    r = run_command(f"{os.sys.executable} -c 'bytearray(3 * 1024**3)'", tmp_path, limits=Limits(memory_mb=512))
    assert r.returncode != 0 and "MemoryError" in r.output


def test_extract_messages_heredoc_and_quoted():
    cmd = "ls\nsend_message agent2 <<'MSG'\nI edit core.py lines 1-20\nMSG\ngit status"
    rest, sent = extract_messages(cmd)
    assert sent == [("agent2", "I edit core.py lines 1-20")]
    assert "ls" in rest and "git status" in rest and "send_message" not in rest
    rest, sent = extract_messages('send_message agent1 "hi there" && echo ok')
    assert sent == [("agent1", "hi there")] and rest.strip() == "echo ok"


# ---- the official example (needs ../shared and a local BASE tree of dirty-equals) ---------------


def _example_task():
    from collapse_probe.benchmarks.cooperbench import verify_base

    if not EXAMPLE.is_dir():
        pytest.skip("the CooperBench example is not present at ../shared/datasets/cooperbench/example")
    task = load_task(EXAMPLE / "samuelcolvin_dirty_equals_task" / "task43")
    try:
        tree = find_base_tree(task)
    except ConfigError as exc:
        pytest.skip(f"no local BASE tree for the example: {exc}")
    assert verify_base(task, tree) == [], "the BASE tree is not the one the example's patches were made on"
    return task


def test_example_gold_pairs_conflict_and_union_merge(tmp_path):
    task = _example_task()
    base = base_repo(task)
    for i, j in [(1, 2), (3, 9), (5, 6)]:  # all 36 in the slow replay below
        fi, fj = task.features[i], task.features[j]
        m = merge_patches(base, clean_patch(fi.gold_patch), clean_patch(fj.gold_patch), tmp_path / f"{i}-{j}")
        assert (m.strategy, m.status, m.applied) == ("union", "conflicts", ("applied", "applied")), (i, j)


@pytest.mark.slow
def test_example_gold_replay_passes_21_of_36():
    from collapse_probe.benchmarks.cooperbench import gold_pair_table

    rows = gold_pair_table(_example_task())
    assert len(rows) == 36
    assert all(r["merge"] == "union" and r["merge_status"] == "conflicts" for r in rows)
    assert sum(r["success"] for r in rows) == 21
