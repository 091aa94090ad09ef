#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# scripts/check-layers.sh: the runtime's layers, checked on this tree and on
# copies of its runtime/ with one rule broken each (the expected lines are
# written from the table in the script and runtime/README.md, by hand).

load lib/helpers

setup() {
	CHECK="$LLMP_SRCDIR/scripts/check-layers.sh"
	COPY="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$COPY"
	cp -r "$LLMP_SRCDIR/runtime" "$COPY/"
}

@test "layers: this tree keeps the runtime's layers" {
	run "$CHECK" --root "$LLMP_SRCDIR"
	[ "$status" -eq 0 ]
	[[ "$output" == *"keep their layers"* ]]
}

@test "layers: an upward include (comm/ including device/) fails, naming file and line" {
	n=$(($(wc -l <"$COPY/runtime/comm/comm.c") + 1))
	echo '#include "runtime/device/device.h"' >>"$COPY/runtime/comm/comm.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/comm/comm.c:$n: includes runtime/device/device.h, but runtime/comm/ may include only: its own headers"* ]]
	[[ "$output" == *"1 violation(s)"* ]]
}

@test "layers: coll/ including ckpt/ fails; ckpt/ including coll/ passes" {
	echo '#include "runtime/coll/coll.h"' >>"$COPY/runtime/ckpt/ckpt_fs.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 0 ]
	echo '#include "runtime/ckpt/ckpt_internal.h"' >>"$COPY/runtime/coll/barrier.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/coll/barrier.c:"*": includes runtime/ckpt/ckpt_internal.h, but runtime/coll/ may include only: comm"* ]]
}

@test "layers: the run record (a library of its own) may not include comm/, though job/ may" {
	echo '#include "runtime/comm/rt.h"' >>"$COPY/runtime/job/job.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 0 ]
	echo '#include "runtime/comm/rt.h"' >>"$COPY/runtime/job/job_record.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/job/job_record.c:"*"may include only: ckpt/format"* ]]
}

@test "layers: nothing of the runtime includes the tool or the plugin" {
	echo '#include "cli/cli.h"' >>"$COPY/runtime/init/init.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/init/init.c:"*": includes cli/cli.h: the runtime must not include cli/"* ]]
}

@test "layers: UCX called above comm/ fails; UCX named in a comment does not" {
	printf '/* ucp_worker_progress(w) is comm/transport.c'"'"'s business */\n' >>"$COPY/runtime/coll/barrier.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 0 ]
	printf 'static void spin(ucp_worker_h w) { ucp_worker_progress(w); }\n' >>"$COPY/runtime/coll/barrier.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/coll/barrier.c: calls UCX directly (ucp_worker_progress): above runtime/comm/"* ]]
}

@test "layers: a new runtime folder without a row in the table fails" {
	mkdir "$COPY/runtime/extra"
	echo 'int x;' >"$COPY/runtime/extra/x.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/extra/x.c: runtime/extra has no row"* ]]
}

@test "layers: a bad argument is named" {
	run "$CHECK" --root "$BATS_TEST_TMPDIR/nowhere"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--root needs a directory"* ]]
	run "$CHECK" --frobnicate
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown argument '--frobnicate'"* ]]
}

@test "layers: the machine model including the planner fails; the planner including it passes" {
	cp -r "$LLMP_SRCDIR/common" "$LLMP_SRCDIR/topology" "$LLMP_SRCDIR/planner" "$COPY/"
	echo '#include "topology/topo.h"' >>"$COPY/planner/cost.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 0 ]
	n=$(($(wc -l <"$COPY/topology/rails.c") + 1))
	echo '#include "planner/step_model.h"' >>"$COPY/topology/rails.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"topology/rails.c:$n: includes planner/step_model.h, but topology/ may include only: common"* ]]
	[[ "$output" == *"1 violation(s)"* ]]
}

@test "layers: common/ includes no other part; a new folder of C needs its row" {
	cp -r "$LLMP_SRCDIR/common" "$COPY/"
	echo '#include "topology/topo.h"' >>"$COPY/common/hostlist.c"
	mkdir "$COPY/newpart"
	echo 'int x;' >"$COPY/newpart/x.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"common/hostlist.c:"*": includes topology/topo.h, but common/ may include only: its own headers"* ]]
	[[ "$output" == *"newpart/ holds C but has no row"* ]]
	[[ "$output" == *"2 violation(s)"* ]]
}

@test "layers: a public header of a higher part fails where its part may not be included" {
	cp -r "$LLMP_SRCDIR/include" "$LLMP_SRCDIR/common" "$LLMP_SRCDIR/topology" "$LLMP_SRCDIR/planner" \
		"$LLMP_SRCDIR/plugin" "$COPY/"
	# the runtime may include the planner's public headers, the plugin the planner's
	echo '#include <llmp/llmp_plan.h>' >>"$COPY/runtime/init/init.c"
	echo '#include <llmp/llmp_spec.h>' >>"$COPY/plugin/bounded.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 0 ]
	[[ "$output" == *"11 public headers theirs"* ]]
	n=$(($(wc -l <"$COPY/planner/cost.c") + 1))
	echo '#include <llmp/llmp.h>' >>"$COPY/planner/cost.c"
	echo '#include <llmp_job.h>' >>"$COPY/plugin/bounded.c"
	echo '#include <llmp/llmp_dtype.h>' >>"$COPY/topology/rails.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"planner/cost.c:$n: includes <llmp/llmp.h>, the public header of runtime/, but planner/ may include only: common topology"* ]]
	[[ "$output" == *"plugin/bounded.c:"*": includes <llmp/llmp_job.h>, the public header of runtime/, but plugin/ may include only: common topology planner"* ]]
	[[ "$output" == *"topology/rails.c:"*": includes <llmp/llmp_dtype.h>, the public header of kernels/, but topology/ may include only: common"* ]]
	[[ "$output" == *"3 violation(s)"* ]]
}

@test "layers: a public header including a higher part's, or without a row, fails" {
	cp -r "$LLMP_SRCDIR/include" "$COPY/"
	echo '#include "llmp_ckpt.h"' >>"$COPY/include/llmp/llmp_plan.h"
	echo '/* a new header */' >"$COPY/include/llmp/llmp_new.h"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"include/llmp/llmp_plan.h:"*": includes llmp_ckpt.h, the public header of runtime/, but planner/ (whose header this is) may include only: common topology"* ]]
	[[ "$output" == *"include/llmp/llmp_new.h: has no row in scripts/check-layers.sh's publics"* ]]
	[[ "$output" == *"2 violation(s)"* ]]
}

@test "layers: a runtime folder calling a public function of a folder above it fails" {
	printf '/* llmp_version() is init'"'"'s */\n' >>"$COPY/runtime/comm/comm.c"
	printf 'static unsigned v(void) { return llmp_barrier(0); }\n' >>"$COPY/runtime/device/device.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 0 ]
	printf 'static unsigned v(void) { return llmp_version(); }\n' >>"$COPY/runtime/comm/comm.c"
	printf 'static void c(void) { llmp_ckpt_close(0); }\n' >>"$COPY/runtime/coll/barrier.c"
	run "$CHECK" --root "$COPY"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/comm/comm.c: calls llmp_version, defined in runtime/init/, but runtime/comm/ may use only: its own folder"* ]]
	[[ "$output" == *"runtime/coll/barrier.c: calls llmp_ckpt_close, defined in runtime/ckpt/, but runtime/coll/ may use only: comm"* ]]
	[[ "$output" == *"2 violation(s)"* ]]
}
