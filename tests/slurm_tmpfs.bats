#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The layout file under job_container/tmpfs: each job has
# its own /tmp and /dev/shm, joined by the tasks after user_init wrote the
# file in slurmstepd's /tmp. Seen on 22.05.8 before the fix: LLMP_LAYOUT_FILE
# named a file no task could see. The cluster runs with
# LLMP_TEST_JOB_CONTAINER=tmpfs (tests/cluster/cluster.sh).

load cluster/common

setup_file() {
	export LLMP_TEST_JOB_CONTAINER=tmpfs
	cluster_setup_file
}
teardown_file() { cluster_teardown_file; }
setup() { cluster_setup; }
teardown() { cluster_teardown; }

# Each task: whether the host's marker is visible (it must not be: the job's
# own /tmp), and the layout file's mode, world and tp groups.
SHOW='m=absent; [ -e "$MARKER" ] && m=seen
python3 -c "
import json, os, stat, sys
p = os.environ[\"LLMP_LAYOUT_FILE\"]
d = json.load(open(p))
print(\"task\", os.environ[\"SLURM_PROCID\"], \"marker\", sys.argv[1], \"mode\", oct(stat.S_IMODE(os.stat(p).st_mode)),
      \"world\", d[\"world\"], \"tp\", json.dumps(d[\"groups\"][\"tp\"], separators=(\",\", \":\")))
" "$m"'

@test "job_container/tmpfs: every task reads the layout file in the job's own /tmp" {
	local marker
	marker=$(mktemp /tmp/llmp-tmpfs-marker.XXXXXX)
	MARKER=$marker run srun --chdir=/ -N2 -n4 --llm-parallel=tp=2 sh -c "$SHOW"
	rm -f "$marker"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# By hand: tp=2 over 4 tasks pairs ranks 0,1 and 2,3.
	for r in 0 1 2 3; do
		grep -qx "task $r marker absent mode 0o600 world 4 tp \[\[0,1\],\[2,3\]\]" <<<"$output" ||
			{ echo "$output"; false; }
	done
}

@test "job_container/tmpfs: nothing of the job's layout is left on the host" {
	run srun --chdir=/ -N2 -n2 --llm-parallel=tp=2 sh -c 'echo "file $LLMP_LAYOUT_FILE"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# srun returns when the tasks have; slurmstepd removes the file at the step's
	# end after that: judged once the job has ended and its nodes are idle.
	assert_cluster_idle
	local f
	for f in $(sed -n 's/^file //p' <<<"$output"); do
		[ ! -e "$f" ] || { echo "$f left on the host"; false; }
	done
}
