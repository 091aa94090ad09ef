#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# `llmp ckpt list|verify|inspect|bench` (cli/cmd_ckpt.c) on checkpoints that
# tests/ckpt/ck_check saves as a PMIx singleton: no launcher, no cluster, so
# these also run in the sanitizer stage of scripts/test.sh. What the tool
# must report is computed by tests/ckpt/tool_expect.py from ck_check's
# formulas, with its own CRC-32C; sizes come from the files themselves.
# tests/ckpt.bats runs the tool on multi-rank checkpoints on the cluster.

load lib/helpers

EXPECT="$LLMP_SRCDIR/tests/ckpt/tool_expect.py"
# The model of ck_check --big 1, in bytes: 13x10 f32, 6x12 f64, 4x12 bf16, 10 i32,
# 12x12x5 u8, 24 f16, 48x1024 f32.
MODEL_BYTES=$((520 + 576 + 96 + 40 + 720 + 48 + 196608))

setup() {
	ckpt_setup
}

# No launcher's variables: a PMIx singleton, rank 0 of 1.
singleton() {
	env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID timeout -k 5 120 "$@"
}

# Steps 100, 200, 300 with keep=2: step-200 and step-300 (latest) remain.
save_reference() {
	run singleton "$CK_CHECK" save --root "$ROOT" --steps 100,200,300 --keep 2 --big 1
	[ "$status" -eq 0 ] && grep -qx 'rank 0: [0-9]* checks, 0 wrong' <<<"$output" ||
		fail "ck_check save failed"
	[ -d "$ROOT/step-300" ] && [ -d "$ROOT/step-200" ] && [ ! -e "$ROOT/step-100" ]
}

# llmp ARGS with its JSON on stdout saved to FILE, which must parse.
json_to() { # FILE llmp-arguments...
	local file=$1
	shift
	llmp "$@"
	printf '%s\n' "$output" >"$file"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$file" || fail "not JSON: llmp $*"
}

expect() {
	run python3 "$EXPECT" "$@"
	echo "$output"
	[ "$status" -eq 0 ]
}

# ------------------------------------------------------------------ list

@test "list: the complete checkpoints, newest first, latest marked; sizes are the files'" {
	save_reference
	llmp ckpt list "$ROOT"
	assert_status 0
	assert_contains "$output" "checkpoints in $ROOT (latest: step-300)"
	assert_line_matches '^ +300  latest +[0-9.]+ KiB +7 +1 +1  tp=1,'
	assert_line_matches '^ +200  complete +[0-9.]+ KiB +7 +1 +1  tp=1,'
	[ "$(grep -n ' 300  latest' <<<"$output" | cut -d: -f1)" -lt "$(grep -n ' 200  complete' <<<"$output" | cut -d: -f1)" ]
	json_to "$BATS_TEST_TMPDIR/list.json" ckpt list --json "$ROOT"
	assert_status 0
	expect list "$BATS_TEST_TMPDIR/list.json" "$ROOT" step-300=complete+latest step-200=complete
	# --format json is the same document
	llmp ckpt list --format json "$ROOT"
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/list.json")" ]
}

