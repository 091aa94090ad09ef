#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# LLMP_DEBUG (runtime/comm/log.h): what libllmp says on stderr, as a PMIx
# singleton (no launcher, no cluster, so this also runs in the sanitizer
# stage of scripts/test.sh): tests/ckpt/ck_check saves and loads,
# tests/ckpt/ck_stripe runs a job that saves after every step. Unset, the
# lines are those of before (the job's story with time and rank, warnings
# as "llmp: warning: "), and no debug line; set, every line is in the one
# fixed format and the level and parts choose which. The parsing itself is
# tests/unit/test_log_conf.c's.

load lib/helpers

# Every line of the fixed format: time, rank, part, level.
FIXED='^llmp: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} rank 0 (comm|coll|device|ckpt|job|init) (warn|info|debug|trace): '
# The job layer's lines as they always were.
OLD_JOB='^llmp: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} rank 0: '

setup() {
	ckpt_setup
	CK_STRIPE="$LLMP_BUILDDIR/tests/ckpt/ck_stripe"
	[ -x "$CK_STRIPE" ] || fail "ck_stripe not built ($CK_STRIPE)"
	unset LLMP_DEBUG LLMP_LUSTREAPI_LIBRARY
}

# A PMIx singleton: stdout in $output, stderr in $stderr; LLMP_DEBUG as given ("" unset).
singleton() {
	local debug=$1
	shift
	run --separate-stderr env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID \
		${debug:+LLMP_DEBUG=$debug} timeout -k 5 120 "$@"
}

save() { # LLMP_DEBUG: steps 100 and 200 of ck_check's model
	rm -rf "$ROOT"
	singleton "$1" "$CK_CHECK" save --root "$ROOT" --steps 100,200 --keep 2
	[ "$status" -eq 0 ] || fail "ck_check save failed"
}

# The lines of $stderr that match the extended regex, counted.
count() {
	grep -cE -- "$1" <<<"$stderr" || true
}

@test "debug: unset, a save prints nothing; LLMP_DEBUG=debug,ckpt prints its phases as ckpt debug lines and nothing else" {
	save ""
	[ -z "$stderr" ] || fail "a save with LLMP_DEBUG unset printed something"
	save debug,ckpt
	# Per save: the step directory ready, this rank's shard, every shard written, committed.
	[ "$(count "$FIXED")" -eq 8 ] || fail "expected 8 lines in the fixed format"
	[ "$(count '^llmp: ')" -eq 8 ] || fail "a line not in the fixed format"
	[ "$(count ' rank 0 ckpt debug: save of step (100|200): ')" -eq 8 ] || fail "not the save's phases"
	assert_contains "$stderr" " rank 0 ckpt debug: save of step 100: step-100.tmp ready under $ROOT after " \
		" rank 0 ckpt debug: save of step 200: committed (index, MANIFEST, rename, retention), "
	save info
	[ -z "$stderr" ] || fail "LLMP_DEBUG=info printed a debug line"
}

@test "debug: LLMP_DEBUG=debug shows the start: llmp_init, the fence and its wait, the communicator" {
	save debug
	[ "$(count '^llmp: ')" -eq "$(count "$FIXED")" ] || fail "a line not in the fixed format"
	assert_contains "$stderr" \
		" rank 0 init debug: llmp_init: rank 0 of 1, local rank 0 of 1, PMIx namespace " \
		" rank 0 init debug: llmp_init: layout tp=1,cp=1,ep=1,etp=1,dp=1,pp=1,vpp=0,order=tp-cp-ep-dp-pp,world=1, placement block; device path: " \
		" rank 0 comm debug: wire-up: in the fence, waiting for all 1 ranks to publish theirs (PMIx_Fence, timeout 300 s)" \
		" rank 0 comm debug: wire-up: fence done after " \
		" rank 0 init debug: llmp_init: done in " \
		" rank 0 comm debug: communicator world: 1 members (ranks 0), this rank is 0" \
		" rank 0 ckpt debug: save of step 100: "
	[ "$(count ' (warn|info|trace): ')" -eq 0 ] || fail "a save said more than debug lines"
	# trace: the same here, a world of one opens no endpoint
	save trace
	[ "$(count '^llmp: ')" -eq "$(count "$FIXED")" ] || fail "a line not in the fixed format"
	assert_contains "$stderr" " rank 0 comm debug: wire-up: fence done after "
}

