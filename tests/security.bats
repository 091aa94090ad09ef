#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The plugin against its users (plugin/README.md's rules; each attack a test,
# named H high, M medium, L low, S expected safe): two plain users, llmpa and llmpb, made here, submit
# every job; root only sets up and looks. Each attack must end within
# seconds with a message, leave every node idle (never drained), keep
# slurmstepd's memory within its bound, and leave the other user's job
# untouched.

load cluster/common

USER_A=llmpa
USER_B=llmpb
GROUP_S=llmpg # a group only A is in, for a directory A writes through it
# slurmstepd's peak resident memory, whatever a user gives the plugin: the
# step's own (about 9 MiB here, measured in a plain step) and room to spare,
# far below what parsing a user's topology file in slurmstepd cost (150 MB
# and more for a 200-byte host list, H3 below).
STEPD_PEAK_MAX_KB=$((32 * 1024))

setup_file() {
	cluster_setup_file
	[ -z "$CLUSTER_SKIP" ] || return 0
	# What an interrupted run left: files here, and below the layout names B squatted (owner maybe gone).
	rm -rf /tmp/llmpa-* /tmp/llmpb-* /tmp/llmp-sec-*
	# The users and the group, made here and removed after (a name taken already is left alone).
	: >"$CLUSTER_STATE/made"
	getent group "$GROUP_S" >/dev/null || { groupadd "$GROUP_S" && echo "group $GROUP_S" >>"$CLUSTER_STATE/made"; }
	for u in "$USER_A" "$USER_B"; do
		getent passwd "$u" >/dev/null || { useradd -M -s /bin/sh "$u" && echo "user $u" >>"$CLUSTER_STATE/made"; }
	done
	usermod -a -G "$GROUP_S" "$USER_A"
	find /tmp -maxdepth 1 -name 'llmp-layout.*' \( -nouser -o -user "$USER_B" \) -delete
	# The plugin where plain users can load it (srun loads it as the user).
	install -D -m 0755 "$PLUGIN" "$CLUSTER_STATE/plugin/llm_parallel.so"
	# B's job, running beside every attack; the last test checks it ended well.
	. "$CLUSTER_STATE/env"
	B_OUT=$CLUSTER_STATE/b-job.out
	: >"$B_OUT" && chown "$USER_B" "$B_OUT"
	B_JOB=$(cd /tmp && runuser -u "$USER_B" -- env SLURM_CONF="$SLURM_CONF" \
		sbatch --parsable -n2 -o "$B_OUT" --llm-parallel=tp=2 \
		--wrap 'srun sh -c "sleep 40; echo B rank \$RANK of \$WORLD_SIZE"; echo "B done $?"')
	export B_JOB B_OUT
}

teardown_file() {
	if [ -n "${CLUSTER_STATE:-}" ] && [ -f "$CLUSTER_STATE/made" ]; then
		while read -r kind name; do
			case $kind in
			user)
				find /tmp -maxdepth 1 -name 'llmp-layout.*' -user "$name" -delete || true
				userdel "$name" || true
				;;
			group) groupdel "$name" || true ;;
			esac
		done <"$CLUSTER_STATE/made"
	fi
	rm -rf /tmp/llmpa-* /tmp/llmpb-* /tmp/llmp-sec-* /nonexistent-llmpa
	cluster_teardown_file
}

setup() {
	cluster_setup
	PLUGIN=$CLUSTER_STATE/plugin/llm_parallel.so write_plugstack
	chmod 755 "$WORK"
}

teardown() {
	[ -n "$CLUSTER_SKIP" ] && return 0
	# Cancel what a failed test left, but B's job.
	local j
	for j in $(squeue -h -o %i); do [ "$j" = "$B_JOB" ] || scancel "$j"; done
	assert_no_timeout
}

# No node drained or down: busy with B's job is fine (the last test waits for idle).
assert_no_drain() {
	local states
	for _ in $(seq 1 30); do # a step that just failed leaves its node completing for a moment
		states=$(sinfo -h -N -o '%N %T' | sort)
		grep -qvE ' (idle|mixed|allocated)$' <<<"$states" || return 0
		sleep 1
	done
	echo "nodes: $states" >&2
	return 1
}

