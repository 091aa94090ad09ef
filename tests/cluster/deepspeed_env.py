#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""DeepSpeed started by srun --llm-parallel with no launcher, on CPU
(DS_ACCELERATOR=cpu, gloo), as microsoft/DeepSpeed's deepspeed/comm/comm.py and
deepspeed/runtime/model_checkpointing/utils.py read it:
deepspeed.init_distributed from the plugin's RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT; the checkpoint writer's view of the machines
(create_universal_parallel_info reads LOCAL_RANK, CROSS_SIZE, CROSS_RANK);
and one training step of deepspeed.initialize's engine, whose gradients are
averaged over every rank. Prints one line per task:

    deepspeed RANK world=W local=L machines=M machine=N dp=D step=ok|WRONG ...

The step's expected weights are worked out here: a Linear(4, 2) seeded
alike on every rank, rank r's batch two rows of (r + 1), the loss the sum
of the outputs, SGD at lr 0.1: the averaged gradient of every weight is
2 * mean(r + 1) and of every bias 2, whatever DeepSpeed does (clipping
off: its default would scale them to a norm of 1).
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("DS_ACCELERATOR", "cpu")

import torch  # noqa: E402

import deepspeed  # noqa: E402
import deepspeed.comm as dist  # noqa: E402
from deepspeed.runtime.model_checkpointing.utils import create_universal_parallel_info  # noqa: E402
from deepspeed.utils import groups  # noqa: E402

LR = 0.1

deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)
info = create_universal_parallel_info(groups, has_moe_layers=False)
world, rank = dist.get_world_size(), dist.get_rank()

torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
w0, b0 = model.weight.detach().clone(), model.bias.detach().clone()
engine, _, _, _ = deepspeed.initialize(
    model=model, model_parameters=model.parameters(),
    config={"train_batch_size": 2 * world, "train_micro_batch_size_per_gpu": 2,
            "optimizer": {"type": "SGD", "params": {"lr": LR}},
            "gradient_clipping": 0.0})  # (DeepSpeed 0.19 clips at a norm of 1 by default)
loss = engine(torch.full((2, 4), float(rank + 1))).sum()
engine.backward(loss)
engine.step()

mean_x = sum(r + 1 for r in range(world)) / world
want_w, want_b = w0 - LR * 2 * mean_x, b0 - LR * 2
got_w, got_b = engine.module.weight.detach(), engine.module.bias.detach()
ok = torch.allclose(got_w, want_w, rtol=0, atol=1e-6) and torch.allclose(got_b, want_b, rtol=0, atol=1e-6)
print("deepspeed %d world=%d local=%d machines=%d machine=%d dp=%d step=%s%s"
      % (info.global_rank, info.global_world_size, info.local_rank, info.num_machines, info.machine_rank,
         groups._get_data_parallel_world_size(), "ok" if ok else "WRONG",
         "" if ok else " got %s %s want %s %s" % (got_w.tolist(), got_b.tolist(), want_w.tolist(),
                                                  want_b.tolist())),
      flush=True)
dist.barrier()
torch.distributed.destroy_process_group()
sys.exit(0 if ok else 1)
