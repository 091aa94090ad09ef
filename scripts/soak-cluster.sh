#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run the cluster test suites many times in a row from a fresh clone, to show
# that none of them fails at random (a test that fails once in N runs is a bug).
#
#   scripts/soak-cluster.sh [RUNS] [REV]
#
# Clones this repository at REV (default HEAD, committed work only) into a
# temporary directory, builds it once, then runs runtime.bats, cluster.bats,
# ckpt.bats, ft.bats and example_mlp.bats RUNS times (default 10). Prints one
# line per run with its counts and the failing tests, keeps the logs of failed
# runs in the clone's soak/ directory, and ends with the number of runs that
# failed; the exit status is 1 if any did. As root, like the cluster tests.
set -euo pipefail
runs=${1:-10}
rev=${2:-HEAD}
src=$(cd "$(dirname "$0")/.." && pwd)
suites="tests/runtime.bats tests/cluster.bats tests/ckpt.bats tests/ft.bats tests/example_mlp.bats"

if [ "$(id -u)" -ne 0 ]; then
	echo "soak-cluster: run as root: the cluster tests start Slurm daemons" >&2
	exit 1
fi

clone=$(mktemp -d /tmp/llmp-soak.XXXXXX)
git clone -q "$src" "$clone"
git -C "$clone" checkout -q "$(git -C "$src" rev-parse "$rev")"
echo "soak-cluster: $(git -C "$clone" log --oneline -1) in $clone"
LLMP_BUILD_DIR=$clone/build "$clone/scripts/build.sh" >"$clone/build.log" 2>&1 ||
	{ tail -n 40 "$clone/build.log"; exit 1; }
mkdir -p "$clone/soak"

failed_runs=0
for ((i = 1; i <= runs; i++)); do
	started=$(date +%s)
	make -C "$clone/build" check TESTS="$suites" >"$clone/soak/run$i.out" 2>&1 || true
	log=$clone/build/test-suite.log
	pass=$(awk '/^# PASS:/ {print $3}' "$log")
	skip=$(awk '/^# SKIP:/ {print $3}' "$log")
	fail=$(awk '/^# (FAIL|XPASS|ERROR):/ {n += $3} END {print n + 0}' "$log")
	printf 'run %d: %s passed, %s failed, %s skipped in %d s\n' \
		"$i" "${pass:-0}" "$fail" "${skip:-0}" $(($(date +%s) - started))
	if [ "$fail" -ne 0 ] || [ -z "$pass" ]; then
		failed_runs=$((failed_runs + 1))
		grep -E '^(FAIL|ERROR|XPASS):' "$log" | sed 's/^/    /' || true
		cp "$log" "$clone/soak/run$i-test-suite.log"
	fi
done
echo "soak-cluster: $failed_runs of $runs runs failed (logs in $clone/soak)"
[ "$failed_runs" -eq 0 ]
