#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# serve_local.bats - `llmp serve` on this machine alone, no Slurm: the
# variables a serving step's plugin would set are given by hand, the
# engine is the stand-in of tests/cluster/serve_engine.py. Usage errors,
# the health wait, the endpoint and token files, a held port, and an
# engine's death or a SIGTERM ending it with nothing left running.

load lib/helpers

ENGINE="$LLMP_SRCDIR/tests/cluster/serve_engine.py"

setup() {
	llmp_setup
	WORK=$(mktemp -d)
	# A block no one holds: 32 ports from one the kernel hands out, below its ephemeral range.
	BASE=$(python3 -c '
import socket
for base in range(24000, 32000, 32):
    try:
        socks = [socket.socket() for _ in range(32)]
        for i, s in enumerate(socks):
            s.bind(("0.0.0.0", base + i))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()')
	printf 'secret-%s' "$BASE" >"$WORK/tok"
	chmod 600 "$WORK/tok"
	export LLMP_SERVE_ENGINE=vllm LLMP_SERVE_ROLE=head LLMP_SERVE_HEAD=127.0.0.1 LLMP_SERVE_NNODES=1 \
		LLMP_SERVE_PORT=$BASE LLMP_SERVE_PORTS=$BASE-$((BASE + 31)) LLMP_SERVE_TOKEN_FILE=$WORK/tok \
		LLMP_VLLM_ARGS="--tensor-parallel-size 1 --pipeline-parallel-size 1 --nnodes 1 --node-rank 0 --master-addr 127.0.0.1 --master-port $((BASE + 1)) --port $BASE"
	unset SLURM_JOB_ID SLURM_STEP_ID
}

teardown() {
	[ -z "${SERVE_PID:-}" ] || kill "$SERVE_PID" 2>/dev/null || true
	pkill -x -f "sleep 86$BASE" || true # the last test's stray, should it fail
	rm -rf "$WORK"
}

# SIGTERM to the backgrounded `llmp serve` ($SERVE_PID): it exits 143, its engine gone.
term_serve() {
	local rc=0
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID" || rc=$?
	SERVE_PID=
	[ "$rc" -eq 143 ] || { echo "llmp serve exited $rc after SIGTERM, not 143"; return 1; }
	[ -z "$(engine_pid)" ] || { echo "the engine is still running"; return 1; }
}

# The stand-in engine's pid serving $BASE, or nothing.
engine_pid() {
	local d
	for d in /proc/[0-9]*; do
		case $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) in
		*"python3 $ENGINE serve tiny --tensor-parallel-size 1 "*"--port $BASE"*) echo "${d#/proc/}" ;;
		esac
	done
	return 0
}

wait_file() { # FILE SECONDS
	for _ in $(seq 1 $(($2 * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

@test "llmp serve: usage errors name the problem" {
	llmp serve true
	assert_status 2
	[[ "$stderr" == *"no engine command"* ]]
	llmp serve --timeout 0 -- true
	assert_status 2
	[[ "$stderr" == *"--timeout"* ]]
	llmp serve --health health -- true
	assert_status 2
	[[ "$stderr" == *"--health: expected a path"* ]]
	unset LLMP_SERVE_ENGINE
	llmp serve -- true
	assert_status 2
	[[ "$stderr" == *"not in a serving step"* ]]
}

@test "llmp serve: healthy engine, endpoint and token files, the engine's death ends it" {
	"$LLMP" serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny 2>"$WORK/err" &
	SERVE_PID=$!
	wait_file "$WORK/ep" 30 || { cat "$WORK/err"; false; }
	[ "$(cat "$WORK/ep")" = "127.0.0.1:$BASE" ]
	[ "$(stat -c %a "$WORK/ep.token")" = 600 ]
	[ "$(cat "$WORK/ep.token")" = "secret-$BASE" ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$BASE/v1/models")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer secret-$BASE" \
		"http://127.0.0.1:$BASE/v1/models")" = 200 ]
	local engine rc=0
	engine=$(engine_pid)
	[ -n "$engine" ]
	kill -KILL "$engine"
	wait "$SERVE_PID" || rc=$?
	SERVE_PID=
	[ "$rc" -eq 1 ]
	grep -q "llmp serve: node .*: python3 was killed by signal 9 after" "$WORK/err"
	[ ! -e "$WORK/ep" ] && [ ! -e "$WORK/ep.token" ]
	[ -z "$(engine_pid)" ]
}

@test "llmp serve: SIGTERM stops the engine; a held port is refused before it starts" {
	"$LLMP" serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny 2>"$WORK/err" &
	SERVE_PID=$!
	wait_file "$WORK/ep" 30 || { cat "$WORK/err"; false; }
	term_serve
	python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); time.sleep(30)' $((BASE + 5)) &
	local holder=$!
	sleep 0.5
	llmp serve --endpoint "$WORK/ep" -- python3 "$ENGINE" serve tiny
	kill "$holder"
	assert_status 1
	[[ "$stderr" == *"port $((BASE + 5)) of the job's block $BASE-$((BASE + 31)) is held by another process"* ]]
	[ -z "$(engine_pid)" ]
}

# An engine that leaves a process in a session of its own (as Ray's raylet
# leaves its workers): when the engine's group is stopped, that process is
# re-parented to `llmp serve` (a subreaper), which stops it too.
@test "llmp serve: SIGTERM also stops what the engine left in a session of its own" {
	local mark="86$BASE"
	"$LLMP" serve --endpoint "$WORK/ep" -- sh -c 'm=$1; shift; setsid sleep "$m" </dev/null >/dev/null 2>&1 & exec python3 "$0" serve tiny "$@"' \
		"$ENGINE" "$mark" 2>"$WORK/err" &
	SERVE_PID=$!
	wait_file "$WORK/ep" 30 || { cat "$WORK/err"; false; }
	local stray
	stray=$(pgrep -x -f "sleep $mark")
	[ -n "$stray" ]
	[ "$(ps -o sid= -p "$stray" | tr -d ' ')" -eq "$stray" ] # a session of its own
	term_serve
	! kill -0 "$stray" 2>/dev/null || { ps -o pid,ppid,sid,args -p "$stray"; false; }
}
