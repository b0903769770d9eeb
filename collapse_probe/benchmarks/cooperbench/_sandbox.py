"""Running agent commands and test suites in a constrained subprocess.

Every command runs with ``bash -c`` in its own working directory and process group, with resource
limits set in the child before ``exec`` (CPU seconds, address space, file size, no core files), a
wall-clock timeout that kills the whole group, and an environment built from scratch (``PATH``,
``HOME`` inside the sandbox folder, locale, the Python to use) so no secret of the parent
process reaches it. Network: when ``unshare --net`` works here (root, or unprivileged user
namespaces enabled) the command runs in a fresh network namespace with no interfaces but loopback;
otherwise it runs with the host network, and :func:`network_isolation` says so (it is recorded in
every episode's score info).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Limits:
    """Per-command limits."""

    wall_s: float = 120.0
    cpu_s: int = 120
    memory_mb: int = 4096
    """Address-space limit (``RLIMIT_AS``)."""
    file_mb: int = 256
    """Largest file a command may write (``RLIMIT_FSIZE``)."""


@dataclass
class RunResult:
    returncode: int
    output: str
    timed_out: bool = False
    seconds: float = 0.0


_SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A fresh environment: nothing inherited but the interpreter's location on ``PATH``."""
    py_dir = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{py_dir}:{_SAFE_PATH}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "PYTHON": sys.executable,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "agent",
        "GIT_AUTHOR_EMAIL": "agent@localhost",
        "GIT_COMMITTER_NAME": "agent",
        "GIT_COMMITTER_EMAIL": "agent@localhost",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "TMPDIR": str(home),
    }
    if extra:
        env.update(extra)
    return env


@functools.lru_cache(maxsize=1)
def network_isolation() -> str:
    """``"unshare"`` when commands get an empty network namespace here, else ``"none"``."""
    exe = shutil.which("unshare")
    if exe is None:
        return "none"
    for args in (["--net"], ["--user", "--map-root-user", "--net"]):
        try:
            r = subprocess.run([exe, *args, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            continue
        if r.returncode == 0:
            return "unshare " + " ".join(args)
    return "none"


def _preexec(limits: Limits) -> None:
    import resource

    os.setsid()
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
    mem = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    fsize = limits.file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_command(
    command: str | list[str],
    cwd: Path,
    *,
    limits: Limits | None = None,
    home: Path | None = None,
    env_extra: Mapping[str, str] | None = None,
    isolate_network: bool = True,
) -> RunResult:
    """Run ``command`` (a ``bash -c`` string, or an argv list) in the sandbox; stdout and stderr merged."""
    limits = limits or Limits()
    home = home or cwd
    argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
    iso = network_isolation() if isolate_network else "none"
    if iso != "none":
        argv = ["unshare", *iso.split()[1:], *argv]
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=clean_env(home, env_extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=functools.partial(_preexec, limits),  # noqa: PLW1509 (no threads touch the child)
        )
    except OSError as exc:
        return RunResult(127, f"could not start the command: {exc}", seconds=0.0)
    try:
        out, _ = proc.communicate(timeout=limits.wall_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode("utf-8", errors="replace")
    rc = proc.returncode
    if timed_out:
        text += f"\n[command timed out after {limits.wall_s:g} s and was killed]"
        rc = 124 if rc in (None, 0) or rc < 0 else rc
    elif rc is not None and rc < 0:
        text += f"\n[command killed by signal {-rc}]"
        rc = 128 - rc
    return RunResult(int(rc if rc is not None else 1), text, timed_out, round(time.perf_counter() - start, 3))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
