#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The device path on the three-node test cluster, without a GPU:
# tests/device/dev_check run as the tasks of `srun --mpi=pmix` steps, with
# NCCL's test double (tests/device/fake_nccl.c, through LLMP_NCCL_LIBRARY)
# to see which communicators each rank asks for, and with the real libnccl
# for the id exchange and the error a machine without a GPU gives.

load cluster/common
load runtime/common

DEV_CHECK="$LLMP_BUILDDIR/tests/device/dev_check"
FAKE_NCCL="$LLMP_BUILDDIR/tests/device/.libs/fake_nccl.so"

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }

setup() {
	[ -x "$DEV_CHECK" ] || skip "dev_check not built ($DEV_CHECK)"
	cluster_setup
}

# Every rank printed "device on" after one fence; N ranks.
assert_device_on() { # N
	[ "$(grep -c '^rank [0-9]*: device on groups [0-9]* created [0-9]* fetched [0-9]* fences 1$' <<<"$output")" -eq "$1" ] ||
		{ echo "$output"; false; }
}

@test "fake NCCL: one id per group from its lowest member, in init's one fence; each communicator once per member" {
	local log=$WORK/nccl.log
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_LOG=$log run capped_srun 120 -N3 -n12 \
		--llm-parallel=tp=2,pp=3 "$DEV_CHECK" --connect
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	assert_device_on 12
	[ "$(grep -c '^rank [0-9]*: connect ok comms ' <<<"$output")" -eq 12 ] || { echo "$output"; false; }
	"$LLMP" plan --world 12 --parallel tp=2,pp=3 --format json >"$WORK/layout.json"
	printf '%s\n' "$output" >"$WORK/ranks.txt"
	# The groups come from the layout (the planner has its own tests); what is
	# checked here is the exchange: which communicators, how many members,
	# one id per group shared by its members, the root making it.
	python3 - "$WORK/layout.json" "$log" "$WORK/ranks.txt" <<'PY'
import json, re, sys
layout = json.load(open(sys.argv[1]))
kinds = ["tp", "pp", "cp", "dp", "ep", "dp-cp", "tp-cp", "tp-pp", "tp-dp", "tp-dp-cp", "expert-tp",
         "expert-dp", "tp-ep", "tp-ep-pp", "embedding", "position-embedding"]
groups = {k: layout["groups"][k] for k in kinds}
groups["world"] = [list(range(layout["world"]))]
want = {}   # name -> members, the first kind naming each member set
seen = set()
for k in kinds + ["world"]:
    for i, g in enumerate(groups[k]):
        if len(g) < 2 or tuple(g) in seen:
            continue
        seen.add(tuple(g))
        want[f"llmp.{k}.{i}"] = g
got = {}
for line in open(sys.argv[2]):
    op, name, *rest = line.split()
    if op == "init":
        nranks, rank, ident = int(rest[0]), int(rest[1]), rest[2]
        got.setdefault(name, []).append((rank, nranks, ident))
assert set(got) == set(want), ("only llmp asked:", sorted(set(got) - set(want)), "only expected:", sorted(set(want) - set(got)))
ids = set()
for name, members in want.items():
    calls = got[name]
    assert sorted(r for r, _, _ in calls) == list(range(len(members))), (name, calls)
    assert {n for _, n, _ in calls} == {len(members)}, (name, calls)
    assert len({i for _, _, i in calls}) == 1, (name, "members got different ids")
    ids.add(calls[0][2])
assert len(ids) == len(want), "two groups share an id"
# Ids made: by each group's lowest member; fetched: the others'.
created = {r: 0 for r in range(layout["world"])}
fetched = dict(created)
for members in want.values():
    created[min(members)] += 1
    for m in members:
        if m != min(members):
            fetched[m] += 1
for line in open(sys.argv[3]):
    m = re.match(r"rank (\d+): device on groups (\d+) created (\d+) fetched (\d+)", line)
    if m:
        r = int(m.group(1))
        mine = sum(1 for g in want.values() if r in g)
        assert (int(m.group(2)), int(m.group(3)), int(m.group(4))) == (mine, created[r], fetched[r]), (line, mine, created[r], fetched[r])
PY
}

