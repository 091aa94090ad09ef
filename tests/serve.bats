#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Serving jobs (--llm-serve, `llmp serve`) on the local cluster, with a
# stand-in engine (tests/cluster/serve_engine.py: vLLM's multi-node flags,
# its API key, no GPU): the layout refused at submission, each node's role
# and arguments, two jobs on the same nodes without a port clash, the token,
# a dead engine or a held port named within seconds, and the step's end
# when a node's engine is killed.

load cluster/common

ENGINE="$LLMP_SRCDIR/tests/cluster/serve_engine.py"
MODEL_M="layers=4,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384"

# Slurm reserves ports for steps that ask (srun --resv-ports=32): the
# two-jobs test takes its blocks there, disjoint by Slurm's own accounting.
setup_file() {
	SERVE_CONF=$(mktemp /tmp/llmp-serve-conf.XXXXXX)
	echo "MpiParams=ports=30000-39999" >"$SERVE_CONF"
	export LLMP_TEST_SLURM_CONF_EXTRA=$SERVE_CONF
	cluster_setup_file
	rm -f "$SERVE_CONF"
}
teardown_file() { cluster_teardown_file; }
setup() { cluster_setup; }
teardown() {
	[ -z "${CLUSTER_SKIP:-}" ] || return 0
	stop_bg
	cancel_leftover_jobs
}

BG_PIDS=()
stop_bg() {
	local pid
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	BG_PIDS=()
}

# Whether PID is the stand-in engine (python3, maybe by its full path; not llmp serve naming it).
is_engine() { # PID
	local cmd
	cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ "$cmd" == *"python3 $ENGINE serve "* && "$cmd" != *" serve --timeout "* && "$cmd" != *" serve --endpoint "* ]]
}

# The processes of the stand-in engine still alive (none: empty).
engines_left() {
	local d
	for d in /proc/[0-9]*; do
		! is_engine "${d#/proc/}" || echo "${d#/proc/}"
	done
	return 0
}

# Wait for FILE to exist; fails after SECONDS.
wait_file() { # FILE SECONDS
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	echo "no $1 after $2 s" >&2
	return 1
}

# HTTP status of GET URL, with the token of TOKEN_FILE when given.
http_code() { # URL [TOKEN_FILE]
	if [ -n "${2:-}" ]; then
		curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$2")" "$1"
	else
		curl -s -o /dev/null -w '%{http_code}' "$1"
	fi
}

serve_step() { # OUT ENDPOINT [srun options...]
	local out=$1 endpoint=$2
	shift 2
	srun -N3 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm --llm-parallel=tp=2,pp=3 "$@" \
		"$LLMP" serve --timeout 60 --endpoint "$endpoint" -- python3 "$ENGINE" serve tiny >"$out" 2>&1 &
	BG_PIDS+=($!)
}

@test "--llm-serve: a bad layout or engine is refused before anything runs, naming the culprit" {
	run srun -N2 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm --llm-parallel=tp=3 \
		--llm-model="$MODEL_M" true
	[ "$status" -ne 0 ]
	[[ "$output" == *"tp=3 does not divide the model's 32 attention heads"* ]]
	run sbatch -N2 --ntasks-per-node=1 --llm-serve=vllm --llm-parallel=tp=3 --llm-model="$MODEL_M" --wrap=true
	[ "$status" -ne 0 ]
	[[ "$output" == *"tp=3 does not divide the model's 32 attention heads"* ]]
	# srun cannot see --gpus-per-node (Slurm 22.05): each task refuses, before anything runs.
	run srun -N2 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm --llm-parallel=tp=2,pp=3 \
		bash -c 'echo ran'
	[ "$status" -ne 0 ]
	[[ "$output" == *"tp*pp = 2*3 = 6 does not divide the step's 4 GPUs (2 nodes x 2)"* ]]
	[[ "$output" != *ran* ]]
	run srun -N2 --ntasks-per-node=2 --llm-serve=vllm --llm-parallel=tp=2 true
	[ "$status" -ne 0 ]
	[[ "$output" == *"one task per node"*"4 tasks on 2 nodes"* ]]
	run srun -N1 --llm-serve=tgi true
	[ "$status" -ne 0 ]
	[[ "$output" == *"--llm-serve: expected 'ray', 'vllm' or 'sglang'"* ]]
	for _ in $(seq 1 30); do
		[ -n "$(squeue -h)" ] || break
		sleep 1
	done
	assert_queue_empty
	assert_cluster_idle
}