@test "list: temporary, deleting, corrupt MANIFEST, MANIFEST of another step or version; only directories count" {
	save_reference
	cp -r "$ROOT/step-300" "$ROOT/step-400.tmp"
	rm "$ROOT/step-400.tmp/MANIFEST"
	cp -r "$ROOT/step-200" "$ROOT/step-150.deleting"
	cp -r "$ROOT/step-200" "$ROOT/step-120"
	sed -i '$d' "$ROOT/step-120/MANIFEST" # no 'end'
	cp -r "$ROOT/step-200" "$ROOT/step-110"
	sed -i 's/^step 200$/step 111/' "$ROOT/step-110/MANIFEST"
	cp -r "$ROOT/step-110" "$ROOT/step-115" # that edit without its checksum: damage
	python3 "$EXPECT" reseal "$ROOT/step-110/MANIFEST"
	cp -r "$ROOT/step-200" "$ROOT/step-108" # format 1: its first line, and the end line it had
	sed -i -e '1s/.*/llmp-checkpoint 1/' -e '$s/.*/end/' "$ROOT/step-108/MANIFEST"
	cp -r "$ROOT/step-200" "$ROOT/step-105"
	rm "$ROOT/step-105/MANIFEST"
	echo junk >"$ROOT/step-500"   # a file, not a checkpoint
	mkdir "$ROOT/step-0600" "$ROOT/notes"
	json_to "$BATS_TEST_TMPDIR/list.json" ckpt list --json "$ROOT"
	assert_status 0
	expect list "$BATS_TEST_TMPDIR/list.json" "$ROOT" step-400.tmp=temporary step-300=complete+latest \
		step-200=complete step-150.deleting=deleting step-120=corrupt-manifest \
		step-115=corrupt-manifest step-110=corrupt-manifest step-108=unsupported-format \
		step-105=corrupt-manifest
	python3 - "$BATS_TEST_TMPDIR/list.json" <<'EOF'
import json, sys
doc = {e["name"]: e for e in json.load(open(sys.argv[1]))["checkpoints"]}
assert "truncated (no 'end')" in doc["step-120"]["problem"], doc["step-120"]
assert "step-115/MANIFEST fails its checksum" in doc["step-115"]["problem"], doc["step-115"]
assert "says step 111" in doc["step-110"]["problem"], doc["step-110"]
assert "format version 1; this llmp reads versions 2 to 3" in doc["step-108"]["problem"], doc["step-108"]
assert "No such file" in doc["step-105"]["problem"], doc["step-105"]
EOF
	llmp ckpt list "$ROOT"
	assert_status 0
	assert_line_matches '^ +400  temporary .* step-400\.tmp$'
	assert_line_matches '^ +150  deleting .* step-150\.deleting$'
	assert_line_matches "^ +120  corrupt-manifest .*$ROOT/step-120/MANIFEST: truncated"
	# latest naming a step that is gone is said so
	rm -r "$ROOT/step-300"
	llmp ckpt list "$ROOT"
	assert_contains "$output" "(latest: step-300, not a complete checkpoint)"
}

# --------------------------------------------------------------- inspect

@test "inspect: the newest by default, step N on request; JSON equals the model, CRCs recomputed" {
	save_reference
	json_to "$BATS_TEST_TMPDIR/inspect.json" ckpt inspect --json "$ROOT"
	assert_status 0
	expect inspect "$BATS_TEST_TMPDIR/inspect.json" "$ROOT/step-300" 300 1
	json_to "$BATS_TEST_TMPDIR/inspect.json" ckpt inspect "$ROOT" --step 200 --json
	assert_status 0
	expect inspect "$BATS_TEST_TMPDIR/inspect.json" "$ROOT/step-200" 200 1
	# and not step 300's values for step 200
	run python3 "$EXPECT" inspect "$BATS_TEST_TMPDIR/inspect.json" "$ROOT/step-200" 300 1
	[ "$status" -eq 1 ]
}

@test "inspect: text shows the MANIFEST's fields and every tensor with its slices" {
	save_reference
	llmp ckpt inspect "$ROOT" --step 200
	assert_status 0
	assert_contains "$output" "checkpoint  $ROOT/step-200" "format      llmp-checkpoint 2" \
		"step        200" "world       1 rank" "layout      tp=1," \
		"meta        meta.bin, 26 bytes, CRC-32C 0x" \
		"index       index.h5, $(stat -c %s "$ROOT/step-200/index.h5") bytes, CRC-32C 0x" \
		"shards      1, " "shard-0.h5 (" "tensors     7, "
	assert_line_matches '^layers/0/w_row +float32 +13x10 +520 +1$'
	assert_line_matches '^emb/u8 +uint8 +12x12x5 +720 +1$'
	assert_line_matches '^big/w +float32 +48x1024 +196608 +1$'
	assert_line_matches '^ +\[0:12, 0:12, 0:5\] +owner 0 +shard-0\.h5  crc32c 0x[0-9a-f]{8}$'
	[ "$(grep -c 'owner 0 ' <<<"$output")" -eq 7 ]
}