@test "fake NCCL: a communicator that never gets ready times out on every rank, named, and is aborted" {
	local log=$WORK/nccl.log
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_LOG=$log FAKE_NCCL_INIT=hang run capped_srun 60 -N2 -n4 \
		--llm-parallel=tp=2 "$DEV_CHECK" --connect --timeout 2
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { echo "$output"; false; }
	[ "$(grep -c "^rank [0-9]*: connect operation timed out comms 0: the NCCL communicator of the tp group (2 members, its root rank [02]) was not ready within 2 s" <<<"$output")" -eq 4 ] ||
		{ echo "$output"; false; }
	# Every communicator asked for was aborted.
	[ "$(grep -c '^init ' "$log")" -eq "$(grep -c '^abort ' "$log")" ] || { cat "$log"; false; }
}

@test "fake NCCL: a failure at creation or later is NCCL's reason, on every rank" {
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_INIT=fail run capped_srun 60 -N2 -n4 \
		--llm-parallel=tp=2 "$DEV_CHECK" --connect
	[ "$(grep -c "^rank [0-9]*: connect CUDA or NCCL failed comms 0: ncclCommInitRankConfig for the tp group: unhandled cuda error: fake: CUDA driver version is insufficient" <<<"$output")" -eq 4 ] ||
		{ echo "$output"; false; }
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_INIT=async run capped_srun 60 -N2 -n4 \
		--llm-parallel=tp=2 "$DEV_CHECK" --connect
	[ "$(grep -c "^rank [0-9]*: connect CUDA or NCCL failed comms 0: the NCCL communicator of the tp group: remote process exited or there was a network error: fake: a peer closed the connection" <<<"$output")" -eq 4 ] ||
		{ echo "$output"; false; }
}

@test "real NCCL: ncclGetUniqueId's ids through PMIx; without a GPU, connecting fails with NCCL's reason" {
	LLMP_DEVICE=nccl run capped_srun 120 -N2 -n4 --llm-parallel=tp=2 "$DEV_CHECK" --connect
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	# tp=2 over 4: a rank is in a tp pair, a dp pair and the world (tp-dp, the
	# first kind with those four members); rank 0 is the lowest of its three.
	assert_device_on 4
	grep -q '^rank 0: device on groups 3 created 3 fetched 0 fences 1$' <<<"$output"
	grep -q '^rank 3: device on groups 3 created 0 fetched 3 fences 1$' <<<"$output"
	[ "$(grep -c '^rank [0-9]*: connect CUDA or NCCL failed comms 0: ' <<<"$output")" -eq 4 ]
	grep -qi 'cuda' <<<"$(grep '^rank 0: connect' <<<"$output")"
}

