#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# `llmp info --settings` (cli/cmd_info.c, the table of cli/settings.c): the
# columns and where each value came from, the JSON, the warnings, bad usage;
# and scripts/check-settings.sh, which holds the table to the code and the
# man pages, on this tree and on copies with a read the table lacks.

load lib/helpers

setup() {
	llmp_setup
	CHECK="$LLMP_SRCDIR/scripts/check-settings.sh"
}

# llmp info with nothing of ours in the environment but what the test gives.
info_clean() {
	run --separate-stderr env -i PATH="$PATH" "$@" "$LLMP" info --settings
}

# The row of NAME in $output, its columns squeezed to one blank each.
row() {
	grep -E "^$1 " <<<"$output" | tr -s ' '
}

@test "info: each variable's value, where it came from and its default; plugstack arguments with theirs" {
	info_clean LLMP_TIMEOUT=42 SLURM_JOB_ID=77
	assert_status 0
	[ -z "$stderr" ] || fail "unexpected stderr"
	assert_contains "$output" "llmp's environment variables:" \
		"Other environment variables llmp reads (Slurm's, NCCL's, PyTorch's, the system's):" \
		"plugstack.conf arguments of llm_parallel.so (the site's values are in its plugstack.conf):"
	grep -qE '^NAME +VALUE +FROM +DEFAULT +SET BY +READ BY +MEANING$' <<<"$output" || fail "no header"
	[ "$(row LLMP_TIMEOUT)" = "LLMP_TIMEOUT 42 environment 300 you runtime seconds any wait of libllmp may last before it fails" ] ||
		fail "LLMP_TIMEOUT: $(row LLMP_TIMEOUT)"
	[[ "$(row LLMP_DEBUG)" == "LLMP_DEBUG info default info you runtime what libllmp says on stderr: "* ]] ||
		fail "LLMP_DEBUG: $(row LLMP_DEBUG)"
	[[ "$(row LLMP_STEP_DEADLINE)" == "LLMP_STEP_DEADLINE - unset - you runtime "* ]] || fail "unset row"
	[[ "$(row LLMP_RANK)" == "LLMP_RANK - unset - plugin runtime,python "* ]] || fail "plugin's row"
	[[ "$(row LLMP_ORDER)" == "LLMP_ORDER - unset - plugin program "* ]] || fail "a row only programs read"
	[[ "$(row SLURM_JOB_ID)" == "SLURM_JOB_ID 77 environment - Slurm runtime,plugin,llmp "* ]] || fail "Slurm's row"
	[ "$(row port_base)" = "port_base 20000 the first MASTER_PORT" ] || fail "port_base: $(row port_base)"
	[ "$(row max_tp)" = "max_tp - the largest tp a job may ask for" ] || fail "max_tp: $(row max_tp)"
	# Aligned: every header and row of the environment starts its VALUE column at one place.
	local col
	col=$(awk '/^NAME +VALUE/ { print index($0, "VALUE"); exit }' <<<"$output")
	[ "$(grep -E '^(LLMP|SLURM)_' <<<"$output" | awk -v c="$col" 'substr($0, c - 2, 2) != "  " || substr($0, c, 1) == " "' | wc -l)" -eq 0 ] ||
		fail "columns not aligned at $col"
}

@test "info: a secret is never printed; values are shown printable and short" {
	info_clean LLMP_SERVE_TOKEN=0123456789abcdef "LLMP_VLLM_ARGS=$(printf 'a\033[31mb%060d' 0)"
	assert_status 0
	[[ "$(row LLMP_SERVE_TOKEN)" == "LLMP_SERVE_TOKEN (set; not shown) environment "* ]] || fail "token row"
	assert_not_contains "$output" 0123456789abcdef $'\033'
	[[ "$(row LLMP_VLLM_ARGS)" == "LLMP_VLLM_ARGS a?[31mb0"*"... environment "* ]] || fail "args row: $(row LLMP_VLLM_ARGS)"
}

@test "info: a malformed LLMP_DEBUG and an LLMP_ variable nothing reads are warnings on stderr" {
	info_clean LLMP_DEBUG=debug,ckp LLMP_TIMOUT=30
	assert_status 0
	assert_contains "$stderr" \
		"llmp info: warning: LLMP_DEBUG='debug,ckp': 'ckp' is not a part (expected comm, coll, device, ckpt, job or init): llmp_init will fail with LLMP_ERR_ARG" \
		"llmp info: warning: LLMP_TIMOUT is set, but no part of llmp reads it (a typo?)"
	[ "$(wc -l <<<"$stderr")" -eq 2 ] || fail "more than two warnings"
	[[ "$(row LLMP_DEBUG)" == "LLMP_DEBUG debug,ckp environment info "* ]] || fail "LLMP_DEBUG row"
	info_clean LLMP_DEBUG=TRACE,comm,device
	[ -z "$stderr" ] || fail "a good LLMP_DEBUG warned"
}