# ---------------------------------------------------------------- verify

@test "verify: every complete checkpoint intact, every byte of the model checked" {
	save_reference
	llmp ckpt verify "$ROOT"
	assert_status 0
	assert_contains "$output" "step-300: OK: 7 tensors, 7 slices in 1 shard" "step-200: OK: " \
		"2 checkpoints verified: 2 intact, 0 damaged"
	[ -z "$stderr" ] || fail "expected nothing on stderr (no terminal, no --progress)"
	json_to "$BATS_TEST_TMPDIR/verify.json" ckpt verify --json "$ROOT"
	assert_status 0
	expect verify "$BATS_TEST_TMPDIR/verify.json" 1 step-300=ok step-200=ok
	llmp ckpt verify "$ROOT" --step 200
	assert_status 0
	assert_contains "$output" "step-200: OK"
	assert_not_contains "$output" "step-300"
	grep -q "bytes_checked\":$MODEL_BYTES," "$BATS_TEST_TMPDIR/verify.json"
}

@test "files=node (one rank): format 3, datasets under rank-0/; inspect, verify, load and a flipped byte" {
	run singleton "$CK_CHECK" save --root "$ROOT" --steps 100,200 --big 1 --files node
	[ "$status" -eq 0 ] && grep -qx 'rank 0: [0-9]* checks, 0 wrong' <<<"$output" || fail "save failed"
	[ "$(head -n1 "$ROOT/step-200/MANIFEST")" = "llmp-checkpoint 3" ] || fail "not format 3"
	json_to "$BATS_TEST_TMPDIR/inspect.json" ckpt inspect --json "$ROOT"
	assert_status 0
	expect inspect "$BATS_TEST_TMPDIR/inspect.json" "$ROOT/step-200" 200 1 node
	llmp ckpt verify "$ROOT"
	assert_status 0
	assert_contains "$output" "step-200: OK: 7 tensors, 7 slices in 1 shard"
	json_to "$BATS_TEST_TMPDIR/verify.json" ckpt verify --json "$ROOT"
	expect verify "$BATS_TEST_TMPDIR/verify.json" 1 step-200=ok step-100=ok
	run singleton "$CK_CHECK" load --root "$ROOT" --big 1 --expect-step 200
	grep -qx 'rank 0: [0-9]* checks, 0 wrong' <<<"$output" || fail "load failed"
	expect corrupt "$ROOT/step-200" layers/0/w_row 200 1
	llmp ckpt verify "$ROOT" --step 200
	assert_status 1
	assert_contains "$stderr" "step-200: $ROOT/step-200/shard-0.h5: tensor layers/0/w_row: CRC-32C 0x"
	run singleton "$CK_CHECK" load --root "$ROOT" --big 1 --expect-step 100
	grep -qx 'rank 0: [0-9]* checks, 0 wrong' <<<"$output" || fail "no fallback to step 100"
	grep -q "tensor layers/0/w_row in $ROOT/step-200/shard-0.h5 fails its checksum" <<<"$output"
}

