#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch job under `srun --llm-parallel=tp=2,pp=3`, with no torchrun:
llmp.torch.init() from the plugin's variables, then an all-reduce of each
rank's number over its tp and its pp group (gloo, CPU). The expected sums
come from Megatron's numbering written out here for tp=2, pp=3 on 6 ranks
(rank = tp + 2 * pp): tp pairs {2k, 2k + 1}, pp triples {t, t + 2, t + 4}.
Prints "torch RANK ok" or what went wrong.
"""
import os
import sys

import torch
import torch.distributed as dist

import llmp.torch

rank = int(os.environ["RANK"])
groups = llmp.torch.init()
want = {"tp": 2 * (rank - rank % 2) + 1, "pp": 3 * (rank % 2) + 6}
got = {}
for kind in want:
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=groups[kind])
    got[kind] = int(t.item())
dist.destroy_process_group()
if got != want:
    print(f"torch {rank} wrong: got {got}, want {want}", flush=True)
    sys.exit(1)
print(f"torch {rank} ok", flush=True)
