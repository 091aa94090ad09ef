#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Observability on a real three-node Slurm cluster: libllmp's counters
# against bytes worked out by tests/runtime/rt_check (metrics), a rank
# slowed on purpose blamed by the others, and the same straggler in
# examples/mlp_train named by `llmp top` from the LLMP_METRICS files
# (doc/metrics-json.md), whose every complete line parses.

load cluster/common
load runtime/common

MLP="$LLMP_BUILDDIR/examples/mlp_train"

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }

setup() {
	[ -x "$RT_CHECK" ] || skip "rt_check not built ($RT_CHECK)"
	[ -x "$MLP" ] || skip "mlp_train not built ($MLP)"
	cluster_setup
}

# srun --mpi=pmix, capped: a hang fails the test instead of stalling the suite.
rt_srun() { # seconds srun-arguments...
	local limit=$1
	shift
	LLMP_TIMEOUT=${LLMP_TIMEOUT:-60} timeout -k 10 "$limit" srun --mpi=pmix "$@"
}

@test "counters: bytes of doubling, ring and allgather per group, 4 ranks on 2 nodes" {
	run rt_srun 180 -N2 -n4 "$RT_CHECK" metrics --parallel tp=2
	assert_ranks_ok 4 50
}

@test "counters: 3 ranks (not a power of two) on 3 nodes" {
	run rt_srun 180 -N3 -n3 "$RT_CHECK" metrics
	assert_ranks_ok 3 20
}

@test "counters: rank 1 sleeps before each allreduce: the others wait for it, it waits for nobody" {
	run rt_srun 180 -N2 -n2 "$RT_CHECK" metrics --victim 1 --sleep 0.05
	assert_ranks_ok 2 20
	grep -q "^rank 0: straggler: .* last member 1 " <<<"$output"
}

@test "llmp top names the rank slowed on purpose in mlp_train, text and JSON" {
	# (srun's --export would split the value at its commas: the environment carries it)
	LLMP_METRICS="$WORK/metrics,every=0.2s,prom" run timeout -k 10 240 srun --mpi=pmix -N2 -n4 \
		--llm-parallel=tp=2 --llm-checkpoint="$WORK/ckpt" "$MLP" --steps 40 --slow-rank 2 --slow-ms 30
	echo "$output" | tail -n 20
	[ "$status" -eq 0 ]
	[ "$(ls "$WORK/metrics"/rank-*.jsonl | wc -l)" -eq 4 ]
	[ "$(ls "$WORK/metrics"/rank-*.prom | wc -l)" -eq 4 ]
	# more than the last line: one every 0.2 s of a run of over a second
	[ "$(wc -l <"$WORK/metrics/rank-00000.jsonl")" -ge 3 ]
	# every line of every file is a whole JSON object
	for f in "$WORK/metrics"/rank-*.jsonl; do
		python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$f"
	done
	run "$LLMP" top "$WORK/metrics"
	echo "$output"
	[ "$status" -eq 0 ]
	# the first straggler named is rank 2
	grep -A1 '^stragglers:' <<<"$output" | grep -qE '^  rank 2 '
	run "$LLMP" top "$WORK/metrics" --format json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["stragglers"][0]["rank"] == 2, d["stragglers"]; assert d["ranks"] == 4' <<<"$output"
}

@test "llmp top skips a half-written last line, as a killed job leaves it" {
	mkdir -p "$WORK/m"
	LLMP_METRICS="$WORK/m,every=0" run timeout -k 10 240 srun --mpi=pmix -N1 -n2 \
		--llm-checkpoint="$WORK/ckpt2" "$MLP" --steps 5
	[ "$status" -eq 0 ]
	head -c 100 "$WORK/m/rank-00000.jsonl" >>"$WORK/m/rank-00001.jsonl"
	run "$LLMP" top "$WORK/m" --format json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); r=[x for x in d["ranks_detail"] if x["rank"]==1][0]; assert r["partial_line_skipped"] and r["final"], r' <<<"$output"
}
