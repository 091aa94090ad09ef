# SPDX-License-Identifier: BSD-3-Clause
# Shared by the cluster tests: start one local Slurm cluster for a test file,
# with the freshly built plugin, and tear it down whatever happens.

: "${LLMP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${LLMP_BUILDDIR:=$LLMP_SRCDIR}"
CLUSTER="$LLMP_SRCDIR/tests/cluster/cluster.sh"
TASK_ENV="$LLMP_SRCDIR/tests/cluster/task_env.sh"
BATCH_ENV="$LLMP_SRCDIR/tests/cluster/batch_env.sh"
CHECK_ENV="$LLMP_SRCDIR/tests/cluster/check_env.py"
PLUGIN="$LLMP_BUILDDIR/plugin/.libs/llm_parallel.so"
LLMP="$LLMP_BUILDDIR/cli/llmp"

# Under `configure --with-slurm=DIR` the cluster runs DIR's daemons and clients,
# the release the plugin was built for: DIR/sbin and DIR/bin go first on PATH.
# make check exports LLMP_SLURM_BINDIRS; a bats run by hand reads the build's
# Makefile, so both run the same Slurm.
if [ -z "${LLMP_SLURM_BINDIRS+set}" ] && [ -f "$LLMP_BUILDDIR/Makefile" ]; then
	LLMP_SLURM_BINDIRS=$(sed -n 's/^LLMP_SLURM_BINDIRS = //p' "$LLMP_BUILDDIR/Makefile")
fi
if [ -n "${LLMP_SLURM_BINDIRS:-}" ]; then
	PATH=$LLMP_SLURM_BINDIRS:$PATH
	export PATH
fi

