#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# libllmp with no launcher at all: a PMIx singleton, rank 0 of a world of one.
# Needs no cluster, so it also runs in the sanitizer stage of scripts/test.sh.

load cluster/common
load runtime/common

setup() {
	[ -x "$RT_CHECK" ] || skip "rt_check not built ($RT_CHECK)"
	# In the sanitizer build: libpmix keeps memory past PMIx_Finalize (its
	# own, suppressed by tests/lsan.supp), and has no frame pointers, so the
	# slow unwinder is needed for the suppression to see it is libpmix's.
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
}

@test "singleton: no launcher, a world of one, every collective" {
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID \
		timeout -k 5 120 "$RT_CHECK" singleton
	assert_ranks_ok 1 1000
	grep -q '^rank 0: stats: init_fences=1 ' <<<"$output"
}

@test "singleton: bad arguments everywhere are refused with a message, no crash" {
	run env -u PMIX_RANK -u PMIX_NAMESPACE timeout -k 5 60 "$RT_CHECK" badargs
	assert_ranks_ok 1 40
}