@test "debug: a job's story: as before when unset, in the fixed format when set, gone at warn" {
	singleton "" "$CK_STRIPE" job "$ROOT" keep=2 3
	[ "$status" -eq 0 ] || fail "ck_stripe failed"
	[ "$(count "$OLD_JOB")" -eq 8 ] || fail "expected the job's 8 lines as before"
	[ "$(count '^llmp: ')" -eq 8 ] || fail "more than the job's lines"
	[ "$(count "${OLD_JOB}checkpoint step 2 committed: ")" -eq 1 ] && [ "$(count "${OLD_JOB}exit: done \(code 0\)$")" -eq 1 ] ||
		fail "not the job's lines"

	rm -rf "$ROOT"
	singleton info "$CK_STRIPE" job "$ROOT" keep=2 3
	[ "$status" -eq 0 ] || fail "ck_stripe failed"
	[ "$(count "$FIXED")" -eq 8 ] && [ "$(count '^llmp: ')" -eq 8 ] || fail "expected 8 lines in the fixed format"
	[ "$(count ' rank 0 job info: checkpoint step 2 committed: ')" -eq 1 ] &&
		[ "$(count ' rank 0 job info: exit: done \(code 0\)$')" -eq 1 ] || fail "not the job's lines"

	rm -rf "$ROOT"
	singleton warn "$CK_STRIPE" job "$ROOT" keep=2 3
	[ "$status" -eq 0 ] && [ -z "$stderr" ] || fail "LLMP_DEBUG=warn printed the job's story"
}

@test "debug: a warning says so unset, is a warn line set; LLMP_DEBUG=none silences it" {
	# The newest checkpoint has lost a shard: the load says so and falls back.
	save ""
	rm "$ROOT/step-200/shard-0.h5"
	local why="checkpoint load of step-200: rank 0: $ROOT/step-200/shard-0.h5: No such file or directory; trying step-100"
	singleton "" "$CK_CHECK" load --root "$ROOT" --expect-step 100
	[ "$status" -eq 0 ] || fail "the load did not fall back"
	[ "$stderr" = "llmp: warning: $why" ] || fail "not the warning alone"
	singleton warn "$CK_CHECK" load --root "$ROOT" --expect-step 100
	[ "$status" -eq 0 ] && [ "$(count "$FIXED")" -eq 1 ] || fail "expected one line"
	assert_contains "$stderr" " rank 0 ckpt warn: $why"
	singleton none "$CK_CHECK" load --root "$ROOT" --expect-step 100
	[ "$status" -eq 0 ] && [ -z "$stderr" ] || fail "LLMP_DEBUG=none printed something"
	singleton debug,ckpt "$CK_CHECK" load --root "$ROOT" --expect-step 100
	assert_contains "$stderr" " rank 0 ckpt debug: load: 2 candidates under $ROOT, step-200 first" \
		" rank 0 ckpt debug: load of step-200: failed after " " rank 0 ckpt warn: $why" \
		" rank 0 ckpt debug: load of step-100: every rank's files pass their checks; reading the tensors" \
		" rank 0 ckpt debug: load of step-100: done after "
}

@test "debug: a malformed LLMP_DEBUG fails llmp_init, naming the variable and the word" {
	local v want
	for v in debgu debug,ckp debug,info 'debug,' ckpt; do
		singleton "$v" "$CK_CHECK" save --root "$ROOT" --steps 100
		[ "$status" -ne 0 ] || fail "LLMP_DEBUG=$v was accepted"
		case $v in
		debgu) want="'debgu' is not a level (expected LEVEL[,PART...], LEVEL one of none, warn, info, debug or trace)" ;;
		debug,ckp) want="'ckp' is not a part (expected comm, coll, device, ckpt, job or init)" ;;
		debug,info) want="'info' is a second level" ;;
		debug,) want="an empty word" ;;
		ckpt) want="'ckpt' is not a level" ;;
		esac
		assert_contains "$output" "llmp_init: invalid argument: LLMP_DEBUG='$v': $want"
		[ ! -e "$ROOT" ] || fail "LLMP_DEBUG=$v: something was saved"
	done
}

@test "debug: rt_log is the runtime's one way to stderr" {
	# Every other file of runtime/ goes through it (comments aside).
	local hits
	hits=$(cd "$LLMP_SRCDIR" && for f in $(find runtime -name '*.c' ! -path runtime/comm/log.c); do
		gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null | grep -qE '\b(stderr|perror)\b' && echo "$f"
	done || true)
	[ -z "$hits" ] || fail "these write to stderr without rt_log:" "$hits"
}