@test "verify: a flipped byte in a shard names the step, the file and the tensor" {
	save_reference
	expect corrupt "$ROOT/step-300" layers/0/w_row 300 1
	llmp ckpt verify "$ROOT"
	assert_status 1
	assert_contains "$output" "step-300: DAMAGED: 1 problem" "step-200: OK" "1 intact, 1 damaged"
	assert_contains "$stderr" "llmp ckpt verify: step-300: $ROOT/step-300/shard-0.h5: tensor layers/0/w_row: CRC-32C 0x"
	[ "$(wc -l <<<"$stderr")" -eq 1 ] || fail "expected one problem line"
	json_to "$BATS_TEST_TMPDIR/verify.json" ckpt verify "$ROOT" --json
	assert_status 1
	expect verify "$BATS_TEST_TMPDIR/verify.json" 1 step-300=shard-0.h5:layers/0/w_row step-200=ok
	# a load of that step fails the same way (the runtime's own check)
	run singleton "$CK_CHECK" load --root "$ROOT" --step 300 --big 1 --expect-fail LLMP_ERR_IO \
		--expect-msg "$ROOT/step-300/shard-0.h5" --expect-msg "layers/0/w_row"
	grep -qx 'rank 0: [0-9]* checks, 0 wrong' <<<"$output" || fail "the load did not fail as expected"
}

@test "verify: a truncated shard, a missing shard, a damaged index and meta.bin are named" {
	save_reference
	truncate -s 100000 "$ROOT/step-300/shard-0.h5"
	llmp ckpt verify "$ROOT" --step 300
	assert_status 1
	assert_contains "$stderr" "step-300: $ROOT/step-300/shard-0.h5: 100000 bytes, the MANIFEST says" "(truncated)"
	json_to "$BATS_TEST_TMPDIR/v.json" ckpt verify "$ROOT" --json
	expect verify "$BATS_TEST_TMPDIR/v.json" 1 step-300=shard-0.h5:- step-200=ok

	rm "$ROOT/step-200/shard-0.h5"
	llmp ckpt verify "$ROOT" --step 200
	assert_status 1
	assert_contains "$stderr" "step-200: $ROOT/step-200/shard-0.h5: No such file or directory (7 slices lost)"

	save_reference_again() { rm -rf "$ROOT"; save_reference; }
	save_reference_again
	printf 'garbage' | dd of="$ROOT/step-300/index.h5" bs=1 seek=0 conv=notrunc status=none
	printf 'X' | dd of="$ROOT/step-200/meta.bin" bs=1 seek=2 conv=notrunc status=none
	json_to "$BATS_TEST_TMPDIR/v.json" ckpt verify "$ROOT" --json
	assert_status 1
	expect verify "$BATS_TEST_TMPDIR/v.json" 1 step-300=index.h5:- step-200=meta.bin:-
	assert_contains "$stderr" "step-300: $ROOT/step-300/index.h5 fails its checksum (CRC-32C 0x" \
		"step-200: $ROOT/step-200/meta.bin: 26 bytes with CRC-32C 0x"
}

