#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check the task lines of task_env.sh against a layout computed here.

usage: check_env.py SPEC WORLD [--gpus N] [--gpu-bind node|task|none] [--master NODE]
                    [--checkpoint CKPT] [--restart-count N] [--model-args FLAGS] < lines

The expected coordinates come from Megatron-Core's numbering written out
independently of llmp: a mixed-radix number over the order, leftmost
dimension fastest, dense grid tp/cp/dp/pp and expert grid etp/ep/edp/pp.
SPEC "" is the default layout (--llm-checkpoint alone). CKPT is the
checkpoint spec the tasks must see, every key written out by the caller
(DIR,every=...,keep=N,restarts=N); without it, no checkpoint variable may be
set. LLMP_RESTART_COUNT must be N (default 0). With --gpus N (GPUs per node, no
topology: each task's GPU is the one at its local id), --gpu-bind says what
the tasks must see (default node: all N, LOCAL_RANK its local id; task: one,
LOCAL_RANK 0; none: all N). LLMP_MEGATRON_ARGS is checked against Megatron-LM's
argument names for the layout, followed by FLAGS when --llm-model gave them.
Exits 1 with one line per mismatch.
"""
import os
import sys

DEFAULT_ORDER = ["tp", "cp", "ep", "dp", "pp"]
APPEND = ["tp", "pp", "dp", "ep", "cp"]  # Megatron appends missing dims so


def parse_spec(text):
    keys = dict(item.split("=", 1) for item in text.split(",") if item)
    size = {d: int(keys.get(d, 1)) for d in ("tp", "pp", "cp", "ep")}
    size["etp"] = int(keys.get("etp", size["tp"]))
    order = keys["order"].split("-") if "order" in keys else list(DEFAULT_ORDER)
    order += [d for d in APPEND if d not in order]
    vpp = keys.get("vpp")
    dp = keys.get("dp", "auto")
    return size, order, vpp, dp


def checkpoint_vars(text):
    """The checkpoint variables for a spec whose keys are all given."""
    if text is None:
        names = ("LLMP_CHECKPOINT", "LLMP_CHECKPOINT_DIR", "LLMP_CHECKPOINT_EVERY",
                 "LLMP_CHECKPOINT_KEEP", "LLMP_MAX_RESTARTS")
        return {name: "<unset>" for name in names}
    items = text.split(",")
    keys = dict(item.split("=", 1) for item in items[1:])
    every = keys.get("every")
    canonical = f"{items[0]}{',every=' + every if every else ''}," \
                f"keep={keys['keep']},restarts={keys['restarts']}"
    return {
        "LLMP_CHECKPOINT": canonical,
        "LLMP_CHECKPOINT_DIR": items[0],
        "LLMP_CHECKPOINT_EVERY": every or "<unset>",
        "LLMP_CHECKPOINT_KEEP": keys["keep"],
        "LLMP_MAX_RESTARTS": keys["restarts"],
    }


def coords(rank, order, sizes):
    out, rest = {}, rank
    for dim in order:
        out[dim] = rest % sizes[dim]
        rest //= sizes[dim]
    return out


def main():
    args = sys.argv[1:]
    spec, world = args[0], int(args[1])
    gpus = int(args[args.index("--gpus") + 1]) if "--gpus" in args else 0
    bind = args[args.index("--gpu-bind") + 1] if "--gpu-bind" in args else "node"
    master = args[args.index("--master") + 1] if "--master" in args else None
    ckpt = args[args.index("--checkpoint") + 1] if "--checkpoint" in args else None
    restarts = args[args.index("--restart-count") + 1] if "--restart-count" in args else "0"
    model_args = args[args.index("--model-args") + 1] if "--model-args" in args else ""
    size, order, vpp, _ = parse_spec(spec)
    dp = world // (size["tp"] * size["pp"] * size["cp"])
    edp = world // (size["etp"] * size["ep"] * size["pp"])
    dense = {"tp": size["tp"], "cp": size["cp"], "ep": 1, "dp": dp, "pp": size["pp"]}
    expert = {"tp": size["etp"], "cp": 1, "ep": size["ep"], "dp": edp, "pp": size["pp"]}

    tasks = {}
    for line in sys.stdin:
        if not line.startswith("task "):
            continue
        fields = line.split()
        bad = [f for f in fields[2:] if "=" not in f]
        if bad:
            print(f"malformed task line (fields {bad}): {line.strip()}")
            return 1
        tasks.setdefault(int(fields[1]), {}).update(f.split("=", 1) for f in fields[2:])
    errors = []
    if sorted(tasks) != list(range(world)):
        errors.append(f"expected tasks 0..{world - 1}, got {sorted(tasks)}")
    ports = {t.get("MASTER_PORT") for t in tasks.values()}
    if len(ports) != 1:
        errors.append(f"MASTER_PORT differs between tasks: {ports}")
    # MASTER_ADDR: the step's first node, where rank 0 runs in block order.
    masters = {t.get("MASTER_ADDR") for t in tasks.values()}
    first = master or tasks.get(0, {}).get("SLURMD_NODENAME")
    if masters != {first}:
        errors.append(f"MASTER_ADDR {masters}, expected {first}")

    per_node = {}
    for env in tasks.values():
        per_node[env["SLURMD_NODENAME"]] = per_node.get(env["SLURMD_NODENAME"], 0) + 1

    nodes = len(per_node)
    megatron = None
    if order[:5] in (["tp", "cp", "ep", "dp", "pp"], ["tp", "cp", "ep", "pp", "dp"]):
        megatron = f"--tensor-model-parallel-size {size['tp']} --pipeline-model-parallel-size {size['pp']}"
        if size["cp"] > 1:
            megatron += f" --context-parallel-size {size['cp']}"
        if size["ep"] > 1:
            megatron += f" --expert-model-parallel-size {size['ep']}"
        if size["etp"] != size["tp"]:
            megatron += f" --expert-tensor-parallel-size {size['etp']}"
        if vpp:
            megatron += f" --num-virtual-stages-per-pipeline-rank {vpp}"
        if order[3] == "pp" and size["pp"] > 1 and dp > 1:  # else the same groups
            megatron += " --use-tp-pp-dp-mapping"
        if model_args:
            megatron += " " + model_args
    for rank, env in sorted(tasks.items()):
        local = per_node[env["SLURMD_NODENAME"]]
        for name in ("LOCAL_WORLD_SIZE", "LLMP_LOCAL_WORLD_SIZE"):
            if env.get(name) != str(local):
                errors.append(f"task {rank}: {name}={env.get(name)}, expected {local}")
        d, e = coords(rank, order, dense), coords(rank, order, expert)
        expect = {
            "LLMP_WORLD_SIZE": world, "WORLD_SIZE": world,
            "LLMP_RANK": rank, "RANK": rank,
            "LOCAL_RANK": 0 if gpus and bind == "task" else env["SLURM_LOCALID"],
            "LLMP_LOCAL_RANK": env["SLURM_LOCALID"],
            "GROUP_RANK": env["SLURM_NODEID"], "LLMP_NODE_RANK": env["SLURM_NODEID"],
            "GROUP_WORLD_SIZE": nodes, "CROSS_RANK": env["SLURM_NODEID"], "CROSS_SIZE": nodes,
            "LOCAL_SIZE": local, "ROLE_RANK": rank, "ROLE_WORLD_SIZE": world, "ROLE_NAME": "default",
            "LLMP_MEGATRON_ARGS": megatron.replace(" ", "+") if megatron else "<unset>",
            "LLMP_PLACEMENT": "block",
            "LLMP_ORDER": "-".join(order),
            "LLMP_TP_SIZE": size["tp"], "LLMP_TP_RANK": d["tp"],
            "LLMP_CP_SIZE": size["cp"], "LLMP_CP_RANK": d["cp"],
            "LLMP_DP_SIZE": dp, "LLMP_DP_RANK": d["dp"],
            "LLMP_PP_SIZE": size["pp"], "LLMP_PP_RANK": d["pp"],
            "LLMP_EP_SIZE": size["ep"], "LLMP_EP_RANK": e["ep"],
            "LLMP_EXPERT_TP_SIZE": size["etp"], "LLMP_EXPERT_TP_RANK": e["tp"],
            "LLMP_EXPERT_DP_SIZE": edp, "LLMP_EXPERT_DP_RANK": e["dp"],
            "LLMP_VPP_SIZE": vpp if vpp else "<unset>",
            "LLMP_RESTART_COUNT": restarts,
        }
        if not spec:  # the default layout is named, never left empty
            expect["LLMP_PARALLEL"] = "dp=auto"
        # Set only where the task has none: its CPUs, else 1.
        if "OMP_NUM_THREADS" not in os.environ:
            cpus = env.get("SLURM_CPUS_PER_TASK", "<unset>")
            expect["OMP_NUM_THREADS"] = 1 if cpus == "<unset>" else cpus
        expect.update(checkpoint_vars(ckpt))
        for name, want in expect.items():
            if env.get(name) != str(want):
                errors.append(f"task {rank}: {name}={env.get(name)}, expected {want}")
        if gpus:
            visible = env["CUDA_VISIBLE_DEVICES"]
            want = env["SLURM_LOCALID"] if bind == "task" else ",".join(map(str, range(gpus)))
            if visible != want:
                errors.append(f"task {rank}: CUDA_VISIBLE_DEVICES={visible}, expected {want}")
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
