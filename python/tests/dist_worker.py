# SPDX-License-Identifier: BSD-3-Clause
"""dist_worker.py - one rank of a local multi-process torch.distributed run.

The tests (test_torch.py) start WORLD_SIZE copies with the env:// variables
the llm_parallel plugin sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT, LLMP_LAYOUT_FILE) and read back what each rank saw, as JSON in
OUTDIR/rank<R>.json:

    python dist_worker.py SCENARIO OUTDIR [KIND...]           one rank (RANK set)
    python dist_worker.py --world N SCENARIO OUTDIR [KIND...]  N ranks forked from one
                                                               process (fork_ranks)

SCENARIO:
  groups  llmp.torch.init() (gloo), then for each kind: the global ranks of this
          rank's torch group and the all-reduced sum of (rank, 1) over it; also
          the DeviceMesh: its dimension names, its mesh, the ranks of its group
          along each dimension and an all-reduce over each. KINDS, if given,
          are passed to init (creation order); LLMP_TORCH_GROUPS, if set,
          the method. Also the method llmp reports, its count of calls, and
          torch's group constructor calls for subgroups counted here by
          wrapping torch's functions (new_group, split_group and the
          constructor _new_process_group_helper every path goes through).
  naive   each rank creates only its own groups with new_group(...,
          use_local_synchronization=True), kind by kind in the order KINDS:
          the way that deadlocks in gloo's connectFullMesh; records whether
          it finished or timed out (new_group timeout LLMP_TEST_GROUP_TIMEOUT s).
  ddp     llmp.torch.init(), then one step of a Linear(4, 2) wrapped in
          DistributedDataParallel over this rank's dp group, on an input only
          this rank has (its rank); the weight's gradient after backward.
  megatron  Megatron-Core's own parallel_state.initialize_model_parallel with
          the layout file's sizes and order, on gloo; for each group kind
          Megatron has a getter for, the global ranks of this rank's group,
          beside llmp.layout()'s (KINDS unused).
"""

import datetime
import functools
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist

import llmp
import llmp.torch