@test "LLMP_DEVICE: auto without a GPU is the host path, saying why; a bad value and a missing NCCL are errors" {
	run capped_srun 60 -N1 -n2 --llm-parallel=tp=2 "$DEV_CHECK"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^rank [01]: why-not no GPU: the CUDA driver' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	# Debian's UCX has no CUDA transports: device buffers would go through NCCL alone.
	[ "$(grep -c '^rank [01]: ucx-cuda no$' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	LLMP_DEVICE=gpu run capped_srun 60 -N1 -n2 "$DEV_CHECK"
	[ "$(grep -c "^rank ?: init invalid argument: LLMP_DEVICE='gpu': expected auto, nccl or off" <<<"$output")" -eq 2 ] ||
		{ echo "$output"; false; }
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$WORK/none.so run capped_srun 60 -N1 -n2 "$DEV_CHECK"
	[ "$(grep -c "^rank ?: init not supported by this build: LLMP_DEVICE=nccl: cannot load NCCL ($WORK/none.so)" <<<"$output")" -eq 2 ] ||
		{ echo "$output"; false; }
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_VERSION=21805 run capped_srun 60 -N1 -n2 "$DEV_CHECK"
	[ "$(grep -c "is NCCL 2.18.5: llmp needs 2.19 or newer" <<<"$output")" -eq 2 ] || { echo "$output"; false; }
}

@test "a root without the device path: its members fail at init, naming the group and the root" {
	cat >"$WORK/mixed.sh" <<-EOF
		#!/bin/sh
		[ "\$SLURM_PROCID" = 0 ] && export LLMP_DEVICE=off
		exec "$DEV_CHECK"
	EOF
	chmod +x "$WORK/mixed.sh"
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL run capped_srun 60 -N2 -n4 --llm-parallel=tp=2 "$WORK/mixed.sh"
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	grep -q "^rank ?: init process wire-up (PMIx) failed: the NCCL id of the tp group from its root, rank 0: .*(did it run with LLMP_DEVICE=off, or without a GPU?)" <<<"$output"
}

@test "device collectives: each goes to its group's communicator, with NCCL's type, op and root" {
	local log=$WORK/nccl.log
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_LOG=$log run capped_srun 60 -N2 -n4 \
		--llm-parallel=tp=2 "$DEV_CHECK" --connect --ops
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^rank [0-3]: ops ok ' <<<"$output")" -eq 4 ] || { echo "$output"; false; }
	# nccl.h's numbers: ncclBfloat16 and ncclAvg.
	local bf16 avg
	bf16=$(sed -n 's/.*ncclBfloat16 *= *\([0-9]*\).*/\1/p' /usr/local/cuda/include/nccl.h)
	avg=$(sed -n 's/.*ncclAvg *= *\([0-9]*\).*/\1/p' /usr/local/cuda/include/nccl.h)
	# Each rank: its tp pair's communicator, then the world's (tp-dp: the first kind with all four).
	for c in llmp.tp.0 llmp.tp.1 llmp.tp-dp.0; do
		local n=2
		[ "$c" = llmp.tp-dp.0 ] && n=4
		[ "$(grep -c "^allreduce $c 1000 $bf16 $avg\$" "$log")" -eq "$n" ] || { cat "$log"; false; }
		[ "$(grep -c "^reduce_scatter $c 1000 $bf16 $avg\$" "$log")" -eq "$n" ] || { cat "$log"; false; }
		[ "$(grep -c "^allgather $c 1000 $bf16\$" "$log")" -eq "$n" ] || { cat "$log"; false; }
		[ "$(grep -c "^broadcast $c 1000 $bf16 1\$" "$log")" -eq "$n" ] || { cat "$log"; false; }
	done
	# The tp pair's counters: 4 calls on 1000 bf16 (2000 bytes) each, with the bytes of
	# NCCL's ring on 2 members: allreduce 2(n-1)/n = 1x, reduce-scatter and allgather
	# (n-1) = 1x, broadcast 1x: 8000 each way.
	[ "$(grep -c '^rank [0-3]: tp counters: ops 4 sent 8000 received 8000$' <<<"$output")" -eq 4 ] ||
		{ echo "$output"; false; }
	# Before llmp_device_connect, and with the path off: refused, saying why.
	LLMP_DEVICE=off run capped_srun 60 -N1 -n2 --llm-parallel=tp=2 "$DEV_CHECK" --ops
	grep -q "^rank 0: why-not LLMP_DEVICE=off" <<<"$output" || { echo "$output"; false; }
}

@test "watchdog: a communicator that fails while no call waits aborts them all; the next call names the group" {
	local log=$WORK/nccl.log
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_LOG=$log FAKE_NCCL_FAIL_AFTER=10 run capped_srun 60 -N2 -n4 \
		--llm-parallel=tp=2 "$DEV_CHECK" --connect --loop 20
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	# Found by the watchdog (20 ms a look) well before the loop's 20 s.
	[ "$(grep -cE "^rank [0-3]: ops CUDA or NCCL failed after [0-4]\.[0-9] s: llmp_device_allreduce on the world group: the NCCL communicator of the [a-z-]+ group failed: unhandled system error: fake: an NVLink error on the peer$" <<<"$output")" -eq 4 ]
	# Every communicator of every rank aborted.
	[ "$(grep -c '^init ' "$log")" -eq "$(grep -c '^abort ' "$log")" ] || { cat "$log"; false; }
}

@test "watchdog: a member dies on this machine; the others' next call names it, LLMP_ERR_PEER" {
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL run capped_srun 60 -N1 -n4 --llm-parallel=tp=2 \
		"$DEV_CHECK" --connect --loop 20 --exit-after-connect 1
	echo "$output"
	[ "$status" -ne 124 ]
	[ "$(grep -cE "^rank [023]: ops peer failed after [0-4]\.[0-9] s: llmp_device_allreduce on the world group: rank 1 \(of the [a-z-]+ group\) died: its process [0-9]+ on this machine is gone$" <<<"$output")" -eq 3 ]
}

# A rank still at work when its neighbours are done: their processes must not
# look dead to its watchdog (watchdog.c fails the device path when a member's
# process on this machine is gone), so llmp_finalize waits for every rank while
# the watchdog runs (runtime/device/device.c, rt_device_leave). The test double
# lets the others finish their ring step and collectives without rank 0, which
# starts 500 ms late: 25 of the watchdog's looks.
@test "watchdog: ranks done early wait in llmp_finalize; the rank still at work beside them is not failed" {
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL run capped_srun 60 -N1 -n4 --llm-parallel=tp=2 \
		"$DEV_CHECK" --connect --p2p --ops --late 0 500
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^rank [0-3]: p2p ok' <<<"$output")" -eq 4 ]
	[ "$(grep -c '^rank [0-3]: ops ok' <<<"$output")" -eq 4 ]
}

@test "device send and receive: a ring step as NCCL p2p in one group per step, on the world's communicator" {
	local log=$WORK/nccl.log
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL FAKE_NCCL_LOG=$log run capped_srun 60 -N2 -n4 \
		--llm-parallel=tp=2 "$DEV_CHECK" --connect --p2p
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^rank [0-3]: p2p ok' <<<"$output")" -eq 4 ] || { echo "$output"; false; }
	# Per process: two steps, each a group holding the send to the next rank and the
	# receive from the previous (ranks and world places are the same here).
	python3 - "$log" <<'PY'
import collections, sys
lines = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] in ("send", "recv", "group-start", "group-end"):
        lines[f[-1]].append(f[:-1])
assert len(lines) == 4, lines
for pid, seq in lines.items():
    ops = [s[0] for s in seq]
    assert ops == ["group-start", "send", "recv", "group-end"] * 2, (pid, ops)
    sends = {int(s[4]) for s in seq if s[0] == "send"}
    recvs = {int(s[4]) for s in seq if s[0] == "recv"}
    assert len(sends) == 1 and len(recvs) == 1, (pid, seq)
    (to,), (frm,) = sends, recvs
    me = (frm + 1) % 4
    assert to == (me + 1) % 4, (pid, seq)
    assert all(s[1] == "llmp.tp-dp.0" and s[2] == "100" for s in seq if s[0] in ("send", "recv")), seq
PY
}

