"""An empty reply that comes back on every rerun is reported as such and not retried for ever: a seeded
model answers the same request the same way, so after the run and one rerun both gave nothing, the
next resume leaves those conversations as unscored infrastructure failures and says why."""

from __future__ import annotations

import json

from collapse_probe.cli import main


def _records(out):
    return [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]


def test_an_empty_reply_on_the_run_and_its_rerun_is_not_run_a_third_time(write_scripted, tmp_path, capsys):
    silent = write_scripted([("", 1.0)], name="silent.json")
    out = tmp_path / "run"
    args = ["play", "--policy", "scripted:p4g_persuader_rapport", "--sim", silent, "--tasks", "2", "--rollouts", "1",
            "--max-turns", "1", "--no-progress", "--no-cache", "--out", str(out)]  # fmt: skip
    main(args)
    first = _records(out)
    assert len(first) == 2 and all(r["status"] == "infra_error" and "empty reply" in r["infra_error"] for r in first)
    capsys.readouterr()
    main(args)  # the rerun asks again: a flaky backend would answer now
    assert len(_records(out)) == 4
    assert "not run again" not in capsys.readouterr().err
    main(args)  # empty on the run and on its rerun, with the same seeds: not asked a third time
    err = capsys.readouterr().err
    assert len(_records(out)) == 4
    assert "2 conversations gave an empty reply on 2 runs in a row" in err and "--seed" in err
    results = json.loads((out / "results.json").read_text())
    assert all(r["reward"] is None for r in _records(out))  # never scored
    assert "infra" in json.dumps(results)


def test_an_empty_reply_failure_is_told_apart_from_other_failures():
    from collapse_probe.rollout._engine import is_empty_reply_failure

    assert is_empty_reply_failure("scripted:x.json: empty reply (simulator turn), also when asked again")
    assert not is_empty_reply_failure("ConnectionError: cannot connect")
    assert not is_empty_reply_failure(None)
