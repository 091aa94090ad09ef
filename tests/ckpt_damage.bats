#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Damaged checkpoints, as a failing disk leaves them: every file of a good
# 4-rank checkpoint (MANIFEST, index.h5, meta.bin, each shard) gets, one at a
# time, a flipped byte at seeded offsets, a truncation, or a zeroed 512-byte
# block; then `llmp ckpt verify|inspect|list` and a load run on it, each under
# a timeout. tests/ckpt/damage.py does the cases and the checks: no crash (no
# signal, no sanitizer report), no hang, every damage that changed a byte
# named by file, and the load back on the step before. No cluster: the
# checkpoint is saved under Open MPI's mpirun (or by a singleton, one shard,
# when there is none) and loaded by a PMIx singleton, so this also runs in
# the sanitizer stage of scripts/test.sh.
#
# A failure prints its case as "--seed S --only N": rerun one with
#   python3 tests/ckpt/damage.py ROOT build/cli/llmp build/tests/ckpt/ck_check --seed S --only N
# on a ROOT saved as save_reference does. LLMP_DAMAGE_SEED picks another seed.

load lib/helpers

DAMAGE="$LLMP_SRCDIR/tests/ckpt/damage.py"

setup() {
	ckpt_setup
}

# Steps 100 and 200 of ck_check's model with its big tensor: 4 ranks, tp=2 x
# dp=2, one shard each, under mpirun; a singleton's one shard without it.
save_reference() {
	local save=("$CK_CHECK" save --root "$ROOT" --steps 100,200 --keep 2 --big 1)
	if mpirun --version 2>/dev/null | grep -q 'Open MPI'; then
		local opts=(--oversubscribe --bind-to none -np 4)
		[ "$(id -u)" -ne 0 ] || opts+=(--allow-run-as-root)
		run env -u SLURM_JOB_ID -u SLURM_JOBID -u SLURM_NODELIST timeout -k 5 120 \
			mpirun "${opts[@]}" "${save[@]}" --parallel tp=2 </dev/null
		SHARDS=4
	else
		echo "# Open MPI's mpirun not found: a singleton's checkpoint, one shard" >&3
		run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID \
			timeout -k 5 120 "${save[@]}"
		SHARDS=1
	fi
	echo "$output"
	[ "$status" -eq 0 ] || fail "ck_check save failed"
	[ "$(grep -c '^rank [0-9]*: [0-9]* checks, 0 wrong$' <<<"$output")" -eq "$SHARDS" ] ||
		fail "ck_check save reported wrong values"
	[ "$(ls "$ROOT/step-200"/shard-*.h5 | wc -l)" -eq "$SHARDS" ]
}

@test "damage: every file flipped, cut and zeroed: no crash, no hang, each named, the load falls back" {
	save_reference
	# the reference itself is intact, and loads as the newest
	llmp ckpt verify "$ROOT"
	assert_status 0
	assert_contains "$output" "step-200: OK: 7 tensors" "step-100: OK: 7 tensors" "in $SHARDS shard"

	run timeout -k 10 1500 python3 "$DAMAGE" "$ROOT" "$LLMP" "$CK_CHECK" --seed "${LLMP_DAMAGE_SEED:-12}" \
		--flips 24 --cuts 6 --blocks 10 --timeout 20
	echo "$output"
	[ "$status" -eq 0 ] || fail "some damage was not handled (FAILED lines above)"
	local counts cases changed
	counts=$(tail -n 1 <<<"$output")
	[[ $counts =~ ^damage:\ ([0-9]+)\ cases\ \(([0-9]+)\ changed\ a\ byte\):\ 0\ crashes,\ 0\ hangs, ]] ||
		fail "no counts line, or crashes or hangs: $counts"
	echo "# $counts" >&3
	cases=${BASH_REMATCH[1]}
	changed=${BASH_REMATCH[2]}
	assert_contains "$counts" "$changed of $changed reported by verify with the file's name" \
		"$changed loads fell back to the step before; 0 cases failed"
	# a few hundred cases, nearly all of which change a byte (zeros over zeros do not)
	[ "$cases" -ge $((60 + 40 * SHARDS)) ] && [ "$changed" -ge $((cases * 9 / 10)) ] ||
		fail "too few cases: $counts"

	# every damaged file restored: the root is as saved
	llmp ckpt verify "$ROOT"
	assert_status 0
}

@test "damage: the driver's own cases are what they say (a flip, a cut, a zeroed block)" {
	# damage.py's expectations hang on whether a byte changed: check its three edits.
	run python3 - "$DAMAGE" <<'EOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("damage", sys.argv[1])
d = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d)
data = bytes(range(256)) * 5  # 1280 bytes: two whole blocks and a short one
assert d.damaged(data, "flip", 7, 0x10) == data[:7] + bytes([7 ^ 0x10]) + data[8:]
assert d.damaged(data, "cut", 100, 0) == data[:100]
assert d.damaged(data, "zero", 512, 0) == data[:512] + bytes(512) + data[1024:]
assert d.damaged(data, "zero", 1024, 0) == data[:1024] + bytes(256)
assert d.damaged(bytes(600), "zero", 0, 0) == bytes(600)  # zeros over zeros change nothing
print("ok")
EOF
	echo "$output"
	[ "$status" -eq 0 ]
}