# Run as A or B, from /tmp, with the cluster's configuration and nothing else of root's.
asA() { (cd /tmp && runuser -u "$USER_A" -- env -u TMPDIR SLURM_CONF="$SLURM_CONF" "$@"); }
asB() { (cd /tmp && runuser -u "$USER_B" -- env -u TMPDIR SLURM_CONF="$SLURM_CONF" "$@"); }

# A's srun, ended by timeout after 60 s: each attack must be answered far sooner.
srunA() { asA timeout 60 srun "$@"; }

# slurmstepd's peak resident memory (kB) for step JOB.0 while it runs COMMAND...
# as A on node1 (its tasks sleep 4 s, so slurmstepd is there to be read).
stepd_peak_kb() { # ENV-ASSIGNMENTS...
	asA env "$@" timeout 60 srun -w node1 -N1 -n1 --llm-parallel=tp=1 sleep 4 >"$WORK/peak.out" 2>&1 &
	local pid=$! j="" stepd="" peak=0 hwm
	for _ in $(seq 1 40); do
		j=$(squeue -h -u "$USER_A" -o %i | sort -n | tail -1)
		[ -n "$j" ] && stepd=$(pgrep -f "^slurmstepd: \[$j\.0\]" | head -1)
		if [ -n "$stepd" ]; then
			hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$stepd/status" 2>/dev/null || echo 0)
			[ "${hwm:-0}" -gt "$peak" ] && peak=$hwm
		fi
		sleep 0.2
	done
	wait "$pid" || { cat "$WORK/peak.out" >&2; return 1; }
	[ "$peak" -gt 0 ] || { echo "slurmstepd of step $j.0 never seen" >&2; return 1; }
	echo "$peak"
}

@test "H1: a FIFO as LLMP_TOPOLOGY_FILE: the step runs, warned, within seconds; nothing waits on it" {
	asA mkfifo /tmp/llmpa-fifo
	SECONDS=0
	LLMP_TOPOLOGY_FILE=/tmp/llmpa-fifo run srunA --export=ALL,LLMP_TOPOLOGY_FILE=/tmp/llmpa-fifo \
		-w node1 -N1 -n2 --llm-parallel=tp=2 sh -c 'echo "rank $RANK"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$SECONDS" -lt 30 ]
	grep -q '^llm_parallel: warning: topology /tmp/llmpa-fifo: not a regular file; tasks take GPUs in local order$' <<<"$output" ||
		{ echo "$output"; false; }
	[ "$(grep -c '^rank [01]$' <<<"$output")" -eq 2 ]
	# Asked to place by it: the step fails, naming the file.
	run asA env LLMP_TOPOLOGY_FILE=/tmp/llmpa-fifo timeout 60 srun -w node1 -N1 -n2 --llm-parallel=tp=2 \
		--llm-placement=topology true
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: --llm-placement=topology: /tmp/llmpa-fifo: not a regular file$' <<<"$output" ||
		{ echo "$output"; false; }
	# A device and another user's file are refused the same way.
	run srunA --export=ALL,LLMP_TOPOLOGY_FILE=/dev/zero -w node1 -n1 --llm-parallel=tp=1 true
	[ "$status" -eq 0 ] && grep -q 'topology /dev/zero: not a regular file' <<<"$output"
	asB sh -c 'echo "{}" >/tmp/llmpb-topo.json'
	run srunA --export=ALL,LLMP_TOPOLOGY_FILE=/tmp/llmpb-topo.json -w node1 -n1 --llm-parallel=tp=1 true
	[ "$status" -eq 0 ]
	grep -q "topology /tmp/llmpb-topo.json: owned by uid $(id -u "$USER_B"), neither the job's user nor root" <<<"$output" ||
		{ echo "$output"; false; }
	assert_no_drain
}

@test "H2: a topology object of a million keys parses in linear time, in the task" {
	asA python3 -c 'import sys; n=int(sys.argv[1]); open(sys.argv[2],"w").write("{"+",".join("\"k%07d\":0"%i for i in range(n))+"}")' \
		1000000 /tmp/llmpa-k1m.json
	SECONDS=0
	run srunA --export=ALL,LLMP_TOPOLOGY_FILE=/tmp/llmpa-k1m.json -w node1 -N1 -n1 --llm-parallel=tp=1 true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$SECONDS" -lt 30 ] || { echo "took $SECONDS s"; false; } # quadratic: hours (bench/bench_json.c)
	grep -q 'topology /tmp/llmpa-k1m.json:1: the document: unknown key "k0000000"' <<<"$output" ||
		{ echo "$output"; false; }
	assert_no_drain
}

