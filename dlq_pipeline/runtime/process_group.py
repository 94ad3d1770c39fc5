"""Spark's Python workers die with the run that started them.

PySpark's worker daemon puts itself, and so every worker it forks, into a process group of
its own. Killing a run's process group (``kill -9 -PGID``, a container runtime, a job
scheduler, Ctrl-C) therefore killed the driver and the JVM, and with them the warehouse lock,
but left the workers putting messages until the daemon noticed and hung them up: a rerun
could take the lock while a dead run was still putting. So a replay task, before it opens a
connection, moves its worker into the driver's process group (`join_run_group`): one signal
to that group now reaches every process that puts, at once.

Only a worker on the driver's machine, in the driver's session, can join (POSIX allows
``setpgid`` within a session only); a worker on a cluster executor is left alone (its
executor's own lifecycle stops it). A worker that joined no longer gets the daemon's hang-up
at shutdown; it ends when the JVM closes its socket, as every idle worker does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RunGroup:
    """The driver's session and process group (picklable: shipped to every task)."""

    session: int
    group: int

    @classmethod
    def of_this_process(cls) -> RunGroup | None:
        """The calling process's session and group; None where there are none (not POSIX)."""
        if not hasattr(os, "getsid"):
            return None
        return cls(os.getsid(0), os.getpgid(0))


def join_run_group(run: RunGroup | None) -> bool:
    """Move this process into ``run``'s process group when it is in the run's session and
    not in that group yet; True when it is in the group afterwards. Never raises: a process
    that cannot join (another session, another machine, the group gone) carries on as it was."""
    if run is None or not hasattr(os, "setpgid"):
        return False
    try:
        if os.getsid(0) != run.session:
            return False
        if os.getpgid(0) != run.group:
            os.setpgid(0, run.group)
        return os.getpgid(0) == run.group
    except OSError:
        return False
