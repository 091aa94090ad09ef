# SPDX-License-Identifier: BSD-3-Clause
"""A job's peak GPU memory in its metrics file, on a real GPU (scripts/gpu-run.sh).

python3 tests/gpu/job_peak.py DIR

Runs a short llmp.Job twice as a PMIx singleton, each holding 3 GiB of CUDA
memory and 1 GiB more for one step:

  program  llmp.Job gives PyTorch's torch.cuda.max_memory_reserved() at every
           step_end; the metrics file's peak_gib must be that figure, peak_by
           "program";
  nvml     the program gives nothing (llmp.job's hook emptied), so libllmp
           samples NVML's memory of this process at each record; peak_gib must
           be what nvidia-smi says this process holds (read by the program
           itself after its last step), peak_by "nvml".

The expected figures come from torch and nvidia-smi, not from llmp. Prints
one line per run and "job-peak: passed", or names what differs and exits 1.
"""
import json
import os
import subprocess
import sys

GIB = 1 << 30


def smi_used_mib(pid):
    """What nvidia-smi says process pid holds on the GPUs, in MiB (None if not listed)."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=30).stdout
    used = [int(m) for p, m in (line.split(",") for line in out.splitlines() if "," in line) if int(p) == pid]
    return sum(used) if used else None


def child(by):
    import torch
    import llmp
    import llmp.job
    if by == "nvml":
        llmp.job._gpu_peak_bytes = lambda: 0   # the program gives no peak: NVML's is taken
    held = torch.empty(3 * GIB, dtype=torch.uint8, device="cuda")
    w = torch.zeros(1024)
    job = llmp.Job({"w": w})
    step, _ = job.resume()
    for step in range(step, 4):
        if step == 2:
            extra = torch.ones(GIB, dtype=torch.uint8, device="cuda")
            w.add_(float(extra[0]))
            del extra   # kept by the caching allocator: reserved, and held as NVML sees it
        torch.cuda.synchronize()
        job.step_end(step)
    want = {"program": torch.cuda.max_memory_reserved() / GIB,
            "nvml": (smi_used_mib(os.getpid()) or 0) / 1024.0}
    print(json.dumps({"want_gib": want[by], "held": held.numel()}), flush=True)
    sys.exit(job.finish())


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    root = sys.argv[1]
    failed = False
    for by in ("program", "nvml"):
        metrics = os.path.join(root, "m-" + by)
        env = dict(os.environ, LLMP_CHECKPOINT=os.path.join(root, "ck-" + by), LLMP_METRICS=metrics + ",every=0")
        r = subprocess.run([sys.executable, __file__, "--child", by], env=env, capture_output=True, text=True,
                           timeout=180)
        if r.returncode != 0:
            print("job-peak: FAIL %s: the job exited %d: %s" % (by, r.returncode, (r.stdout + r.stderr)[-2000:]))
            failed = True
            continue
        want = json.loads(r.stdout.strip().splitlines()[-1])["want_gib"]
        with open(os.path.join(metrics, "rank-00000.jsonl")) as f:
            rec = json.loads(f.read().splitlines()[-1])
        got, got_by = rec.get("peak_gib"), rec.get("peak_by")
        # The file keeps a few decimals; NVML and nvidia-smi read the same counter in MiB.
        ok = got is not None and got_by == by and abs(got - want) <= max(0.01, 0.01 * want)
        print("job-peak: %s: peak_gib %s by %s, expected %.3f GiB by %s: %s"
              % (by, got, got_by, want, by, "ok" if ok else "FAIL"))
        failed |= not ok
    print("job-peak: " + ("FAILED" if failed else "passed"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
