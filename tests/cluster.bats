#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The SPANK plugin on a real three-node Slurm cluster: sbatch, salloc and srun
# with --llm-parallel and --llm-checkpoint, checked task by task against
# layouts computed by check_env.py, independently of llmp, and against
# checkpoint settings written out here from the precedence rules.

load cluster/common

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }
setup() { cluster_setup; }
teardown() { cluster_teardown; }

# --------------------------------------------------------------- the option

@test "sbatch, salloc and srun --help list --llm-parallel with its grammar" {
	for cmd in sbatch salloc srun; do
		run "$cmd" --help
		[ "$status" -eq 0 ]
		grep -q -- '--llm-parallel=SPEC' <<<"$output"
		grep -q 'tp=N,pp=N' <<<"$output"
		grep -q -- '--llm-gpu-bind' <<<"$output"
		grep -q -- '--llm-guard=warn|refuse' <<<"$output"
	done
}

@test "--llm-parallel=help prints the grammar and submits nothing" {
	for how in srun sbatch salloc; do
		run submit "$how" --llm-parallel=help
		[ "$status" -eq 0 ]
		grep -q 'order=D-D-D-D-D' <<<"$output"
		grep -q -- '--llm-guard=warn (run a layout the' <<<"$output"
	done
	assert_queue_empty
}

# ------------------------------------------------------------ good layouts

@test "srun: tp=2,pp=2 on one node, every task's variables" {
	run srun -N1 -n4 --llm-parallel=tp=2,pp=2 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2,pp=2 4
}

@test "srun: tp=2,pp=3 over three nodes" {
	run srun -N3 --ntasks-per-node=4 --llm-parallel=tp=2,pp=3 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2,pp=3 12 --master node1
	# four tasks per node, node ranks 0..2
	[ "$(grep -c 'GROUP_RANK=2 ' <<<"$output")" -eq 4 ]
}

@test "srun: every key, another order, experts and vpp over two nodes" {
	spec=tp=2,cp=2,ep=2,etp=1,pp=2,vpp=3,order=tp-cp-ep-dp-pp
	run srun -N2 -n16 --llm-parallel=$spec "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks $spec 16
	spec=tp=2,pp=2,order=pp-tp-cp-ep-dp
	run srun -N2 -n8 --llm-parallel=$spec "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks $spec 8
}

@test "srun: uneven tasks per node (3 + 1) and a step not starting on node1" {
	run srun -w node2,node3 -N2 -n4 -m block --ntasks-per-node=3 --llm-parallel=tp=2 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2 4 --master node2
	grep -q 'task 0 SLURMD_NODENAME=node2 ' <<<"$output"
	grep -q 'task 3 SLURMD_NODENAME=node3 ' <<<"$output"
}

@test "the layout file is complete before tasks start, equals llmp plan, and is removed" {
	LLMP_TEST_COPY=$WORK/layout.json run srun -N2 -n8 --llm-parallel=tp=2,pp=2 "$TASK_ENV"
	[ "$status" -eq 0 ]
	path=$(grep -o 'LLMP_LAYOUT_FILE=[^ ]*' <<<"$output" | sort -u | cut -d= -f2)
	[ "$(wc -l <<<"$path")" -eq 2 ] # one per node
	"$LLMP" plan --world 8 --parallel tp=2,pp=2 --format json >"$WORK/expected.json"
	python3 - "$WORK/layout.json" "$WORK/expected.json" <<-'PY'
		import json, sys
		got, want = (json.load(open(p)) for p in sys.argv[1:])
		assert got == want, (got, want)
	PY
	for p in $path; do [ ! -e "$p" ]; done
}

@test "sbatch: the option reaches srun steps; the batch step is left alone" {
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		echo "batch LLMP_RANK=\${LLMP_RANK-<unset>} RANK=\${RANK-<unset>}"
		echo "batch on \$SLURMD_NODENAME"
		srun "$TASK_ENV"
	EOF
	run sbatch --wait -N2 -n6 -o "$WORK/out" --llm-parallel=tp=3 "$WORK/job.sh"
	[ "$status" -eq 0 ]
	output=$(cat "$WORK/out")
	grep -q '^batch LLMP_RANK=<unset> RANK=<unset>$' <<<"$output"
	# The batch step runs on the allocation's first node, where -m block puts
	# rank 0: node1 on 22.05, where 24.11's tree selection may pick node[2-3].
	first=$(sed -n 's/^batch on //p' <<<"$output")
	[ -n "$first" ]
	check_tasks tp=3 6 --master "$first"
}

@test "salloc: the option reaches srun inside the allocation" {
	run salloc -N1 -n2 --llm-parallel=tp=2 srun "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2 2
}

@test "LLMP_PARALLEL alone turns the plugin on; the option wins key by key" {
	LLMP_PARALLEL=tp=2,pp=2 run srun -N1 -n8 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2,pp=2 8
	LLMP_PARALLEL=tp=2,pp=2 run srun -N1 -n8 --llm-parallel=tp=4 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=4,pp=2 8
	grep -q 'LLMP_PARALLEL=tp=4,pp=2 ' <<<"$output"
}

