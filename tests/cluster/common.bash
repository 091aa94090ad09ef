# Shared by the cluster tests: start one local Slurm cluster for a test file,
# with the freshly built plugin, and tear it down whatever happens.

: "${LLMP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${LLMP_BUILDDIR:=$LLMP_SRCDIR}"
CLUSTER="$LLMP_SRCDIR/tests/cluster/cluster.sh"
TASK_ENV="$LLMP_SRCDIR/tests/cluster/task_env.sh"
CHECK_ENV="$LLMP_SRCDIR/tests/cluster/check_env.py"
PLUGIN="$LLMP_BUILDDIR/plugin/.libs/llm_parallel.so"
LLMP="$LLMP_BUILDDIR/cli/llmp"

# Why a cluster cannot run here, or nothing. bats 1.8 cannot skip from
# setup_file, so setup_file records the reason and each test skips with it.
cluster_unavailable() {
	if [ "${LLMP_CLUSTER_TESTS:-yes}" = no ]; then
		echo "cluster tests disabled (--disable-cluster-tests)"
	elif [ "$(id -u)" -ne 0 ]; then
		echo "the local Slurm cluster needs root"
	elif ! command -v slurmctld >/dev/null; then
		echo "slurmctld not installed"
	elif [ ! -f "$PLUGIN" ]; then
		echo "plugin not built ($PLUGIN)"
	fi
}

# Point the cluster's plugstack at the build's plugin with these site arguments.
# slurmstepd and the clients read the file each time, so no restart is needed.
write_plugstack() {
	echo "required $PLUGIN $*" >"$CLUSTER_STATE/plugstack.conf"
}

cluster_setup_file() {
	CLUSTER_SKIP=$(cluster_unavailable)
	export CLUSTER_SKIP
	[ -z "$CLUSTER_SKIP" ] || return 0
	# One test file's cluster at a time: under `make -j check` the files run in
	# parallel, and a cluster's start takes over any other. Held until teardown.
	exec {CLUSTER_FILE_LOCK}>/run/llmp-cluster-tests.lock
	flock -w 3600 "$CLUSTER_FILE_LOCK" || return 1
	CLUSTER_STATE=$(mktemp -d /tmp/llmp-cluster-test.XXXXXX)
	export CLUSTER_STATE
	chmod 755 "$CLUSTER_STATE"
	write_plugstack
	if ! "$CLUSTER" start "$CLUSTER_STATE" "$CLUSTER_STATE/plugstack.conf" >&3 2>&1; then
		"$CLUSTER" stop "$CLUSTER_STATE" >/dev/null 2>&1 || true
		return 1
	fi
}

cluster_teardown_file() {
	if [ -n "${CLUSTER_STATE:-}" ]; then
		"$CLUSTER" stop "$CLUSTER_STATE" >&3 2>&1 || true
		rm -rf "$CLUSTER_STATE"
	fi
	if [ -n "${CLUSTER_FILE_LOCK:-}" ]; then
		exec {CLUSTER_FILE_LOCK}>&-
	fi
}

# Every test runs with the cluster's client configuration.
cluster_setup() {
	if [ -n "$CLUSTER_SKIP" ]; then
		skip "$CLUSTER_SKIP"
	fi
	# shellcheck disable=SC1091
	. "$CLUSTER_STATE/env"
	write_plugstack
	WORK=$(mktemp -d "$CLUSTER_STATE/test.XXXXXX")
	chmod 755 "$WORK"
}

# All nodes idle: nothing drained, nothing left running.
assert_cluster_idle() {
	local states
	for _ in $(seq 1 30); do
		states=$(sinfo -h -N -o '%N %T' | sort)
		if ! grep -qv ' idle$' <<<"$states"; then
			return 0
		fi
		sleep 1
	done
	echo "nodes not idle: $states" >&2
	return 1
}

assert_queue_empty() {
	local jobs
	jobs=$(squeue -h -o '%i %T')
	[ -z "$jobs" ] || { echo "jobs in the queue: $jobs" >&2; return 1; }
}

# check_env.py on the task lines of a file or of $output.
check_tasks() { # SPEC WORLD [checker options]
	python3 "$CHECK_ENV" "$@" <<<"$output"
}

# Submit a trivial job with the given options: sbatch, srun or salloc.
submit() { # sbatch|srun|salloc OPTION...
	local how=$1
	shift
	case $how in
	sbatch) sbatch "$@" --wrap=true ;;
	srun) srun "$@" -n1 true ;;
	salloc) salloc "$@" true ;;
	esac
}
