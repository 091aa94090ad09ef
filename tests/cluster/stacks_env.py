#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What PyTorch stacks see when srun --llm-parallel starts them without a
launcher (Lightning-AI/pytorch-lightning src/lightning/fabric/plugins/environments/,
huggingface/accelerate's PartialState): Lightning's cluster environments
and Accelerate's PartialState, on CPU. Prints one line per task:

    stacks RANK lightning=<env class> global=G local=L node=N world=W addr=A \
        accelerate=<process_index>/<num_processes> local=<local_process_index>

tests/python_cluster.bats compares them with the plugin's variables.
"""
import os
import warnings

warnings.filterwarnings("ignore")

from lightning.fabric.plugins.environments import (LightningEnvironment, SLURMEnvironment,  # noqa: E402
                                                   TorchElasticEnvironment)

if SLURMEnvironment.detect():
    env = SLURMEnvironment()
elif TorchElasticEnvironment.detect():
    env = TorchElasticEnvironment()
else:
    env = LightningEnvironment()
line = ("stacks %s lightning=%s global=%d local=%d node=%d world=%d addr=%s"
        % (os.environ["RANK"], type(env).__name__, env.global_rank(), env.local_rank(), env.node_rank(),
           env.world_size(), env.main_address))

from accelerate import PartialState  # noqa: E402

state = PartialState(cpu=True)
line += " accelerate=%d/%d local=%d" % (state.process_index, state.num_processes, state.local_process_index)
state.wait_for_everyone()
print(line, flush=True)
state.destroy_process_group()