@test "site defaults apply below the user's keys; ceilings refuse at submission" {
	write_plugstack defaults=order=tp-cp-ep-pp-dp,tp=2 max_tp=4
	run srun -N1 -n8 --llm-parallel=pp=2 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2,pp=2,order=tp-cp-ep-pp-dp 8
	grep -q 'LLMP_PARALLEL=tp=2,pp=2,order=tp-cp-ep-pp-dp ' <<<"$output"
	run srun -N1 -n8 --llm-parallel=tp=1 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=1,order=tp-cp-ep-pp-dp 8
	run submit sbatch -n8 --llm-parallel=tp=8
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: tp=8 is larger than this site allows (4' <<<"$output"
	assert_queue_empty
}

@test "GPUs: every task sees the node's and LOCAL_RANK picks its own; one each with --llm-gpu-bind=task" {
	run srun -N2 --ntasks-per-node=4 --gres=gpu:4 --llm-parallel=tp=4 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=4 8 --gpus 4
	run srun -N2 --ntasks-per-node=4 --gres=gpu:4 --llm-parallel=tp=4 --llm-gpu-bind=task "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=4 8 --gpus 4 --gpu-bind task
	run srun -N2 --ntasks-per-node=4 --gres=gpu:4 --llm-parallel=tp=4 --llm-gpu-bind=none "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=4 8 --gpus 4 --gpu-bind none
	write_plugstack gpu_bind=task
	run srun -N1 -n4 --gres=gpu:4 --llm-parallel=tp=4 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=4 4 --gpus 4 --gpu-bind task
	# A task's own OMP_NUM_THREADS stays; -c sets it to the task's CPUs.
	write_plugstack
	OMP_NUM_THREADS=7 run srun -N1 -n2 --llm-parallel=tp=2 "$TASK_ENV"
	[ "$(grep -c 'OMP_NUM_THREADS=7 ' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	run srun -N1 -n2 -c 2 --llm-parallel=tp=2 "$TASK_ENV"
	check_tasks tp=2 2
	[ "$(grep -c 'OMP_NUM_THREADS=2 ' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	# One GPU per task from Slurm (--gpus-per-task): LOCAL_RANK 0 everywhere, and a warning.
	run srun -N1 -n2 --gpus-per-task=1 --llm-parallel=tp=2 "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^task .* LOCAL_RANK=0 ' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	grep -q 'llm_parallel: warning: each task sees one GPU' <<<"$output" || { echo "$output"; false; }
}

@test "fewer GPUs than tasks: a warning, CUDA_VISIBLE_DEVICES left as Slurm set it" {
	run srun -N1 -n4 --gres=gpu:2 --llm-parallel=tp=4 "$TASK_ENV"
	[ "$status" -eq 0 ]
	grep -q 'llm_parallel: warning: 4 tasks on this node but 2 GPUs' <<<"$output"
	[ "$(grep -c 'CUDA_VISIBLE_DEVICES=0,1 ' <<<"$output")" -eq 4 ]
}

@test "a job without the option is untouched" {
	run srun -N2 -n4 --gres=gpu:4 "$TASK_ENV"
	[ "$status" -eq 0 ]
	! grep -q 'LLMP_[A-Z_]*=[^<]' <<<"$output"
	[ "$(grep -c 'RANK=<unset> LOCAL_RANK=<unset> WORLD_SIZE=<unset>' <<<"$output")" -eq 4 ]
	[ "$(grep -c 'CUDA_VISIBLE_DEVICES=0,1,2,3 ' <<<"$output")" -eq 4 ]
}

@test "MASTER_ADDR and MASTER_PORT carry a real rendezvous across nodes" {
	run srun -N3 --ntasks-per-node=2 --llm-parallel=tp=2 python3 "$LLMP_SRCDIR/tests/cluster/rendezvous.py"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^rendezvous [0-9]* ok$' <<<"$output")" -eq 6 ]
}

@test "PyTorch under --llm-parallel, no torchrun: llmp.torch's groups all-reduce right across nodes (gloo)" {
	# The Python environment with torch that scripts/test.sh makes (scripts/python-env.sh).
	local py=${LLMP_PYTHON:-$LLMP_BUILDDIR/venv/bin/python}
	[ -x "$py" ] || skip "no Python environment with torch at $py: run scripts/python-env.sh (or set LLMP_PYTHON)"
	PYTHONPATH=$LLMP_SRCDIR/python run timeout -k 10 300 srun -N3 --ntasks-per-node=2 --llm-parallel=tp=2,pp=3 \
		"$py" "$LLMP_SRCDIR/tests/cluster/torch_groups.py"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^torch [0-5] ok$' <<<"$output")" -eq 6 ] || { echo "$output"; false; }
}

@test "PyTorch's flight recorder dumps into the job's directory, unless the task set it" {
	local show='echo "fr $SLURM_PROCID ${TORCH_NCCL_TRACE_BUFFER_SIZE-<unset>} ${TORCH_FR_BUFFER_SIZE-<unset>} ${TORCH_NCCL_DUMP_ON_TIMEOUT-<unset>} ${TORCH_NCCL_DEBUG_INFO_TEMP_FILE-<unset>} ${TORCH_FR_DUMP_TEMP_FILE-<unset>}"'
	LLMP_METRICS="$WORK/metrics,every=5s" run srun -N2 -n2 --llm-parallel=tp=2 sh -c "$show"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c "^fr [01] 2000 2000 1 $WORK/metrics/fr/rank_ $WORK/metrics/fr/rank_\$" <<<"$output")" -eq 2 ] ||
		{ echo "$output"; false; }
	[ -d "$WORK/metrics/fr" ]
	# Without LLMP_METRICS, the checkpoint root; the task's own value stays.
	TORCH_FR_BUFFER_SIZE=50 run srun -N1 -n2 --llm-parallel=tp=2 --llm-checkpoint="$WORK/ck" sh -c "$show"
	[ "$(grep -c "^fr [01] 2000 50 1 $WORK/ck/fr/rank_ $WORK/ck/fr/rank_\$" <<<"$output")" -eq 2 ] ||
		{ echo "$output"; false; }
	# Neither: nothing set.
	run srun -N1 -n1 --llm-parallel=tp=1 sh -c "$show"
	grep -qx "fr 0 <unset> <unset> <unset> <unset> <unset>" <<<"$output" || { echo "$output"; false; }
}

@test "MASTER_PORT: a salted hash of job and step, a fresh salt per srun; Slurm's reserved port first" {
	# The port worked out here from the task's own job, step and salt (site.h).
	port_of() { # output
		python3 - "$1" <<-'PY'
			import re, sys
			M = (1 << 64) - 1
			def mix(x):
			    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
			    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
			    return x ^ (x >> 31)
			env = dict(re.findall(r'(\w+)=(\S*)', sys.argv[1]))
			job, step, salt = int(env['SLURM_JOB_ID']), int(env['SLURM_STEP_ID']), int(env['LLMP_PORT_SALT'], 16)
			want = 20000 + mix(mix(job << 32 | step) ^ salt) % 10000
			assert int(env['MASTER_PORT']) == want, (env['MASTER_PORT'], want)
			print(env['LLMP_PORT_SALT'])
		PY
	}
	show='echo "SLURM_JOB_ID=$SLURM_JOB_ID SLURM_STEP_ID=$SLURM_STEP_ID LLMP_PORT_SALT=$LLMP_PORT_SALT MASTER_PORT=$MASTER_PORT"'
	run srun -n1 --llm-parallel=tp=1 sh -c "$show"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	a=$(port_of "$output")
	run salloc -n1 sh -c "srun --llm-parallel=tp=1 sh -c '$show'; srun --llm-parallel=tp=1 sh -c '$show'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	b=$(port_of "$(grep MASTER_PORT= <<<"$output" | sed -n 1p)")
	c=$(port_of "$(grep MASTER_PORT= <<<"$output" | sed -n 2p)")
	[ -n "$a" ] && [ "$a" != "$b" ] && [ "$b" != "$c" ] # 64 random bits each
	SLURM_STEP_RESV_PORTS=23456-23459 run srun -n1 --export=ALL,SLURM_STEP_RESV_PORTS=23456-23459 --llm-parallel=tp=1 sh -c "$show"
	grep -q 'MASTER_PORT=23456$' <<<"$output" || { echo "$output"; false; }
}

@test "GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME: the interface toward srun's node, unless the user set them" {
	# Each node of the test cluster reaches the others through its eth0
	# (tests/cluster/cluster.sh); its host name resolves to loopback, where a
	# gloo rendezvous hangs.
	local show='echo "ifname $SLURMD_NODENAME ${GLOO_SOCKET_IFNAME-<unset>} ${NCCL_SOCKET_IFNAME-<unset>}"'
	run srun -N3 --llm-parallel=tp=1 sh -c "$show"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^ifname node[1-3] eth0 eth0$' <<<"$output")" -eq 3 ] || { echo "$output"; false; }
	GLOO_SOCKET_IFNAME=lo run srun -N3 --llm-parallel=tp=1 sh -c "$show"
	[ "$(grep -c '^ifname node[1-3] lo eth0$' <<<"$output")" -eq 3 ] || { echo "the user's value must stay: $output"; false; }
	run srun -N1 sh -c "$show"
	grep -Eq '^ifname node[1-3] <unset> <unset>$' <<<"$output" || { echo "a job without the option is untouched: $output"; false; }
}

@test "llmp topo in a step: each node under its leaf and the spine, from SLURM_TOPOLOGY_ADDR" {
	# topology.conf of tests/cluster/cluster.sh: leaf1 holds node1 and node2,
	# leaf2 node3, the spine both leaves. Read by tests/topology/topo_model.py.
	local dir=$WORK/topo
	mkdir -p "$dir"
	run srun -N3 sh -c '"$0" topo --format json >"$1/topo-$SLURMD_NODENAME.json"' "$LLMP" "$dir"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	for n in 1 2 3; do
		run python3 "$LLMP_SRCDIR/tests/topology/topo_model.py" hosts "$dir/topo-node$n.json"
		local leaf=leaf1
		[ "$n" -ne 3 ] || leaf=leaf2
		[ "$output" = "node$n node$n - $leaf spine" ] || { echo "node$n: $output"; false; }
	done
}

@test "llmp topo --job: every node gathered in llmp_init's one fence, printed once by rank 0" {
	need_mpi_pmix
	run timeout -k 10 120 srun --mpi=pmix -N3 --ntasks-per-node=2 "$LLMP" topo --job --format json
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	printf '%s\n' "$output" >"$WORK/job-topo.json"
	run python3 "$LLMP_SRCDIR/tests/topology/topo_model.py" hosts "$WORK/job-topo.json"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# tests/cluster/cluster.sh's topology.conf, each node named as Slurm names it.
	[ "$(sort <<<"$output")" = "$(printf '%s\n' 'node1 node1 - leaf1 spine' 'node2 node2 - leaf1 spine' \
		'node3 node3 - leaf2 spine')" ] || { echo "$output"; false; }
	# Text from rank 0 alone: one summary line per node type.
	run timeout -k 10 120 srun --mpi=pmix -N3 "$LLMP" topo --job
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^node type node[1-3]: 1 host' <<<"$output")" -eq 3 ] || { echo "$output"; false; }
	# Then the fabric across them (rails.c): these nodes have no GPU, so no rail to disagree.
	grep -q "^rails: every rail's ports agree" <<<"$output" || { echo "$output"; false; }
	# And each node's GPUDirect RDMA, judged on the node and gathered: none has a GPU here.
	grep -q '^GPUDirect RDMA, each GPU with its nearest usable HCA:$' <<<"$output" || { echo "$output"; false; }
	[ "$(grep -c '^  node[1-3]: no GPU with a usable HCA$' <<<"$output")" -eq 3 ] || { echo "$output"; false; }
}

@test "placement on a node: GPUs by the topology, the nearest HCA for UCX, the node's HCAs for NCCL; a bad file warns" {
	# The test nodes described as PCIe boxes (etc/topology/pcie-4gpu.json):
	# GPUs 0,1 under one PCIe switch, 2,3 under another, one RoCE HCA. With cp
	# fastest the tp pairs are ranks (0,2) and (1,3): each pair under one
	# switch, so rank 1 gets GPU 2 and rank 2 GPU 1 (worked out by hand):
	# every task sees the four, and LOCAL_RANK names its own.
	python3 - "$LLMP_SRCDIR/etc/topology/pcie-4gpu.json" "$WORK/nodes.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["nodes"] = [{"hosts": "node[1-3]", "type": "pcie-4gpu"}]
doc["switches"] = []
json.dump(doc, open(sys.argv[2], "w"))
PY
	local show='echo "place $SLURM_PROCID $LOCAL_RANK $CUDA_VISIBLE_DEVICES ${UCX_NET_DEVICES-<unset>} ${NCCL_IB_HCA-<unset>}"'
	LLMP_TOPOLOGY_FILE=$WORK/nodes.json run srun -N1 -n4 --gres=gpu:4 \
		--llm-parallel=tp=2,cp=2,order=cp-tp-ep-dp-pp sh -c "$show"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	for want in "0 0" "1 2" "2 1" "3 3"; do
		grep -qx "place $want 0,1,2,3 mlx5_0:1 =mlx5_0" <<<"$output" || { echo "want $want: $output"; false; }
	done
	# GPUDirect RDMA (doc/gpudirect.md): the boxes' NIC hangs on another root port than any
	# GPU, NCCL's PHB, beyond its default PXB; the rest is this machine's own state, read here.
	local gdr="llm_parallel: node[1-3]: GPUDirect RDMA on 0 of 4 task pairs; GPU 0000:03:00.0 / mlx5_0: no: "
	[ "$(grep -c "^$gdr" <<<"$output")" -eq 1 ] || { echo "one GDR line per node: $output"; false; }
	local line why
	line=$(grep "^$gdr" <<<"$output")
	local whys=("path PHB beyond NCCL_NET_GDR_LEVEL=PXB")
	[ -e /sys/module/nvidia_peermem/version ] || [ -e /sys/kernel/mm/memory_peers/nv_mem/version ] ||
		whys+=("no nvidia_peermem or nv_peer_mem loaded")
	[ -e /proc/driver/nvidia/version ] || whys+=("no dma-buf: no NVIDIA kernel module loaded")
	ls /dev/infiniband/uverbs* >/dev/null 2>&1 || whys+=("no /dev/infiniband/uverbs* visible")
	for why in "${whys[@]}"; do
		grep -qF "$why" <<<"$line" || { echo "want '$why': $line"; false; }
	done
	# Nothing there is known to break GDR: NCCL_NET_GDR_LEVEL is left to NCCL. This machine's
	# sysfs shows none of the boxes' GPUs: the file's PCIe tree goes to NCCL as NCCL_TOPO_FILE,
	# checked here on its own against the fixture (grammar, and NCCL's tree from the chains).
	LLMP_TOPOLOGY_FILE=$WORK/nodes.json run srun -N1 -n2 --gres=gpu:4 --llm-parallel=tp=2 \
		sh -c 'echo "level ${NCCL_NET_GDR_LEVEL-<unset>} file ${NCCL_TOPO_FILE-<unset>}"
			[ "$SLURM_LOCALID" != 0 ] || cat "$NCCL_TOPO_FILE" >"$0"' "$WORK/nccl.xml"
	[ "$(grep -c '^level <unset> file /.*\.nccl-topo\.xml$' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	run python3 "$LLMP_SRCDIR/tests/topology/nccl_xml_check.py" "$LLMP_SRCDIR/etc/topology/pcie-4gpu.json" \
		pcie-4gpu "$WORK/nccl.xml"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$WORK/nccl.xml"; false; }
	# The user's own stay; without a file, NCCL reads sysfs itself.
	LLMP_TOPOLOGY_FILE=$WORK/nodes.json NCCL_TOPO_FILE=/mine NCCL_NET_GDR_LEVEL=PHB run srun -N1 -n1 \
		--gres=gpu:4 --llm-parallel=tp=1 sh -c 'echo "level $NCCL_NET_GDR_LEVEL file $NCCL_TOPO_FILE"'
	grep -qx "level PHB file /mine" <<<"$output" || { echo "$output"; false; }
	# One GPU per task: the same GPUs, each alone in the task's list.
	LLMP_TOPOLOGY_FILE=$WORK/nodes.json run srun -N1 -n4 --gres=gpu:4 --llm-gpu-bind=task \
		--llm-parallel=tp=2,cp=2,order=cp-tp-ep-dp-pp sh -c "$show"
	for want in "0 0 0" "1 0 2" "2 0 1" "3 0 3"; do
		grep -qx "place $want mlx5_0:1 =mlx5_0" <<<"$output" || { echo "want $want: $output"; false; }
	done
	# The user's own values stay.
	LLMP_TOPOLOGY_FILE=$WORK/nodes.json UCX_NET_DEVICES=all NCCL_IB_HCA=mine run srun -N1 -n4 --gres=gpu:4 \
		--llm-parallel=tp=2,cp=2,order=cp-tp-ep-dp-pp sh -c "$show"
	grep -qx "place 1 2 0,1,2,3 all mine" <<<"$output" || { echo "$output"; false; }
	# The site's description (plugstack topology=) when the job names none.
	write_plugstack "topology=$WORK/nodes.json"
	run srun -N1 -n4 --gres=gpu:4 --llm-parallel=tp=2,cp=2,order=cp-tp-ep-dp-pp sh -c "$show"
	grep -qx "place 1 2 0,1,2,3 mlx5_0:1 =mlx5_0" <<<"$output" || { echo "site topology=: $output"; false; }
	write_plugstack
	# A file that is not there: a warning once per node, local order, the step runs.
	LLMP_TOPOLOGY_FILE=$WORK/none.json run srun -N1 -n4 --gres=gpu:4 --llm-parallel=tp=2 sh -c "$show"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "warning: topology $WORK/none.json: No such file or directory; tasks take GPUs in local order" \
		<<<"$output" || { echo "$output"; false; }
	grep -qx "place 1 1 0,1,2,3 <unset> <unset>" <<<"$output" || { echo "$output"; false; }
}

@test "--llm-placement=topology: ranks follow the tree, MASTER_ADDR is rank 0's host; cyclic tasks and no file refused" {
	write_renumber_topology "$WORK/tree.json"
	local show='echo "task $SLURM_PROCID $SLURMD_NODENAME rank $RANK $LLMP_RANK $LLMP_TP_RANK $LLMP_PP_RANK master $MASTER_ADDR $LLMP_PLACEMENT"'
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run srun -N3 --ntasks-per-node=2 --llm-parallel=tp=2,pp=3 \
		--llm-placement=topology sh -c "$show"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# By hand: node2's tasks 2,3 are ranks 0,1; node3's 4,5 are 2,3; node1's 0,1 are 4,5.
	for want in "0 node1 rank 4 4 0 2" "1 node1 rank 5 5 1 2" "2 node2 rank 0 0 0 0" "3 node2 rank 1 1 1 0" \
		"4 node3 rank 2 2 0 1" "5 node3 rank 3 3 1 1"; do
		grep -Eq "^task $want master node2 topology:[0-9a-f]{16}\$" <<<"$output" || { echo "want $want: $output"; false; }
	done
	# One placement: every task carries the same digest.
	[ "$(grep -o 'topology:[0-9a-f]*' <<<"$output" | sort -u | wc -l)" -eq 1 ] || { echo "$output"; false; }
	# Without the option, ranks are Slurm's task ids.
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run srun -N3 --ntasks-per-node=2 --llm-parallel=tp=2,pp=3 sh -c "$show"
	grep -qx "task 2 node2 rank 2 2 0 1 master node1 block" <<<"$output" || { echo "$output"; false; }
	# Cyclic task ids cannot follow a placement every node computes alone: the step fails, saying why.
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run srun -N3 --ntasks-per-node=2 -m cyclic --llm-parallel=tp=2,pp=3 \
		--llm-placement=topology sh -c "$show"
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	grep -q "llm_parallel: --llm-placement=topology: task 3 is local task 1 of node 0, where block distribution puts task 1" \
		<<<"$output" || { echo "$output"; false; }
	! grep -q '^task ' <<<"$output"
	# Nothing to place on: refused at submission, as is a mistyped mode.
	run srun -N1 -n2 --llm-parallel=tp=2 --llm-placement=topology true
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: --llm-placement=topology needs a description of the job's nodes: set LLMP_TOPOLOGY_FILE" \
		<<<"$output" || { echo "$output"; false; }
	run srun -N1 -n2 --llm-parallel=tp=2 --llm-placement=tree true
	[ "$status" -ne 0 ]
	grep -q "llm_parallel: --llm-placement: expected 'block' or 'topology'" <<<"$output" || { echo "$output"; false; }
	assert_cluster_idle
}

@test "a tp group the topology cannot keep in a node: rank 0 warns once with the cost" {
	write_renumber_topology "$WORK/tree.json"
	# tp=4 over node2 and node3, 2 tasks each, under leaf a. Their HCA
	# (pcie-4gpu.json's) is 100 Gb/s = 12.5 GB/s, shared by the node's 2
	# tasks: 6.25 GB/s, against PCIe's 24 GB/s inside the node.
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run srun -N3 --ntasks-per-node=2 --llm-parallel=tp=2,pp=3 \
		--llm-placement=topology true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	! grep -q 'warning' <<<"$output" || { echo "tp=2 stays in a node: $output"; false; }
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run srun -N2 -w 'node[2-3]' --ntasks-per-node=2 --llm-parallel=tp=4 \
		--llm-placement=topology true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c 'warning' <<<"$output")" -eq 1 ] || { echo "$output"; false; }
	grep -q "llm_parallel: warning: tensor-parallel groups leave their node (tp group 0: ranks 0,1,2,3, under one leaf switch): 6.2 GB/s per GPU over the network instead of 24.0 GB/s inside a node, 4x the time per byte" \
		<<<"$output" || { echo "$output"; false; }
}

# The example job as README.md submits it: Slurm runs a spooled copy of the
# script, so it must find show_layout.py from the path given to sbatch. Each
# task's coordinates are worked out here: order tp-cp-ep-dp-pp, leftmost
# fastest, so with tp=2 pp=3 (dp=2) rank r has tp=r%2, dp=(r/2)%2, pp=r/4.
check_demo_output() { # FILE
	local r line
	[ "$(grep -c '^rank ' "$1")" -eq 12 ] || { cat "$1"; return 1; }
	for r in $(seq 0 11); do
		line=$(grep -E "^rank +$r on " "$1") || { echo "no line for rank $r"; cat "$1"; return 1; }
		grep -q "| tp=$((r % 2)) cp=0 dp=$((r / 2 % 2)) pp=$((r / 4)) |" <<<"$line" ||
			{ echo "rank $r: $line"; return 1; }
	done
}

@test "the example job runs as README.md submits it: from the source tree, and by absolute path elsewhere" {
	run env -u LLMP_EXAMPLES sh -c 'cd "$1" && sbatch --wait -o "$2" --llm-parallel=tp=2,pp=3 etc/examples/llm-parallel-demo.sbatch' \
		sh "$LLMP_SRCDIR" "$WORK/out"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$WORK/out"; false; }
	check_demo_output "$WORK/out"
	run env -u LLMP_EXAMPLES sh -c 'cd "$1" && sbatch --wait -o "$2" --llm-parallel=tp=2,pp=3 "$3"' \
		sh "$WORK" "$WORK/out2" "$LLMP_SRCDIR/etc/examples/llm-parallel-demo.sbatch"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$WORK/out2"; false; }
	check_demo_output "$WORK/out2"
	assert_cluster_idle
}

# -------------------------------------------------------------- bad layouts

@test "bad specs are refused at submission by sbatch, salloc and srun: nothing queued" {
	for spec in tp=0 tp=-2 tp=x xp=2 tp=2,tp=4 order=tp-tp vpp=2 order=tp-pp,cp=2; do
		for how in sbatch srun salloc; do
			run submit "$how" --llm-parallel=$spec
			[ "$status" -ne 0 ] || { echo "$how accepted $spec"; false; }
			grep -q "^llm_parallel: --llm-parallel: " <<<"$output" ||
				{ echo "$how $spec: $output"; false; }
		done
	done
	run submit sbatch --llm-parallel=tp=0
	grep -q '^llm_parallel: --llm-parallel: tp=0: must be at least 1$' <<<"$output"
	LLMP_PARALLEL=pp=zero run submit srun
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: LLMP_PARALLEL: pp=zero: not a number' <<<"$output"
	assert_queue_empty
	assert_cluster_idle
}

@test "srun refuses a layout that does not divide its tasks before asking for an allocation" {
	# Job ids are given one after the other: if srun got an allocation
	# between two sbatch jobs, their ids are two apart.
	first=$(sbatch --parsable -n1 -o /dev/null --wrap=true)
	run srun -N1 -n6 --llm-parallel=tp=4 "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: tp\*pp\*cp = 4\*1\*1 = 4 does not divide 6 tasks (6 tasks on 1 node)$' <<<"$output"
	! grep -q '^task ' <<<"$output"
	! grep -q 'job [0-9]* queued\|Granted job allocation' <<<"$output"
	# The count from -N and --ntasks-per-node, and -n alone.
	run srun -N3 --ntasks-per-node=2 --llm-parallel=pp=4 "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: .*does not divide 6 tasks (6 tasks on 3 nodes)$' <<<"$output" || { echo "$output"; false; }
	run srun -n9 --llm-parallel=tp=2 "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: tp\*pp\*cp = 2\*1\*1 = 2 does not divide 9 tasks (9 tasks)$' <<<"$output" || { echo "$output"; false; }
	second=$(sbatch --parsable -n1 -o /dev/null --wrap=true)
	[ "$second" -eq $((first + 1)) ] || { echo "job ids $first then $second: srun was allocated"; false; }
	# A count srun's command line does not give (the command's own -n is the
	# command's): still refused before launch, once the step exists.
	run srun -N2 --llm-parallel=tp=4 "$TASK_ENV" -n 8
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: tp\*pp\*cp = 4\*1\*1 = 4 does not divide 2 tasks (2 tasks on 2 nodes)$' <<<"$output" || { echo "$output"; false; }
	! grep -q '^task ' <<<"$output"
	assert_cluster_idle
}

@test "sbatch: an inner srun whose layout does not fit fails the job; nodes stay idle" {
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		srun "$TASK_ENV"
	EOF
	run sbatch --wait -N3 -n9 -o "$WORK/out" --llm-parallel=tp=2 "$WORK/job.sh"
	[ "$status" -ne 0 ]
	output=$(cat "$WORK/out")
	grep -q '^llm_parallel: tp\*pp\*cp = 2\*1\*1 = 2 does not divide 9 tasks (9 tasks on 3 nodes)$' <<<"$output"
	! grep -q '^task ' <<<"$output"
	assert_cluster_idle
	assert_queue_empty
}

@test "inside the step: a layout only the tasks see fails them, with the reason, no drain" {
	# srun cannot see a variable exported to the tasks only: the step must refuse.
	run srun -N2 -n4 --export=ALL,LLMP_PARALLEL=tp=3 "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: tp\*pp\*cp = 3\*1\*1 = 3 does not divide 4 tasks (job step [0-9]*\.0: 4 tasks on 2 nodes)$' <<<"$output"
	! grep -q '^task ' <<<"$output"
	# Too long for the step's buffer: refused by name, not taken as unset.
	long=tp=$(printf '0%.0s' $(seq 300))1
	run srun -N1 -n2 --export=ALL,LLMP_PARALLEL=$long "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: LLMP_PARALLEL: layout is longer than 256 characters$' <<<"$output"
	! grep -q '^task ' <<<"$output"
	assert_cluster_idle
}

@test "a node that cannot write the layout file fails the step with the reason" {
	write_plugstack layout_dir=/nonexistent
	run srun -N2 -n4 --llm-parallel=tp=2 "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -qE '^llm_parallel: cannot create the layout file /nonexistent/llmp-layout\.[0-9]+\.0\.[01]\.[0-9a-f]{16}\.json: No such file or directory$' <<<"$output" || { echo "$output"; false; }
	! grep -q '^task ' <<<"$output"
	assert_cluster_idle
}

@test "a mistyped plugstack argument stops submissions with the argument named" {
	write_plugstack max_tpp=4
	run srun -n1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q "llm_parallel: plugstack argument 'max_tpp=4': unknown" <<<"$output"
	write_plugstack checkpoint=every=30,keep=0
	run srun -n1 --llm-checkpoint="$WORK/ck" true
	[ "$status" -ne 0 ]
	grep -q "llm_parallel: plugstack argument 'checkpoint=every=30,keep=0': keep=0: must be at least 1" <<<"$output"
	assert_cluster_idle
}

# ------------------------------------------------- the model: --llm-model

# A model of 1.9e9 parameters (8 x 12 h^2 + 2 h vocab) without the
# distributed optimizer: 18 bytes each is 31 GiB, so no rank of a 16 GiB GPU
# holds it whole.
BIG_MODEL=layers=8,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,distopt=0,gbs=64
SMALL_GPU=mem=16,tflops=100

# The layout and Megatron flags llmp plan chooses, as "SPEC FLAGS" lines: the
# flags written here from the plan's JSON with Megatron-LM's names.
planned() { # MODEL GPU WORLD
	planned_by --model "$1" --gpu "$2" --world "$3"
}

planned_by() { # llmp plan's arguments but --parallel and --format
	python3 - "$("$LLMP" plan "$@" --parallel auto --format json)" <<-'PY'
		import json, sys
		plan = json.loads(sys.argv[1])
		l, m = plan["layout"], plan["model"]
		spec = ",".join(f"{k}={l[k]}" for k in ("tp", "pp", "cp", "ep", "etp", "dp"))
		spec += f",vpp={l['vpp']}" if l["vpp"] > 1 else ""
		flags = f"--micro-batch-size {l['mbs']} --global-batch-size 64"
		flags += " --sequence-parallel" if l["tp"] > 1 else ""
		flags += " --use-distributed-optimizer" if m["zero"] >= 1 else ""
		if m["overlap_grad_reduce"] and m["zero"] <= 1:  # the dp overlap the estimate assumed
		    flags += " --overlap-grad-reduce" + (" --overlap-param-gather" if m["overlap_param_gather"] else "")
		flags += {"none": "", "selective": " --recompute-granularity selective",
		          "full": " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"}[l["recompute"]]
		if l["recompute"] == "full" and l["recompute_layers"]:  # Megatron's block method: the first N of a chunk
		    flags = flags.replace("uniform --recompute-num-layers 1", f"block --recompute-num-layers {l['recompute_layers']}")
		if l["recompute_moe_act"]:  # an MoE model's experts' activation, with flash attention
		    flags += " --recompute-modules moe_act --moe-grouped-gemm"
		print(spec)
		print(flags)
	PY
}

@test "--llm-model: a layout that cannot fit is refused by sbatch and srun before queueing" {
	LLMP_GPU=$SMALL_GPU run submit sbatch -n8 --llm-parallel=tp=1 --llm-model=$BIG_MODEL
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: custom cannot fit a custom (16.0 GiB) at any job size: .*largest term: optimizer states" <<<"$output"
	LLMP_GPU=$SMALL_GPU run srun -N2 -n8 --llm-parallel=tp=2 --llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: custom does not fit: tp=2,pp=1,.* needs .* GiB per GPU on pipeline stage 0" <<<"$output"
	! grep -q '^task ' <<<"$output"
	LLMP_GPU=h100x run submit srun --llm-model=$BIG_MODEL
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: LLMP_GPU: " <<<"$output"
	run submit sbatch --llm-parallel=auto
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: --llm-parallel=auto needs the model: --llm-model" <<<"$output"
	assert_queue_empty
	assert_cluster_idle
}

# A layout's estimated peak in GiB, from llmp plan (recompute given: the same on any GPU).
peak_gib() { # MODEL WORLD SPEC
	"$LLMP" plan --world "$2" --model "$1" --gpu mem=1000,tflops=100 --parallel "$3" --format json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["memory"]["peak_bytes"] / 2**30)'
}

