"""One output rule for every file written outside a run directory (gate reports, ``export --out``,
``card --out``, ``lab --out``): a new path, or a report this project wrote there before and recognises
by its content; never a user's file, a hard link of one, a symbolic link, or another user's file.
A refusal is exit 2, one line naming the flag and the path, and the file is left byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collapse_probe.cli import main
from tests.conftest import GATE_DEMO_POLICY, run_cli

OTHER_UID = 54321
"""A user id that is not the one running the tests (a file it owns is someone else's)."""


@pytest.fixture(scope="module")
def earlier_reports(gate_demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """What a gate wrote on an earlier run, per report flag (a file the gate would rewrite if it were
    a plain file of this user: the refusals below are then for the link or the owner alone)."""
    d = tmp_path_factory.mktemp("reports")
    argv = ["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5"]
    assert main([*argv, "--json", str(d / "r.json"), "--junit", str(d / "r.xml"), "--markdown", str(d / "r.md")]) == 0
    return {f: (d / n).read_bytes() for f, n in (("--json", "r.json"), ("--junit", "r.xml"), ("--markdown", "r.md"))}


# command -> (the file name it is pointed at, argv builder, report flag whose earlier report it rewrites)
COMMANDS = {
    "gate --json": ("notes.json", lambda run, p: ["gate", run, "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5", "--json", p], "--json"),
    "gate --junit": ("pom.xml", lambda run, p: ["gate", run, "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5", "--junit", p], "--junit"),
    "gate --markdown": ("README.md", lambda run, p: ["gate", run, "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5", "--markdown", p], "--markdown"),
    "gate --config json": ("notes.txt", None, "--json"),
    "export --out": ("log.json", lambda run, p: ["export", run, "--to", "inspect", "--out", p], None),
    "card --out": ("README.md", lambda run, p: ["card", run, "--out", p], None),
    "lab --out": ("notes.txt", lambda run, p: ["lab", "--steps", "2", "--no-progress", "--out", p], None),
}  # fmt: skip
VICTIMS = ("user file", "hard link", "symlink", "foreign owner")


def _argv(command: str, run: Path, path: Path, tmp: Path) -> list[str]:
    name, build, _ = COMMANDS[command]
    if build is None:  # the report path comes from a gate --config file
        cfg = tmp / "gate.yaml"
        cfg.write_text(f"json: {path}\nmin-transfer: 0.5\n")
        return ["gate", str(run), "--policy", GATE_DEMO_POLICY, "--config", str(cfg)]
    return build(str(run), str(path))


@pytest.mark.parametrize("victim", VICTIMS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_file_the_project_did_not_write_is_never_modified(
    command: str,
    victim: str,
    gate_demo_run: Path,
    earlier_reports: dict[str, bytes],
    tmp_path: Path,
    monkeypatch,
    capsys,
) -> None:
    name, _, flag = COMMANDS[command]
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    path = home / name
    # a user's own text; for a link or a foreign owner, the very bytes of a gate report (so the link or
    # the owner alone must refuse it, not the content)
    content = b"# my project\nhand-written notes\n" if victim == "user file" or flag is None else earlier_reports[flag]
    target = path
    if victim == "hard link":
        original = home / "original"
        original.write_bytes(content)
        os.link(original, path)
    elif victim == "symlink":
        target = home / "elsewhere" / name
        target.parent.mkdir()
        target.write_bytes(content)
        path.symlink_to(target)
    else:
        path.write_bytes(content)
    if victim == "foreign owner":
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(path, OTHER_UID, OTHER_UID)
    before = (target.read_bytes(), os.stat(target).st_mtime_ns, os.lstat(path).st_mtime_ns)
    listing = sorted(os.listdir(home))

    rc, out, err = run_cli(_argv(command, gate_demo_run, path, tmp_path), capsys)

    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2, err + out
    assert len(lines) == 1 and "error:" in lines[0] and str(path) in lines[0], err
    assert (flag or "--out") in lines[0], err
    assert "Traceback" not in err + out and "internal error" not in err
    assert (target.read_bytes(), os.stat(target).st_mtime_ns, os.lstat(path).st_mtime_ns) == before
    assert sorted(os.listdir(home)) == listing  # nothing written beside it (card.json, a temp file)
    if victim == "symlink":
        assert os.readlink(path) == str(target)


@pytest.mark.parametrize("victim", ["etc/passwd", "home/.bashrc"])
def test_system_and_home_files_named_in_a_gate_config_are_refused(victim, gate_demo_run, tmp_path, capsys):
    """A system file of root's (run as root it is "this user's": its content refuses it) and a user's shell
    profile, named in a gate --config file. Copies stand in for the real files, so that a regression of
    the rule can never damage the machine that runs the test."""
    path = tmp_path / victim
    path.parent.mkdir()
    real = Path("/etc/passwd")
    path.write_bytes(
        real.read_bytes() if victim == "etc/passwd" and real.is_file() else b"root:x:0:0:root:/root:/bin/bash\n"
    )
    if victim.endswith(".bashrc"):
        path.write_text("export PATH=$HOME/bin:$PATH\n")
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    cfg = tmp_path / "gate.yaml"
    cfg.write_text(f"json: {path}\nmarkdown: {path}.md\nmin-transfer: 0.5\n")
    rc, _, err = run_cli(["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--config", str(cfg)], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and f"--json {path}" in err, err
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
    assert not Path(f"{path}.md").exists()  # refused before any report is written


def test_a_second_gate_run_rewrites_its_own_reports_atomically(gate_demo_run, tmp_path, capsys):
    paths = {"--json": tmp_path / "gate.json", "--junit": tmp_path / "gate.xml", "--markdown": tmp_path / "gate.md"}
    argv = ["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5"]
    for flag, p in paths.items():
        argv += [flag, str(p)]
    assert run_cli(argv, capsys)[0] == 0
    first = {f: (p.read_bytes(), os.stat(p).st_ino) for f, p in paths.items()}
    assert first["--markdown"][0].startswith(b"<!-- collapse-probe gate report -->\n### collapse-probe gate: ")
    # the CI reruns with another threshold: every report is replaced by a new file renamed into place
    rc, out, err = run_cli([*argv[:4], "--min-transfer", "5", *argv[6:]], capsys)
    assert rc == 1, err
    for flag, p in paths.items():
        data, ino = p.read_bytes(), os.stat(p).st_ino
        assert data != first[flag][0] and ino != first[flag][1] and os.stat(p).st_nlink == 1
    assert json.loads(paths["--json"].read_text())["outcome"] == "fail"
    assert sorted(os.listdir(tmp_path)) == ["gate.json", "gate.md", "gate.xml"]  # no temporary file left


def test_a_markdown_report_from_before_the_marker_is_still_rewritten(gate_demo_run, tmp_path, capsys):
    md = tmp_path / "gate.md"
    md.write_text("### collapse-probe gate: ✅ passed: transfer 1.4 (90% CI [1.2, 1.7]) clears 0.8 (rule: interval)\n")
    rc, _, err = run_cli(
        ["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5", "--markdown", str(md)],
        capsys,
    )
    assert rc == 0, err
    assert md.read_text().startswith("<!-- collapse-probe gate report -->\n")


def test_a_crash_while_rewriting_leaves_the_earlier_report_whole(gate_demo_run, tmp_path, monkeypatch, capsys):
    report = tmp_path / "gate.json"
    argv = ["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5", "--json", str(report)]
    assert run_cli(argv, capsys)[0] == 0
    before = report.read_bytes()

    def crash(src, dst):  # noqa: ANN001 - the rename that would publish the new report
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    rc, _, err = run_cli([*argv[:4], "--min-transfer", "5", *argv[6:]], capsys)
    assert rc == 2 and "--json" in err and "disk is full" in err, err
    assert report.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["gate.json"]


def test_the_same_file_for_two_reports_is_refused(gate_demo_run, tmp_path, capsys):
    p = tmp_path / "both.txt"
    rc, _, err = run_cli(
        [
            "gate",
            str(gate_demo_run),
            "--policy",
            GATE_DEMO_POLICY,
            "--min-transfer",
            "0.5",
            "--json",
            str(p),
            "--markdown",
            str(p),
        ],
        capsys,
    )
    assert rc == 2 and "--json" in err and "--markdown" in err and not p.exists(), err
