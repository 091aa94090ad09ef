# Shared by the cluster tests: start one local Slurm cluster for a test file,
# with the freshly built plugin, and tear it down whatever happens.

: "${LLMP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${LLMP_BUILDDIR:=$LLMP_SRCDIR}"
CLUSTER="$LLMP_SRCDIR/tests/cluster/cluster.sh"
TASK_ENV="$LLMP_SRCDIR/tests/cluster/task_env.sh"
CHECK_ENV="$LLMP_SRCDIR/tests/cluster/check_env.py"
PLUGIN="$LLMP_BUILDDIR/plugin/.libs/llm_parallel.so"
LLMP="$LLMP_BUILDDIR/cli/llmp"

# Skip the whole file, with the reason, where a cluster cannot run.
cluster_skip_unless_possible() {
	[ "${LLMP_CLUSTER_TESTS:-yes}" != no ] || skip "cluster tests disabled (--disable-cluster-tests)"
	[ "$(id -u)" -eq 0 ] || skip "the local Slurm cluster needs root"
	command -v slurmctld >/dev/null || skip "slurmctld not installed"
	[ -f "$PLUGIN" ] || skip "plugin not built ($PLUGIN)"
}

# Point the cluster's plugstack at the build's plugin with these site arguments.
# slurmstepd and the clients read the file each time, so no restart is needed.
write_plugstack() {
	echo "required $PLUGIN $*" >"$CLUSTER_STATE/plugstack.conf"
}

cluster_setup_file() {
	cluster_skip_unless_possible
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
	[ -n "${CLUSTER_STATE:-}" ] || return 0
	"$CLUSTER" stop "$CLUSTER_STATE" >&3 2>&1 || true
	rm -rf "$CLUSTER_STATE"
}

# Every test runs with the cluster's client configuration.
cluster_setup() {
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
