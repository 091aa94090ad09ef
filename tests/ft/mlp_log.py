# SPDX-License-Identifier: BSD-3-Clause
"""Reading the output of etc/examples/mlp-train.sbatch (every run of a job
appends to one file), for tests/ft/compare_traces.py, scripts/bench-requeue.sh
and scripts/demo/report.py.

The lines it knows (doc/example-mlp.md, doc/fault-tolerance.md):
    mlp-train.sbatch: run K of job J at TIME on NODES: ...   the batch script, once per run
    llmp: TIME rank R: EVENT                                  the job layer, per rank and event
    step N loss X                                             rank 0, after every step
    final checksum 0x... / final params sum X / final rng 0x...
TIME is local wall-clock time with milliseconds, 2026-11-21T13:50:36.154.
"""
import re
from datetime import datetime

STEP = re.compile(r"^step (\d+) loss (\S+)$")
TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})")
RUN = re.compile(r"^mlp-train\.sbatch: run (\d+) of job (\S+) at (\S+) on (\S+):")
EVENT = re.compile(r"^llmp: (\S+) rank (\d+): (.*)$")


def when(text):
    """Seconds since the epoch of the first TIME in text (local time), or None."""
    m = TIME.search(text)
    if not m:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def read_trace(path):
    """The steps rank 0 printed, {step: [loss as text, ...]} (a step redone
    after a resume appears twice), and the final lines, {"checksum": "0x...", ...}."""
    steps, final = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = STEP.match(line)
            if m:
                steps.setdefault(int(m.group(1)), []).append(m.group(2))
            elif line.startswith("final "):
                key, _, value = line[len("final "):].rpartition(" ")
                final[key] = value
    return steps, final
