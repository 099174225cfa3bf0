"""CPU time and resident memory of a process tree, read from /proc (proc(5)).

A process's /proc/PID/stat counts the CPU time of all its threads, including threads that
have already exited, so one read per process covers a multi-threaded proxy. Processes are
summed over the tree under the PID we started (Squid may fork helpers).
"""

import os
import resource

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(k) for k in f.read().split())
    except OSError:
        pass
    return kids


def tree(pid):
    """PID and all its live descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def _cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid):
    """user + system CPU seconds consumed so far by PID's process tree."""
    return sum(_cpu_ticks(p) for p in tree(pid)) / _CLOCK_TICKS


def _rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid):
    """Resident set size of PID's process tree, in bytes (shared pages counted per process)."""
    return sum(_rss_bytes(p) for p in tree(pid))


def thread_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def machine_busy_seconds():
    """CPU seconds all processes on the machine have spent in user and kernel mode (interrupt
    time excluded: it is not charged to any process)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    user, nice, system = (int(x) for x in fields[1:4])
    return (user + nice + system) / _CLOCK_TICKS


def children_cpu_seconds():
    """User + system CPU seconds of this process's waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