@test "verify: a tampered MANIFEST (a CRC, a shape, a dropped slice, no 'end') is caught" {
	save_reference
	local m="$ROOT/step-300/MANIFEST"
	cp "$m" "$BATS_TEST_TMPDIR/MANIFEST"
	# another CRC for layers/0/w_col: the MANIFEST's own checksum fails first
	sed -i -E 's|^(slice layers/0/w_col float64 .* )0x[0-9a-f]{8}$|\10x12345678|' "$m"
	json_to "$BATS_TEST_TMPDIR/v.json" ckpt verify "$ROOT" --step 300 --json
	assert_status 1
	assert_contains "$stderr" "step-300: $m fails its checksum (CRC-32C 0x"
	expect verify "$BATS_TEST_TMPDIR/v.json" 1 step-300=MANIFEST:-
	# The same edits with the checksum made to match, as a faulty writer could
	# leave them: the checks behind it still catch each one.
	python3 "$EXPECT" reseal "$m"
	llmp ckpt verify "$ROOT" --step 300
	assert_status 1
	assert_contains "$stderr" "tensor layers/0/w_col: CRC-32C 0x" "the MANIFEST says 0x12345678"
	# the shard itself has the CRC-32C its MANIFEST line gives: nothing said of its metadata
	assert_not_contains "$stderr" "HDF5's metadata"
	# another global shape: the slice no longer tiles it
	cp "$BATS_TEST_TMPDIR/MANIFEST" "$m"
	sed -i 's|^slice layers/0/w_row float32 2 13 10 |slice layers/0/w_row float32 2 14 10 |' "$m"
	python3 "$EXPECT" reseal "$m"
	json_to "$BATS_TEST_TMPDIR/v.json" ckpt verify "$ROOT" --step 300 --json
	assert_status 1
	assert_contains "$stderr" "$m: tensor layers/0/w_row: the slices cover 130 of its 140 elements" \
		"index.h5: tensor layers/0/w_row: another global shape than its MANIFEST says"
	expect verify "$BATS_TEST_TMPDIR/v.json" 1 step-300=MANIFEST:layers/0/w_row
	# a slice dropped: the shard and the index hold a dataset the MANIFEST lacks
	cp "$BATS_TEST_TMPDIR/MANIFEST" "$m"
	sed -i '/^slice norm\/f16 /d' "$m"
	python3 "$EXPECT" reseal "$m"
	llmp ckpt verify "$ROOT" --step 300
	assert_status 1
	assert_contains "$stderr" "shard-0.h5: 7 datasets, the MANIFEST lists 6 slices in it" \
		"index.h5: 7 datasets, the MANIFEST lists 6 tensors"
	# a slice's place moved by one byte: its bytes disagree, and it overlaps the next one
	cp "$BATS_TEST_TMPDIR/MANIFEST" "$m"
	local at
	at=$(awk '$2 == "layers/0/bias" {print $(NF - 1)}' "$m")
	sed -i -E "s|^(slice layers/0/bias .* )$at (0x[0-9a-f]{8})$|\1$((at + 1)) \2|" "$m"
	python3 "$EXPECT" reseal "$m"
	llmp ckpt verify "$ROOT" --step 300
	assert_status 1
	assert_contains "$stderr" "shard-0.h5: tensor layers/0/bias: CRC-32C 0x" "shard-0.h5: two slices overlap at byte "
	# no 'end': not a MANIFEST; list says so too
	cp "$BATS_TEST_TMPDIR/MANIFEST" "$m"
	sed -i '$d' "$m"
	llmp ckpt verify "$ROOT"
	assert_status 1
	assert_contains "$stderr" "step-300: $m: truncated (no 'end')"
	assert_contains "$output" "step-200: OK"
	llmp ckpt list "$ROOT"
	assert_line_matches '^ +300  corrupt-manifest '
	# inspect refuses it, naming the file
	llmp ckpt inspect "$ROOT" --step 300
	assert_status 1
	assert_contains "$stderr" "llmp ckpt inspect: step-300: $m: truncated (no 'end')"
}

@test "verify: --progress writes progress lines to stderr; --no-progress and no terminal: none" {
	save_reference
	llmp ckpt verify "$ROOT" --progress
	assert_status 0
	assert_contains "$stderr" "verifying step-300: 100% (" "verifying step-200: 100% ("
	grep -q "verifying step-300: .* shard-0.h5 " <<<"$stderr"
	llmp ckpt verify "$ROOT" --no-progress
	assert_status 0
	[ -z "$stderr" ]
	# on a terminal it is drawn by default, and cleared before the summary
	if command -v script >/dev/null; then
		run script -qec "$LLMP ckpt verify $ROOT" /dev/null
		[ "$status" -eq 0 ]
		assert_contains "$output" "verifying step-300" "step-300: OK"
	fi
}

# ------------------------------------------------------------- bad input

@test "bad input: no such directory, a file, no checkpoint root, a step directory: exit 2, named" {
	save_reference
	local sub
	for sub in list verify inspect; do
		expect_usage_error "$ROOT/nope|No such file or directory" ckpt "$sub" "$ROOT/nope"
		expect_usage_error "$ROOT/latest is not a directory" ckpt "$sub" "$ROOT/latest"
		mkdir -p "$BATS_TEST_TMPDIR/empty"
		expect_usage_error "$BATS_TEST_TMPDIR/empty is not a checkpoint root|no step-N directory" \
			ckpt "$sub" "$BATS_TEST_TMPDIR/empty"
		expect_usage_error "$ROOT/step-300 is one checkpoint, not a checkpoint root|--step N" \
			ckpt "$sub" "$ROOT/step-300"
	done
}