# A GPU of GIB / RATIO GiB.
gpu_below() { # GIB RATIO
	python3 -c "import sys; print(f'mem={float(sys.argv[1]) / float(sys.argv[2]):.3f},tflops=100')" "$1" "$2"
}

@test "--llm-model: the guard runs a layout within its error band with a warning, refuses one beyond" {
	local model=$BIG_MODEL,recompute=selective peak doubtful beyond
	peak=$(peak_gib "$model" 8 tp=2)
	# Megatron on a GPU without measured runs: the band is 0.15 (planner/mem_guard.h)
	doubtful=$(gpu_below "$peak" 1.10) beyond=$(gpu_below "$peak" 1.30)
	LLMP_GPU=$doubtful run srun -N2 -n8 --llm-parallel=tp=2 --llm-model=$model "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "^llm_parallel: warning: custom may not fit: tp=2,pp=1,.* at the favourable end of the model's memory error (estimate / 1.150) fits; if it runs out of memory, lower the optimizer states: " <<<"$output" ||
		{ echo "$output"; false; }
	[ "$(grep '^task ' <<<"$output" | awk '{print $2}' | sort -un | wc -l)" -eq 8 ] # every task ran
	grep -q "llm_parallel: job [0-9]* step [0-9]*: the layout is beyond the memory estimate; memory guard: doubtful" \
		"$CLUSTER_STATE"/log/slurmd-node*.log

	LLMP_GPU=$beyond run srun -N2 -n8 --llm-parallel=tp=2 --llm-model=$model "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: custom does not fit: tp=2,pp=1,.* even with .*; lower the optimizer states: the distributed optimizer (zero=1 .*--llm-guard=warn runs it anyway)$" <<<"$output" ||
		{ echo "$output"; false; }
	! grep -q '^task ' <<<"$output"

	# The user's override runs it, said on the terminal and in slurmd's log.
	LLMP_GPU=$beyond run srun -N2 -n8 --llm-parallel=tp=2 --llm-model=$model --llm-guard=warn "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "^llm_parallel: warning: --llm-guard=warn overrides the memory guard: run although custom does not fit" <<<"$output"
	[ "$(grep '^task ' <<<"$output" | awk '{print $2}' | sort -un | wc -l)" -eq 8 ]
	grep -q "llm_parallel: job [0-9]* step [0-9]*: the layout is beyond the memory estimate; memory guard: overridden" \
		"$CLUSTER_STATE"/log/slurmd-node*.log
	run srun -n1 --llm-guard=maybe true
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: --llm-guard: expected 'warn'" <<<"$output"

	# A site that forbids the override refuses it at submission; one with a band of 5% refuses the doubtful layout.
	write_plugstack guard_override=no
	LLMP_GPU=$beyond run submit sbatch -n8 --llm-parallel=tp=2 --llm-model=$model --llm-guard=warn
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: --llm-guard=warn: this site does not let the memory guard be overridden (guard_override=no in plugstack.conf)" <<<"$output"
	write_plugstack guard_band=0.05
	LLMP_GPU=$doubtful run srun -N2 -n8 --llm-parallel=tp=2 --llm-model=$model "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: custom does not fit: .*(estimate / 1.050)" <<<"$output"
	# the same band from llmp calibrate's file (calibration=), with the site's GPU in it
	printf '# llmp calibrate\ngpu=%s guard_band=0.05\n' "$doubtful" >"$WORK/calibration.conf"
	write_plugstack calibration="$WORK/calibration.conf"
	run srun -N2 -n8 --llm-parallel=tp=2 --llm-model=$model "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: custom does not fit: .*(estimate / 1.050)" <<<"$output" || { echo "$output"; false; }
	write_plugstack guard=bogus
	run srun -n1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q "llm_parallel: plugstack argument 'guard=bogus': expected refuse, warn or off" <<<"$output"
	assert_queue_empty
	assert_cluster_idle
}

