"""Serving the dashboard: the Streamlit command line over a runs directory, the checks of its host and
port before Streamlit starts, and the supervision that forwards a stop to it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

from collapse_probe.errors import ConfigError


def runs_dir_problem(runs_dir: str | Path) -> str:
    """Why ``runs_dir`` cannot be shown, with what to do: one line for the terminal and the app."""
    p = Path(runs_dir)
    if p.exists():
        return f"RUNS_DIR {str(runs_dir)!r} is not a directory; give the directory that holds the run directories"
    return (
        f"RUNS_DIR {str(runs_dir)!r} does not exist yet: it is made by the first run (e.g. `collapse-probe audit "
        f"--out {p.as_posix()}/first-audit`), or give the directory your runs are in: collapse-probe dashboard PATH"
    )


def app_path() -> Path:
    """Location of the Streamlit app shipped inside the package (``collapse_probe/dashboard/app.py``).

    Raises:
        ConfigError: the app file is missing from the installation.
    """
    from collapse_probe.core._resources import dashboard_app

    path = dashboard_app()
    if not path.is_file():
        raise ConfigError(f"dashboard app not found at {path}; the collapse-probe installation is incomplete")
    return path


def streamlit_command(runs_dir: str | Path, port: int, host: str) -> list[str]:
    """The ``python -m streamlit run`` command line that serves the dashboard."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "minimal",
        "--",
        str(Path(runs_dir).resolve()),
    ]


def serve(runs_dir: str | Path, port: int = 8501, host: str = "127.0.0.1") -> int:
    """Serve the dashboard over ``runs_dir`` until stopped; returns Streamlit's exit status.

    Raises:
        ConfigError: ``runs_dir`` is not a directory, the port or host cannot be listened on, or the
            dashboard extra is not installed.
    """
    from collapse_probe.errors import require

    if not Path(runs_dir).is_dir():
        raise ConfigError(runs_dir_problem(runs_dir))
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    check_bind(host, port)
    require("streamlit", "dashboard", "collapse-probe dashboard")
    require("pandas", "dashboard", "collapse-probe dashboard")
    cmd = streamlit_command(runs_dir, port, host)
    print(f"collapse-probe dashboard: serving {Path(runs_dir).resolve()} at http://{host}:{port}", flush=True)
    return supervise(subprocess.Popen(cmd))


def check_bind(host: str, port: int) -> None:
    """Refuse a ``--host`` / ``--port`` the dashboard could not listen on, before Streamlit starts (it
    would end in its own traceback): a host that is not an address or a name this machine resolves,
    an address of another machine, a port in use or not allowed.

    Raises:
        ConfigError: naming the flag, the value and the reason.
    """
    import socket

    if not isinstance(host, str) or not host.strip() or any(c.isspace() for c in host):
        raise ConfigError(f"--host: expected an address (127.0.0.1, ::1, 0.0.0.0) or a host name, got {host!r}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"--host {host!r}: not an address or a host name this machine resolves ({reason})") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            raise ConfigError(
                f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); "
                "use an address of this machine and a free port"
            ) from None


def supervise(proc: subprocess.Popen, grace_s: float = 10.0) -> int:
    """Wait for the Streamlit child, forwarding SIGTERM / SIGINT / SIGHUP to it, so stopping
    ``collapse-probe dashboard`` (a service manager's SIGTERM, Ctrl-C) never leaves it serving.

    The child gets the signal and ``grace_s`` seconds to stop, then SIGKILL; the exit status is the
    child's, or 0 when it stopped on a forwarded signal.
    """
    import signal

    deadline: list[float] = []

    def forward(signum: int, _frame: object) -> None:
        if not deadline:
            deadline.append(time.monotonic() + grace_s)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM if signum != signal.SIGINT else signal.SIGINT)

    sigs = [signal.SIGTERM, signal.SIGINT] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    old = {s: signal.signal(s, forward) for s in sigs}
    try:
        while True:
            try:
                code = proc.wait(timeout=0.2 if deadline else None)
                break
            except subprocess.TimeoutExpired:
                if deadline and time.monotonic() > deadline[0]:
                    proc.kill()
            except KeyboardInterrupt:  # a SIGINT that arrived before the handler was installed
                forward(signal.SIGINT, None)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 0 if deadline else code
