#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# stripe= of --llm-checkpoint (runtime/ckpt/ckpt_stripe.c), no cluster:
# tests/ckpt/ck_stripe saves through llmp_job as a PMIx singleton (a save
# after every step) and loads the newest checkpoint back. On "Lustre" the
# layout calls go to tests/ckpt/fake_lustreapi.c, a test double loaded
# through LLMP_LUSTREAPI_LIBRARY that logs each call; the filesystem type is
# the double's word (a symbol only it exports), since statfs cannot be
# faked. Elsewhere the real statfs decides. Expected logs are written out
# here from the spec, never taken from libllmp.

load lib/helpers

FAKE="$LLMP_BUILDDIR/tests/ckpt/.libs/fake_lustreapi.so"

setup() {
	# The sanitizer build's leak suppressions (libpmix keeps memory past PMIx_Finalize).
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp"
	ROOT="$BATS_TEST_TMPDIR/ckpt"
	CK_STRIPE="$LLMP_BUILDDIR/tests/ckpt/ck_stripe"
	[ -x "$CK_STRIPE" ] || fail "ck_stripe not built ($CK_STRIPE)"
	[ -f "$FAKE" ] || fail "fake_lustreapi.so not built ($FAKE)"
	LOG="$BATS_TEST_TMPDIR/lustreapi.log"
	unset LLMP_LUSTREAPI_LIBRARY FAKE_LUSTREAPI_FS_TYPE FAKE_LUSTREAPI_FAIL
	export FAKE_LUSTREAPI_LOG=$LOG
}

# ck_stripe as a PMIx singleton, stdout in $output, stderr in $stderr.
ck_stripe() {
	run --separate-stderr env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID \
		timeout -k 5 120 "$CK_STRIPE" "$@"
}

# Three steps saved and step 2 loaded back whole, as ck_stripe checks it.
saved_three() {
	[ "$status" -eq 0 ] || fail "ck_stripe failed"
	[ "$output" = "ck_stripe: step 2 loaded, 1000 values right" ] || fail "unexpected stdout"
	[ -d "$ROOT/step-2" ] && [ -d "$ROOT/step-1" ] && [ ! -e "$ROOT/step-0" ] || fail "not keep=2 of 3"
	! compgen -G "$ROOT/step-*.tmp" >/dev/null || fail "a step-N.tmp is left"
}

# How many lines of $stderr hold TEXT.
count_in_stderr() {
	grep -cF -- "$1" <<<"$stderr" || true
}

@test "Lustre: each step directory gets the layout before any shard exists; the data loads back" {
	export LLMP_LUSTREAPI_LIBRARY=$FAKE
	ck_stripe job "$ROOT" stripe=8:4M:flash 3
	saved_three
	# Per save: the type of step-N.tmp, then the layout built and applied to it, empty.
	local want="" step
	for step in 0 1 2; do
		want+="fs_type $ROOT/step-$step.tmp"$'\n'"alloc"$'\n'"stripe_count_set 8"$'\n'
		want+="stripe_size_set 4194304"$'\n'"pool_name_set flash"$'\n'
		want+="file_open $ROOT/step-$step.tmp directory=1 entries=0 count=8 size=4194304 pool=flash"$'\n'"free"$'\n'
	done
	[ "$(cat "$LOG")" = "${want%$'\n'}" ] || fail "log:" "$(cat "$LOG")" "expected:" "$want"
	# Said once, for the first directory; no warning.
	[ "$(count_in_stderr "llmp: checkpoint layout stripe=8:4194304:flash set on $ROOT/step-0.tmp (and each later step directory) through $FAKE")" -eq 1 ] ||
		fail "no single 'layout set' line"
	[ "$(count_in_stderr "llmp: checkpoint layout")" -eq 1 ] && [ "$(count_in_stderr warning)" -eq 0 ] ||
		fail "more than one layout line, or a warning"
}

@test "Lustre: stripe=-1 asks for every OST, with neither size nor pool set" {
	export LLMP_LUSTREAPI_LIBRARY=$FAKE
	ck_stripe job "$ROOT" stripe=-1 3
	saved_three
	[ "$(grep -c '^stripe_count_set WIDE$' "$LOG")" -eq 3 ] || fail "not WIDE three times"
	! grep -q 'stripe_size_set\|pool_name_set' "$LOG" || fail "a size or pool was set"
	[ "$(grep -c "entries=0 count=WIDE0 size=0 pool=-$" "$LOG")" -eq 3 ] || fail "file_open lines"
	[ "$(count_in_stderr "llmp: checkpoint layout stripe=-1 set on $ROOT/step-0.tmp")" -eq 1 ]
}

@test "Lustre: a pool with the filesystem's stripe size (stripe=2::p)" {
	export LLMP_LUSTREAPI_LIBRARY=$FAKE
	ck_stripe job "$ROOT" stripe=2::p 3
	saved_three
	! grep -q 'stripe_size_set' "$LOG" || fail "a size was set"
	[ "$(grep -c "entries=0 count=2 size=0 pool=p$" "$LOG")" -eq 3 ] || fail "file_open lines"
	[ "$(count_in_stderr "llmp: checkpoint layout stripe=2::p set on")" -eq 1 ]
}

