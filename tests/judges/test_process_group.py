"""CPU accounting and stopping of a server's process group (what the benchmark reads as server work)."""

from __future__ import annotations

import subprocess
import sys

from judges.local_server import group_cpu_seconds, stop_process_group

# A parent that spins ~0.4 s of CPU in a child of its own group and in itself, reports the
# CPU time each measured with its own clock, then waits to be stopped.
_SCRIPT = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
    "print(time.process_time(), flush=True)\ntime.sleep(600)"], stdout=subprocess.PIPE, text=True)
end = time.process_time() + 0.4
while time.process_time() < end:
    pass
print(float(child.stdout.readline()) + time.process_time(), flush=True)
time.sleep(600)
"""


def test_group_cpu_seconds_adds_up_the_router_and_its_children_then_stop_ends_them() -> None:
    process = subprocess.Popen([sys.executable, "-c", _SCRIPT], stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        reported = float(process.stdout.readline())  # both processes' own CPU clocks, summed
        measured = sum(group_cpu_seconds(process.pid).values())
        # /proc counts whole clock ticks (10 ms) per process; interpreter start-up before the
        # processes read their clocks is counted by /proc too.
        assert reported >= 0.8
        assert reported - 0.05 <= measured <= reported + 0.5, (reported, measured)
    finally:
        stop_process_group(process.pid)
        process.wait()
    assert group_cpu_seconds(process.pid) == {}