@test "H3: slurmstepd's memory stays within its bound whatever the topology file holds" {
	base=$(stepd_peak_kb)
	# 200 bytes that expand to 2^20 hosts; and a file of a million keys.
	cat >/tmp/llmpa-hosts.json <<-'EOF'
		{"llmp_topology": 1, "node_types": {"t": {"numa_nodes": 1}},
		 "nodes": [{"hosts": "node[1-3]", "type": "t"}, {"hosts": "x[0000000-1048570]", "type": "t"}]}
	EOF
	chown "$USER_A" /tmp/llmpa-hosts.json
	hosts=$(stepd_peak_kb LLMP_TOPOLOGY_FILE=/tmp/llmpa-hosts.json)
	[ -f /tmp/llmpa-k1m.json ] || asA python3 -c 'open("/tmp/llmpa-k1m.json","w").write("{"+",".join("\"k%07d\":0"%i for i in range(1000000))+"}")'
	keys=$(stepd_peak_kb LLMP_TOPOLOGY_FILE=/tmp/llmpa-k1m.json)
	echo "# slurmstepd VmHWM: plain step $base kB, host-list bomb $hosts kB, 1M keys $keys kB (bound $STEPD_PEAK_MAX_KB kB)" >&3
	for kb in "$base" "$hosts" "$keys"; do
		[ "$kb" -lt "$STEPD_PEAK_MAX_KB" ]
	done
	# And none of it grows slurmstepd beyond the plain step's by more than 4 MiB.
	[ "$hosts" -lt $((base + 4096)) ] && [ "$keys" -lt $((base + 4096)) ]
	assert_no_drain
}

@test "M1: layout file names another user cannot squat, private to the job, removed after" {
	n=$(asB sbatch --parsable -n1 --wrap true)
	# The names the plugin used to write, for the next jobs, and a link to A's file.
	asB sh -c "for j in \$(seq $((n + 1)) $((n + 10))); do for s in 0 1; do for k in 0 1 2; do touch /tmp/llmp-layout.\$j.\$s.\$k.json; done; done; done"
	asA sh -c 'echo mine >/tmp/llmpa-precious'
	asB ln -sf /tmp/llmpa-precious "/tmp/llmp-layout.$((n + 2)).0.0.json" 2>/dev/null || true
	run srunA -w node1,node2 -N2 -n4 --llm-parallel=tp=2 sh -c 'stat -c "layout %U %a %n" "$LLMP_LAYOUT_FILE"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -cE "^layout $USER_A 600 /tmp/llmp-layout\.[0-9]+\.0\.[01]\.[0-9a-f]{16}\.json$" <<<"$output")" -eq 4 ] ||
		{ echo "$output"; false; }
	[ "$(cat /tmp/llmpa-precious)" = mine ]
	for p in $(awk '/^layout/ {print $4}' <<<"$output" | sort -u); do [ ! -e "$p" ]; done
	find /tmp -maxdepth 1 -name 'llmp-layout.*' -user "$USER_B" -delete
	# B cannot read A's file while the step runs.
	run srunA -w node1 -n1 --llm-parallel=tp=1 sh -c 'cat "$LLMP_LAYOUT_FILE" >/dev/null && echo "$LLMP_LAYOUT_FILE"'
	[ "$status" -eq 0 ]
	assert_no_drain
}

