# SPDX-License-Identifier: BSD-3-Clause
"""test_job.py - llmp.Job as a PMIx singleton: a training loop stopped by a
signal (as Slurm preempts), requeued and resumed, ends bit-identical to one
that ran through; a run that fails asks for a requeue; misuse is refused.

Each run is its own process (a libllmp context per process, and the job's
signal handlers are process-wide): tests/job_worker-like code is written
here and run with this Python. The expected result is the uninterrupted
run's tensors, computed by the same loop in another process.
"""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import PACKAGE_ROOT, SINGLETON_UNSET, libllmp_path as _libllmp

LOOP = textwrap.dedent("""
    import os, signal, sys, torch
    import llmp
    torch.manual_seed(0)
    w = torch.zeros(64, 33, dtype=torch.float32)
    b = torch.zeros(7, dtype=torch.bfloat16)
    job = llmp.Job({"w": w, "opt": {"b": b}})
    step, meta = job.resume()
    print("resumed at", step, "meta", meta.decode() or "-", flush=True)
    stop_at = int(os.environ.get("STOP_AT", "-1"))
    fail_at = int(os.environ.get("FAIL_AT", "-1"))
    code = None
    for step in range(step, 10):
        g = torch.Generator().manual_seed(step)
        w.add_(torch.randn(w.shape, generator=g))
        b.add_(torch.ones(7, dtype=torch.bfloat16))
        if step == stop_at:
            os.kill(os.getpid(), signal.SIGUSR1)   # what Slurm sends before a preemption
        if step == fail_at:
            code = job.finish(RuntimeError("a failure of the program"))
            break
        if job.step_end(step, b"after %d" % step):
            print("stopped after", step, flush=True)
            break
    if code is None:
        code = job.finish()
    torch.save({"w": w, "b": b}, os.environ["OUT"])
    sys.exit(code)
""")


def run(tmp_path, root, out, **env):
    e = dict(os.environ)
    for name in SINGLETON_UNSET:
        e.pop(name, None)
    e.update(LLMP_LIBRARY=_libllmp(), LLMP_CHECKPOINT=str(root), OUT=str(out),
             PYTHONPATH=PACKAGE_ROOT + os.pathsep + e.get("PYTHONPATH", ""))
    e.update({k: str(v) for k, v in env.items()})
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    return subprocess.run([sys.executable, str(script)], env=e, capture_output=True, text=True, timeout=120)


def test_stop_requeue_resume_is_bit_identical(tmp_path):
    import torch
    ref = run(tmp_path, tmp_path / "ref", tmp_path / "ref.pt")
    assert ref.returncode == 0, ref.stderr
    assert "resumed at 0 meta -" in ref.stdout
    first = run(tmp_path, tmp_path / "ck", tmp_path / "a.pt", STOP_AT=4)
    assert first.returncode == 75, first.stdout + first.stderr  # EXIT_REQUEUE
    assert "stopped after 4" in first.stdout
    assert os.path.isdir(tmp_path / "ck" / "step-4"), os.listdir(tmp_path / "ck")
    second = run(tmp_path, tmp_path / "ck", tmp_path / "b.pt")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resumed at 5 meta after 4" in second.stdout
    want, got = torch.load(tmp_path / "ref.pt"), torch.load(tmp_path / "b.pt")
    for k in want:
        assert torch.equal(want[k].view(torch.int16 if want[k].element_size() == 2 else torch.int32),
                           got[k].view(torch.int16 if got[k].element_size() == 2 else torch.int32)), k


def test_a_failure_asks_for_a_requeue_and_the_crash_loop_limit_stops_it(tmp_path):
    # restarts=1: one failed run without a new checkpoint is requeued, the second is not.
    root = "%s,restarts=1" % (tmp_path / "ck")
    one = run(tmp_path, root, tmp_path / "a.pt", FAIL_AT=2)
    assert one.returncode == 75, one.stdout + one.stderr
    two = run(tmp_path, root, tmp_path / "b.pt", FAIL_AT=2)
    assert two.returncode == 76, two.stdout + two.stderr  # EXIT_NO_REQUEUE