@test "--llm-parallel=auto: srun's step gets llmp plan's layout and the model's Megatron flags" {
	local want spec flags
	want=$(planned "$BIG_MODEL" "$SMALL_GPU" 8)
	spec=$(sed -n 1p <<<"$want") flags=$(sed -n 2p <<<"$want")
	[[ $spec != tp=1,pp=1,* ]] # the model needs cutting: not the default layout
	LLMP_GPU=$SMALL_GPU run srun -N2 -n8 --llm-parallel=auto --llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -eq 0 ]
	grep -q "^llm_parallel: --llm-parallel=auto chose ${spec//,/,.*}" <<<"$output" || { echo "want $spec: $output"; false; }
	check_tasks "$spec" 8 --model-args "$flags"
	# in a batch job, with the site's GPU: the inner srun chooses for its own size
	write_plugstack gpu=$SMALL_GPU
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		srun "$TASK_ENV"
	EOF
	run sbatch --wait -N2 -n8 -o "$WORK/out" --llm-parallel=auto --llm-model=$BIG_MODEL "$WORK/job.sh"
	[ "$status" -eq 0 ]
	output=$(cat "$WORK/out")
	check_tasks "$spec" 8 --model-args "$flags"
	assert_cluster_idle
}

# srun -n8 --llm-parallel=auto for MODEL on GPU chooses llmp plan's layout, whose
# Megatron flags hold WANT, and every task gets those flags.
auto_recompute_reaches_step() { # MODEL GPU WANT
	local want spec flags
	want=$(planned "$1" "$2" 8)
	spec=$(sed -n 1p <<<"$want") flags=$(sed -n 2p <<<"$want")
	[[ $flags == *"$3"* ]] || { echo "no '$3': $flags"; false; }
	LLMP_GPU=$2 run srun -N2 -n8 --llm-parallel=auto --llm-model=$1 "$TASK_ENV"
	[ "$status" -eq 0 ]
	grep -q "^llm_parallel: --llm-parallel=auto chose ${spec//,/,.*}" <<<"$output" || { echo "want $spec: $output"; false; }
	check_tasks "$spec" 8 --model-args "$flags"
	assert_cluster_idle
}