# Why a cluster cannot run here, or nothing. bats 1.8 cannot skip from
# setup_file, so setup_file records the reason and each test skips with it.
cluster_unavailable() {
	if [ "${LLMP_CLUSTER_TESTS:-yes}" = no ]; then
		echo "cluster tests disabled (--disable-cluster-tests)"
	elif [ "$(id -u)" -ne 0 ]; then
		echo "the local Slurm cluster needs root"
	elif [ -n "${LLMP_SLURM_BINDIRS:-}" ] && [ ! -x "${LLMP_SLURM_BINDIRS%%:*}/slurmctld" ]; then
		echo "no slurmctld in ${LLMP_SLURM_BINDIRS%%:*} (configure --with-slurm: that release's daemons run the tests)"
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

# One cluster runs on a machine at a time, but `make -j check` runs test files
# side by side: each file holds the lock of session.bash from setup_file until
# its bats process exits.
. "$LLMP_SRCDIR/tests/cluster/session.bash"
CLUSTER_SUITE_WAIT_S=3600

cluster_setup_file() {
	CLUSTER_SKIP=$(cluster_unavailable)
	export CLUSTER_SKIP
	[ -z "$CLUSTER_SKIP" ] || return 0
	take_cluster_suite_lock "$CLUSTER_SUITE_WAIT_S" "$(basename "$BATS_TEST_FILENAME")" || return 1
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
		# LLMP_TEST_KEEP_LOGS=DIR keeps the daemons' logs of each file there.
		if [ -n "${LLMP_TEST_KEEP_LOGS:-}" ] && [ -d "$CLUSTER_STATE/log" ]; then
			mkdir -p "$LLMP_TEST_KEEP_LOGS/$(basename "$BATS_TEST_FILENAME" .bats)"
			cp -r "$CLUSTER_STATE/log/." "$LLMP_TEST_KEEP_LOGS/$(basename "$BATS_TEST_FILENAME" .bats)/"
		fi
		rm -rf "$CLUSTER_STATE"
	fi
	if [ -n "${CLUSTER_LOCK_FD:-}" ]; then
		exec {CLUSTER_LOCK_FD}>&-
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

# Wait until a job has left the queue for good (requeues included); its
# final state on stdout. Fails after the limit.
wait_job_end() { # JOBID SECONDS
	local state
	for _ in $(seq 1 "$2"); do
		state=$(scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
		case $state in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | "")
			echo "${state:-PURGED}"
			return 0
			;;
		esac
		sleep 1
	done
	echo "job $1 still $state after $2 s" >&2
	return 1
}

# Every srun, sbatch and salloc a test runs ends within a limit: a step that
# hangs (a layout Slurm leaves PENDING, a stuck slurmstepd) becomes a failure
# naming the command instead of a suite that never ends. The functions shadow
# the programs in the test's shell, `run` included; `timeout` execs the
# program itself. A file may lower the limit (LLMP_TEST_CMD_TIMEOUT_S) before
# its tests; a test that expects a nonzero status still fails on a timeout,
# through the mark that cluster_teardown checks.
: "${LLMP_TEST_CMD_TIMEOUT_S:=600}"
bounded() { # PROGRAM ARG...
	local rc=0
	timeout -k 10 "$LLMP_TEST_CMD_TIMEOUT_S" "$@" || rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "TIMEOUT: '$*' still running after ${LLMP_TEST_CMD_TIMEOUT_S} s; killed" >&2
		[ -z "${BATS_TEST_TMPDIR:-}" ] || echo "$*" >>"$BATS_TEST_TMPDIR/timed-out"
	fi
	return "$rc"
}
srun() { bounded srun "$@"; }
sbatch() { bounded sbatch "$@"; }
salloc() { bounded salloc "$@"; }

# Fails the test if one of its commands ran into the limit of bounded().
assert_no_timeout() {
	[ -n "${BATS_TEST_TMPDIR:-}" ] && [ -f "$BATS_TEST_TMPDIR/timed-out" ] || return 0
	echo "timed out after ${LLMP_TEST_CMD_TIMEOUT_S} s:" >&2
	sed 's/^/  /' "$BATS_TEST_TMPDIR/timed-out" >&2
	return 1
}

# The teardown of a cluster test: a timeout fails it, then the queue is emptied.
# A file that needs more defines its own teardown and calls this.
cluster_teardown() {
	[ -z "${CLUSTER_SKIP:-}" ] && [ -n "${CLUSTER_STATE:-}" ] || return 0
	local rc=0
	assert_no_timeout || rc=1
	cancel_leftover_jobs
	return "$rc"
}
teardown() { cluster_teardown; }

# Whether the cluster's Slurm is release MAJOR.MINOR or later, from srun's
# own --version (not from llmp): for behaviours that differ by release.
slurm_at_least() { # MAJOR.MINOR
	local v
	v=$(srun --version | grep -oE '[0-9]+\.[0-9]+' | head -n1)
	[ -n "$v" ] && [ "$((10#${v%.*} * 100 + 10#${v#*.}))" -ge "$((10#${1%.*} * 100 + 10#${1#*.}))" ]
}

# Skips a test that needs srun --mpi=pmix where this Slurm has no mpi/pmix
# plugin (Debian sid's slurm-wlm 26.05.5 is built without it).
need_mpi_pmix() {
	srun --mpi=list 2>&1 | grep -qw pmix ||
		skip "this Slurm has no mpi/pmix plugin (srun --mpi=list): built without PMIx"
}

# need_mpi_pmix for the running test when its body launches with mpi/pmix:
# srun --mpi=pmix, capped_srun (tests/runtime/common.bash) or one of the
# suite's own helpers that do, named in HELPERS (a regular expression). For a
# suite's setup, after cluster_setup.
need_mpi_pmix_where_used() { # [HELPERS]
	! declare -f "$BATS_TEST_NAME" | grep -qE -- "--mpi=pmix|capped_srun${1:+|$1}" || need_mpi_pmix
}

# Cancel whatever a failed test left in the queue, so the next test starts clean.
cancel_leftover_jobs() {
	local jobs
	jobs=$(squeue -h -o %i 2>/dev/null) || return 0
	# shellcheck disable=SC2086 # one argument per job
	[ -z "$jobs" ] || scancel $jobs || true
}

# A job still COMPLETING after its srun returned is not one left queued:
# Slurm 24.11 keeps finished jobs COMPLETING a few seconds longer than
# 22.05 (seen on 24.11.5), so those are waited for, up to 30 s.
assert_queue_empty() {
	local jobs
	for _ in $(seq 1 60); do
		jobs=$(squeue -h -o '%i %T')
		[ -n "$jobs" ] || return 0
		grep -qv ' COMPLETING$' <<<"$jobs" && break
		sleep 0.5
	done
	echo "jobs in the queue: $jobs" >&2
	return 1
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

# A description of the test nodes whose tree puts node2 and node3 under leaf
# "a" and node1 under "b": in topology order node2, node3, node1.
write_renumber_topology() { # OUT
	python3 - "$LLMP_SRCDIR/etc/topology/pcie-4gpu.json" "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["nodes"] = [{"hosts": "node[1-3]", "type": "pcie-4gpu"}]
doc["switches"] = [{"name": "spine", "switches": "a,b"},
                   {"name": "a", "nodes": "node[2-3]"}, {"name": "b", "nodes": "node1"}]
json.dump(doc, open(sys.argv[2], "w"))
PY
}

# The NVML double (tests/topology/fake_nvml.c) as $WORK/nvml.so, for the
# site's nvml= (write_plugstack), beside its table of GPUs: four alike on
# every node, NAME and MiB as NVML would report them, and PROCS
# (PID:MIB,...; - for none) the compute processes NVML lists on each.
fake_nvml() { # NAME MIB [PROCS]
	cp "$LLMP_BUILDDIR/tests/topology/.libs/fake_nvml.so" "$WORK/nvml.so"
	local bus
	: >"$WORK/nvml.so.tsv"
	for bus in 1B 3D 9A BC; do
		printf '00000000:%s:00.0\t%s\tGPU-%s\t%032d\t0\t-\t%s\t-\t%s\n' "$bus" "$1" "$bus" 0 "$2" "${3:--}" \
			>>"$WORK/nvml.so.tsv"
	done
	chmod 644 "$WORK/nvml.so" "$WORK/nvml.so.tsv"
}

# One node's own table for the NVML double (read by that node's job epilog):
# four GPUs, PROCS on each, USED MiB in use, RECOVERY the driver's action.
fake_nvml_node() { # NODE PROCS USED RECOVERY
	local bus
	: >"$WORK/nvml.so.$1.tsv"
	for bus in 1B 3D 9A BC; do
		printf '00000000:%s:00.0\tNVIDIA H100 80GB HBM3\tGPU-%s\t%032d\t0\t-\t81559\t-\t%s\t%s\t%s\n' \
			"$bus" "$bus" 0 "$2" "$3" "$4" >>"$WORK/nvml.so.$1.tsv"
	done
	chmod 644 "$WORK/nvml.so.$1.tsv"
}

node_state() { sinfo -h -n "$1" -o '%T|%E'; } # NODE: "drained|llmp: ..."

# Wait until NODE is drained (or draining); its reason on stdout.
wait_drained() { # NODE SECONDS
	local s
	for _ in $(seq 1 "$2"); do
		s=$(node_state "$1")
		case ${s%%|*} in drain*) echo "${s#*|}" && return 0 ;; esac
		sleep 1
	done
	echo "$1 not drained after $2 s: $s" >&2
	return 1
}
