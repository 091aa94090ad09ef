#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The device path's own cost per call, and LLMP_DEVICE_TIMING, without a GPU
# or a cluster: tests/device/dev_overhead and dev_check as PMIx singletons,
# with the test doubles of NCCL (tests/device/fake_nccl.c) and of the CUDA
# driver (tests/device/fake_cuda.c). The figures are printed, never held to
# a time (machines are noisy); what is counted is held: the driver's event
# calls per operation in each mode, and what a watchdog's look costs with
# the GPU far behind. The deadline keeps its word in every mode.

load lib/helpers

FAKE_NCCL="$LLMP_BUILDDIR/tests/device/.libs/fake_nccl.so"
FAKE_CUDA="$LLMP_BUILDDIR/tests/device/.libs/fake_cuda.so"
DEV_OVERHEAD="$LLMP_BUILDDIR/tests/device/dev_overhead"
DEV_CHECK="$LLMP_BUILDDIR/tests/device/dev_check"

setup() {
	[ -x "$DEV_OVERHEAD" ] || skip "dev_overhead not built ($DEV_OVERHEAD)"
	[ -f "$FAKE_NCCL" ] && [ -f "$FAKE_CUDA" ] || fail "the test doubles are not built"
	need_python
	export LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL LLMP_CUDA_LIBRARY=$FAKE_CUDA FAKE_CUDA_DELAY_US=0
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp"
	unset LLMP_DEVICE_TIMING LLMP_TIMEOUT LLMP_METRICS LLMP_PARALLEL FAKE_NCCL_STUCK FAKE_NCCL_WORK_US FAKE_NCCL_LOG
}

# A PMIx singleton: none of a launcher's variables, and a limit should a deadline be missed.
singleton() {
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID timeout -k 5 120 "$@"
}

# The deadline's message for a stuck allreduce after LLMP_TIMEOUT=2, found by the
# watchdog (a look every 20 ms) soon after it, as tests/device.bats expects on a cluster.
STUCK="^rank 0: ops operation timed out after (2\.[0-9]|3\.[0-4]) s: llmp_device_allreduce on the world group: llmp_device_allreduce on the world group did not complete within 2 s \(LLMP_TIMEOUT\): a member of the group is stuck, or never made the matching call$"

# "rank 0: world ops N seconds S" of dev_check --world-time: N and S.
world_time() {
	sed -n 's/^rank 0: world ops \([0-9]*\) seconds \([0-9.]*\)$/\1 \2/p' <<<"$output"
}

@test "overhead: the device path's own cost per call against the doubles, per timing mode, printed; each mode's event calls per operation" {
	singleton "$DEV_OVERHEAD"
	[ "$status" -eq 0 ] || fail "dev_overhead failed"
	grep '^#' <<<"$output" >&3
	# Counted, not timed. Per operation: on, a timed pair (2 records) and an
	# elapsed time; sampled, an untimed end and 1 in 64 a timed pair instead
	# (1 + 1/64 records; 3 x 20 x 2000 operations per collective make the
	# fraction's sd 0.0004); off, one record and no elapsed time. Each end
	# is queried about once. With 20000 allreduces pending behind a held
	# stream a look queries one event per stream, and the head's again.
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/figures"
	python3 - "$BATS_TEST_TMPDIR/figures" <<'PY' || fail "an event count is not the mode's"
import sys
lines = [l.split() for l in open(sys.argv[1]).read().splitlines() if not l.startswith("#")]
calls = [l for l in lines if l[0] == "call"]
assert len(calls) == 9, calls
for _, mode, coll, best, median, own, creates, records, queries, elapsed, watchdog in calls:
    records, queries, elapsed = float(records), float(queries), float(elapsed)
    want = {"on": (2.0, 2.0, 0.9, 1.1), "sampled": (1.011, 1.021, 0.011, 0.021), "off": (1.0, 1.0, 0.0, 0.0)}[mode]
    assert want[0] <= records <= want[1], (mode, coll, "records", records)
    assert want[2] <= elapsed <= want[3], (mode, coll, "elapsed times", elapsed)
    assert 0.8 <= queries <= 1.2, (mode, coll, "queries", queries)
behind = [l for l in lines if l[0] == "behind"]
assert len(behind) == 3, behind
for _, mode, pending, look_ns, queries in behind:
    assert int(pending) == 20000 and float(queries) <= 5, (mode, "queries per look", queries)
PY
}

