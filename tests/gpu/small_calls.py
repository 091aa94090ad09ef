# SPDX-License-Identifier: BSD-3-Clause
"""Small device collectives: llmp under each LLMP_DEVICE_TIMING mode against nccl-tests (scripts/gpu-run.sh).

python3 tests/gpu/small_calls.py LLMP NCCL_TESTS_DIR [REPS]

For allreduce, allgather and reduce-scatter from 8 B to 64 KiB, one rank on
one GPU: `llmp bench --memory device` with LLMP_DEVICE_TIMING=on, sampled
and off, and nccl-tests' *_perf, 2000 timed calls after 200 warm-ups each,
the four run one after the other REPS times (default 3) so that each sees
the machine alike. Prints every run's time per call, then per collective
and size the median over the repetitions and each mode's ratio to
nccl-tests. Both time the same way: the calls enqueued back to back, then
the stream synchronised, the time divided by the calls.
"""
import os
import statistics
import subprocess
import sys

COLLS = (("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reduce_scatter", "reduce_scatter"))
MODES = ("on", "sampled", "off")
ARGS = ["-b", "8", "-e", "64K", "-f", "4", "-n", "2000", "-w", "200"]


def times(output, column):
    """{bytes: us per call} from the rows of a bench's output (the first column a size)."""
    rows = {}
    for line in output.splitlines():
        f = line.split()
        if len(f) > column and f[0].isdigit():
            rows[int(f[0])] = float(f[column])
    return rows


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        sys.exit("small-calls: %s exited %d: %s" % (" ".join(cmd), r.returncode, (r.stdout + r.stderr)[-1500:]))
    return r.stdout


def main():
    llmp, nt = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    got = {}   # (coll, who) -> {bytes: [us, ...]}
    for rep in range(reps):
        for coll, nt_name in COLLS:
            for mode in MODES:
                env = dict(os.environ, LLMP_DEVICE_TIMING=mode)
                out = run([llmp, "bench", "--memory", "device", "-c", coll] + ARGS, env)
                for size, us in times(out, 4).items():   # llmp: size count dtype op time_us ...
                    got.setdefault((coll, mode), {}).setdefault(size, []).append(us)
            out = run([os.path.join(nt, nt_name + "_perf"), "-g", "1"] + ARGS)
            for size, us in times(out, 5).items():       # nccl-tests: size count type redop root time ...
                got.setdefault((coll, "nccl-tests"), {}).setdefault(size, []).append(us)
        print("small-calls: repetition %d done" % (rep + 1), flush=True)
    print("# us per call, every repetition")
    for (coll, who), rows in sorted(got.items()):
        for size, us in sorted(rows.items()):
            print("%-15s %-10s %6d %s" % (coll, who, size, " ".join("%.2f" % u for u in us)))
    print("# median us per call (ratio to nccl-tests)")
    print("%-15s %6s %9s %16s %16s %16s" % ("collective", "bytes", "nccl-tests", "on", "sampled", "off"))
    for coll, _ in COLLS:
        base = got.get((coll, "nccl-tests"), {})
        for size in sorted(base):
            ref = statistics.median(base[size])
            cells = []
            for mode in MODES:
                us = got.get((coll, mode), {}).get(size)
                cells.append("%7.2f (%5.2fx)" % (statistics.median(us), statistics.median(us) / ref) if us else "-")
            print("%-15s %6d %9.2f %s" % (coll, size, ref, " ".join("%16s" % c for c in cells)))


if __name__ == "__main__":
    main()