def test_misuse_is_refused(tmp_path):
    e = dict(os.environ)
    for name in SINGLETON_UNSET + ("LLMP_CHECKPOINT",):
        e.pop(name, None)
    e.update(LLMP_LIBRARY=_libllmp(), PYTHONPATH=PACKAGE_ROOT + os.pathsep + e.get("PYTHONPATH", ""))
    code = textwrap.dedent("""
        import torch, llmp
        try:
            llmp.Job({"w": torch.zeros(3)})
        except llmp.job.JobError as err:
            print("refused:", err)
    """)
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)
    assert "refused: llmp.Job: llmp_job_open (is LLMP_CHECKPOINT or --llm-checkpoint set?) failed" in r.stdout, \
        r.stdout + r.stderr


PEAKS = textwrap.dedent("""
    import os, sys, torch
    import llmp
    if os.environ.get("FAKE_CUDA"):
        # What PyTorch's allocator would say on a GPU: 1, 5, then 3 and 2 GiB.
        peaks = iter([1 << 30, 5 << 30, 3 << 30] + [2 << 30] * 20)
        torch.cuda.is_available = lambda: True
        torch.cuda.is_initialized = lambda: True
        torch.cuda.max_memory_reserved = lambda device=None: next(peaks)
    w = torch.zeros(8)
    job = llmp.Job({"w": w})
    step, _ = job.resume()
    for step in range(step, 4):
        w.add_(1)
        job.step_end(step)
    sys.exit(job.finish())
""")


def last_record(metrics_dir):
    import json
    lines = (metrics_dir / "rank-00000.jsonl").read_text().splitlines()
    return json.loads(lines[-1])


def run_peaks(tmp_path, **extra_env):
    """PEAKS as a singleton, with the allocator faked (metrics in m-gpu) and without CUDA (m-cpu)."""
    e = dict(os.environ)
    for name in SINGLETON_UNSET:
        e.pop(name, None)
    e.update(LLMP_LIBRARY=_libllmp(), PYTHONPATH=PACKAGE_ROOT + os.pathsep + e.get("PYTHONPATH", ""),
             **extra_env)
    script = tmp_path / "peaks.py"
    script.write_text(PEAKS)
    for fake, name in (("1", "gpu"), ("", "cpu")):
        env = dict(e, FAKE_CUDA=fake, LLMP_CHECKPOINT=str(tmp_path / ("ck-" + name)),
                   LLMP_METRICS="%s,every=0" % (tmp_path / ("m-" + name)))
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr


def test_the_allocator_peak_reaches_the_metrics_file(tmp_path):
    run_peaks(tmp_path)
    # The largest value the allocator gave, in GiB: 5; none without CUDA in use.
    assert last_record(tmp_path / "m-gpu")["peak_gib"] == 5.0
    assert last_record(tmp_path / "m-gpu")["peak_by"] == "program"
    assert "peak_gib" not in last_record(tmp_path / "m-cpu")


def fake_nvml_library():
    """The NVML double (tests/topology/fake_nvml.c) of the build."""
    path = os.path.join(os.environ.get("LLMP_BUILDDIR", ""), "tests", "topology", ".libs", "fake_nvml.so")
    if not os.path.exists(path):
        pytest.fail("the NVML double is not built: %s (make check builds it)" % path)
    return path


def test_without_a_peak_from_the_program_nvml_says_what_this_process_holds(tmp_path):
    # Three GPUs: this process holds 1536 MiB on one and 512 MiB on another,
    # another process 9000 and 1024 MiB; the third is not this process's.
    table = tmp_path / "nvml.tsv"
    rows = [("1B", "self:1536,4242:9000"), ("3D", "self:512"), ("9A", "4242:1024")]
    table.write_text("".join("00000000:%s:00.0\tNVIDIA H100 80GB HBM3\tGPU-%s\t%s\t0\t-\t81559\t-\t%s\t-\t-\n"
                             % (bus, bus, "0" * 32, procs) for bus, procs in rows))
    run_peaks(tmp_path, LLMP_NVML_LIBRARY=fake_nvml_library(), FAKE_NVML_FILE=str(table))
    # (1536 + 512) MiB = 2 GiB, by NVML; the program's own peak, when it gives one, wins.
    cpu = last_record(tmp_path / "m-cpu")
    assert (cpu["peak_gib"], cpu["peak_by"]) == (2.0, "nvml"), cpu
    gpu = last_record(tmp_path / "m-gpu")
    assert (gpu["peak_gib"], gpu["peak_by"]) == (5.0, "program"), gpu