@test "info: JSON has every row with the same fields, names unique, values typed" {
	need_python
	run --separate-stderr env -i PATH="$PATH" LLMP_TIMEOUT=42 "$LLMP" info --settings --format json
	assert_status 0
	python3 - "$output" <<-'EOF' || fail "JSON check failed"
	import json, sys
	doc = json.loads(sys.argv[1])
	rows = doc["settings"]
	names = [r["name"] for r in rows]
	assert len(names) == len(set(names)), "duplicate names"
	keys = {"name", "kind", "value", "from", "default", "set_by", "read_by", "meaning"}
	readers = {"runtime", "plugin", "llmp", "python", "program"}
	for r in rows:
	    assert set(r) == keys, r
	    assert r["kind"] in ("environment", "plugstack"), r
	    assert r["read_by"] and set(r["read_by"]) <= readers, r
	    assert r["meaning"], r
	    if r["kind"] == "plugstack":
	        assert r["value"] is None and r["from"] is None and r["set_by"] == "site", r
	    elif r["from"] == "default":
	        assert r["value"] == r["default"] is not None, r
	    elif r["from"] == "unset":
	        assert r["value"] is None and r["default"] is None, r
	    else:
	        assert r["from"] == "environment", r
	by = {r["name"]: r for r in rows}
	assert by["LLMP_TIMEOUT"]["value"] == "42" and by["LLMP_TIMEOUT"]["from"] == "environment"
	assert by["LLMP_DEBUG"]["default"] == "info" and by["LLMP_DEBUG"]["read_by"] == ["runtime"]
	assert by["guard"]["default"] == "refuse"
	assert sum(r["kind"] == "plugstack" for r in rows) == 27
	EOF
}

@test "info: bad usage exits 2 naming the culprit" {
	expect_usage_error "llmp info: say what to print: --settings" info
	expect_usage_error "llmp info: --format: expected text or json, not 'xml'" info --settings --format xml
	expect_usage_error "llmp info: unknown option '--bogus'" info --bogus
	expect_usage_error "llmp info: unexpected argument 'extra'" info --settings extra
	llmp info --help
	assert_status 0
	assert_contains "$output" "usage: llmp info --settings [--format text|json]"
}

@test "settings: the table names every variable and plugstack argument the code reads, and the man pages name them" {
	run "$CHECK" "$LLMP"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"variables and 27 plugstack arguments: the table names what"* ]]
}

# A copy of the code, the man pages and the table's llmp, for the check to fail on.
copy_tree() {
	COPY="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$COPY/python"
	local d
	for d in runtime plugin cli common kernels topology planner include doc; do
		cp -r "$LLMP_SRCDIR/$d" "$COPY/"
	done
	cp -r "$LLMP_SRCDIR/python/llmp" "$LLMP_SRCDIR/python/README.md" "$COPY/python/"
}

@test "settings: a variable read that the table lacks fails the check, naming file and variable" {
	copy_tree
	echo 'const char *llmp_fake_knob(void) { return getenv("LLMP_FAKE_KNOB"); }' >>"$COPY/runtime/coll/barrier.c"
	echo 'const char *fake_slurm(spank_t sp, char *b) { return step_env(sp, "SLURM_FAKE_THING", b, 8); }' >>"$COPY/plugin/step.c"
	echo 'FAKE = os.environ.get("TORCH_FAKE")' >>"$COPY/python/llmp/fr.py"
	run "$CHECK" --root "$COPY" "$LLMP"
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime/coll/barrier.c reads LLMP_FAKE_KNOB, which the table of settings lacks: give it a row in cli/settings.c"* ]]
	[[ "$output" == *"plugin/step.c reads SLURM_FAKE_THING, which the table of settings lacks"* ]]
	[[ "$output" == *"python/llmp/fr.py reads TORCH_FAKE, which the table of settings lacks"* ]]
	[[ "$output" == *"3 problem(s)"* ]]
}

@test "settings: a new llmp_env.h macro in use, a plugstack key, an undocumented row each fail the check" {
	copy_tree
	sed -i 's|^#endif /\* LLMP_ENV_H \*/|#define LLMP_ENV_FAKE "LLMP_FAKE_MACRO"\n&|' "$COPY/include/llmp/llmp_env.h"
	echo 'const char *llmp_fake(void) { return getenv(LLMP_ENV_FAKE); }' >>"$COPY/cli/cmd_topo.c"
	sed -i 's/is_key(arg, klen, "drain")/is_key(arg, klen, "drain") || is_key(arg, klen, "fake_key")/' "$COPY/plugin/site.c"
	sed -i 's/LLMP_STEP_WAIT/LLMP_STEP_W/g' "$COPY/doc/llmp.1" "$COPY/doc/llm_parallel.8" "$COPY/doc/llmp.3"
	run "$CHECK" --root "$COPY" "$LLMP"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cli/cmd_topo.c reads LLMP_FAKE_MACRO, which the table of settings lacks"* ]]
	[[ "$output" == *"plugin/site.c reads the plugstack argument fake_key=, which the table of settings lacks"* ]]
	[[ "$output" == *"the table of settings has LLMP_STEP_WAIT, which no man page names"* ]]
	[[ "$output" == *"3 problem(s)"* ]]
}

@test "settings: a row no code reads any more fails the check; API names are not variables" {
	copy_tree
	# Only llmp job-end reads LLMP_REQUEUE, through the macro.
	sed -i 's/getenv(LLMP_ENV_REQUEUE)/NULL/' "$COPY/cli/cmd_job_end.c"
	# Names of the API in strings are not settings.
	echo 'X = ("LLMP_ERR_ARG", "LLMP_FLOAT32", "LLMP_CKPT_NEWEST")' >>"$COPY/python/llmp/fr.py"
	run "$CHECK" --root "$COPY" "$LLMP"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the table of settings has LLMP_REQUEUE, which no code reads: remove its row from cli/settings.c"* ]]
	[[ "$output" == *"1 problem(s)"* ]]
}