@test "a failing layout call warns once, naming the call, the directory and the error; every save succeeds" {
	export LLMP_LUSTREAPI_LIBRARY=$FAKE FAKE_LUSTREAPI_FAIL=llapi_layout_file_open
	ck_stripe job "$ROOT" stripe=8 3
	saved_three
	[ "$(count_in_stderr "warning")" -eq 1 ] || fail "not one warning"
	assert_contains "$stderr" "llmp: warning: checkpoint stripe=8 not applied to $ROOT/step-0.tmp: llapi_layout_file_open($ROOT/step-0.tmp) failed ($FAKE): No space left on device; the shards get"
	[ "$(count_in_stderr "llmp: checkpoint layout")" -eq 0 ] || fail "claimed a layout was set"
	# Tried again at each save (a transient error may pass), freed each time.
	[ "$(grep -c '^free$' "$LOG")" -eq 3 ] || fail "layout not freed"

	rm -rf "$ROOT" "$LOG"
	export FAKE_LUSTREAPI_FAIL=llapi_layout_stripe_count_set
	ck_stripe job "$ROOT" stripe=8:1M 3
	saved_three
	assert_contains "$stderr" "checkpoint stripe=8:1048576 not applied to $ROOT/step-0.tmp: llapi_layout_stripe_count_set(8) failed ($FAKE): No space left on device"
	! grep -q 'file_open' "$LOG" || fail "applied a half-built layout"
	[ "$(count_in_stderr "warning")" -eq 1 ]
}

@test "not Lustre (the double says ext4, or GPFS): no layout call, one warning saying why, saves as usual" {
	export LLMP_LUSTREAPI_LIBRARY=$FAKE FAKE_LUSTREAPI_FS_TYPE=0xEF53
	ck_stripe job "$ROOT" stripe=8:4M 3
	saved_three
	[ "$(grep -vc '^fs_type ' "$LOG")" -eq 0 ] || fail "a layout call on ext4"
	[ "$(grep -c '^fs_type ' "$LOG")" -eq 3 ] || fail "the type not asked at each save"
	[ "$(count_in_stderr "warning")" -eq 1 ] || fail "not one warning"
	assert_contains "$stderr" "llmp: warning: checkpoint stripe=8:4194304 not applied to $ROOT/step-0.tmp: it is on ext2/3/4 (filesystem type 0xEF53), not Lustre"

	rm -rf "$ROOT" "$LOG"
	export FAKE_LUSTREAPI_FS_TYPE=0x47504653
	ck_stripe job "$ROOT" stripe=8 3
	saved_three
	[ "$(grep -vc '^fs_type ' "$LOG")" -eq 0 ] || fail "a layout call on GPFS"
	[ "$(count_in_stderr "warning")" -eq 1 ]
	assert_contains "$stderr" "not applied to $ROOT/step-0.tmp: GPFS has no stripe layout to set"
}

@test "the real filesystem here (statfs, no test double): one warning naming its type, saves as usual" {
	mkdir -p "$ROOT"
	local type
	type=$(stat -f -c %t "$ROOT" | tr a-f A-F)
	[ "$type" != BD00BD0 ] && [ "$type" != 47504653 ] || skip "this machine's test directory is on Lustre or GPFS"
	ck_stripe job "$ROOT" stripe=4:1M:flash 3
	saved_three
	[ "$(count_in_stderr "warning")" -eq 1 ] || fail "not one warning"
	assert_contains "$stderr" "checkpoint stripe=4:1048576:flash not applied to $ROOT/step-0.tmp: it is on " \
		"(filesystem type 0x$type), not Lustre"
	[ ! -e "$LOG" ] || fail "the double was loaded"
}

@test "without stripe= nothing is loaded or said, even with LLMP_LUSTREAPI_LIBRARY set" {
	export LLMP_LUSTREAPI_LIBRARY=$FAKE
	ck_stripe job "$ROOT" keep=2 3
	saved_three
	[ ! -e "$LOG" ] || fail "the double was called: $(cat "$LOG")"
	[ "$(count_in_stderr "stripe")" -eq 0 ] || fail "stripe mentioned"
}

@test "a bad stripe= fails llmp_job_open naming the key; llmp_ckpt_open checks its options alike" {
	ck_stripe job "$ROOT" stripe=4:1000 1
	[ "$status" -ne 0 ]
	assert_contains "$stderr" "stripe=4:1000: size must be a multiple of 64K below 4G"
	[ ! -e "$ROOT/step-0" ] || fail "saved anyway"

	ck_stripe open "$ROOT" -2 0 -
	[ "$status" -eq 1 ]
	assert_contains "$stderr" "invalid argument" "llmp_ckpt_open: stripe=: count -2 is not -1 (all OSTs) or 1..2000"
	ck_stripe open "$ROOT" 4 100000 -
	[ "$status" -eq 1 ]
	assert_contains "$stderr" "llmp_ckpt_open: stripe=: size 100000 bytes is not a multiple of 64K below 4G"
	ck_stripe open "$ROOT" 0 0 flash
	[ "$status" -eq 1 ]
	assert_contains "$stderr" "llmp_ckpt_open: stripe=: a stripe size or pool needs a stripe count"
	ck_stripe open "$ROOT" 4 0 'a/b'
	[ "$status" -eq 1 ]
	assert_contains "$stderr" "llmp_ckpt_open: stripe=: pool 'a/b' may hold only letters, digits, '_' and '-'"
	ck_stripe open "$ROOT" 4 1048576 flash
	[ "$status" -eq 0 ] && [ "$output" = "ck_stripe: opened" ] || fail "a good layout refused"
}