# The deadline per operation: dev_check --cuda puts its operations on a stream
# of the CUDA driver's test double (tests/device/fake_cuda.c), and with
# FAKE_NCCL_STUCK=1 every NCCL operation leaves work on the stream that ends
# only when a communicator is aborted: a member that never comes.
FAKE_CUDA="$LLMP_BUILDDIR/tests/device/.libs/fake_cuda.so"

@test "deadline: a collective the stream never passes fails every rank after LLMP_TIMEOUT, named; every communicator aborted" {
	local log=$WORK/nccl.log
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL LLMP_CUDA_LIBRARY=$FAKE_CUDA FAKE_NCCL_LOG=$log \
		FAKE_NCCL_STUCK=1 LLMP_TIMEOUT=3 run capped_srun 60 -N2 -n4 --llm-parallel=tp=2 \
		"$DEV_CHECK" --cuda --connect --loop 20
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ "$(grep -c '^rank [0-3]: deadline on: $' <<<"$output")" -eq 4 ]
	# Not before the deadline, and found by the watchdog (20 ms a look) soon after it.
	[ "$(grep -cE "^rank [0-3]: ops operation timed out after (3\.[0-9]|4\.[0-4]) s: llmp_device_allreduce on the world group: llmp_device_allreduce on the world group did not complete within 3 s \(LLMP_TIMEOUT\): a member of the group is stuck, or never made the matching call$" <<<"$output")" -eq 4 ]
	[ "$(grep -c '^init ' "$log")" -eq "$(grep -c '^abort ' "$log")" ] || { cat "$log"; false; }
}