@test "--llm-parallel=auto: where only full recompute fits, the block method's flags reach the step" {
	# At seq 16384 on 12 GiB GPUs no layout of 8 fits with selective recompute
	# (llmp plan: 285 valid, 17 fit, all with full recompute).
	auto_recompute_reaches_step "${BIG_MODEL/seq=2048/seq=16384}" mem=12,tflops=100 \
		"--recompute-method block --recompute-num-layers "
}

@test "--llm-parallel=auto: an MoE model's experts' activation recomputed, its flags reach the step" {
	# On 10 GiB GPUs the fastest layout of 8 for this MoE model fits only with the routed
	# experts' activation recomputed (llmp plan: recompute=selective,recompute-moe-act=1).
	auto_recompute_reaches_step \
		layers=8,hidden=2048,heads=16,seq=4096,vocab=32000,experts=8,topk=2,moe-ffn=4096,mlp=swiglu,gbs=64 \
		mem=10,tflops=100 "--recompute-modules moe_act --moe-grouped-gemm"
}

# The test nodes as PCIe boxes (pcie-4gpu.json) whose type says its GPU, under
# two leaves (HOSTS node[1-3]), or some of them without the tree: srun places
# auto's layouts there.
write_gpu_topology() { # OUT GPU HOSTS
	python3 - "$LLMP_SRCDIR/etc/topology/pcie-4gpu.json" "$@" <<-'PY'
		import json, sys
		doc = json.load(open(sys.argv[1]))
		doc["node_types"]["pcie-4gpu"]["gpu"] = sys.argv[3]
		doc["nodes"] = [{"hosts": sys.argv[4], "type": "pcie-4gpu"}]
		doc["switches"] = [{"name": "spine", "switches": "a,b"},
		                   {"name": "a", "nodes": "node[2-3]"}, {"name": "b", "nodes": "node1"}]
		if sys.argv[4] != "node[1-3]":
		    doc["switches"] = []  # the tree names every node: none for a part
		json.dump(doc, open(sys.argv[2], "w"))
	PY
}