@test "M2: MASTER_PORT held by another user: A's step fails at once, naming it" {
	PLUGIN=$CLUSTER_STATE/plugin/llm_parallel.so write_plugstack port_base=31500 port_range=1
	nsenter --net=/run/netns/llmp-node1 runuser -u "$USER_B" -- python3 -c '
import socket, time
s = socket.socket(); s.bind(("0.0.0.0", 31500)); s.listen(4)
open("/tmp/llmpb-bound", "w").close()
time.sleep(30)' &
	holder=$!
	for _ in $(seq 1 50); do [ -e /tmp/llmpb-bound ] && break; sleep 0.1; done
	SECONDS=0
	run srunA -w node1 -N1 -n2 --llm-parallel=tp=2 sh -c 'echo "rank $RANK port $MASTER_PORT"'
	kill "$holder" 2>/dev/null || true
	[ "$status" -ne 0 ]
	[ "$SECONDS" -lt 30 ]
	grep -q '^llm_parallel: MASTER_PORT 31500 is held on node1 by another process: rank 0 cannot listen there' <<<"$output" ||
		{ echo "$output"; false; }
	! grep -q '^rank 0' <<<"$output"
	wait "$holder" 2>/dev/null || true
	run srunA -w node1 -N1 -n2 --llm-parallel=tp=2 sh -c 'echo "rank $RANK port $MASTER_PORT"'
	[ "$status" -eq 0 ] && grep -q '^rank 0 port 31500$' <<<"$output" || { echo "$output"; false; }
	assert_no_drain
}

@test "M3: a checkpoint directory another user made, or everyone may write, is refused" {
	asB mkdir -m 0777 /tmp/llmpb-run
	run srunA -n1 --llm-checkpoint=/tmp/llmpb-run,every=1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: /tmp/llmpb-run belongs to uid $(id -u "$USER_B"), not to this job's user ($(id -u "$USER_A"))" <<<"$output" ||
		{ echo "$output"; false; }
	[ ! -e /tmp/llmpb-run/fr ]
	asA mkdir -m 0700 /tmp/llmpa-run
	asA chmod 0777 /tmp/llmpa-run
	run srunA -n1 --llm-checkpoint=/tmp/llmpa-run,every=1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: /tmp/llmpa-run is writable by everyone (mode 0777, no sticky bit)' <<<"$output" || { echo "$output"; false; }
	asA chmod 0755 /tmp/llmpa-run
	run srunA -n1 --llm-checkpoint=/tmp/llmpa-run,every=1 --llm-parallel=tp=1 sh -c 'echo "fr=$TORCH_FR_DUMP_TEMP_FILE"'
	[ "$status" -eq 0 ] && grep -q '^fr=/tmp/llmpa-run/fr/rank_$' <<<"$output" || { echo "$output"; false; }
	assert_no_drain
}

@test "M4: a checkpoint root another user can redirect or rename away is refused, the whole path checked" {
	local ida idb
	ida=$(id -u "$USER_A") idb=$(id -u "$USER_B")
	asA mkdir -m 0755 /tmp/llmpa-other
	# B's link to A's other run: the job would have written, resumed and pruned there.
	asB ln -s /tmp/llmpa-other /tmp/llmpb-link
	run srunA -n1 --llm-checkpoint=/tmp/llmpb-link,every=1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: /tmp/llmpb-link is a symbolic link of uid $idb, neither root nor this job's user ($ida): it is not followed" <<<"$output" ||
		{ echo "$output"; false; }
	[ ! -e /tmp/llmpa-other/fr ]
	# A's own directory where B could rename it away: inside a directory everyone may
	# write (root's, without the sticky bit), or inside B's own, even a sticky one.
	install -d -m 0777 /tmp/llmp-sec-open
	asB mkdir -m 1777 /tmp/llmpb-sticky
	asA mkdir -m 0755 /tmp/llmp-sec-open/run /tmp/llmpb-sticky/run
	run srunA -n1 --llm-checkpoint=/tmp/llmp-sec-open/run,every=1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: /tmp/llmp-sec-open, on the path to /tmp/llmp-sec-open/run, is writable by everyone (mode 0777, no sticky bit)' <<<"$output" ||
		{ echo "$output"; false; }
	run srunA -n1 --llm-checkpoint=/tmp/llmpb-sticky/run,every=1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: /tmp/llmpb-sticky, on the path to /tmp/llmpb-sticky/run, belongs to uid $idb, neither root nor this job's user ($ida)" <<<"$output" ||
		{ echo "$output"; false; }
	[ ! -e /tmp/llmp-sec-open/run/fr ] && [ ! -e /tmp/llmpb-sticky/run/fr ]
	# A's own link, in root's sticky /tmp, to A's directory: followed.
	asA ln -s /tmp/llmpa-other /tmp/llmpa-link
	run srunA -n1 --llm-checkpoint=/tmp/llmpa-link,every=1 --llm-parallel=tp=1 sh -c 'echo "fr=$TORCH_FR_DUMP_TEMP_FILE"'
	[ "$status" -eq 0 ] && grep -q '^fr=/tmp/llmpa-link/fr/rank_$' <<<"$output" || { echo "$output"; false; }
	[ -d /tmp/llmpa-other/fr ]
	assert_no_drain
}

