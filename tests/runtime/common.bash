# SPDX-License-Identifier: BSD-3-Clause
# Shared by the runtime's bats files: where rt_check is, and how to read its output.

RT_CHECK="$LLMP_BUILDDIR/tests/runtime/rt_check"

# srun --mpi=pmix, capped: a hang fails the test instead of stalling the suite.
# The runtime's own timeout (LLMP_TIMEOUT, default 60 s here) is far below
# the cap, so a lost peer is reported by the ranks themselves first.
capped_srun() { # seconds srun-arguments...
	local limit=$1
	shift
	LLMP_TIMEOUT=${LLMP_TIMEOUT:-60} timeout -k 10 "$limit" srun --mpi=pmix "$@"
}

# Every rank 0..N-1 printed its summary once, with at least MIN checks and none
# wrong, and the step exited 0. The output is printed first: bats shows it
# only when the test fails.
assert_ranks_ok() { # N [MIN]
	local n=$1 min=${2:-1} summaries r
	echo "$output" | tail -n 80
	[ "$status" -eq 0 ] || { echo "exit status $status"; return 1; }
	summaries=$(grep -E '^rank [0-9]+: [0-9]+ checks, [0-9]+ wrong$' <<<"$output" || true)
	[ "$(wc -l <<<"$summaries")" -eq "$n" ] || { echo "expected $n summaries"; return 1; }
	for ((r = 0; r < n; r++)); do
		grep -qE "^rank $r: [0-9]+ checks, 0 wrong\$" <<<"$summaries" ||
			{ echo "rank $r: no summary, or something wrong"; return 1; }
	done
	while read -r _ _ checks _; do
		[ "$checks" -ge "$min" ] || { echo "only $checks checks on a rank (want >= $min)"; return 1; }
	done <<<"$summaries"
}