@test "--llm-parallel=auto on a topology file: srun's choice is llmp plan --topology's" {
	local want spec flags plain
	write_gpu_topology "$WORK/tree.json" "$SMALL_GPU" "node[1-3]"
	want=$(planned_by --model "$BIG_MODEL" --topology "$WORK/tree.json" --hosts 'node[1-2]' --tasks-per-node 4)
	spec=$(sed -n 1p <<<"$want") flags=$(sed -n 2p <<<"$want")
	plain=$(planned "$BIG_MODEL" "$SMALL_GPU" 8 | sed -n 1p)
	[ "$spec" != "$plain" ] || { echo "the placement should change the choice: $spec"; false; }
	# No LLMP_GPU: the node type's "gpu" is the GPU. Four tasks a node, as
	# llmp plan was told (Slurm would otherwise fill node1 first: 7 + 1).
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run srun -w 'node[1-2]' -N2 --ntasks-per-node=4 --llm-parallel=auto \
		--llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "^llm_parallel: --llm-parallel=auto chose ${spec//,/,.*}[, ].*(placed on the topology" <<<"$output" ||
		{ echo "want $spec: $output"; false; }
	! grep -q "warning" <<<"$output" || { echo "$output"; false; }
	check_tasks "$spec" 8 --model-args "$flags"
	# The site's topology=, in a batch job: the inner srun places the same way.
	write_plugstack "topology=$WORK/tree.json"
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		srun "$TASK_ENV"
	EOF
	run sbatch --wait -w 'node[1-2]' -N2 --ntasks-per-node=4 -o "$WORK/out" --llm-parallel=auto --llm-model=$BIG_MODEL \
		"$WORK/job.sh"
	[ "$status" -eq 0 ]
	output=$(cat "$WORK/out")
	check_tasks "$spec" 8 --model-args "$flags"
	# A file without node2: one warning naming it, the choice without the topology.
	write_plugstack
	write_gpu_topology "$WORK/one.json" "$SMALL_GPU" "node1"
	LLMP_GPU=$SMALL_GPU LLMP_TOPOLOGY_FILE=$WORK/one.json run srun -w 'node[1-2]' -N2 --ntasks-per-node=4 \
		--llm-parallel=auto --llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^llm_parallel: warning: --llm-model: the topology not used.*node2' <<<"$output")" -eq 1 ] ||
		{ echo "$output"; false; }
	grep -q "^llm_parallel: --llm-parallel=auto chose ${plain//,/,.*}[, ].*(custom)" <<<"$output" || { echo "$output"; false; }
	assert_cluster_idle
}

# Two GPU kinds: node1 a 400 TFLOP/s GPU, node2 a 100 TFLOP/s one (pcie-4gpu boxes).
write_mixed_topology() { # OUT
	python3 - "$LLMP_SRCDIR/etc/topology/pcie-4gpu.json" "$1" <<-'PY'
		import copy, json, sys
		doc = json.load(open(sys.argv[1]))
		box = doc["node_types"].pop("pcie-4gpu")
		doc["node_types"]["fast"] = dict(copy.deepcopy(box), gpu="mem=80,tflops=400")
		doc["node_types"]["slow"] = dict(copy.deepcopy(box), gpu="mem=80,tflops=100")
		doc["nodes"] = [{"hosts": "node1", "type": "fast"}, {"hosts": "node2", "type": "slow"}]
		doc["switches"] = []
		json.dump(doc, open(sys.argv[2], "w"))
	PY
}