@test "deadline: a pipeline step's group is timed from its end, and named by its first operation" {
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL LLMP_CUDA_LIBRARY=$FAKE_CUDA FAKE_NCCL_STUCK=1 \
		LLMP_TIMEOUT=3 run capped_srun 60 -N2 -n4 --llm-parallel=tp=2 "$DEV_CHECK" --cuda --connect --p2p --loop 20
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ "$(grep -c '^rank [0-3]: p2p ok' <<<"$output")" -eq 4 ]
	[ "$(grep -cE "^rank [0-3]: ops operation timed out after (3\.[0-9]|4\.[0-4]) s: llmp_device_allreduce on the world group: llmp_device_send on the world group did not complete within 3 s" <<<"$output")" -eq 4 ]
}

@test "deadline: operations the streams pass are let go, however many; without a CUDA driver there is none, saying why" {
	# Thousands of operations in 4 s, each passed at once (no delay on the stream),
	# against a deadline of 1 s: nothing fails, and the events are reused.
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL LLMP_CUDA_LIBRARY=$FAKE_CUDA FAKE_CUDA_DELAY_US=0 \
		LLMP_TIMEOUT=1 run capped_srun 60 -N2 -n4 --llm-parallel=tp=2 "$DEV_CHECK" --cuda --connect --ops --p2p --loop 4
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^rank [0-3]: deadline on: $' <<<"$output")" -eq 4 ]
	[ "$(grep -cE '^rank [0-3]: ops ok after 4\.[0-9] s: $' <<<"$output")" -eq 4 ]
	LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL LLMP_CUDA_LIBRARY=$WORK/no-such-libcuda.so \
		run capped_srun 60 -N1 -n2 --llm-parallel=tp=2 "$DEV_CHECK" --connect --ops
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c "^rank [01]: deadline off: no deadline per device operation: .*no-such-libcuda.so" <<<"$output")" -eq 2 ]
}

# The GPU time of device operations: with FAKE_NCCL_WORK_US every NCCL operation
# leaves work of that many microseconds on its stream (tests/device/fake_nccl.c),
# and the CUDA test double times events by when its stream thread reached them.
@test "device time: each operation's GPU time in its communicator's time in calls, p2p groups too; in the metrics file and llmp top" {
	local w=50000 # 50 ms of work per NCCL operation
	LLMP_METRICS="$WORK/metrics,every=0" LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL \
		LLMP_CUDA_LIBRARY=$FAKE_CUDA FAKE_CUDA_DELAY_US=0 FAKE_NCCL_WORK_US=$w \
		run capped_srun 120 -N2 -n4 --llm-parallel=tp=2 --llm-checkpoint="$WORK/ckpt" \
		"$DEV_CHECK" --cuda --connect --p2p --ops --work-us $w --job
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^rank [0-3]: deadline on: $' <<<"$output")" -eq 4 ]
	# Expected, per rank: tp 4 collectives, so 4 x 50 ms; the world 4 collectives and
	# 2 pipeline steps (a group of a send and a receive, 2 x 50 ms on the stream each)
	# in 8 calls: 8 x 50 ms. Never less: the work sleeps its whole time between the
	# operation's two events. At most 25 ms more per operation timed (tp 4, world 6):
	# the stream thread's wake-ups between the events, a few microseconds idle, a few
	# milliseconds on this loaded 2-vCPU machine.
	printf '%s\n' "$output" >"$WORK/out.txt"
	python3 - "$WORK/out.txt" "$WORK/metrics" <<'PY'
import glob, json, re, sys
w = 0.050
got = {}
for line in open(sys.argv[1]):
    m = re.match(r"rank (\d+): device time tp ops (\d+) seconds (\S+) world ops (\d+) seconds (\S+)$", line)
    if m:
        r, tp_ops, tp_s, world_ops, world_s = int(m[1]), int(m[2]), float(m[3]), int(m[4]), float(m[5])
        got[r] = tp_s
        assert (tp_ops, world_ops) == (4, 8), line
        assert 4 * w <= tp_s <= 4 * w + 4 * 0.025, ("tp", line)
        assert 8 * w <= world_s <= 8 * w + 6 * 0.025, ("world", line)
assert sorted(got) == [0, 1, 2, 3], got
# The metrics file's last line carries the same tp time (tp had no host call).
tp_sum = step_sum = 0
for f in sorted(glob.glob(sys.argv[2] + "/rank-*.jsonl")):
    last = json.loads(open(f).read().splitlines()[-1])
    assert last["final"], f
    tp = [c for c in last["comms"] if c["group"] == "tp"][0]
    assert abs(tp["seconds"] - got[last["rank"]]) < 2e-6, (f, tp, got)
    tp_sum += tp["seconds"]
    step_sum += last["step_s"]
open(sys.argv[2] + "/share", "w").write(f"{tp_sum / step_sum}\n")
PY
	# llmp top: the tp group's share of step time is its device time over the steps'.
	run "$LLMP" top "$WORK/metrics" --format json
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); want=float(open(sys.argv[1]).read()); g=[x for x in d["groups"] if x["group"]=="tp"][0]; assert want > 0 and abs(g["time_share"]-want) <= 1e-3*want, (g, want)' \
		"$WORK/metrics/share" <<<"$output"
}