@test "deadline: a collective the stream never passes is named after LLMP_TIMEOUT, whether operations are timed, sampled or not" {
	for mode in on sampled off; do
		LLMP_DEVICE_TIMING=$mode FAKE_NCCL_STUCK=1 LLMP_TIMEOUT=2 singleton "$DEV_CHECK" --cuda --connect --loop 20
		echo "LLMP_DEVICE_TIMING=$mode:"
		echo "$output"
		[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
		grep -q '^rank 0: deadline on: $' <<<"$output"
		grep -qE "$STUCK" <<<"$output"
	done
}

@test "deadline: one stream held while another keeps up; the held one's first operation named, the other's counted meanwhile" {
	# The allreduces alternate between the two streams, 0.5 ms of work each.
	# A look stops querying the held stream at its first operation, but goes
	# on to the other stream's: those passed are counted while the first is
	# behind (the caller's own reaping stops at the oldest, the held one's).
	for mode in on sampled off; do
		LLMP_DEVICE_TIMING=$mode FAKE_NCCL_WORK_US=500 LLMP_TIMEOUT=2 singleton "$DEV_CHECK" --cuda --connect \
			--hold-stream --loop 20 --count 16384 --world-time
		echo "LLMP_DEVICE_TIMING=$mode:"
		echo "$output"
		[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
		grep -qE "$STUCK" <<<"$output"
		read -r ops seconds <<<"$(world_time)"
		[ "$ops" -ge 200 ]
		# 16384 elements: timed in mode sampled too. At least 0.5 ms for each of the
		# second stream's operations, but those still queued when the deadline passed.
		if [ "$mode" = off ]; then
			[ "$seconds" = 0.000000 ]
		else
			python3 -c 'import sys; ops, s = int(sys.argv[1]), float(sys.argv[2]); assert s >= 0.0005 * (ops / 2 - 50), (ops, s)' "$ops" "$seconds"
		fi
	done
}

@test "device time: every operation counted when on, every large one when sampled, small ones 1 in 64 for 64, none when off" {
	# 0.5 ms of work per operation on the stream, which keeps up (a call every ms).
	local mode count
	for mode in on:1000 sampled:16384 sampled:1000 off:16384; do
		count=${mode#*:} mode=${mode%:*}
		LLMP_DEVICE_TIMING=$mode FAKE_NCCL_WORK_US=500 singleton "$DEV_CHECK" --cuda --connect --loop 2 \
			--count "$count" --world-time
		echo "LLMP_DEVICE_TIMING=$mode, $count elements:"
		echo "$output"
		[ "$status" -eq 0 ]
		read -r ops seconds <<<"$(world_time)"
		[ "$ops" -ge 500 ]
		python3 - "$mode" "$count" "$ops" "$seconds" <<'PY'
import sys
mode, count, ops, s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if mode == "off":
    assert s == 0, s
elif mode == "on" or count >= 16384:
    # Each timed, never less than its work; at most 25 ms more each (a loaded machine's wake-ups).
    assert 0.0005 * ops <= s <= 0.0255 * ops, (ops, s)
else:
    # About ops/64 timed, each counted for 64 operations: at least one drawn (P(none of
    # 500) = 0.04%), so at least 64 x 0.5 ms; not four times the expected count (ops/64,
    # Poisson), each at most 64 x 25.5 ms.
    assert 64 * 0.0005 <= s <= 4 * 0.0255 * ops, (ops, s)
PY
	done
}

@test "LLMP_DEVICE_TIMING: a value other than on, sampled, off, 1 or 0 fails llmp_init, named" {
	LLMP_DEVICE_TIMING=sometimes singleton "$DEV_CHECK"
	[ "$status" -eq 1 ]
	assert_contains "$output" "init invalid argument: LLMP_DEVICE_TIMING='sometimes': expected on, sampled or off"
	for value in 1 0 on off sampled; do
		LLMP_DEVICE_TIMING=$value singleton "$DEV_CHECK"
		[ "$status" -eq 0 ] || fail "LLMP_DEVICE_TIMING=$value"
	done
}