@test "two GPU kinds under Slurm: the layers split by speed reach the tasks (Megatron flags, LLMP_STAGE_LAYERS)" {
	# tp=1,pp=2 on node1 (stage 0) and node2 (stage 1), 8 layers. By hand,
	# in one layer's work on the fast GPU: the output layer (2 h V = 262M
	# parameters) is 0.65 of a layer (403M). 7 + 1: stage 0 takes 7, stage 1
	# (1 + 0.65) x 4 = 6.6; 6 + 2 would give stage 1 (2 + 0.65) x 4 = 10.6.
	local model=layers=8,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,gbs=64
	write_mixed_topology "$WORK/mixed.json"
	LLMP_TOPOLOGY_FILE=$WORK/mixed.json run srun -w 'node[1-2]' -N2 --ntasks-per-node=4 \
		--llm-parallel=tp=1,pp=2 --llm-model=$model "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "^llm_parallel: custom on 8 GPUs (placed on the topology" <<<"$output" || { echo "$output"; false; }
	local split='--decoder-first-pipeline-num-layers+7+--decoder-last-pipeline-num-layers+1'
	[ "$(grep -c "^task [0-7] LLMP_MEGATRON_ARGS=.*$split" <<<"$output")" -eq 8 ] || { echo "$output"; false; }
	# tp=1,pp=4 over 16 layers: stages 0,1 on node1, 2,3 on node2. The split
	# is llmp plan's on the same hosts (whose best order of the kinds is
	# Slurm's here, fast first); the middle stages differ, so no Megatron
	# flag says it: the tasks get LLMP_STAGE_LAYERS and the layout file
	# its stage_layers.
	local model16=${model/layers=8/layers=16} plan want
	plan=$("$LLMP" plan --model "$model16" --parallel tp=1,pp=4 --topology "$WORK/mixed.json" \
		--hosts 'node[1-2]' --tasks-per-node 4 --format json)
	want=$(python3 - "$plan" <<-'PY'
		import json, sys
		d = json.loads(sys.argv[1])
		chosen = [o["order"] for o in d["kind_orders"] if o["chosen"]]
		assert chosen == ["mem=80,tflops=400 then mem=80,tflops=100"], chosen
		assert d["pipeline"]["megatron_args"] is None, d["pipeline"]
		print(",".join(str(n) for n in d["pipeline"]["stage_layers"]))
	PY
	)
	[ -n "$want" ] && [ "$want" != 4,4,4,4 ]
	LLMP_TEST_COPY=$WORK/layout.json LLMP_TOPOLOGY_FILE=$WORK/mixed.json run srun -w 'node[1-2]' -N2 \
		--ntasks-per-node=4 --llm-parallel=tp=1,pp=4 --llm-model=$model16 sh -c \
		'"$0"; echo "stages $SLURM_PROCID $LLMP_STAGE_LAYERS"' "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "layers per stage $want (LLMP_STAGE_LAYERS" <<<"$output" || { echo "want $want: $output"; false; }
	[ "$(grep -c "^stages [0-7] $want\$" <<<"$output")" -eq 8 ] || { echo "want $want: $output"; false; }
	! grep -q 'decoder-first-pipeline-num-layers' <<<"$output" || { echo "$output"; false; }
	python3 - "$WORK/layout.json" "$want" <<-'PY'
		import json, sys
		got = json.load(open(sys.argv[1]))["stage_layers"]
		assert got == [int(n) for n in sys.argv[2].split(",")], got
	PY
	# Without the file the stages are even: no such flag.
	LLMP_GPU=h100 run srun -w 'node[1-2]' -N2 --ntasks-per-node=4 --llm-parallel=tp=1,pp=2 \
		--llm-model=$model "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	! grep -q 'decoder-first-pipeline-num-layers' <<<"$output" || { echo "$output"; false; }
	assert_cluster_idle
}

# ---------------------------------------------------------------- checkpoints

# The task's GPU through the NVML double (fake_nvml, cluster/common.bash).

@test "the task's GPU from NVML: a 16 GiB card fails a layout fitting an h100; another name is said once per node" {
	# BIG_MODEL at tp=1 keeps every parameter on each rank: 8 layers of
	# 4 h^2 + 2 h ffn (201.3M) and 2 h V (262.1M), 1872.8M parameters at 18
	# bytes, 31.4 GiB before activations: more than 16, less than an h100's 79.6.
	fake_nvml 'Tesla T4' 16384
	write_plugstack "nvml=$WORK/nvml.so" # the site names the library, never the job
	LLMP_GPU=h100 run srun -N2 -n8 --llm-parallel=tp=1 \
		--llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	! grep -q '^task ' <<<"$output" || { echo "$output"; false; }
	local line peak
	line=$(grep -m1 '^llm_parallel: Tesla T4 on node[12] has 16.0 GiB but pipeline stage 0 needs ' <<<"$output") ||
		{ echo "$output"; false; }
	grep -q 'GiB per GPU (estimated for h100)' <<<"$line" || { echo "$line"; false; }
	peak=$(sed 's/.* needs \([0-9.]*\) GiB.*/\1/' <<<"$line")
	python3 -c "import sys; p = float(sys.argv[1]); assert 31.4 <= p <= 79.6, p" "$peak" || { echo "$line"; false; }
	# The same layout on H200s: it runs, and each node says once which GPU it found.
	fake_nvml 'NVIDIA H200' 143771
	LLMP_GPU=h100 run srun -N2 -n8 --llm-parallel=tp=1 \
		--llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^task [0-7] SLURMD_NODENAME=' <<<"$output")" -eq 8 ] || { echo "$output"; false; }
	local said='^llm_parallel: warning: node[12] has NVIDIA H200 (h200, 140.4 GiB) but the layout was estimated for h100 '
	[ "$(grep -c "$said" <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	[ "$(grep -c '^llm_parallel: warning: node1 has' <<<"$output")" -eq 1 ] || { echo "$output"; false; }
	# The GPU assumed: silence. No NVML (no driver): silence too.
	fake_nvml 'NVIDIA H100 80GB HBM3' 81559
	LLMP_GPU=h100 run srun -N2 -n8 --llm-parallel=tp=1 \
		--llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	! grep -q 'llm_parallel: warning: node' <<<"$output" || { echo "$output"; false; }
	write_plugstack "nvml=$WORK/none.so"
	LLMP_GPU=mem=8,tflops=100 run srun -N2 -n8 --llm-parallel=tp=2 \
		--llm-model=${BIG_MODEL/layers=8/layers=1} "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	assert_cluster_idle
}

@test "the task's GPU from NVML: another user's process on it fails the task, naming pid, uid and MiB" {
	# A process of another user, as a job that escaped its cleanup leaves one on a GPU.
	setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300 &
	local zombie=$!
	fake_nvml 'NVIDIA H100 80GB HBM3' 81559 "$zombie:812"
	write_plugstack "nvml=$WORK/nvml.so"
	LLMP_GPU=h100 run srun -w node1 -N1 -n2 --llm-parallel=tp=1 --llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	! grep -q '^task ' <<<"$output" || { echo "$output"; false; }
	grep -q "^llm_parallel: GPU GPU-[0-9A-F]* on node1 already runs 1 process of another user or job: pid $zombie of uid $(id -u nobody) (812 MiB): left behind by an earlier job" <<<"$output" ||
		{ echo "$output"; false; }
	# A step without a model checks its tasks' GPUs the same way: each task names its own.
	run srun -w node1 -N1 -n2 --llm-parallel=tp=1 "$TASK_ENV"
	kill "$zombie"
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	! grep -q '^task ' <<<"$output" || { echo "$output"; false; }
	grep -q "^llm_parallel: GPU GPU-1B on node1 already runs 1 process of another user or job: pid $zombie " <<<"$output" ||
		{ echo "$output"; false; }
	grep -q "^llm_parallel: GPU GPU-3D on node1 already runs 1 process of another user or job: pid $zombie " <<<"$output" ||
		{ echo "$output"; false; }
	# The job's own user's process (root's, here): the task runs.
	fake_nvml 'NVIDIA H100 80GB HBM3' 81559 "$$:100"
	LLMP_GPU=h100 run srun -w node1 -N1 -n2 --llm-parallel=tp=1 --llm-model=$BIG_MODEL "$TASK_ENV"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^task [01] ' <<<"$output")" -ge 2 ] || { echo "$output"; false; }
	assert_cluster_idle
}

@test "--llm-node-check: a GPU held by another user or asking for a reset fails the check, naming it; clean passes" {
	setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300 &
	local zombie=$!
	fake_nvml 'NVIDIA H100 80GB HBM3' 81559 # node1: clean
	fake_nvml_node node2 "$zombie:812" - -
	fake_nvml_node node3 - - 1
	# clean=check alone: these jobs' epilogs leave the nodes as they are.
	write_plugstack "nvml=$WORK/nvml.so clean_gpus=all clean=check"
	run srun --quiet -w node1 -N1 --llm-node-check echo fit
	[ "$status" -eq 0 ] && [ "$output" = fit ] || { echo "$output"; false; }
	run srun --quiet -w node2 -N1 --llm-node-check echo fit
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	! grep -q '^fit' <<<"$output" || { echo "$output"; false; }
	grep -q "^llm_parallel: node2 is unfit for the job's next run: llmp: GPU GPU-1B pid $zombie uid $(id -u nobody) 812 MiB; " <<<"$output" ||
		{ echo "$output"; false; }
	run srun --quiet -w node3 -N1 --llm-node-check echo fit
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	grep -q "^llm_parallel: node3 is unfit for the job's next run: llmp: GPU GPU-1B asks for a GPU reset (NVML recovery action 1); " <<<"$output" ||
		{ echo "$output"; false; }
	# The site without check: the same node passes; no check asked: no NVML read.
	write_plugstack "nvml=$WORK/nvml.so clean_gpus=all clean=off"
	run srun --quiet -w node3 -N1 --llm-node-check echo fit
	[ "$status" -eq 0 ] && [ "$output" = fit ] || { echo "$output"; false; }
	write_plugstack "nvml=$WORK/nvml.so clean_gpus=all clean=check"
	run srun --quiet -w node3 -N1 echo fit
	kill "$zombie"
	[ "$status" -eq 0 ] && [ "$output" = fit ] || { echo "$output"; false; }
	assert_cluster_idle
}

@test "job epilog: a GPU left busy, in use or asking for a reset drains its node with an llmp: reason" {
	# A process of another user on node2's GPUs, as a job that escaped its cleanup leaves one.
	setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300 &
	local zombie=$!
	fake_nvml 'NVIDIA H100 80GB HBM3' 81559 # the other nodes: clean
	fake_nvml_node node2 "$zombie:812" - -
	fake_nvml_node node3 - 5000 -
	write_plugstack "nvml=$WORK/nvml.so clean_gpus=all clean_wait=1"
	run timeout 60 srun -w node1 -N1 true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run timeout 60 srun -w node2 -N1 true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local reason
	reason=$(wait_drained node2 30)
	[[ $reason == "llmp: GPU GPU-1B pid $zombie uid $(id -u nobody) 812 MiB; GPU GPU-3D pid $zombie uid "* ]] ||
		{ echo "$reason"; false; }
	# The next job avoids it.
	run timeout 60 srun -N2 sh -c 'echo "on $SLURMD_NODENAME"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	! grep -q 'on node2' <<<"$output" || { echo "$output"; false; }
	# Memory in use with no process left (node3), then a recovery action (node1).
	run timeout 60 srun -w node3 -N1 true
	reason=$(wait_drained node3 30)
	[ "$reason" = "llmp: GPU GPU-1B 5000 MiB in use with no process (tolerance 1024 MiB); GPU GPU-3D 5000 MiB in use with no process (tolerance 1024 MiB); and 2 more" ] ||
		{ echo "$reason"; false; }
	fake_nvml_node node1 - - 1
	run timeout 60 srun -w node1 -N1 true
	reason=$(wait_drained node1 30)
	[[ $reason == "llmp: GPU GPU-1B asks for a GPU reset (NVML recovery action 1); "* ]] || { echo "$reason"; false; }
	kill "$zombie"
	scontrol update NodeName='node[1-3]' State=RESUME
	# Clean again, with drain=no: a dirty node is only logged.
	rm -f "$WORK"/nvml.so.node*.tsv
	run timeout 60 srun -N3 true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# That job's epilogs run after srun returns, with drain=yes: let them end
	# before node2's GPUs turn dirty, or one of them drains it.
	assert_cluster_idle
	fake_nvml_node node2 - - 2
	write_plugstack "nvml=$WORK/nvml.so clean_wait=0 drain=no"
	run timeout 60 srun -w node2 -N1 true
	sleep 2
	[ "$(node_state node2)" = "idle|none" ] || { node_state node2; false; }
	grep -q 'llm_parallel: after job [0-9]*, node2 is not clean (drain=no): llmp: GPU GPU-1B asks for a node reboot' \
		"$CLUSTER_STATE"/log/slurmd-node2.log || { tail -5 "$CLUSTER_STATE"/log/slurmd-node2.log; false; }
	assert_cluster_idle
}

@test "job epilog: a process of the job's user that outlived the job drains the node; root's jobs and clean jobs never" {
	write_plugstack "clean_wait=2"
	# A plain user's job whose task leaves a process behind (proctrack/linuxproc loses a re-parented one).
	run sh -c "cd /tmp && runuser -u nobody -- env SLURM_CONF=$SLURM_CONF timeout 60 srun -w node3 -N1 \
		sh -c 'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo \"left \$!\"'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local pid reason
	pid=$(sed -n 's/^left //p' <<<"$output")
	[ -n "$pid" ] || { echo "$output"; false; }
	reason=$(wait_drained node3 30)
	kill "$pid" || true
	scontrol update NodeName=node3 State=RESUME
	[ "$reason" = "llmp: pid $pid (sleep) uid $(id -u nobody) outlived the job" ] || { echo "$reason"; false; }
	# The same user's job that leaves nothing, and root's job that leaves a process: no drain.
	run sh -c "cd /tmp && runuser -u nobody -- env SLURM_CONF=$SLURM_CONF timeout 60 srun -w node3 -N1 true"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run timeout 60 srun -w node3 -N1 sh -c 'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo "left $!"'
	pid=$(sed -n 's/^left //p' <<<"$output")
	sleep 4
	kill "$pid" || true
	[ "$(node_state node3)" = "idle|none" ] || { node_state node3; false; }
	assert_cluster_idle
}

@test "--llm-checkpoint=help prints its grammar and submits nothing; --help lists it" {
	for how in srun sbatch salloc; do
		run submit "$how" --llm-checkpoint=help
		[ "$status" -eq 0 ]
		grep -q 'DIR\[,every=N|Nmin\]\[,keep=N\]\[,restarts=N\]' <<<"$output"
		grep -q 'every=Nmin' <<<"$output"
	done
	for cmd in sbatch salloc srun; do
		run "$cmd" --help
		grep -q -- '--llm-checkpoint=SPEC' <<<"$output"
	done
	assert_queue_empty
}

@test "sbatch --llm-checkpoint: the tasks get the checkpoint variables, the batch script only those" {
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		"$BATCH_ENV"
		srun "$TASK_ENV"
	EOF
	run sbatch --wait -N2 -n4 -o "$WORK/out" --llm-parallel=tp=2 \
		--llm-checkpoint="every=30min,$WORK/ck,keep=3" "$WORK/job.sh"
	[ "$status" -eq 0 ]
	output=$(cat "$WORK/out")
	# keep and every as given, restarts by default (3); DIR first when printed.
	check_tasks tp=2 4 --master node1 --checkpoint "$WORK/ck,every=30min,keep=3,restarts=3"
	want="batch LLMP_CHECKPOINT=$WORK/ck,every=30min,keep=3,restarts=3"
	want="$want LLMP_CHECKPOINT_DIR=$WORK/ck LLMP_CHECKPOINT_EVERY=30min"
	want="$want LLMP_CHECKPOINT_KEEP=3 LLMP_MAX_RESTARTS=3 LLMP_RESTART_COUNT=0"
	want="$want SLURM_RESTART_COUNT=<unset> LLMP_PARALLEL=<unset> LLMP_RANK=<unset>"
	want="$want RANK=<unset> MASTER_ADDR=<unset>"
	grep -qxF "$want" <<<"$output" || { grep '^batch' <<<"$output"; echo "expected: $want"; false; }
}

@test "--llm-checkpoint alone turns the plugin on with the default layout" {
	run srun -N2 -n4 --llm-checkpoint="$WORK/ck,restarts=0" "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks "" 4 --checkpoint "$WORK/ck,keep=2,restarts=0"
	grep -q 'LLMP_PARALLEL=dp=auto ' <<<"$output"
	grep -q 'LLMP_DP_SIZE=4 ' <<<"$output"
	# stripe= reaches the tasks in the canonical text (sizes in their largest unit).
	run srun -N1 -n2 --llm-checkpoint="$WORK/ck,stripe=4:1048576:flash" printenv LLMP_CHECKPOINT
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s\n%s' "$WORK/ck,keep=2,restarts=3,stripe=4:1M:flash" \
		"$WORK/ck,keep=2,restarts=3,stripe=4:1M:flash")" ] || { echo "$output"; false; }
}

@test "checkpoint keys: option over LLMP_CHECKPOINT over site defaults, key by key" {
	write_plugstack checkpoint=every=30min,keep=3,restarts=5
	# The site's defaults alone turn nothing on.
	run srun -N1 -n2 "$TASK_ENV"
	[ "$status" -eq 0 ]
	! grep -q 'LLMP_[A-Z_]*=[^<]' <<<"$output"
	# The variable alone does: its DIR and keep, the site's every and restarts.
	LLMP_CHECKPOINT="$WORK/env,keep=4" run srun -N1 -n4 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks "" 4 --checkpoint "$WORK/env,every=30min,keep=4,restarts=5"
	# The option's DIR and every (in steps) win; keep stays the variable's.
	LLMP_CHECKPOINT="$WORK/env,keep=4" run srun -N2 -n4 --llm-parallel=tp=2 \
		--llm-checkpoint="$WORK/opt,every=100" "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2 4 --checkpoint "$WORK/opt,every=100,keep=4,restarts=5"
	# Through sbatch, into the batch script and the srun inside.
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		"$BATCH_ENV"
		srun "$TASK_ENV"
	EOF
	LLMP_CHECKPOINT="restarts=1" run sbatch --wait -N1 -n2 -o "$WORK/out" \
		--llm-checkpoint="dir=$WORK/b" "$WORK/job.sh"
	[ "$status" -eq 0 ]
	output=$(cat "$WORK/out")
	check_tasks "" 2 --checkpoint "$WORK/b,every=30min,keep=3,restarts=1"
	grep -q "^batch LLMP_CHECKPOINT=$WORK/b,every=30min,keep=3,restarts=1 LLMP_CHECKPOINT_DIR=$WORK/b " <<<"$output"
}

@test "a bad --llm-checkpoint is refused at submission by sbatch, salloc and srun: nothing queued" {
	for spec in d,keep=0 d,every=5m d,kep=2 /a,b d,restarts=-1 every=10 help,d d,files=nodes \
		d,stripe=0 d,stripe=4:1000 d,stripe=4:1M:fs.pool; do
		for how in sbatch srun salloc; do
			run submit "$how" "--llm-checkpoint=$spec"
			[ "$status" -ne 0 ] || { echo "$how accepted $spec"; false; }
			grep -q "^llm_parallel: --llm-checkpoint: " <<<"$output" ||
				{ echo "$how $spec: $output"; false; }
		done
	done
	run submit sbatch --llm-parallel=tp=2 --llm-checkpoint=d,keep=0
	[ "$status" -ne 0 ]
	grep -qx 'llm_parallel: --llm-checkpoint: keep=0: must be at least 1' <<<"$output"
	run submit sbatch --llm-checkpoint=every=10
	grep -qx 'llm_parallel: --llm-checkpoint: no checkpoint directory given (DIR or dir=DIR)' <<<"$output"
	run submit sbatch --llm-checkpoint=d,kep=2
	grep -qx "llm_parallel: --llm-checkpoint: unknown key 'kep' (known keys: dir every keep restarts files stripe)" <<<"$output"
	run submit sbatch --llm-checkpoint=d,files=nodes
	grep -qx 'llm_parallel: --llm-checkpoint: files=nodes: must be rank (a shard file per rank) or node (one per node)' <<<"$output"
	run submit srun --llm-checkpoint=d,stripe=4:1000
	grep -qx 'llm_parallel: --llm-checkpoint: stripe=4:1000: size must be a multiple of 64K below 4G (64K, 1M, 4M...)' <<<"$output"
	run submit sbatch --llm-checkpoint=d,stripe=-2
	grep -qx 'llm_parallel: --llm-checkpoint: stripe=-2: count must be -1 (all OSTs) or 1..2000' <<<"$output"
	LLMP_CHECKPOINT=d,keep=x run submit sbatch
	[ "$status" -ne 0 ]
	grep -qx 'llm_parallel: LLMP_CHECKPOINT: keep=x: not a number' <<<"$output"
	assert_queue_empty
	assert_cluster_idle
}

@test "a bad spec only the job sees: the step fails with the reason; the batch script warns and goes on" {
	# srun cannot see a variable exported to the tasks only: task_init refuses.
	run srun -N2 -n4 --export=ALL,LLMP_CHECKPOINT=every=0 "$TASK_ENV"
	[ "$status" -ne 0 ]
	grep -qx 'llm_parallel: LLMP_CHECKPOINT: every=0: must be at least 1' <<<"$output"
	! grep -q '^task ' <<<"$output"
	# In the batch step it is only a warning; the srun inside refuses it.
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		"$BATCH_ENV"
		srun "$TASK_ENV"
		echo "srun exit \$?"
	EOF
	run sbatch --wait -N1 -n2 -o "$WORK/out" --export=ALL,LLMP_CHECKPOINT=every=0 "$WORK/job.sh"
	[ "$status" -eq 0 ]
	output=$(cat "$WORK/out")
	grep -qx 'llm_parallel: warning: LLMP_CHECKPOINT: every=0: must be at least 1; the batch script gets no checkpoint variables' <<<"$output"
	grep -q '^batch LLMP_CHECKPOINT=every=0 LLMP_CHECKPOINT_DIR=<unset> ' <<<"$output"
	grep -qx 'llm_parallel: LLMP_CHECKPOINT: every=0: must be at least 1' <<<"$output"
	grep -qx 'srun exit 1' <<<"$output"
	! grep -q '^task ' <<<"$output"
	assert_cluster_idle
}

@test "LLMP_RESTART_COUNT counts requeues, in the batch script and in its tasks" {
	# The first run waits to be requeued; the next one ends at once.
	cat >"$WORK/job.sh" <<-EOF
		#!/bin/sh
		"$BATCH_ENV"
		srun "$TASK_ENV"
		if [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then touch "$WORK/ran"; sleep 120; fi
	EOF
	jid=$(sbatch --parsable --requeue -N1 -n2 -o "$WORK/out" --open-mode=append \
		--llm-checkpoint="$WORK/ck,every=10" "$WORK/job.sh")
	for _ in $(seq 1 30); do [ -e "$WORK/ran" ] && break; sleep 1; done
	[ -e "$WORK/ran" ]
	scontrol requeue "$jid"
	# Slurm holds a requeued job for AuthInfo's cred_expire (10 s here).
	state=$(wait_job_end "$jid" 90)
	[ "$state" = COMPLETED ] || [ "$state" = PURGED ]
	output=$(cat "$WORK/out")
	[ "$(grep -c '^batch ' <<<"$output")" -eq 2 ]
	run1=$(awk '/^batch /{n++} n==1' <<<"$output")
	run2=$(awk '/^batch /{n++} n==2' <<<"$output")
	grep -q '^batch .* LLMP_RESTART_COUNT=0 ' <<<"$run1"
	grep -q '^batch .* LLMP_RESTART_COUNT=1 SLURM_RESTART_COUNT=1 ' <<<"$run2"
	output=$run1
	check_tasks "" 2 --checkpoint "$WORK/ck,every=10,keep=2,restarts=3"
	output=$run2
	check_tasks "" 2 --checkpoint "$WORK/ck,every=10,keep=2,restarts=3" --restart-count 1
}