@test "L1: user text in messages cannot forge a line of slurmd's log or the job's output" {
	local log=$CLUSTER_STATE/log/slurmd-node1.log
	run asA env "LLMP_TOPOLOGY_FILE=/nonexistent"$'\n'"error: FORGED2"$'\e'"[31m" timeout 60 srun -w node1 -n1 --llm-parallel=tp=1 true
	[ "$status" -eq 0 ]
	grep -q 'topology /nonexistent?error: FORGED2?\[31m: No such file or directory' <<<"$output" || { echo "$output"; false; }
	! grep -q '^error: FORGED' <<<"$output"
	# Each value the step reads from the environment and names in a message: all were
	# written raw into slurmd's log by slurmstepd (user_init) or the task before.
	local i=3 var
	for var in LLMP_STAGE_LAYERS LLMP_MODEL_PEAKS SLURM_PMIX_MAPPING_SERV; do
		run asA env "$var=1"$'\n'"error: FORGED$i" timeout 60 srun -w node1 -n1 --llm-parallel=tp=1 true
		[ "$status" -ne 0 ] || { echo "$var: $output"; false; }
		grep -q "^llm_parallel: .*$var=1?error: FORGED$i" <<<"$output" || { echo "$var: $output"; false; }
		grep -q "llm_parallel: .*$var=1?error: FORGED$i" "$log" || { echo "$var: not in slurmd's log"; false; }
		i=$((i + 1))
	done
	! grep -q '^llm_parallel: .*[[:cntrl:]]' <<<"$output"
	# LLMP_MODEL_GUARD: slurmstepd logs only the plugin's own words, never the user's text.
	run asA env "LLMP_MODEL_GUARD=overridden"$'\n'"error: FORGED9" timeout 60 srun -w node1 -n1 --llm-parallel=tp=1 true
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	! grep -q 'FORGED9' "$log" || { grep 'FORGED9' "$log"; false; }
	! grep -q '^error: FORGED' <<<"$output"
	! grep -q '^error: FORGED' "$CLUSTER_STATE"/log/slurmd-node*.log || { grep -B1 '^error: FORGED' "$log"; false; }
	assert_no_drain
}

@test "L5: a library the job names is never loaded before exec; the site's is" {
	# A library that says it was loaded, beside itself (it runs as A, before exec).
	local d=/tmp/llmpa-nvml
	asA mkdir -m 0755 "$d"
	cat >"$WORK/said.c" <<-'C'
		#define _GNU_SOURCE
		#include <dlfcn.h>
		#include <stdio.h>
		static void said(void) {}
		__attribute__((constructor)) static void loaded(void)
		{
			Dl_info info;
			char path[4200];
			if (dladdr((void *)said, &info) && info.dli_fname) {
				snprintf(path, sizeof path, "%s.loaded", info.dli_fname);
				FILE *f = fopen(path, "w");
				if (f)
					fclose(f);
			}
		}
	C
	cc -shared -fPIC -o "$WORK/said.so" "$WORK/said.c"
	install -o "$USER_A" -m 0755 "$WORK/said.so" "$d/user.so"
	install -o "$USER_A" -m 0755 "$WORK/said.so" "$d/site.so"
	local model=layers=2,hidden=256,heads=4,seq=128,vocab=1000,ffn=1024,gbs=2,mbs=1
	run asA env LLMP_NVML_LIBRARY="$d/user.so" LLMP_GPU=h100 timeout 60 srun -w node1 -n2 \
		--llm-parallel=tp=1 --llm-model=$model sh -c 'echo "rank $RANK"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^rank [01]$' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	[ ! -e "$d/user.so.loaded" ] || { echo "the job's LLMP_NVML_LIBRARY ran in task_init"; false; }
	# The site names it: loaded in each task (the check above would have seen a load).
	PLUGIN=$CLUSTER_STATE/plugin/llm_parallel.so write_plugstack "nvml=$d/site.so"
	run asA env LLMP_NVML_LIBRARY="$d/user.so" LLMP_GPU=h100 timeout 60 srun -w node1 -n2 \
		--llm-parallel=tp=1 --llm-model=$model sh -c 'echo "rank $RANK"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -e "$d/site.so.loaded" ] && [ ! -e "$d/user.so.loaded" ]
	assert_no_drain
}