# Device checkpoints across ranks (singleton tests: tests/device_ckpt.bats):
# tests/device/dev_ckpt with the CUDA driver's test double, linked as
# libcuda.so.1 in a directory on the tasks' LD_LIBRARY_PATH.
ckpt_env() {
	mkdir -p "$WORK/driver"
	ln -sf "$LLMP_BUILDDIR/tests/device/.libs/fake_cuda.so" "$WORK/driver/libcuda.so.1"
	export LD_LIBRARY_PATH="$WORK/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA=libcuda.so.1
	DEV_CKPT="$LLMP_BUILDDIR/tests/device/dev_ckpt"
}

@test "device checkpoints: saved by 4 ranks from device tensors (streamed by chunks), loaded by 3 in another layout; a copy failing on one rank fails the save on all" {
	ckpt_env
	local root=$WORK/ckpt
	run capped_srun 120 -N2 -n4 "$DEV_CKPT" "$root" save 7 async overwrite staging=1000
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^rank [0-3]: saved step 7 device_bytes ' <<<"$output")" -eq 4 ] || { echo "$output"; false; }
	run capped_srun 120 -N3 -n3 "$DEV_CKPT" "$root" load 7 into=device layout=cols
	[ "$(grep -c '^rank [0-2]: loaded step 7 into device layout cols: every value as computed$' <<<"$output")" -eq 3 ] ||
		{ echo "$output"; false; }
	cat >"$WORK/fail2.sh" <<-EOF
		#!/bin/sh
		[ "\$SLURM_PROCID" = 2 ] && export FAKE_CUDA_FAIL=cuMemcpyDtoHAsync:1
		exec "$DEV_CKPT" "$root" fail 8 async
	EOF
	chmod +x "$WORK/fail2.sh"
	run capped_srun 120 -N2 -n4 "$WORK/fail2.sh"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^rank [0-3]: save failed: .*rank 2: tensor b: cuMemcpyDtoHAsync: CUDA_ERROR_ILLEGAL_ADDRESS' <<<"$output")" -eq 4 ] ||
		{ echo "$output"; false; }
	[ ! -e "$root/step-8" ] || { echo "a failed save was committed"; false; }
	run capped_srun 120 -N2 -n2 "$DEV_CKPT" "$root" load 7 into=host layout=window
	[ "$(grep -c '^rank [01]: loaded step 7 into host layout window: every value as computed$' <<<"$output")" -eq 2 ] ||
		{ echo "$output"; false; }
}
