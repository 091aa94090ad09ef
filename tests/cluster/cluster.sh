#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A real three-node Slurm cluster on one machine, for the test suite.
#
#   cluster.sh start  STATEDIR PLUGSTACK_CONF|none
#   cluster.sh stop   STATEDIR
#   cluster.sh status STATEDIR
#   cluster.sh kill-node  STATEDIR NODE   (a node dies: SIGKILL to all it runs)
#   cluster.sh start-node STATEDIR NODE   (its slurmd comes back)
#   cluster.sh freeze-node STATEDIR NODE  (a node hangs: SIGSTOP to all it runs)
#   cluster.sh thaw-node  STATEDIR NODE   (SIGCONT to all it runs)
#
# Each daemon runs in its own network namespace, joined to a private bridge in the
# root namespace: llmp-ctl holds munged and slurmctld, llmp-node1..3 hold one slurmd
# each. Clients (srun, sbatch, sinfo) run in the root namespace after sourcing
# STATEDIR/env. Putting every daemon in a namespace of ours means that whatever they
# spawn (slurmstepd, user tasks) can be found with `ip netns pids` and killed, even after
# a previous run was killed before it could stop its cluster.
#
# Must run as root. Only one cluster can run at a time on a machine: the namespace
# names, the bridge, the subnet and RUNDIR are fixed.
#
# LLMP_TEST_DISTFS=gluster at `start` (tests/distfs.bats sets it) adds a GlusterFS
# volume with a brick on each node, mounted at RUNDIR/dfs by a FUSE client of each
# node's own (see "distributed filesystem" below and tests/cluster/README.md). Unset,
# nothing changes.
#
# LLMP_TEST_JOB_CONTAINER=tmpfs at `start` adds job_container/tmpfs (each job's own /tmp
# and /dev/shm, in a mount namespace of its own; tests/slurm_tmpfs.bats), and
# LLMP_TEST_SLURM_CONF_EXTRA=FILE appends FILE's lines to slurm.conf (a second
# partition, preemption: tests/preempt.bats). Unset, nothing changes.
set -euo pipefail
# Directories made here must be readable by munged's checks and by job users.
umask 022

readonly NAME_PREFIX=llmp
readonly BRIDGE=${NAME_PREFIX}-br0
readonly CTL_NS=${NAME_PREFIX}-ctl
readonly NODES=(node1 node2 node3)
# A private /24 that is unlikely to be routed on a CI machine.
readonly SUBNET=10.213.7
readonly BRIDGE_ADDR=${SUBNET}.1
readonly CTL_ADDR=${SUBNET}.2
readonly NODE_ADDR_BASE=11 # node1 is .11, node2 .12, ...
# Not Slurm's defaults (6817/6818), so a system Slurm cannot answer by mistake.
readonly SLURMCTLD_PORT=16817
readonly SLURMD_PORT=16818
readonly GPUS_PER_NODE=4
readonly CPUS_PER_NODE=8
# Unix sockets (munged's, slurmstepd's, PMIx's) must have paths shorter than 108 bytes,
# and munged insists that every directory above its socket be searchable by all users.
# A test's STATEDIR may be long and under a 0700 directory, so these live here instead.
readonly RUNDIR=/run/${NAME_PREFIX}-cluster
readonly LOCKFILE=/run/${NAME_PREFIX}-cluster.lock
readonly START_TIMEOUT_S=60
readonly STOP_GRACE_S=5
# The distributed filesystem: "" (none) or "gluster". Only `start` reads it; the
# other commands see what start made (RUNDIR/dfs-kind).
DISTFS=${LLMP_TEST_DISTFS:-}
JOB_CONTAINER=${LLMP_TEST_JOB_CONTAINER:-}
CONF_EXTRA=${LLMP_TEST_SLURM_CONF_EXTRA:-}
# Where every task (and the root namespace) sees the volume.
readonly DFS_MNT=${RUNDIR}/dfs
readonly DFS_VOLUME=${NAME_PREFIX}

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

log() {
	echo "cluster.sh: $*" >&2
}

usage() {
	cat >&2 <<-EOF
		usage: cluster.sh start  STATEDIR PLUGSTACK_CONF|none
		       cluster.sh stop   STATEDIR
		       cluster.sh status STATEDIR
		       cluster.sh kill-node  STATEDIR NODE
		       cluster.sh start-node STATEDIR NODE
		       cluster.sh freeze-node STATEDIR NODE
		       cluster.sh thaw-node  STATEDIR NODE
	EOF
	exit 2
}