@test "bad input: unknown step, an incomplete step, bad options and arguments: exit 2, named" {
	save_reference
	cp -r "$ROOT/step-300" "$ROOT/step-400.tmp"
	local sub
	for sub in verify inspect; do
		expect_usage_error "$ROOT has no complete step-999" ckpt "$sub" "$ROOT" --step 999
		expect_usage_error "no complete step-400: step-400.tmp is a save in progress, or one that was killed" \
			ckpt "$sub" "$ROOT" --step 400
		expect_usage_error "--step|abc|not a non-negative integer" ckpt "$sub" "$ROOT" --step abc
		expect_usage_error "--step|-1" ckpt "$sub" "$ROOT" --step -1
		expect_usage_error "missing value for|--step" ckpt "$sub" "$ROOT" --step
	done
	expect_usage_error "unknown option|--step" ckpt list "$ROOT" --step 300
	expect_usage_error "unknown option|--progress" ckpt inspect "$ROOT" --progress
	expect_usage_error "unknown option|--bogus" ckpt verify "$ROOT" --bogus
	expect_usage_error "--format|xml" ckpt list "$ROOT" --format xml
	expect_usage_error "give the checkpoint root directory" ckpt verify
	expect_usage_error "unexpected argument|extra" ckpt list "$ROOT" extra
	expect_usage_error "unknown subcommand|frob" ckpt frob "$ROOT"
	llmp ckpt
	assert_status 2
	assert_contains "$stderr" "usage: llmp ckpt list DIR"
	# control characters in arguments are not echoed
	expect_usage_error "unknown option" ckpt verify "$ROOT" $'--\e[31mred'
	assert_not_contains "$stderr" $'\e'
}

@test "no complete checkpoint: verify and inspect exit 1, list shows what is there" {
	mkdir -p "$ROOT/step-5.tmp"
	llmp ckpt verify "$ROOT"
	assert_status 1
	assert_contains "$stderr" "$ROOT holds no complete checkpoint"
	llmp ckpt inspect "$ROOT"
	assert_status 1
	llmp ckpt list "$ROOT"
	assert_status 0
	assert_line_matches '^ +5  temporary '
	# a root with only its latest file is a root (with nothing listed)
	rm -r "$ROOT/step-5.tmp"
	echo step-9 >"$ROOT/latest"
	llmp ckpt list "$ROOT"
	assert_status 0
	assert_contains "$output" "(no checkpoint directories)"
}

@test "help: llmp ckpt --help and each subcommand's --help exit 0 on stdout" {
	local sub
	llmp ckpt --help
	assert_status 0
	assert_contains "$output" "llmp ckpt verify DIR [--step N]"
	for sub in list verify inspect bench; do
		llmp ckpt "$sub" --help
		assert_status 0
		assert_contains "$output" "usage: llmp ckpt $sub"
		[ -z "$stderr" ]
	done
	llmp --help
	assert_contains "$output" "llmp ckpt list|verify|inspect DIR"
}

# ----------------------------------------------------------------- bench

