"""What every benchmark CSV row records about where it ran: CPU model, CPU count, torch version, threads, date."""

from __future__ import annotations

import datetime
import os
import platform


def machine_info() -> dict:
    import torch

    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "machine": cpu,
        "cpus": os.cpu_count() or 1,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "date": datetime.date.today().isoformat(),
    }
