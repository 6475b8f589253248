"""CPU time of the processes a benchmark runs (Linux: ``/proc/<pid>/stat``), so that a
rate comes with what each process spent on it: user + system seconds, read before and
after the timed part."""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used so far (0.0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass
class CpuMeter:
    """Named processes' CPU over the timed part: :meth:`start`, then :meth:`stop`."""

    processes: dict[str, int]

    def start(self) -> None:
        self._before = {name: cpu_seconds(pid) for name, pid in self.processes.items()}

    def stop(self) -> dict[str, float]:
        """CPU seconds each process used since :meth:`start`."""
        return {name: cpu_seconds(pid) - self._before[name] for name, pid in self.processes.items()}


def per_message(spent: dict[str, float], messages: int) -> str:
    """``main 320 + rendering 350 + sink 55 = 725 µs of CPU a message``."""
    parts = " + ".join(f"{name} {seconds / messages * 1e6:.0f}" for name, seconds in spent.items())
    total = sum(spent.values()) / messages * 1e6
    return f"{parts} = {total:.0f} µs of CPU a message"


def spawned_children(pid: int) -> list[int]:
    """The processes ``pid`` started with multiprocessing's spawn (rendering processes,
    a sink), not its resource tracker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if parent == pid and b"spawn_main" in command:
            found.append(int(entry))
    return found
