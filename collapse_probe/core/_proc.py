"""Process checks shared by the run-directory lock, the model conversion lock and the dashboard."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (one we may not signal counts as alive).

    Signal 0 checks existence without delivering anything. A recycled pid reads as alive; callers
    that must tell a new process from the lock's owner compare start times as well (the run lock does).
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False  # 0 and negative ids name process groups, not a process: no lock holder has one
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process; an id beyond the C range is none
        return False
    except PermissionError:
        return True
    return True