node_addr() { # index (0-based)
	echo "${SUBNET}.$((NODE_ADDR_BASE + $1))"
}

node_ns() { # node name
	echo "${NAME_PREFIX}-$1"
}

# All namespaces this script creates, controller first.
all_namespaces() {
	local node
	echo "$CTL_NS"
	for node in "${NODES[@]}"; do
		node_ns "$node"
	done
}

# Root-side end of the veth into a namespace; at most 15 characters.
veth_of_ns() { # namespace
	echo "${NAME_PREFIX}-v${1#"${NAME_PREFIX}"-}"
}

# ---------------------------------------------------------------- processes

# Field 22 of /proc/PID/stat: the start time, which with the pid names a process
# uniquely, so a recycled pid is never mistaken for one of ours.
start_time_of() { # pid
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	# The command name (field 2) may hold spaces; the fields after it do not.
	stat=${stat##*) }
	# shellcheck disable=SC2086 # split on purpose
	set -- $stat
	echo "${20}"
}

# A zombie counts as dead: it holds nothing, and in a container PID 1 may never reap it.
is_running() { # pid
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

record_pid() { # statedir pid label
	local start
	start=$(start_time_of "$2") || die "process $3 (pid $2) exited at once"
	echo "$2 $start $3" >>"$1/pids"
}

# Run a daemon in the foreground, in its own session, detached from our stdio and from
# every other inherited descriptor (bats waits for its fd 3 to close). The subshell execs
# setsid, which execs nsenter, which execs the daemon, so $! is the daemon's pid.
launch() { # statedir label namespace outfile command...
	local statedir=$1 label=$2 ns=$3 out=$4
	shift 4
	(
		local fd
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			if [ "$fd" -gt 2 ]; then
				eval "exec ${fd}>&-" 2>/dev/null || true
			fi
		done
		exec setsid nsenter "--net=/run/netns/$ns" "$@" </dev/null >>"$out" 2>&1
	) &
	record_pid "$statedir" "$!" "$label"
}

# Pids (one a line) of recorded processes that are still the ones we started.
recorded_live_pids() { # statedir
	local pid start label
	[ -f "$1/pids" ] || return 0
	while read -r pid start label; do
		[ -n "$pid" ] || continue
		if is_running "$pid" && [ "$(start_time_of "$pid" || true)" = "$start" ]; then
			echo "$pid"
		fi
	done <"$1/pids"
}

# Pids of every live process in our namespaces: only our daemons and what they spawned.
namespace_pids() {
	local ns pid
	for ns in $(all_namespaces); do
		[ -e "/run/netns/$ns" ] || continue
		for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
			if is_running "$pid"; then
				echo "$pid"
			fi
		done
	done
}

# Our processes: the recorded ones, and with "all" every process in our namespaces.
our_live_pids() { # statedir scope(recorded|all)
	{
		recorded_live_pids "$1"
		if [ "$2" = all ]; then
			namespace_pids
		fi
	} | sort -un
}

# TERM, a grace period, then KILL. Pids are re-derived each round, so a pid that was
# recycled meanwhile is not hit.
kill_ours() { # statedir scope(recorded|all)
	local statedir=$1 scope=$2 pids signal waited
	for signal in TERM KILL; do
		pids=$(our_live_pids "$statedir" "$scope")
		[ -n "$pids" ] || return 0
		# shellcheck disable=SC2086 # one pid per word
		kill "-$signal" $pids 2>/dev/null || true
		for ((waited = 0; waited < STOP_GRACE_S * 10; waited++)); do
			[ -n "$(our_live_pids "$statedir" "$scope")" ] || return 0
			sleep 0.1
		done
	done
	pids=$(our_live_pids "$statedir" "$scope")
	if [ -n "$pids" ]; then
		log "warning: processes survived SIGKILL: $(echo "$pids" | tr '\n' ' ')"
	fi
}

# ---------------------------------------------------------------- network

# Node names resolve on a real cluster, and MASTER_ADDR names the step's first node,
# so the names go into /etc/hosts, each line tagged as ours. The file may be a bind
# mount (containers), so it is rewritten in place, never replaced.
readonly HOSTS_TAG="# ${NAME_PREFIX}-cluster"

remove_hosts_entries() {
	local kept
	[ -w /etc/hosts ] && grep -q -- "$HOSTS_TAG\$" /etc/hosts || return 0
	kept=$(grep -v -- "$HOSTS_TAG\$" /etc/hosts || true)
	printf '%s\n' "$kept" >/etc/hosts
}

add_hosts_entries() {
	local i
	remove_hosts_entries
	for ((i = 0; i < ${#NODES[@]}; i++)); do
		echo "$(node_addr "$i") ${NODES[i]} $HOSTS_TAG" >>/etc/hosts
	done
}

teardown_network() {
	local ns veth
	remove_hosts_entries
	for ns in $(all_namespaces); do
		if [ -e "/run/netns/$ns" ]; then
			ip netns delete "$ns" || log "warning: cannot delete namespace $ns"
		fi
		# Deleting the namespace deletes the veth pair; this catches a half-made one.
		veth=$(veth_of_ns "$ns")
		if ip link show "$veth" >/dev/null 2>&1; then
			ip link delete "$veth" || true
		fi
	done
	if ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link delete "$BRIDGE" || log "warning: cannot delete bridge $BRIDGE"
	fi
}

setup_network() {
	local ns addr veth i

	if [ -n "$(ip -4 route show "${SUBNET}.0/24")" ]; then
		die "${SUBNET}.0/24 is already routed on this machine: $(ip -4 route show "${SUBNET}.0/24")"
	fi
	ip link add "$BRIDGE" type bridge
	ip addr add "${BRIDGE_ADDR}/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up

	for ((i = 0; i <= ${#NODES[@]}; i++)); do
		if ((i == 0)); then
			ns=$CTL_NS
			addr=$CTL_ADDR
		else
			ns=$(node_ns "${NODES[i - 1]}")
			addr=$(node_addr $((i - 1)))
		fi
		veth=$(veth_of_ns "$ns")
		ip netns add "$ns"
		ip link add "$veth" type veth peer name eth0 netns "$ns"
		ip link set "$veth" master "$BRIDGE"
		ip link set "$veth" up
		ip -n "$ns" link set lo up
		ip -n "$ns" addr add "${addr}/24" dev eth0
		ip -n "$ns" link set eth0 up
	done
	add_hosts_entries
}

# ---------------------------------------------------------------- configuration

write_slurm_conf() { # statedir plugstack
	local statedir=$1 plugstack=$2 i

	{
		cat <<-EOF
			# Generated by tests/cluster/cluster.sh; every path points into this cluster.
			ClusterName=${NAME_PREFIX}
			# slurmctld only runs where this name is the machine's host name.
			SlurmctldHost=$(hostname -s)(${CTL_ADDR})
			SlurmctldPort=${SLURMCTLD_PORT}
			SlurmdPort=${SLURMD_PORT}
			SlurmUser=root
			SlurmdUser=root
			AuthType=auth/munge
			CredType=cred/munge
			# cred_expire is also how long Slurm holds a requeued job (default 120 s).
			AuthInfo=socket=${RUNDIR}/munge/munge.socket,cred_expire=5
			# What etc/slurm/llmp-requeue.conf ships: a batch script exiting 75 is requeued.
			RequeueExit=75
			StateSaveLocation=${statedir}/ctld/state
			SlurmctldPidFile=${statedir}/ctld/slurmctld.pid
			SlurmctldLogFile=${statedir}/log/slurmctld.log
			SlurmctldDebug=info
			# %n is the node name: three slurmd share this file. mpi/pmix expands %n in
			# a peer's spool path itself when it messages that peer.
			SlurmdSpoolDir=${RUNDIR}/nodes/%n/spool
			SlurmdPidFile=${RUNDIR}/nodes/%n/slurmd.pid
			SlurmdLogFile=${statedir}/log/slurmd-%n.log
			SlurmdDebug=info
			# mpi/pmix makes each step's client directory (spmix_appdir_*) here; its server
			# directory and socket go in the spool.
			TmpFS=${RUNDIR}/nodes/%n/tmp
			# Lets each node declare more CPUs than the machine has.
			SlurmdParameters=config_overrides
			# No cgroups: the namespaced slurmd share one kernel and one cgroup tree.
			ProctrackType=proctrack/linuxproc
			TaskPlugin=task/none
			JobAcctGatherType=jobacct_gather/none
			AccountingStorageType=accounting_storage/none
			JobCompType=jobcomp/none
			SelectType=select/cons_tres
			SelectTypeParameters=CR_Core
			GresTypes=gpu
			TopologyPlugin=topology/tree
			MpiDefault=none
			PlugStackConfig=${plugstack}
			MailProg=/bin/true
			# A node that was down comes back as soon as its slurmd registers.
			ReturnToService=2
			# Fast failure detection and clean-up: tests should not wait on timeouts.
			SlurmdTimeout=30
			SlurmctldTimeout=30
			MessageTimeout=10
			KillWait=2
			InactiveLimit=0
			# sbatch --wait polls every 2 s while 2 < MinJobAge/2, and backs off to 8 s
			# then 32 s otherwise; 4 keeps it at 2 s. Finished jobs are then forgotten
			# after 4 s or more (slurmctld purges them on its own timer).
			MinJobAge=4
			# Schedule a batch job when it is submitted, not up to 3 s later.
			# A requeued job becomes eligible after cred_expire, and nothing but the
			# scheduler's timer looks again on an idle cluster: every second here.
			SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1
		EOF
		for i in "${!NODES[@]}"; do
			echo "NodeName=${NODES[i]} NodeAddr=$(node_addr "$i")" \
				"CPUs=${CPUS_PER_NODE} Sockets=1 CoresPerSocket=${CPUS_PER_NODE}" \
				"ThreadsPerCore=1 RealMemory=4096 Gres=gpu:${GPUS_PER_NODE} State=UNKNOWN"
		done
		echo "PartitionName=main Nodes=$(
			IFS=,
			echo "${NODES[*]}"
		) Default=YES MaxTime=INFINITE State=UP"
		if [ "$JOB_CONTAINER" = tmpfs ]; then
			# Contain: the extern step at allocation, which job_container/tmpfs needs.
			echo "JobContainerType=job_container/tmpfs"
			echo "PrologFlags=Contain"
		fi
		if [ -n "$CONF_EXTRA" ]; then
			echo "# From LLMP_TEST_SLURM_CONF_EXTRA=$CONF_EXTRA"
			cat "$CONF_EXTRA"
		fi
	} >"$statedir/slurm.conf"
	if [ "$JOB_CONTAINER" = tmpfs ]; then
		write_job_container_conf "$statedir"
	fi
}

# job_container/tmpfs: each node's jobs get their /tmp and /dev/shm under a BasePath of
# the node's own (three slurmd share one mount namespace, so one path each), which
# slurmd bind-mounts private over itself; do_stop unmounts what is left.
write_job_container_conf() { # statedir
	local node
	{
		echo "# Generated by tests/cluster/cluster.sh (LLMP_TEST_JOB_CONTAINER=tmpfs)"
		for node in "${NODES[@]}"; do
			mkdir -p "$RUNDIR/nodes/$node/jc"
			echo "NodeName=$node AutoBasePath=true BasePath=$RUNDIR/nodes/$node/jc"
		done
	} >"$1/job_container.conf"
}

# Unmount whatever is mounted under RUNDIR/nodes (job_container/tmpfs's base paths and
# a job's namespace files), deepest first, so rm cannot stop at a mount.
unmount_node_dirs() {
	local m
	awk -v root="$RUNDIR/nodes/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}

# Fake GPUs: character devices with NVIDIA's major number. Nothing opens them; gres/gpu
# only needs them to exist to count them and set CUDA_VISIBLE_DEVICES.
write_gres_conf() { # statedir
	local statedir=$1 k
	mkdir -p "$statedir/dev"
	for ((k = 0; k < GPUS_PER_NODE; k++)); do
		rm -f "$statedir/dev/nvidia$k"
		mknod "$statedir/dev/nvidia$k" c 195 "$k"
	done
	cat >"$statedir/gres.conf" <<-EOF
		AutoDetect=off
		Name=gpu File=${statedir}/dev/nvidia[0-$((GPUS_PER_NODE - 1))]
	EOF
}

# Two leaf switches under one spine: node1 and node2 share leaf1, node3 is on leaf2.
write_topology_conf() { # statedir
	cat >"$1/topology.conf" <<-EOF
		SwitchName=leaf1 Nodes=node[1-2]
		SwitchName=leaf2 Nodes=node3
		SwitchName=spine Switches=leaf[1-2]
	EOF
}

write_env() { # statedir
	cat >"$1/env" <<-EOF
		# Source this to use the test cluster started by tests/cluster/cluster.sh.
		export SLURM_CONF=$1/slurm.conf
		export LLMP_CLUSTER_STATEDIR=$1
		export LLMP_CLUSTER_NODES="${NODES[*]}"
	EOF
	if [ -n "$(dfs_kind)" ]; then
		echo "export LLMP_CLUSTER_DFS=$DFS_MNT LLMP_CLUSTER_DFS_KIND=$(dfs_kind)" >>"$1/env"
	fi
}

# ---------------------------------------------------------------- distributed filesystem

# LLMP_TEST_DISTFS=gluster (tests/distfs.bats). A GlusterFS distribute volume "llmp" with one brick
# on each node: a glusterd per node namespace (its own working directory, socket and
# run directory, as GlusterFS's own tests/cluster.rc runs several on one host), bricks
# in STATEDIR/gluster/bricks/NODE. Each node mounts the volume with a FUSE client of its
# own, in a mount namespace of its own that its slurmd (and so every task) runs in:
# files saved on one node are read on another through another client and another page
# cache, as on a real cluster. The root namespace (the tests, `llmp ckpt list`) has one
# more client, run in llmp-ctl, at the same path. A node killed by kill-node loses its
# client (the mount dies with the node) but keeps its glusterd and brick: they stand
# for storage servers that outlive a compute node (a distribute volume cannot lose a
# brick; that would need replica 3).

dfs_kind() {
	cat "$RUNDIR/dfs-kind" 2>/dev/null || true
}

gluster_cli() { # statedir node args...
	local statedir=$1 node=$2
	shift 2
	gluster --mode=script --glusterd-sock="$RUNDIR/gluster/$node/gd.sock" \
		--log-file="$statedir/log/gluster-cli.log" "$@"
}

gluster_peers_connected() { # statedir
	[ "$(gluster_cli "$1" "${NODES[0]}" peer status | grep -c 'Peer in Cluster (Connected)')" \
		-eq $((${#NODES[@]} - 1)) ]
}

gluster_bricks_online() { # statedir
	[ "$(gluster_cli "$1" "${NODES[0]}" volume status "$DFS_VOLUME" --xml |
		grep -c '<status>1</status>')" -eq "${#NODES[@]}" ]
}

dfs_mounted() {
	findmnt -n -t fuse.glusterfs "$DFS_MNT" >/dev/null
}

# How a node's slurmd starts with the volume: in a mount namespace of the node's own,
# a FUSE client of its own at DFS_MNT in place of the root namespace's, then slurmd.
# unshare and sh exec, so the pid launch records stays slurmd's.
# shellcheck disable=SC2016 # expanded by the inner sh
readonly DFS_SLURMD_SH='
	umount -l "$1" 2>/dev/null || true
	glusterfs --volfile-server="$2" --volfile-id="$3" --log-file="$4" "$1"
	i=0
	until findmnt -n -t fuse.glusterfs "$1" >/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "no glusterfs mount at $1" >&2; exit 1; }
		sleep 0.1
	done
	exec slurmd -D -N "$2"'

start_gluster() { # statedir
	local statedir=$1 node i bricks=()
	command -v glusterd >/dev/null || die "LLMP_TEST_DISTFS=gluster: glusterd not installed (glusterfs-server)"
	echo gluster >"$RUNDIR/dfs-kind"
	for node in "${NODES[@]}"; do
		mkdir -p "$statedir/gluster/$node" "$statedir/gluster/bricks/$node" \
			"$RUNDIR/gluster/$node/run" "$statedir/log/gluster-$node"
		# cluster-test-mode: brick logs go to this directory, not /var/log/glusterfs.
		launch "$statedir" "glusterd-$node" "$(node_ns "$node")" "$statedir/log/glusterd-$node.out" \
			glusterd -N \
			--xlator-option "management.working-directory=$statedir/gluster/$node" \
			--xlator-option "management.glusterd-sockfile=$RUNDIR/gluster/$node/gd.sock" \
			--xlator-option "management.run-directory=$RUNDIR/gluster/$node/run" \
			--xlator-option "management.cluster-test-mode=$statedir/log/gluster-$node" \
			--log-file="$statedir/log/glusterd-$node.log"
		bricks+=("$node:$statedir/gluster/bricks/$node")
	done
	for node in "${NODES[@]}"; do
		wait_for "$statedir" "glusterd on $node" gluster_cli "$statedir" "$node" peer status
	done
	for ((i = 1; i < ${#NODES[@]}; i++)); do
		gluster_cli "$statedir" "${NODES[0]}" peer probe "${NODES[i]}" >/dev/null
	done
	wait_for "$statedir" "gluster peers" gluster_peers_connected "$statedir"
	# force: the bricks are directories on the root filesystem.
	gluster_cli "$statedir" "${NODES[0]}" volume create "$DFS_VOLUME" "${bricks[@]}" force >/dev/null
	gluster_cli "$statedir" "${NODES[0]}" volume start "$DFS_VOLUME" >/dev/null
	wait_for "$statedir" "gluster bricks" gluster_bricks_online "$statedir"
	# The brick sockets go to /var/run/gluster whatever the run directory: noted for stop.
	gluster_cli "$statedir" "${NODES[0]}" volume status "$DFS_VOLUME" >/dev/null
	for node in "${NODES[@]}"; do
		for i in $(ip netns pids "$(node_ns "$node")"); do
			tr '\0' '\n' <"/proc/$i/cmdline" 2>/dev/null | grep -A1 -x -- -S | tail -n +2 || true
		done
	done | grep '^/var/run/gluster/[0-9a-f]*\.socket$' >"$RUNDIR/gluster/sockets" || true

	mkdir -p "$DFS_MNT"
	launch "$statedir" glusterfs-root "$CTL_NS" "$statedir/log/glusterfs-root.out" \
		glusterfs -N --volfile-server="${NODES[0]}" --volfile-id="$DFS_VOLUME" \
		--log-file="$statedir/log/glusterfs-root.log" "$DFS_MNT"
	wait_for "$statedir" "the glusterfs mount at $DFS_MNT" dfs_mounted
	chmod 1777 "$DFS_MNT"
}

# Whatever start_gluster left, even by a killed run: called after every process in our
# namespaces is dead (the nodes' mount namespaces, and their mounts, went with them).
stop_distfs() {
	local m
	# Deepest first; lazy, since a dead FUSE client leaves "Transport endpoint is not
	# connected" behind.
	for m in $(findmnt -rn -o TARGET | grep -- "^$RUNDIR/" | sort -r); do
		umount -l "$m" || log "warning: cannot unmount $m"
	done
	if [ -f "$RUNDIR/gluster/sockets" ]; then
		xargs -r rm -f <"$RUNDIR/gluster/sockets"
	fi
}

# ---------------------------------------------------------------- start and stop

# Wait until a command succeeds, at most START_TIMEOUT_S seconds from the start. Give up
# at once if a daemon we started has died: waiting longer cannot help.
wait_for() { # statedir description command...
	local statedir=$1 what=$2 pid start label
	shift 2
	while ! "$@" >/dev/null 2>&1; do
		while read -r pid start label; do
			if ! is_running "$pid"; then
				log "$label (pid $pid) died while waiting for $what"
				return 1
			fi
		done <"$statedir/pids"
		if ((SECONDS >= START_TIMEOUT_S)); then
			log "timed out after ${START_TIMEOUT_S}s waiting for $what"
			return 1
		fi
		sleep 0.2
	done
}

munge_answers() {
	munge -S "$RUNDIR/munge/munge.socket" -n </dev/null | unmunge -S "$RUNDIR/munge/munge.socket"
}

all_nodes_idle() { # statedir
	local states
	states=$(SLURM_CONF=$1/slurm.conf sinfo -h -N -o '%N %T' | sort -u) # a node of two partitions is listed twice
	[ "$(grep -c ' idle$' <<<"$states")" -eq "${#NODES[@]}" ]
}

print_logs() { # statedir
	local f
	for f in "$1"/log/*; do
		[ -f "$f" ] || continue
		echo "==== $f (last 40 lines)" >&2
		tail -n 40 "$f" >&2
	done
	if [ -f "$1/slurm.conf" ]; then
		echo "==== sinfo" >&2
		SLURM_CONF=$1/slurm.conf sinfo -N -l >&2 2>&1 || true
	fi
}

# Take the machine-wide lock, so two starts or stops cannot interleave. The daemons do
# not inherit it: launch closes every descriptor above 2.
take_lock() {
	exec {lock_fd}>"$LOCKFILE"
	flock -w 120 "$lock_fd" || die "another cluster.sh holds $LOCKFILE"
}

# The namespaces, the bridge and RUNDIR are shared by name with any other cluster this
# script started. stop leaves them to the cluster that owns them (RUNDIR/owner names its
# STATEDIR), so stopping a stale STATEDIR cannot take down a newer cluster; start takes
# everything over ("force"), as a cluster left behind by a killed run must go.
do_stop() { # statedir [force]
	local statedir=$1 force=${2:-} owner=""
	if [ -f "$RUNDIR/owner" ]; then
		owner=$(cat "$RUNDIR/owner")
	fi
	if [ "$force" = force ] || [ -z "$owner" ] || [ "$owner" = "$statedir" ]; then
		kill_ours "$statedir" all
		stop_distfs
		teardown_network
		unmount_node_dirs
		# --one-file-system: never into a mount that stop_distfs could not remove.
		rm -rf --one-file-system "$RUNDIR"
	else
		log "the running namespaces belong to the cluster in $owner; left alone"
		kill_ours "$statedir" recorded
	fi
	rm -f "$statedir/pids" "$statedir/env"
}

start_daemons() { # statedir
	local statedir=$1 node
	export SLURM_CONF=$statedir/slurm.conf

	launch "$statedir" munged "$CTL_NS" "$statedir/log/munged.log" \
		munged --foreground --force \
		--socket="$RUNDIR/munge/munge.socket" \
		--key-file="$statedir/munge/munge.key" \
		--pid-file="$RUNDIR/munge/munged.pid" \
		--seed-file="$statedir/munge/munged.seed" \
		--log-file="$statedir/log/munged.log"
	wait_for "$statedir" "munged" munge_answers

	# -c: start from empty state, so jobs of a previous cluster are not recovered.
	launch "$statedir" slurmctld "$CTL_NS" "$statedir/log/slurmctld.out" \
		slurmctld -D -c
	wait_for "$statedir" "slurmctld" scontrol ping

	for node in "${NODES[@]}"; do
		launch_slurmd "$statedir" "$node"
	done
	wait_for "$statedir" "all nodes idle" all_nodes_idle "$statedir"
}

launch_slurmd() { # statedir node
	local statedir=$1 node=$2 argv=(slurmd -D -N "$2")
	if [ "$(dfs_kind)" = gluster ]; then
		argv=(unshare --mount --propagation slave -- sh -ec "$DFS_SLURMD_SH" sh
			"$DFS_MNT" "$node" "$DFS_VOLUME" "$statedir/log/glusterfs-$node.log")
	fi
	# job_container/tmpfs: slurmstepd binds a job's new mount namespace into
	# slurmd's, which Linux 6.18 refuses when the new one's id is lower; ids
	# come from per-CPU batches, so slurmd and its steps make theirs on one
	# CPU, the one the caller's namespace was made on (scripts/slurm-release-test.sh).
	if [ "$JOB_CONTAINER" = tmpfs ]; then
		local cpus
		cpus=$(taskset -p -c $$ | sed 's/.*: //')
		argv=(taskset -c "${cpus%%[-,]*}" "${argv[@]}")
	fi
	launch "$statedir" "slurmd-$node" "$(node_ns "$node")" "$statedir/log/slurmd-$node.out" "${argv[@]}"
}

prepare_statedir() { # statedir plugstack
	local statedir=$1 plugstack=$2 node

	# Only what this script creates; STATEDIR may hold the caller's own files.
	rm -rf "${statedir:?}/ctld" "${statedir:?}/log" "${statedir:?}/munge" "${statedir:?}/dev" \
		"${statedir:?}/gluster"
	rm -f "$statedir/pids" "$statedir/env"
	mkdir -p "$statedir/ctld/state" "$statedir/log"
	# Users other than root must reach slurm.conf (through SLURM_CONF) and the logs.
	chmod 0755 "$statedir"
	mkdir -m 0700 "$statedir/munge"
	head -c 1024 /dev/urandom >"$statedir/munge/munge.key"
	chmod 0400 "$statedir/munge/munge.key"

	mkdir -p "$RUNDIR/munge"
	echo "$statedir" >"$RUNDIR/owner"
	[ -z "$CONF_EXTRA" ] || [ -f "$CONF_EXTRA" ] || die "LLMP_TEST_SLURM_CONF_EXTRA=$CONF_EXTRA: no such file"
	case $JOB_CONTAINER in
	"" | tmpfs) ;;
	*) die "LLMP_TEST_JOB_CONTAINER=$JOB_CONTAINER: only tmpfs is known" ;;
	esac
	rm -f "$statedir/job_container.conf"
	for node in "${NODES[@]}"; do
		mkdir -p "$RUNDIR/nodes/$node/spool" "$RUNDIR/nodes/$node/tmp"
		# Like /tmp: PMIx creates each job's directory here as the job's user.
		chmod 1777 "$RUNDIR/nodes/$node/tmp"
	done

	if [ "$plugstack" = none ]; then
		plugstack=$statedir/plugstack.conf
		: >"$plugstack"
	fi
	write_slurm_conf "$statedir" "$plugstack"
	write_gres_conf "$statedir"
	write_topology_conf "$statedir"
}

on_start_failure() {
	log "start failed; logs follow"
	print_logs "$failed_start_statedir"
	do_stop "$failed_start_statedir"
	exit 1
}

cmd_start() { # statedir plugstack
	local statedir=$1 plugstack=$2
	if [ "$plugstack" != none ]; then
		plugstack=$(realpath -m -- "$plugstack")
		[ -f "$plugstack" ] || log "warning: $plugstack does not exist (yet)"
	fi

	# A previous cluster (this STATEDIR's, or one whose run was killed) goes first.
	do_stop "$statedir" force

	SECONDS=0
	# The trap runs after this function's locals are gone, hence a global.
	failed_start_statedir=$statedir
	trap on_start_failure EXIT
	prepare_statedir "$statedir" "$plugstack"
	setup_network
	case $DISTFS in
	"") ;;
	gluster) start_gluster "$statedir" ;;
	*) die "LLMP_TEST_DISTFS=$DISTFS: only gluster is known" ;;
	esac
	start_daemons "$statedir"
	write_env "$statedir"
	trap - EXIT
	log "cluster up in ${SECONDS}s; source $statedir/env"
}

cmd_status() { # statedir
	local statedir=$1 pid start label state
	[ -f "$statedir/pids" ] || {
		echo "no cluster recorded in $statedir"
		return 1
	}
	while read -r pid start label; do
		state=dead
		if is_running "$pid" && [ "$(start_time_of "$pid" || true)" = "$start" ]; then
			state=running
		fi
		printf '%-14s %8s %s\n' "$label" "$pid" "$state"
	done <"$statedir/pids"
	SLURM_CONF=$statedir/slurm.conf sinfo -N -o '%N %T %G %c' || return 1
}

valid_node() { # node
	local node
	for node in "${NODES[@]}"; do
		[ "$node" = "$1" ] && return 0
	done
	die "no node '$1' (nodes: ${NODES[*]})"
}

# A node failing as a whole: its slurmd, slurmstepds and tasks all die at once, with
# no chance to clean up or tell anyone, as when a machine loses power.
cmd_kill_node() { # statedir node
	local pids pid
	valid_node "$2"
	pids=$(ip netns pids "$(node_ns "$2")" 2>/dev/null || true)
	if [ "$(dfs_kind)" = gluster ]; then
		# The storage servers (glusterd, the brick) outlive the node: see start_gluster.
		for pid in $pids; do
			case $(cat "/proc/$pid/comm" 2>/dev/null) in
			glusterd | glusterfsd) pids=$(grep -vx "$pid" <<<"$pids" || true) ;;
			esac
		done
	fi
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	log "killed node $2 (pids: ${pids//$'\n'/ })"
}

# A node that hangs rather than dies (a kernel stuck, a link cut both ways):
# everything it runs stops, slurmd included, and nothing answers.
cmd_signal_node() { # statedir node signal
	local pids
	valid_node "$2"
	pids=$(ip netns pids "$(node_ns "$2")" 2>/dev/null || true)
	[ -z "$pids" ] || kill "-$3" $pids 2>/dev/null || true
	log "SIG$3 to node $2 (pids: ${pids//$'\n'/ })"
}

cmd_start_node() { # statedir node
	local statedir=$1
	valid_node "$2"
	export SLURM_CONF=$statedir/slurm.conf
	launch_slurmd "$statedir" "$2"
}

main() {
	[ $# -ge 2 ] || usage
	local cmd=$1 statedir
	[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, daemons)"
	case $cmd in
	start)
		[ $# -eq 3 ] || usage
		mkdir -p -- "$2"
		;;
	stop | status)
		[ $# -eq 2 ] || usage
		;;
	kill-node | start-node | freeze-node | thaw-node)
		[ $# -eq 3 ] || usage
		;;
	*) usage ;;
	esac
	statedir=$(realpath -m -- "$2")

	case $cmd in
	start)
		take_lock
		cmd_start "$statedir" "$3"
		;;
	stop)
		take_lock
		do_stop "$statedir"
		;;
	status) cmd_status "$statedir" ;;
	kill-node) cmd_kill_node "$statedir" "$3" ;;
	start-node) cmd_start_node "$statedir" "$3" ;;
	freeze-node) cmd_signal_node "$statedir" "$3" STOP ;;
	thaw-node) cmd_signal_node "$statedir" "$3" CONT ;;
	esac
}

main "$@"