def all_reduce_sum(values, group):
    t = torch.tensor(values, dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
    return t.tolist()


def count_calls(module, name, counts, key, subgroup_only=False):
    """Wrap module.name so that each call adds one to counts[key]
    (subgroup_only: only calls for a group of listed ranks, not the world's)."""
    real = getattr(module, name)

    @functools.wraps(real)  # keeps the signature llmp.torch inspects
    def wrapper(*args, **kwargs):
        ranks = kwargs.get("global_ranks_in_group", args[2] if len(args) > 2 else None)
        if not subgroup_only or ranks:
            counts[key] += 1
        return real(*args, **kwargs)
    setattr(module, name, wrapper)


def scenario_groups(kinds):
    c10d = dist.distributed_c10d
    counts = {"constructor": 0, "new_group": 0, "split_group": 0}
    count_calls(c10d, "_new_process_group_helper", counts, "constructor", subgroup_only=True)
    count_calls(dist, "new_group", counts, "new_group")
    count_calls(dist, "split_group", counts, "split_group")
    groups = llmp.torch.init(backend="gloo", timeout=120, kinds=kinds or None)
    rank = dist.get_rank()
    out = {"rank": rank, "world": dist.get_world_size(), "backend": dist.get_backend(),
           "created": list(groups), "groups": {}, "method": groups.method, "calls": groups.calls,
           "torch_calls": counts,
           "names": {k: g.group_name for k, g in groups.items() if groups.member(k)},
           "descs": {k: g.group_desc for k, g in groups.items() if groups.member(k)}}
    # Every rank walks the kinds in one order, so each member reaches each
    # group's all-reduce in the same sequence.
    for kind in groups:
        entry = {"member": groups.member(kind)}
        if groups.member(kind):
            entry["ranks"] = dist.get_process_group_ranks(groups[kind])
            entry["llmp_ranks"] = list(groups.ranks(kind))
            entry["sum"] = all_reduce_sum([rank, 1], groups[kind])
        out["groups"][kind] = entry
    if not kinds:
        mesh = llmp.torch.device_mesh(groups)
        out["mesh"] = {"dim_names": list(mesh.mesh_dim_names), "device_type": mesh.device_type,
                       "mesh": mesh.mesh.tolist(), "dims": {}}
        for dim in mesh.mesh_dim_names:
            g = mesh.get_group(dim)
            out["mesh"]["dims"][dim] = {"ranks": dist.get_process_group_ranks(g),
                                        "local_rank": mesh.get_local_rank(dim),
                                        "sum": all_reduce_sum([rank, 1], g)}
    dist.barrier()
    dist.destroy_process_group()
    return out


def scenario_naive(kinds):
    timeout = datetime.timedelta(seconds=float(os.environ.get("LLMP_TEST_GROUP_TIMEOUT", "10")))
    # The short timeout is for the groups alone. Rank 0's TCPStore waits for every rank
    # to connect within init's timeout, and 12 ranks importing torch on two cores can
    # arrive more than 10 s apart: the rendezvous, not the hazard, would time out.
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
    lay = llmp.layout()
    out = {"rank": dist.get_rank(), "joined": [], "error": None}
    try:
        for kind in kinds:
            members = lay.group(kind)
            if members is None:
                continue
            dist.new_group(list(members), timeout=timeout, use_local_synchronization=True)
            out["joined"].append(kind)
    except Exception as e:  # gloo's timeout: a RuntimeError, or DistStoreError
        out["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    # No destroy_process_group: a rank whose group timed out has peers
    # still waiting; exiting is the clean way out.
    return out


def scenario_ddp(kinds):
    groups = llmp.torch.init(backend="gloo", timeout=120)
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial weights on every rank
    model = torch.nn.Linear(4, 2, bias=False)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=groups["dp"])
    x = torch.full((1, 4), float(rank))
    ddp(x).sum().backward()
    out = {"rank": rank, "dp": list(groups.ranks("dp")), "grad": model.weight.grad.tolist()}
    dist.barrier()
    dist.destroy_process_group()
    return out


# llmp's group kinds and Megatron-Core's getters for them (megatron/core/parallel_state.py).
MEGATRON_GETTERS = {
    "tp": ("get_tensor_model_parallel_group", {}),
    "pp": ("get_pipeline_model_parallel_group", {}),
    "cp": ("get_context_parallel_group", {}),
    "dp": ("get_data_parallel_group", {}),
    "dp-cp": ("get_data_parallel_group", {"with_context_parallel": True}),
    "tp-cp": ("get_tensor_and_context_parallel_group", {}),
    "tp-pp": ("get_model_parallel_group", {}),
    "embedding": ("get_embedding_group", {}),
    "position-embedding": ("get_position_embedding_group", {}),
    "ep": ("get_expert_model_parallel_group", {}),
    "expert-tp": ("get_expert_tensor_parallel_group", {}),
    "expert-dp": ("get_expert_data_parallel_group", {}),
}


def scenario_megatron(kinds):
    import megatron.core.parallel_state as ps
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
    lay = llmp.layout()
    s = lay.sizes
    ps.initialize_model_parallel(tensor_model_parallel_size=s["tp"], pipeline_model_parallel_size=s["pp"],
                                 context_parallel_size=s["cp"], expert_model_parallel_size=s["ep"],
                                 expert_tensor_parallel_size=s["expert-tp"], order="-".join(lay.order))
    out = {"rank": dist.get_rank(), "megatron": {}, "llmp": {}}
    for kind, (getter, kwargs) in MEGATRON_GETTERS.items():
        try:
            group = getattr(ps, getter)(**kwargs)
        except (AssertionError, RuntimeError, AttributeError):
            group = None  # Megatron made no such group for this rank (a middle stage's embedding)
        member = group is not None and group != dist.GroupMember.NON_GROUP_MEMBER
        out["megatron"][kind] = dist.get_process_group_ranks(group) if member else None
        mine = lay.group(kind)
        out["llmp"][kind] = list(mine) if mine is not None else None
    ps.destroy_model_parallel()
    dist.destroy_process_group()
    return out


def run_rank(scenario, outdir, kinds):
    rank = int(os.environ["RANK"])
    try:
        out = {"groups": scenario_groups, "naive": scenario_naive,
               "megatron": scenario_megatron, "ddp": scenario_ddp}[scenario](kinds)
        status = 0
    except Exception:
        out = {"rank": rank, "exception": traceback.format_exc()}
        status = 1
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump(out, f)
    sys.stdout.flush()
    # os._exit: a rank left in a broken group must not wait in torch's
    # atexit handlers for peers that will never come.
    os._exit(status)


def fork_ranks(world, scenario, outdir, kinds):
    """Every rank a child forked from this process, which imported torch (and
    Megatron-Core for its scenario) once: an import costs 2-5 s of CPU a
    process, most of a job of 8-12 ranks on a small machine. The imports
    start no thread under OMP_NUM_THREADS=1 without CUDA, so the fork is
    safe; each child gets its own RANK, LOCAL_RANK and LLMP_RANK and its
    output in OUTDIR/rank<R>.log, and its exit status is written to
    OUTDIR/rank<R>.exit as it ends (the launcher names the ranks that have
    none at its deadline)."""
    if scenario == "megatron":
        import megatron.core.parallel_state  # noqa: F401 (imported once, before the fork)
    sys.stdout.flush()
    sys.stderr.flush()
    children = {}
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            for name in ("RANK", "LOCAL_RANK", "LLMP_RANK"):
                os.environ[name] = str(rank)
            fd = os.open(os.path.join(outdir, "rank%d.log" % rank), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            run_rank(scenario, outdir, kinds)  # never returns: os._exit
        children[pid] = rank
    while children:
        pid, status = os.wait()
        rank = children.pop(pid)
        path = os.path.join(outdir, "rank%d.exit" % rank)
        with open(path + ".tmp", "w") as f:
            f.write("%d\n" % os.waitstatus_to_exitcode(status))
        os.rename(path + ".tmp", path)
    os._exit(0)


def main():
    if sys.argv[1] == "--world":
        fork_ranks(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:])
    run_rank(sys.argv[1], sys.argv[2], sys.argv[3:])


if __name__ == "__main__":
    main()