@test "L6: a TMPDIR the node lacks puts the layout file in /tmp, as Slurm does TMPDIR, with a warning" {
	run asA env TMPDIR=/nonexistent-llmpa timeout 60 srun -w node1 -n2 --llm-parallel=tp=2 \
		sh -c 'echo "rank $RANK layout $LLMP_LAYOUT_FILE"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -cE '^rank [01] layout /tmp/llmp-layout\.[0-9]+\.0\.0\.[0-9a-f]{16}\.json$' <<<"$output")" -eq 2 ] ||
		{ echo "$output"; false; }
	[ "$(grep -c '^llm_parallel: warning: cannot create the layout file /nonexistent-llmpa/llmp-layout\..*: No such file or directory; it was written in /tmp instead$' <<<"$output")" -eq 1 ] ||
		{ echo "$output"; false; }
	# The site's layout_dir is the administrator's: a missing one still fails, naming it.
	PLUGIN=$CLUSTER_STATE/plugin/llm_parallel.so write_plugstack layout_dir=/nonexistent-site
	run srunA -w node1 -n1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ] && grep -q '^llm_parallel: cannot create the layout file /nonexistent-site/llmp-layout' <<<"$output" ||
		{ echo "$output"; false; }
	assert_no_drain
}

@test "L7: an empty or bad LLMP_AUTO_LAYOUT is refused under its own name" {
	local auto=_SLURM_SPANK_OPTION_llm_parallel_llm_parallel=auto
	run asA env "$auto" LLMP_AUTO_LAYOUT= timeout 60 srun -w node1 -n1 true
	[ "$status" -ne 0 ]
	grep -q "^llm_parallel: --llm-parallel=auto: LLMP_AUTO_LAYOUT='' names no layout" <<<"$output" || { echo "$output"; false; }
	run asA env "$auto" LLMP_AUTO_LAYOUT=tp=x timeout 60 srun -w node1 -n1 true
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: LLMP_AUTO_LAYOUT=tp=x: ' <<<"$output" || { echo "$output"; false; }
	! grep -q 'LLMP_PARALLEL' <<<"$output"
	run asA env "$auto" timeout 60 srun -w node1 -n1 true
	[ "$status" -ne 0 ]
	grep -q '^llm_parallel: --llm-parallel=auto: no layout was chosen for this step (LLMP_AUTO_LAYOUT is not set)' <<<"$output" ||
		{ echo "$output"; false; }
	assert_no_drain
}

@test "L2: the layout file is removed after a relative TMPDIR, and in a directory writable through a group" {
	asA mkdir -p /tmp/llmpa-cwd/rel
	run sh -c "cd /tmp/llmpa-cwd && runuser -u $USER_A -- env TMPDIR=rel SLURM_CONF=$SLURM_CONF timeout 60 srun -w node1 -n1 --llm-parallel=tp=1 sh -c 'echo \"layout \$LLMP_LAYOUT_FILE\"'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -qE '^layout /tmp/llmp-layout\.[0-9]+\.0\.0\.[0-9a-f]{16}\.json$' <<<"$output" || { echo "$output"; false; }
	[ -z "$(ls /tmp/llmpa-cwd/rel)" ]
	[ ! -e "$(awk '/^layout/ {print $2}' <<<"$output")" ]
	# A writes /tmp/llmp-sec-g only through the group: the removal needs the job's groups.
	install -d -o root -g "$GROUP_S" -m 2770 /tmp/llmp-sec-g
	run asA env TMPDIR=/tmp/llmp-sec-g timeout 60 srun -w node1 -n1 --llm-parallel=tp=1 sh -c 'echo "layout $LLMP_LAYOUT_FILE"'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q '^layout /tmp/llmp-sec-g/llmp-layout' <<<"$output"
	sleep 1
	[ -z "$(ls /tmp/llmp-sec-g)" ] || { ls -l /tmp/llmp-sec-g; false; }
	! grep -q 'could not remove' "$CLUSTER_STATE"/log/slurmd-node1.log
	assert_no_drain
}

