# SPDX-License-Identifier: BSD-3-Clause
# Holding the local Slurm cluster of tests/cluster/cluster.sh. Only one such
# cluster can run on a machine (fixed namespaces, bridge and ports), so every
# user of it holds one machine-wide lock from before it starts its cluster
# until after it has stopped it: each cluster test file (common.bash),
# scripts/demo.sh and scripts/bench-requeue.sh.
#
# The lock is flock(1) on a descriptor of the calling shell, released when
# that shell exits. cluster.sh closes the descriptor for the daemons it
# starts, so a daemon never keeps it.

CLUSTER_SUITE_LOCK=/run/llmp-cluster-suite.lock

# Take the lock (CLUSTER_LOCK_FD), waiting at most WAIT_S seconds, and say
# on stderr when someone else holds it: a test suite can keep it for minutes.
# CLUSTER_LOCK_WAITED_S: how long it waited.
take_cluster_suite_lock() { # WAIT_S WHO
	local since=$SECONDS
	CLUSTER_LOCK_WAITED_S=0
	# A runner of several files that holds the lock itself for all of them
	# (scripts/slurm-release-test.sh) says so: its files run one at a time.
	[ "${LLMP_CLUSTER_SUITE_LOCK_HELD:-}" != yes ] || return 0
	exec {CLUSTER_LOCK_FD}>"$CLUSTER_SUITE_LOCK"
	flock -n "$CLUSTER_LOCK_FD" && return 0
	echo "$2: waiting for $CLUSTER_SUITE_LOCK: another local cluster is running (a test suite?)" >&2
	if flock -w "$1" "$CLUSTER_LOCK_FD"; then
		CLUSTER_LOCK_WAITED_S=$((SECONDS - since))
		echo "$2: got $CLUSTER_SUITE_LOCK after $CLUSTER_LOCK_WAITED_S s" >&2
		return 0
	fi
	echo "$2: $CLUSTER_SUITE_LOCK still held after $1 s; giving up" >&2
	return 1
}

# For a script that runs a cluster of its own: take the lock, start a cluster
# with the plugin of BUILD in a new /tmp/llmp-WHO.XXXXXX (CLUSTER_STATE), and
# source its env (SLURM_CONF, LLMP_CLUSTER_STATEDIR). Sets an EXIT trap that
# stops the cluster and removes CLUSTER_STATE, whatever happens; the lock
# goes when the script exits, after the trap.
start_script_cluster() { # SRCDIR BUILDDIR WHO
	local src=$1 build=$2 who=$3
	take_cluster_suite_lock 3600 "$who" || return 1
	CLUSTER_STATE=$(mktemp -d "/tmp/llmp-$who.XXXXXX")
	CLUSTER_SH=$src/tests/cluster/cluster.sh
	trap stop_script_cluster EXIT
	chmod 755 "$CLUSTER_STATE"
	echo "required $build/plugin/.libs/llm_parallel.so" >"$CLUSTER_STATE/plugstack.conf"
	if ! "$CLUSTER_SH" start "$CLUSTER_STATE" "$CLUSTER_STATE/plugstack.conf" \
		>"$CLUSTER_STATE/start.log" 2>&1; then
		cat "$CLUSTER_STATE/start.log" >&2
		echo "$who: the local cluster did not start" >&2
		return 1
	fi
	# shellcheck disable=SC1091
	. "$CLUSTER_STATE/env"
}

stop_script_cluster() {
	[ -n "${CLUSTER_STATE:-}" ] || return 0
	"$CLUSTER_SH" stop "$CLUSTER_STATE" >/dev/null 2>&1 || true
	rm -rf "$CLUSTER_STATE"
}
