# SPDX-License-Identifier: BSD-3-Clause
"""llmp.Job: a PyTorch training loop that survives preemption, time limits,
node loss and hangs, over libllmp's job layer (llmp_job.h; doc/fault-tolerance.md).

    job = llmp.Job(model.state_dict() | optimizer_state)  # LLMP_CHECKPOINT / --llm-checkpoint
    step, meta = job.resume()                  # the newest checkpoint, resharded; step 0 without
    for step in range(step, steps):
        ... one training step ...
        if job.step_end(step, meta):           # a stop was agreed and its checkpoint committed
            break
    sys.exit(job.finish())                     # 0, 75 (requeue me) or 76 (do not)

SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 (Slurm's preemption and time-limit
signals) only set a flag in libllmp; at every step_end the ranks agree, in
one small allreduce, whether any was asked to stop or a periodic checkpoint
is due. The tensors are registered once, zero-copy (llmp.checkpoint's
rules: CPU tensors that stay in the same memory).
"""
import ctypes
import sys

from . import _libllmp as _c
from . import checkpoint as _ck

EXIT_DONE = _c.CONSTANTS["LLMP_EXIT_DONE"]
EXIT_REQUEUE = _c.CONSTANTS["LLMP_EXIT_REQUEUE"]        # EX_TEMPFAIL: resume from the newest checkpoint
EXIT_NO_REQUEUE = _c.CONSTANTS["LLMP_EXIT_NO_REQUEUE"]  # failed for good: do not requeue


class JobError(_ck.CheckpointError):
    """A call of the job layer failed; the message is libllmp's, naming the culprit."""


def _library():
    return _ck.library()  # every function, the job layer's included, declared in _libllmp.py


def _gpu_peak_bytes():
    """torch.cuda.max_memory_reserved() of this process, or 0 where CUDA is not in use.

    Asked of a torch the program imported (never imported here), once CUDA
    is initialised: reading the allocator's figure makes no CUDA context.
    """
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available() or not cuda.is_initialized():
        return 0
    return int(cuda.max_memory_reserved())


class Job:
    """The job layer for one process: its checkpoints hold the tensors of state_dict.

    context: an llmp.checkpoint.Context (default llmp.checkpoint.init()).
    The checkpoint root and policy come from LLMP_CHECKPOINT, which
    --llm-checkpoint sets. One Job per process: the signal handlers are
    process-wide.
    """

    def __init__(self, state_dict, context=None):
        self.context = context or _ck.init()
        self._lib = lib = _library()
        self.entries = [_ck.Entry(name, value) for name, value in _ck.flatten_state_dict(state_dict)]
        if not self.entries:
            raise ValueError("llmp.Job: the state dict holds no tensor")
        self.handle = ctypes.c_void_p()
        self._status = 0
        rc = lib.llmp_job_open(self.context.handle, None, ctypes.byref(self.handle))
        if rc != 0:
            self._fail(rc, "llmp_job_open (is LLMP_CHECKPOINT or --llm-checkpoint set?)")
        ck = lib.llmp_job_ckpt(self.handle)
        for e in self.entries:
            n = len(e.shape)
            rc = lib.llmp_ckpt_register(ck, e.name.encode(), _ck.DTYPES[e.tensor.dtype], n,
                                        _ck.u64_array(e.global_shape), _ck.u64_array(e.offset),
                                        _ck.u64_array(e.shape), ctypes.c_void_p(e.address))
            if rc != 0:
                self._fail(rc, "registering tensor '%s'" % e.name, ctx_message=True)

    def _fail(self, rc, what, ctx_message=False):
        self._status = rc
        if ctx_message or not self.handle:
            why = self._lib.llmp_errmsg(self.context.handle)
        else:
            why = self._lib.llmp_job_errmsg(self.handle)
        raise JobError("llmp.Job: %s failed on rank %d (%s): %s"
                       % (what, self.context.rank, _c.status_name(rc),
                          (why or b"").decode(errors="replace")), _c.status_name(rc))

    def resume(self):
        """Fill the tensors from the newest checkpoint (collective); (next step, meta).

        (0, b"") when there is none yet. The layout may differ from the one
        that saved: libllmp reshards.
        """
        for e in self.entries:
            e.check_memory()
        step = ctypes.c_uint64()
        metalen = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(_ck.META_CAP)
        rc = self._lib.llmp_job_resume(self.handle, ctypes.byref(step), buf, _ck.META_CAP,
                                       ctypes.byref(metalen))
        if rc != 0:
            self._fail(rc, "resume")
        for e in self.entries:
            e.after_load()
        if metalen.value > _ck.META_CAP:
            raise JobError("llmp.Job: the checkpoint's meta has %d bytes, more than llmp.Job reads "
                           "(%d)" % (metalen.value, _ck.META_CAP))
        return step.value, buf.raw[:metalen.value]

    def step_end(self, step, meta=b""):
        """After step `step` is complete (collective, every step): True when the job must stop.

        Saves asynchronously when a periodic checkpoint is due; on a stop,
        saves synchronously first. The tensors must hold the state after
        `step`.
        """
        for e in self.entries:
            e.before_save()
        meta = bytes(meta)
        peak = _gpu_peak_bytes()
        if peak:  # for the metrics file's peak_gib (LLMP_METRICS), which llmp calibrate fits
            self._lib.llmp_job_note_memory(self.handle, peak)
        action = ctypes.c_int()
        rc = self._lib.llmp_job_step_end(self.handle, int(step), meta, len(meta), ctypes.byref(action))
        if rc != 0:
            self._fail(rc, "step_end of step %d" % step)
        return action.value == _c.CONSTANTS["LLMP_JOB_STOP"]

    def finish(self, error=None):
        """End the run: the exit code for the process (EXIT_DONE, EXIT_REQUEUE or EXIT_NO_REQUEUE).

        error: an exception that ended the loop, if any (a JobError keeps
        libllmp's status, so a dead peer still asks for a requeue). Call it
        once, then exit with its value: sys.exit(job.finish()).
        """
        if not self.handle:
            raise JobError("llmp.Job: finish() was called already")
        status = self._status
        if error is not None and not status:
            # The program's own failure: requeued while the crash-loop limit allows.
            status = _c.STATUS_NAMES.index("LLMP_ERR_STATE")
        code = self._lib.llmp_job_finish(self.handle, status)
        self.handle = None
        return code

    def give_up(self, why):
        """End the run for a failure the program knows is permanent: EXIT_NO_REQUEUE."""
        if not self.handle:
            raise JobError("llmp.Job: the job has ended")
        code = self._lib.llmp_job_give_up(self.handle, str(why).encode())
        self.handle = None
        return code


def run_exit(job, error=None):
    """sys.exit with the job's exit code (a small convenience for scripts)."""
    sys.exit(job.finish(error))
