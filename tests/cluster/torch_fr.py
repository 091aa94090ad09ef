# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch job whose last dp allreduce times out, for tests/metrics.bats.

    torch_fr.py VICTIM

Run under srun --llm-parallel=tp=2 on 4 ranks, with LLMP_METRICS set (so
the plugin points torch's flight recorder at LLMP_METRICS's fr/) and
--llm-checkpoint (llmp.Job writes the metrics records). Every rank makes
STEPS steps of one tp and one dp allreduce (gloo, through llmp.torch's
groups); then every rank but VICTIM makes one more dp allreduce, which the
victim's dp partner waits for until its 5 s timeout. Every rank then
writes its flight recorder dump with llmp.fr.dump() and prints each call it
made ("call R KIND N": its Nth call on its KIND group), which the test holds
the annotated dump against.
"""

import os
import sys

import torch
import torch.distributed as dist

import llmp
import llmp.fr
import llmp.torch

STEPS = 3


def main():
    victim = int(sys.argv[1])
    state = {"w": torch.zeros(4)}
    job = llmp.Job(state)
    job.resume()
    groups = llmp.torch.init(backend="gloo", timeout=5)
    rank = dist.get_rank()
    made = {"tp": 0, "dp": 0}

    def allreduce(kind):
        made[kind] += 1
        print("call %d %s %d" % (rank, kind, made[kind]), flush=True)
        t = torch.ones(4)
        dist.all_reduce(t, group=groups[kind])
        return t

    for step in range(STEPS):
        state["w"] += allreduce("tp") + allreduce("dp")
        job.step_end(step)
    if rank != victim:
        try:
            allreduce("dp")
        except RuntimeError as err:  # the victim's partner: gloo's timeout
            print("rank %d: dp allreduce failed: %s" % (rank, str(err).splitlines()[0][:120]), flush=True)
    path = llmp.fr.dump()
    print("rank %d: dumped %s" % (rank, path), flush=True)
    job.finish()


if __name__ == "__main__":
    main()
    # No destroy_process_group nor interpreter teardown: a group whose call failed may
    # not shut down cleanly, and the test wants the dump and the exit status.
    sys.stdout.flush()
    os._exit(0)