@test "bench: a singleton saves and restores a small model; every row, #wrong 0, nothing left" {
	mkdir -p "$BATS_TEST_TMPDIR/b"
	run --separate-stderr singleton "$LLMP" ckpt bench --size 1M --iters 2 --tensors 4 --cols 256 \
		--dir "$BATS_TEST_TMPDIR/b"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	assert_contains "$output" "# llmp ckpt bench: 1 rank" "model 1.0 MiB: 4 float32 tensors of 256 x 256" \
		"reads cold: cached pages dropped first with posix_fadvise(DONTNEED)"
	local row
	for row in "write+fsync (plain file)" "memcpy" "read (plain file)" "save" "save_async stall (1st)" \
		"save_async stall (2nd on)" "save_async to commit" "restore"; do
		grep -qE "^  $(sed 's/[+()]/\\&/g' <<<"$row") +1048576 +[0-9.]+ +[0-9.]+" <<<"$output" ||
			fail "no row '$row' with 1048576 bytes"
	done
	grep -qE '^  save +1048576 .* write\+fsync +[0-9.]+  >=0\.8 (met|MISSED) +-$' <<<"$output"
	grep -qE '^  save_async stall \(1st\) .* memcpy +[0-9.]+  <=1\.5 (met|MISSED) +-$' <<<"$output"
	grep -qE '^  save_async stall \(2nd on\) .* memcpy +[0-9.]+  <=1\.2 (met|MISSED) +-$' <<<"$output"
	grep -qE '^  restore +1048576 .* read +[0-9.]+  >=0\.7 (met|MISSED) +0$' <<<"$output"
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/b")" ] || fail "the bench left files: $(ls -A "$BATS_TEST_TMPDIR/b")"
}

@test "bench: --keep-files leaves its last checkpoints, which verify; --cache warm" {
	mkdir -p "$BATS_TEST_TMPDIR/b"
	run --separate-stderr singleton "$LLMP" ckpt bench --size 512K --iters 1 --tensors 2 --cols 128 \
		--cache warm --keep-files --dir "$BATS_TEST_TMPDIR/b"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_contains "$output" "reads warm: from the page cache" "save_async stall (1st)  "
	# one iteration has no second save to show
	[ "$(grep -c 'save_async stall (2nd on)' <<<"$output")" -eq 0 ]
	local root
	root=$(echo "$BATS_TEST_TMPDIR"/b/llmp-ckpt-bench-*)
	[ -d "$root" ]
	llmp ckpt verify "$root"
	assert_status 0
	assert_contains "$output" "step-2: OK: 2 tensors, 2 slices in 1 shard" "step-1: OK"
}

@test "bench: bad arguments exit 2, named" {
	expect_usage_error "--size|0|outside" ckpt bench --size 0
	expect_usage_error "--size|12X|not a size" ckpt bench --size 12X
	expect_usage_error "--cache|hot" ckpt bench --cache hot
	expect_usage_error "--iters|0" ckpt bench --iters 0
	expect_usage_error "unknown option|--bogus" ckpt bench --bogus
	expect_usage_error "unexpected argument|extra" ckpt bench extra
	expect_usage_error "--dir|No such file or directory" ckpt bench --dir "$BATS_TEST_TMPDIR/none"
	touch "$BATS_TEST_TMPDIR/file"
	expect_usage_error "--dir|not a directory" ckpt bench --dir "$BATS_TEST_TMPDIR/file"
	# too small to split (checked after joining the job)
	run --separate-stderr singleton "$LLMP" ckpt bench --size 64K --cols 100000 --dir "$BATS_TEST_TMPDIR"
	[ "$status" -eq 2 ]
	assert_contains "$stderr" "too small to split over 1 rank both ways"
}

@test "the tool links neither PMIx nor UCX; bench and ckpt bench run in llmp-bench" {
	# What a login node with HDF5 alone can run: ldd lists every shared
	# library llmp loads. llmp-bench, which joins jobs, is the control.
	run ldd "$LLMP"
	[ "$status" -eq 0 ] || fail "ldd $LLMP failed"
	grep -q 'libhdf5' <<<"$output" || fail "llmp should link HDF5 (llmp ckpt verify)"
	if grep -E 'lib(pmix|ucp|uct|ucs)\.' <<<"$output"; then
		fail "llmp links PMIx or UCX"
	fi
	run ldd "$LLMP_BUILDDIR/cli/bench/llmp-bench"
	grep -q 'libpmix\.' <<<"$output" && grep -q 'libucp\.' <<<"$output" ||
		fail "llmp-bench should link PMIx and UCX: is this ldd's output?"
	run "$LLMP" bench --help
	[ "$status" -eq 0 ] && grep -q '^usage: llmp bench' <<<"$output" || fail "llmp bench --help"
	run "$LLMP" ckpt bench --help
	[ "$status" -eq 0 ] && grep -q '^usage: llmp ckpt bench' <<<"$output" || fail "llmp ckpt bench --help"
	run "$LLMP_BUILDDIR/cli/bench/llmp-bench" plan
	[ "$status" -eq 2 ] && grep -q "run 'llmp bench' or 'llmp ckpt bench'" <<<"$output" ||
		fail "llmp-bench with another subcommand"
}

