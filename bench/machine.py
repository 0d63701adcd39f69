"""What machine a benchmark ran on, for the headings in docs/PERFORMANCE.md."""
import os
import platform
import time


def heading(title):
    """`## TITLE — date — arch, N cores, CPU model`."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"## {title} — {time.strftime('%Y-%m-%d')} — {platform.machine()}, {os.cpu_count()} cores, {cpu}"