@test "--llm-serve: each node's role, port block, token file and engine arguments" {
	run srun -N3 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm --llm-parallel=tp=2,pp=3 bash -c '
		f=$LLMP_SERVE_TOKEN_FILE
		echo "N=$SLURM_NODEID node=$SLURMD_NODENAME role=$LLMP_SERVE_ROLE head=$LLMP_SERVE_HEAD" \
			"port=$LLMP_SERVE_PORT ports=$LLMP_SERVE_PORTS gloo=$GLOO_SOCKET_IFNAME" \
			"leaked=${LLMP_SERVE_TOKEN:-none} mode=$(stat -c %a "$f") owner=$(stat -c %U "$f")" \
			"len=$(wc -c <"$f")"
		echo "F$SLURM_NODEID=$f"
		echo "A$SLURM_NODEID=$LLMP_VLLM_ARGS"'
	[ "$status" -eq 0 ]
	echo "$output"
	# The block: 32 ports from the API port, the same on every node.
	local port first
	port=$(grep -o 'N=0 .* port=[0-9]*' <<<"$output" | grep -o 'port=[0-9]*$' | cut -d= -f2)
	first=$port
	for n in 0 1 2; do
		role=worker
		[ "$n" -ne 0 ] || role=head
		grep -q "N=$n node=node$((n + 1)) role=$role head=node1 port=$port ports=$first-$((first + 31)) gloo=eth0 leaked=none mode=600 owner=root len=64" <<<"$output"
		expected="--tensor-parallel-size 2 --pipeline-parallel-size 3 --nnodes 3 --node-rank $n --master-addr node1 --master-port $((first + 1)) --port $first"
		[ "$n" -eq 0 ] || expected="$expected --headless"
		grep -qxF "A$n=$expected" <<<"$output"
	done
	# The step's token files are gone with it (only its own: another step's,
	# or one a killed node never removed, are not this test's to judge).
	local f
	for f in $(sed -n 's/^F[0-2]=//p' <<<"$output"); do
		[ ! -e "$f" ] || { echo "$f is left"; false; }
	done
	[ "$(grep -c '^F[0-2]=/' <<<"$output")" -eq 3 ]
}