@test "llmp bench --memory device on the CUDA and NCCL test doubles: one call per size and iteration" {
	# The benchmark loads the driver through the runtime's own table
	# (runtime/device/cuda_api.h), so LLMP_CUDA_LIBRARY reaches it. The
	# NCCL double moves no data (tests/device/fake_nccl.c), hence --check 0.
	# Sizes 8..64 bytes doubling: float32 counts 2, 4, 8, 16; each 1 warm-up + 2 timed calls.
	local dev="$LLMP_BUILDDIR/tests/device/.libs" log="$BATS_TEST_TMPDIR/nccl.log"
	[ -e "$dev/fake_cuda.so" ] && [ -e "$dev/fake_nccl.so" ] || fail "the device test doubles are not built"
	LLMP_CUDA_LIBRARY="$dev/fake_cuda.so" LLMP_NCCL_LIBRARY="$dev/fake_nccl.so" LLMP_DEVICE=nccl \
		FAKE_NCCL_LOG="$log" run "$LLMP" bench --memory device --check 0 -b 8 -e 64 -n 2 -w 1
	[ "$status" -eq 0 ] || fail "$output"
	grep -q '^# device path: NCCL' <<<"$output" || fail "$output"
	[ "$(grep -cE '^ +(8|16|32|64) +(2|4|8|16) +float32 +sum ' <<<"$output")" -eq 4 ] || fail "$output"
	for count in 2 4 8 16; do
		[ "$(grep -c "^allreduce llmp\.world\.0 $count " "$log")" -eq 3 ] || fail "count $count: $(cat "$log")"
	done
	[ "$(grep -c '^allreduce ' "$log")" -eq 12 ] || fail "$(cat "$log")"
	# A device index the driver does not have is named.
	LLMP_CUDA_LIBRARY="$dev/fake_cuda.so" LLMP_NCCL_LIBRARY="$dev/fake_nccl.so" LLMP_DEVICE=nccl LOCAL_RANK=3 \
		run "$LLMP" bench --memory device --check 0 -b 8 -e 8
	[ "$status" -eq 1 ] && grep -q 'no GPU 3 (LOCAL_RANK picks one): CUDA_ERROR_INVALID_VALUE' <<<"$output" || fail "$output"
}

@test "llmp bench --memory device: links no CUDA; without a GPU it fails naming the cause; bad values refused" {
	# The driver and NCCL are loaded at run time: a CPU node starts the tool.
	if readelf -d "$LLMP_BUILDDIR/cli/bench/llmp-bench" | grep -E 'NEEDED.*(libcuda|libnccl|libcudart)'; then
		fail "llmp-bench links CUDA or NCCL"
	fi
	run "$LLMP" bench --memory device -b 8 -e 8
	# Where there is a GPU, make gpu-check runs the benchmark itself.
	if [ ! -e /dev/nvidiactl ]; then
		[ "$status" -eq 1 ] && grep -q '^llmp bench: --memory device: no GPU: ' <<<"$output" || fail "$output"
	fi
	run "$LLMP" bench --memory gpu
	[ "$status" -eq 2 ] && grep -q "^llmp bench: --memory: expected host or device: 'gpu'" <<<"$output" || fail "$output"
	run "$LLMP" bench --memory device --in-place 1
	[ "$status" -eq 2 ] && grep -q '^llmp bench: --in-place 1 is for host memory only, so far' <<<"$output" ||
		fail "$output"
}