@test "S2, S4: huge and injected options are refused with their reason, no drain" {
	big=$(head -c 100000 /dev/zero | tr '\0' 1)
	run srunA -n1 "--llm-parallel=tp=$big" true
	[ "$status" -ne 0 ] && grep -q 'layout is longer than 256 characters' <<<"$output"
	run asA env _SLURM_SPANK_OPTION_llm_parallel_llm_parallel=help timeout 60 srun -n1 true
	[ "$status" -ne 0 ] && grep -q "'help' is answered at submission, not inside a job" <<<"$output"
	run asA env "_SLURM_SPANK_OPTION_llm_parallel_llm_parallel=tp=$big" timeout 60 srun -n1 true
	[ "$status" -ne 0 ] && grep -q 'layout is longer than 256 characters' <<<"$output"
	run asA env SLURM_RESTART_COUNT=x timeout 60 srun -n1 --llm-parallel=tp=1 true
	[ "$status" -ne 0 ] && grep -q 'SLURM_RESTART_COUNT=x: not a restart count' <<<"$output"
	assert_no_drain
}

@test "L4: a script that requeues itself by exiting 75 stops at the site's max_requeues" {
	PLUGIN=$CLUSTER_STATE/plugin/llm_parallel.so write_plugstack max_requeues=2
	out=/tmp/llmpa-loop.out
	j=$(asA sbatch --parsable --requeue --open-mode=append -o "$out" -w node2 -n1 \
		--wrap 'echo "run ${SLURM_RESTART_COUNT:-0}"; exit 75')
	state=$(wait_job_end "$j" 120)
	cat "$out"
	[ "$(grep -c '^run [0-2]$' "$out")" -eq 3 ] # the runs Slurm requeued by RequeueExit=75
	! grep -q '^run 3$' "$out"
	grep -q "^llm_parallel: job $j was requeued 3 times, more than this site allows (max_requeues=2" "$out"
	[ "$state" != PENDING ]
	assert_no_drain
}

@test "L2: the epilog removes a killed step's layout files: the job's, its user's, never a link" {
	epilog=$LLMP_SRCDIR/etc/slurm/llmp-epilog.sh
	d=/tmp/llmp-sec-epilog
	mkdir -p "$d" && chmod 1777 "$d"
	uida=$(id -u "$USER_A")
	asA sh -c "touch $d/llmp-layout.4242.0.0.0123456789abcdef.json $d/llmp-layout.4243.0.0.0123456789abcdef.json"
	asB sh -c "touch $d/llmp-layout.4242.1.0.0123456789abcdef.json; ln -s $d/keep $d/llmp-layout.4242.2.0.0123456789abcdef.json"
	echo keep >"$d/keep"
	SLURM_JOB_ID=4242 SLURM_JOB_UID=$uida sh "$epilog" "$d"
	[ ! -e "$d/llmp-layout.4242.0.0.0123456789abcdef.json" ] # A's, of the ended job: gone
	[ -e "$d/llmp-layout.4243.0.0.0123456789abcdef.json" ]   # another job's: kept
	[ -e "$d/llmp-layout.4242.1.0.0123456789abcdef.json" ]   # B's file under A's job id: kept
	[ -L "$d/llmp-layout.4242.2.0.0123456789abcdef.json" ] && [ "$(cat "$d/keep")" = keep ]
	SLURM_JOB_ID='4242 -o -true' SLURM_JOB_UID=$uida sh "$epilog" "$d" # not a job id: nothing done
	[ -e "$d/llmp-layout.4243.0.0.0123456789abcdef.json" ]
}

@test "B's job ran beside every attack, untouched" {
	state=$(wait_job_end "$B_JOB" 90)
	# Gone from the queue already (PURGED) is fine: its output says how it ended.
	[ "$state" = COMPLETED ] || [ "$state" = PURGED ] || { echo "B's job $B_JOB: $state"; cat "$B_OUT"; false; }
	[ "$(sort "$B_OUT" | grep -c '^B rank [01] of 2$')" -eq 2 ] || { cat "$B_OUT"; false; }
	grep -q '^B done 0$' "$B_OUT" || { cat "$B_OUT"; false; }
	assert_cluster_idle
}