@test "llmp serve: two jobs on the same nodes, 20 times: disjoint ports, token required, no EADDRINUSE" {
	local i j t0 t1 blocks="" worst=0
	for i in $(seq 1 20); do
		t0=$(date +%s.%N)
		for j in 1 2; do
			serve_step "$WORK/out.$i.$j" "$WORK/ep.$i.$j" --resv-ports=32
		done
		for j in 1 2; do
			wait_file "$WORK/ep.$i.$j" 60 || { cat "$WORK/out.$i.$j"; return 1; }
		done
		t1=$(date +%s.%N)
		worst=$(python3 -c "print(max($worst, $t1 - $t0))")
		local e1 e2
		e1=$(cat "$WORK/ep.$i.1")
		e2=$(cat "$WORK/ep.$i.2")
		[ "${e1%%:*}" = node1 ] && [ "${e2%%:*}" = node1 ]
		[ "${e1##*:}" != "${e2##*:}" ]
		# Blocks of 32 from the API port, Slurm's (30000-39999): disjoint.
		[ "${e1##*:}" -ge 30000 ] && [ "${e2##*:}" -ge 30000 ]
		[ $(( ${e1##*:} - ${e2##*:} )) -ge 32 ] || [ $(( ${e2##*:} - ${e1##*:} )) -ge 32 ]
		for j in 1 2; do
			e=$(cat "$WORK/ep.$i.$j")
			[ "$(stat -c %a "$WORK/ep.$i.$j.token")" = 600 ]
			[ "$(http_code "http://$e/v1/models")" = 401 ]
			[ "$(http_code "http://$e/v1/models" "$WORK/ep.$i.$j.token")" = 200 ]
			# The other job's token is refused too.
			[ "$(http_code "http://$e/v1/models" "$WORK/ep.$i.$((3 - j)).token")" = 401 ]
			curl -s -H "Authorization: Bearer $(cat "$WORK/ep.$i.$j.token")" "http://$e/v1/models" |
				python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["nnodes"]==3 and d["joined"]==[1,2] and d["tp"]==2 and d["pp"]==3, d'
		done
		blocks="$blocks ${e1##*:}/${e2##*:}"
		scancel -u root
		stop_bg
		! grep -iq "address already in use\|EADDRINUSE\|is held by another" "$WORK"/out."$i".*
	done
	echo "# blocks: $blocks; slowest pair to both endpoints: ${worst} s" >&3
	[ -z "$(engines_left)" ]
	assert_cluster_idle
}

@test "llmp serve: killing one node's engine ends the step within 30 s, nothing left running" {
	serve_step "$WORK/out" "$WORK/ep"
	echo "started: ${BG_PIDS[*]}"
	local srun_pid=${BG_PIDS[0]}
	wait_file "$WORK/ep" 60 || { cat "$WORK/out"; return 1; }
	local victim="" pid
	for pid in $(ip netns pids llmp-node2); do
		! is_engine "$pid" || victim=$pid
	done
	[ -n "$victim" ]
	local t0 t1 i
	t0=$(date +%s.%N)
	kill -KILL "$victim"
	for i in $(seq 1 300); do
		kill -0 "$srun_pid" 2>/dev/null || break
		sleep 0.1
	done
	t1=$(date +%s.%N)
	! kill -0 "$srun_pid" 2>/dev/null
	local rc=0
	wait "$srun_pid" || rc=$?
	BG_PIDS=()
	[ "$rc" -ne 0 ]
	cat "$WORK/out"
	grep -q "llmp serve: node node2: python3 was killed by signal 9" "$WORK/out"
	echo "# step ended $(python3 -c "print(round($t1 - $t0, 1))") s after node2's engine was killed" >&3
	python3 -c "assert $t1 - $t0 < 30"
	[ -z "$(engines_left)" ]
	[ ! -e "$WORK/ep" ]
	assert_cluster_idle
}

@test "llmp serve: an engine dying at start, or a port of the block held, named with the node within 10 s" {
	local t0 t1
	t0=$(date +%s.%N)
	SERVE_ENGINE_DIE_ON=node2 run srun -N3 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm \
		--llm-parallel=tp=2,pp=3 "$LLMP" serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny
	t1=$(date +%s.%N)
	[ "$status" -ne 0 ]
	echo "$output"
	[[ "$output" == *"llmp serve: node node2: python3 exited with status 3 after "* ]]
	echo "# a dead engine: the step failed in $(python3 -c "print(round($t1 - $t0, 1))") s" >&3
	python3 -c "assert $t1 - $t0 < 10"

	# One block for every job (port_range=32), a port of it held on node3.
	write_plugstack port_base=40000 port_range=32
	nsenter --net=/run/netns/llmp-node3 python3 -c '
import socket, time
s = socket.socket(); s.bind(("0.0.0.0", 40007)); s.listen(1); time.sleep(120)' &
	BG_PIDS+=($!)
	sleep 0.5
	t0=$(date +%s.%N)
	run srun -N3 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm --llm-parallel=tp=2,pp=3 \
		"$LLMP" serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny
	t1=$(date +%s.%N)
	[ "$status" -ne 0 ]
	[[ "$output" == *"llmp serve: node node3: port 40007 of the job's block 40000-40031 is held by another process"* ]]
	echo "# a held port: the step failed in $(python3 -c "print(round($t1 - $t0, 1))") s" >&3
	python3 -c "assert $t1 - $t0 < 10"
	[ -z "$(engines_left)" ]
	assert_cluster_idle
}

# The interface the engine's traffic is told to use, wrong: a name no node has
# (a job script copied from a cluster with InfiniBand) is refused before any
# engine starts, naming node and name, instead of gloo's rendezvous timing out
# after 30 minutes; one that is up but not the way to the head is warned about.
@test "llmp serve: an interface that is not up on a node is named with the node within 10 s" {
	local t0 t1
	t0=$(date +%s.%N)
	GLOO_SOCKET_IFNAME=ib0 run srun -N3 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm \
		--llm-parallel=tp=2,pp=3 "$LLMP" serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny
	t1=$(date +%s.%N)
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"llmp serve: node node"[123]": GLOO_SOCKET_IFNAME=ib0: no interface ib0 is up with an IPv4 address on this node (it has: "*"); the engine's processes would wait for peers that never reach them; ending the step"* ]]
	echo "# a wrong interface: the step failed in $(python3 -c "print(round($t1 - $t0, 1))") s" >&3
	python3 -c "assert $t1 - $t0 < 10"
	# NCCL's names are prefixes; an exclusion is NCCL's own choice, not checked.
	NCCL_SOCKET_IFNAME=ibp run srun -N3 --ntasks-per-node=1 --gpus-per-node=2 --llm-serve=vllm \
		--llm-parallel=tp=2,pp=3 "$LLMP" serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny
	[ "$status" -ne 0 ]
	[[ "$output" == *"NCCL_SOCKET_IFNAME=ibp: no interface starting with ibp is up"* ]]
	[ -z "$(engines_left)" ]
	[ ! -e "$WORK/ep" ]
	# lo is up everywhere, but the workers reach the head through their own link: warned, and run.
	GLOO_SOCKET_IFNAME=lo serve_step "$WORK/out" "$WORK/ep"
	wait_file "$WORK/ep" 30 || { cat "$WORK/out"; false; }
	scancel -u root
	stop_bg
	cat "$WORK/out"
	local n
	for n in node2 node3; do
		grep -q "^llmp serve: node $n: the head node1 is reached through [a-z0-9-]*, which GLOO_SOCKET_IFNAME=lo does not name: if the engine waits at its rendezvous, this is why\$" "$WORK/out"
	done
	! grep -q "node node1: the head" "$WORK/out"
	assert_cluster_idle
}

# Ray and Ray Serve for real, from PyPI, in a virtual environment of their
# own (Ray pins its own dependencies): LLMP_TEST_RAY_VENV, else made once
# in the build tree and reused (python/requirements-ray.txt).
ray_venv() {
	local venv=${LLMP_TEST_RAY_VENV:-$LLMP_BUILDDIR/ray-venv} reqs=$LLMP_SRCDIR/python/requirements-ray.txt
	if ! { [ -x "$venv/bin/ray" ] && cmp -s "$reqs" "$venv/.llmp-requirements"; }; then
		rm -rf "$venv"
		python3 -m venv "$venv" >&2 &&
			"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs" >&2 &&
			cp "$reqs" "$venv/.llmp-requirements" || return 1
	fi
	echo "$venv"
}

# Ray's processes (raylet, gcs_server, its workers) on the cluster's nodes.
ray_left() {
	local n pid
	for n in node1 node2 node3; do
		for pid in $(ip netns pids "llmp-$n"); do
			case $(cat "/proc/$pid/comm" 2>/dev/null) in raylet | gcs_server | ray::*) echo "$pid" ;; esac
		done
	done
}

# The step is ended as scancel ends a job: SIGTERM to every task (this
# cluster's KillWait of 2 s is shorter than Ray's own shutdown, so only the
# signal is sent); `llmp serve` takes its engine and every process the engine
# left down, so nothing of Ray outlives the step.
@test "Ray Serve: three stages pipelined over the three nodes, token enforced, nothing left" {
	local venv
	venv=$(ray_venv) || { echo "could not make a venv with ray[serve] (python/requirements-ray.txt)"; false; }
	local t0 t1 ep
	t0=$(date +%s.%N)
	PATH="$venv/bin:$PATH" timeout -k 10 300 srun -N3 --ntasks-per-node=1 --llm-serve=ray --llm-parallel=pp=3 \
		"$LLMP" serve --health / --timeout 120 --endpoint "$WORK/ep" -- \
		python "$LLMP_SRCDIR/tests/cluster/serve_ray_app.py" >"$WORK/out" 2>&1 &
	local srun_pid=$!
	BG_PIDS+=($!)
	wait_file "$WORK/ep" 150 || { cat "$WORK/out"; return 1; }
	t1=$(date +%s.%N)
	ep=$(cat "$WORK/ep")
	grep -o 'all 3 nodes in Ray [0-9.]* s' "$WORK/out" | sed 's/^/# /' >&3
	echo "# first HTTP 200 $(python3 -c "print(round($t1 - $t0, 1))") s after srun started" >&3
	# The answer against a single-process forward pass of the same three layers.
	curl -s -X POST -d '{"x": [0.5, -1, 2, 0, 0.25, -0.5, 1, 3]}' "http://$ep/" >"$WORK/answer"
	"$venv/bin/python" - "$WORK/answer" <<'PY'
import json, sys
import numpy as np
got = json.load(open(sys.argv[1]))
x = np.array([0.5, -1, 2, 0, 0.25, -0.5, 1, 3])
for k in range(3):
    rng = np.random.default_rng(1000 + k)
    w, b = rng.standard_normal((8, 8)), rng.standard_normal(8)
    x = np.tanh(x @ w + b)
assert np.allclose(got["y"], x, rtol=0, atol=1e-12), (got, x)
assert got["hosts"] == ["node1", "node2", "node3"], got
PY
	# Ray's GCS with the job's token, and with another.
	local gcs=$((${ep##*:} + 1))
	RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$WORK/ep.token" timeout 60 "$venv/bin/ray" status \
		--address "node1:$gcs" >"$WORK/status" 2>&1
	[ "$(grep -c '^ 1 node_' "$WORK/status")" -eq 3 ] || { cat "$WORK/status"; false; }
	printf '%064d' 0 >"$WORK/bad"
	! RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$WORK/bad" timeout 60 "$venv/bin/ray" status \
		--address "node1:$gcs" >"$WORK/bad.out" 2>&1
	grep -q InvalidAuthToken "$WORK/bad.out"
	[ -n "$(ray_left)" ] # what must go, there while the step runs
	local job
	job=$(squeue -h -o %i | head -n 1)
	[ -n "$job" ]
	t0=$(date +%s.%N)
	scancel --signal=TERM "$job.0"
	local rc=0
	wait "$srun_pid" || rc=$?
	BG_PIDS=()
	t1=$(date +%s.%N)
	echo "# the step ended $(python3 -c "print(round($t1 - $t0, 1))") s after SIGTERM (srun status $rc)" >&3
	[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { cat "$WORK/out"; false; }
	local left
	left=$(ray_left)
	[ -z "$left" ] || { echo "left: $left"; ps -o pid,ppid,pgid,sid,comm -p "$(echo $left | tr ' ' ,)"; false; }
	assert_cluster_idle
}
