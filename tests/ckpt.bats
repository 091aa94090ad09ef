#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Sharded HDF5 checkpoints (include/llmp/llmp_ckpt.h) on the real three-node Slurm
# cluster: tests/ckpt/ck_check run as the tasks of `srun --mpi=pmix` steps.
# Every rank computes the values it must read back from (global index, step)
# and prints "rank R: N checks, M wrong"; tests/ckpt/check_view.py reads the
# same checkpoints with h5py alone. The checkpoint root is under the test's
# $WORK, on the filesystem every "node" shares (they are one machine).

load cluster/common
load runtime/common
load cluster/mlp_job
load ckpt/common

CHECK_VIEW="$LLMP_SRCDIR/tests/ckpt/check_view.py"

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }

setup() {
	[ -x "$CK_CHECK" ] || skip "ck_check not built ($CK_CHECK)"
	case $BATS_TEST_DESCRIPTION in
	singleton*) WORK=$BATS_TEST_TMPDIR ;; # no cluster needed
	*) cluster_setup && need_mpi_pmix_where_used 'save_reference|load_as|placement' ;;
	esac
	ROOT="$WORK/ckpt"
}

# A python3 that has h5py (Debian's python3-h5py is for /usr/bin/python3).
h5py_python() {
	local p
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import h5py' 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# The reference checkpoint: tp=2 (dp=2) on 4 ranks over 2 nodes, steps 100,
# 200, 300, keep=2.
save_reference() {
	run capped_srun 120 -N2 -n4 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--steps 100,200,300 --keep 2
	assert_ranks_ok 4 3
	[ "$(grep -c '^rank [0-3]: saved step 300$' <<<"$output")" -eq 4 ]
}

# Load with these srun arguments (the layout and the world); the rest are ck_check's.
load_as() { # srun-arguments... -- ck_check-arguments...
	local sargs=()
	while [ "$1" != -- ]; do
		sargs+=("$1")
		shift
	done
	shift
	run capped_srun 120 "${sargs[@]}" "$CK_CHECK" load --root "$ROOT" "$@"
}

# ----------------------------------------------------------------- save

@test "save: tp=2 (dp=2 auto) on 4 ranks over 2 nodes, keep=2: two step dirs, latest, no .tmp" {
	save_reference
	# No alignment given: the root's preferred I/O size (st_blksize, stat's %o) when it
	# is a power of two from 4 KiB to 256 MiB, else 1 MiB.
	local bs want
	bs=$(stat -c %o "$ROOT")
	want=$(python3 -c "b = $bs; print(b if 4096 <= b <= 256 << 20 and b & (b - 1) == 0 else 1 << 20)")
	[ "$(grep -c "^rank [0-3]: alignment $want\$" <<<"$output")" -eq 4 ] || { echo "want $want: $output"; false; }
	ls -la "$ROOT"
	[ "$(complete_steps | tr '\n' ' ')" = "300 200 " ]
	[ "$(cat "$ROOT/latest")" = step-300 ]
	[ -z "$(find "$ROOT" -name '*.tmp' -o -name '*.deleting')" ]
	[ "$(find "$ROOT" -mindepth 1 -maxdepth 1 | wc -l)" -eq 3 ] # step-200 step-300 latest
	# every rank owns a distinct slice of something, so each wrote a shard
	for r in 0 1 2 3; do
		[ -s "$ROOT/step-300/shard-$r.h5" ]
	done
	[ -s "$ROOT/step-300/index.h5" ]
	[ -s "$ROOT/step-300/MANIFEST" ]
	grep -qx 'step 300' "$ROOT/step-300/MANIFEST"
	grep -qx 'world 4' "$ROOT/step-300/MANIFEST"
	grep -q '^layout tp=2,.*dp=2' "$ROOT/step-300/MANIFEST"
	[[ $(tail -n1 "$ROOT/step-300/MANIFEST") =~ ^end\ 0x[0-9a-f]{8}$ ]]
	# the replicated bias is one slice, written once
	[ "$(grep -c '^slice layers/0/bias ' "$ROOT/step-300/MANIFEST")" -eq 1 ]
	[ "$(grep -c '^slice layers/0/w_row ' "$ROOT/step-300/MANIFEST")" -eq 2 ]
	[ "$(grep -c '^slice emb/u8 ' "$ROOT/step-300/MANIFEST")" -eq 4 ]
	assert_cluster_idle

	# the same layout reads back the newest, and step 200 when asked
	load_as -N2 -n4 --llm-parallel=tp=2 -- --expect-step 300
	assert_ranks_ok 4 8
	[ "$(grep -c '^rank [0-3]: loaded step 300$' <<<"$output")" -eq 4 ]
	load_as -N2 -n4 --llm-parallel=tp=2 -- --step 200
	assert_ranks_ok 4 8
	[ "$(grep -c '^rank [0-3]: loaded step 200$' <<<"$output")" -eq 4 ]
	# step 100 went with keep=2
	load_as -N2 -n4 --llm-parallel=tp=2 -- --step 100 --sync-exit 1 --expect-fail LLMP_ERR_IO --expect-msg step-100
	assert_ranks_ok 4 3
	assert_cluster_idle
}

@test "restore: the tp=2,dp=2 checkpoint as tp=1,dp=4 and as tp=4,dp=1 (4 ranks)" {
	save_reference
	load_as -N2 -n4 --llm-parallel=tp=1 -- --expect-step 300
	assert_ranks_ok 4 8
	[ "$(grep -c '^rank [0-3]: layout: tp 0 of 1, dp [0-3] of 4, world 4$' <<<"$output")" -eq 4 ]
	load_as -N2 -n4 --llm-parallel=tp=4 -- --expect-step 300
	assert_ranks_ok 4 8
	[ "$(grep -c '^rank [0-3]: layout: tp [0-3] of 4, dp 0 of 1, world 4$' <<<"$output")" -eq 4 ]
	load_as -N3 -n4 --llm-parallel=tp=4 -- --step 200 --expect-step 200
	assert_ranks_ok 4 8
	assert_cluster_idle
}

@test "restore on other world sizes: 1, 2 (tp=2), 3 (tp=1, tp=3: uneven rows), 6 (tp=2), 5 (tp=1)" {
	save_reference
	load_as -N1 -n1 -- --expect-step 300
	assert_ranks_ok 1 8
	load_as -N2 -n2 --llm-parallel=tp=2 -- --expect-step 300
	assert_ranks_ok 2 8
	load_as -N3 -n3 --llm-parallel=tp=1 -- --expect-step 300
	assert_ranks_ok 3 8
	load_as -N3 -n3 --llm-parallel=tp=3 -- --expect-step 300
	assert_ranks_ok 3 8
	load_as -N3 -n6 --llm-parallel=tp=2 -- --expect-step 300
	assert_ranks_ok 6 8
	[ "$(grep -c '^rank [0-5]: layout: tp [01] of 2, dp [0-2] of 3, world 6$' <<<"$output")" -eq 6 ]
	# a layout given by --parallel (llmp_init_opts.spec) rather than the plugin
	load_as -N3 -n5 -- --parallel tp=1 --step 200
	assert_ranks_ok 5 8
	assert_cluster_idle
}

@test "restore: a checkpoint saved on 6 ranks (tp=3) loads on 4 (tp=2) and on 1" {
	run capped_srun 120 -N3 -n6 --llm-parallel=tp=3 "$CK_CHECK" save --root "$ROOT" --steps 5,6
	assert_ranks_ok 6 3
	[ "$(complete_steps | tr '\n' ' ')" = "6 5 " ]
	load_as -N2 -n4 --llm-parallel=tp=2 -- --expect-step 6
	assert_ranks_ok 4 8
	load_as -N1 -n1 -- --step 5
	assert_ranks_ok 1 8
	assert_cluster_idle
}

# ------------------------------------------------------- files=node

# "RANK NODENAME" of each task of these srun arguments, sorted by rank: where Slurm puts them.
placement() { # srun-arguments...
	# shellcheck disable=SC2016 # expanded by each task's shell
	capped_srun 60 "$@" sh -c 'echo "$SLURM_PROCID $SLURMD_NODENAME"' | sort -n
}

# The shard files of a step directory, by rank, on one line.
shard_files() { # stepdir
	find "$1" -maxdepth 1 -name 'shard-*.h5' -printf '%f\n' | sort -t- -k2 -n | tr '\n' ' '
}

# The shard files a files=node save of these tasks must make: per node, its lowest rank.
node_files_of() { # placement-file
	awk '!($2 in first) || $1 < first[$2] { first[$2] = $1 } END { for (n in first) print first[n] }' "$1" |
		sort -n | sed 's/.*/shard-&.h5/' | tr '\n' ' '
}

# Every slice line's FILE is the lowest rank on its OWNER's node; every shard's CRC-32C is the file's.
check_node_manifest() { # stepdir placement-file
	python3 - "$1" "$2" <<'EOF'
import os, sys
stepdir, placement = sys.argv[1:3]
TABLE = []
for i in range(256):  # CRC-32C, reflected polynomial 0x82F63B78, a byte at a time
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    TABLE.append(c)
def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
node = dict(l.split() for l in open(placement))
first = {}
for r, n in node.items():
    first[n] = min(first.get(n, int(r)), int(r))
lines = open(os.path.join(stepdir, "MANIFEST")).read().split("\n")
assert lines[0] == "llmp-checkpoint 3", lines[0]
nslices = 0
for l in lines:
    w = l.split()
    if w[:1] == ["slice"]:
        nd = int(w[3])
        owner, file = int(w[4 + 3 * nd]), int(w[5 + 3 * nd])
        assert file == first[node[str(owner)]], l
        nslices += 1
    elif w[:1] == ["shard"]:
        data = open(os.path.join(stepdir, "shard-%s.h5" % w[1]), "rb").read()
        assert len(data) == int(w[2]) and "0x%08x" % crc32c(data) == w[3], l
print("node manifest: %d slices in their nodes' files, shard CRCs recomputed" % nslices)
EOF
}

@test "files=node: 3 nodes x 2 tasks save one file per node; resharded loads, verify, h5py view, damage" {
	local py files
	placement -N3 --ntasks-per-node=2 >"$WORK/placement"
	cat "$WORK/placement"
	[ "$(wc -l <"$WORK/placement")" -eq 6 ]
	files=$(node_files_of "$WORK/placement")
	run capped_srun 120 -N3 --ntasks-per-node=2 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--steps 100,200 --files node
	assert_ranks_ok 6 3
	[ "$(complete_steps | tr '\n' ' ')" = "200 100 " ]
	# one shard file per node, named after its lowest rank, and nothing per rank
	[ "$(shard_files "$ROOT/step-200")" = "$files" ]
	[ "$(wc -w <<<"$files")" -eq 3 ]
	run check_node_manifest "$ROOT/step-200" "$WORK/placement"
	echo "$output"
	[ "$status" -eq 0 ]

	# loads under other layouts and world sizes, every value checked
	load_as -N2 -n4 --llm-parallel=tp=4 -- --expect-step 200
	assert_ranks_ok 4 8
	load_as -N1 -n1 -- --step 100 --expect-step 100
	assert_ranks_ok 1 8
	load_as -N3 -n5 --llm-parallel=tp=1 -- --expect-step 200
	assert_ranks_ok 5 8

	run "$LLMP" ckpt verify "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^step-200: OK: 6 tensors, [0-9]* slices in 3 shards' <<<"$output"
	py=$(h5py_python) || skip "no python3 with h5py (Debian: python3-h5py)"
	run "$py" "$CHECK_VIEW" view "$ROOT/step-200" 200
	echo "$output" | tail -n 5
	[ "$status" -eq 0 ]
	grep -q '^OK index.h5 layers/0/w_row: float32 (13, 10) bit-identical' <<<"$output"
	[ "$(grep -c '^OK .*/shard-[0-9].h5 holds exactly the slices it owns' <<<"$output")" -eq 3 ]

	# rank 1's w_row slice is in its node's file: damaged there, step 100 loads instead
	run "$py" "$CHECK_VIEW" corrupt "$ROOT/step-200" layers/0/w_row 200 1
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "corrupted $ROOT/step-200/shard-0.h5 at byte "* ]]
	load_as -N2 -n4 --llm-parallel=tp=2 --error="$WORK/err-%t" -- --expect-step 100
	assert_ranks_ok 4 8
	grep -q "tensor layers/0/w_row in $ROOT/step-200/shard-0.h5 fails its checksum" "$WORK/err-0"
	grep -q "trying step-100" "$WORK/err-0"
	run "$LLMP" ckpt verify "$ROOT" --step 200
	[ "$status" -eq 1 ]
	grep -q "step-200: $ROOT/step-200/shard-0.h5: tensor layers/0/w_row: CRC-32C" <<<"$output"
	assert_cluster_idle
}

@test "files=node async: 3 nodes, uneven tasks; tensors overwritten after each save; every kept step exact" {
	placement -N3 -n7 >"$WORK/placement"
	cat "$WORK/placement"
	run capped_srun 180 -N3 -n7 --llm-parallel=tp=1 "$CK_CHECK" save --root "$ROOT" \
		--steps 100,200,300 --keep 2 --async 1 --big 4 --files node
	assert_ranks_ok 7 3
	[ "$(complete_steps | tr '\n' ' ')" = "300 200 " ]
	refute ls -d "$ROOT"/*.tmp
	[ "$(shard_files "$ROOT/step-300")" = "$(node_files_of "$WORK/placement")" ]
	run check_node_manifest "$ROOT/step-300" "$WORK/placement"
	echo "$output"
	[ "$status" -eq 0 ]
	load_as -N2 -n4 --llm-parallel=tp=2 -- --big 4 --expect-step 300
	assert_ranks_ok 4 8
	load_as -N1 -n2 --llm-parallel=tp=2 -- --big 4 --step 200 --expect-step 200
	assert_ranks_ok 2 8
	assert_cluster_idle
}

@test "files=node through the plugin: --llm-checkpoint=DIR,every=5,files=node; the trainer saves a file per node" {
	MLP_TRAIN="$LLMP_BUILDDIR/examples/mlp_train"
	[ -x "$MLP_TRAIN" ] || skip "examples/mlp_train not built"
	export MLP_TRAIN LLMP_BIN="$LLMP"
	placement -N3 --ntasks-per-node=2 >"$WORK/placement"
	submit_mlp "$WORK/job.out" -N3 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$ROOT,every=5,keep=3,files=node" -- --steps 12 --batch 96
	wait_job_gone "$JOB"
	cat "$WORK/job.out"
	grep -q '^final checksum' "$WORK/job.out"
	[ "$(complete_steps | wc -l)" -ge 2 ]
	# dp replicas are written once, by dp rank 0: world ranks 0 and 1 (tp varies fastest) own
	# every slice, so the files are those of their nodes (one file where per rank made two)
	local step want
	want=$(awk '$1 <= 1' "$WORK/placement" >"$WORK/owners" && node_files_of "$WORK/owners")
	for step in $(complete_steps); do
		[ "$(shard_files "$ROOT/step-$step")" = "$want" ]
		run check_node_manifest "$ROOT/step-$step" "$WORK/placement"
		echo "$output"
		[ "$status" -eq 0 ]
	done
	run "$LLMP" ckpt verify "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_cluster_idle
}

# ------------------------------------------------------------- global view

@test "async save: tensors overwritten as soon as each save returns; every kept step loads exact" {
	# ck_check --async 1 refills its tensors with other values right after
	# each llmp_ckpt_save_async returns; a checkpoint holding any of them fails the loads.
	run capped_srun 180 -N2 -n4 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--steps 100,200,300 --keep 2 --async 1 --big 4
	assert_ranks_ok 4 3
	[ "$(complete_steps | tr '\n' ' ')" = "300 200 " ]
	refute ls -d "$ROOT"/*.tmp
	load_as -N2 -n4 --llm-parallel=tp=1 -- --big 4 --expect-step 300
	assert_ranks_ok 4 8
	load_as -N1 -n2 --llm-parallel=tp=2 -- --big 4 --step 200 --expect-step 200
	assert_ranks_ok 2 8
	assert_cluster_idle
}

@test "view: h5py reads index.h5 whole (virtual datasets) and each shard directly" {
	local py
	py=$(h5py_python) || skip "no python3 with h5py (Debian: python3-h5py)"
	save_reference
	run "$py" "$CHECK_VIEW" view "$ROOT/step-300" 300
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^check_view: [0-9]* checks, 0 wrong$' <<<"$output"
	grep -q '^OK index.h5 layers/0/w_row: float32 (13, 10) bit-identical' <<<"$output"
	grep -q '^OK index.h5 layers/0/w_col: float64 (6, 12) bit-identical' <<<"$output"
	grep -q '^OK index.h5 layers/0/bias: int32 (10,) bit-identical' <<<"$output"
	grep -q '^OK index.h5 emb/u8: uint8 (12, 12, 5) bit-identical' <<<"$output"
	grep -q '^OK index.h5 norm/f16: float16 (24,) bit-identical' <<<"$output"
	grep -q '^OK index.h5 layers/0/w_col_bf16: bfloat16 raw bits' <<<"$output"
	[ "$(grep -c '^OK .*/shard-[0-3].h5 holds exactly the slices it owns' <<<"$output")" -eq 4 ]
	# and a checkpoint of another step does not pass for this one
	run "$py" "$CHECK_VIEW" view "$ROOT/step-200" 300
	[ "$status" -eq 1 ]
	run "$py" "$CHECK_VIEW" view "$ROOT/step-200" 200
	[ "$status" -eq 0 ]
}

# ------------------------------------------------------------ llmp ckpt

@test "llmp ckpt: inspect, list and verify the tp=2 checkpoint of 4 ranks; a flipped byte is named" {
	local py
	save_reference
	"$LLMP" ckpt inspect "$ROOT" --json >"$WORK/inspect.json"
	# every slice and owner, from ck_check's split rules: part i of k of n is [i*n/k, (i+1)*n/k);
	# tp rank = world rank % 2, dp rank = world rank / 2; a replica belongs to the lowest rank
	python3 - "$WORK/inspect.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
def part(n, k, i): return [i * n // k, (i + 1) * n // k - i * n // k]
want = {
    "layers/0/w_row": [([part(13, 2, t)[0], 0], [part(13, 2, t)[1], 10], t) for t in range(2)],
    "layers/0/w_col": [([0, part(12, 2, t)[0]], [6, part(12, 2, t)[1]], t) for t in range(2)],
    "layers/0/w_col_bf16": [([0, part(12, 2, t)[0]], [4, part(12, 2, t)[1]], t) for t in range(2)],
    "layers/0/bias": [([0], [10], 0)],
    "emb/u8": [([part(12, 2, d)[0], part(12, 2, t)[0], 0], [part(12, 2, d)[1], part(12, 2, t)[1], 5], 2 * d + t)
               for d in range(2) for t in range(2)],
    "norm/f16": [([part(24, 4, r)[0]], [part(24, 4, r)[1]], r) for r in range(4)],
}
assert doc["step"] == 300 and doc["world"] == 4, doc
assert doc["layout"]["tp"] == 2 and doc["layout"]["dp"] == 2, doc["layout"]
assert [s["rank"] for s in doc["shards"]] == [0, 1, 2, 3], doc["shards"]
got = {t["name"]: sorted((s["offset"], s["shape"], s["owner"]) for s in t["slices"]) for t in doc["tensors"]}
assert sorted(got) == sorted(want), sorted(got)
for name in want:
    if got[name] != sorted(want[name]):
        sys.exit("%s: slices %r, expected %r" % (name, got[name], sorted(want[name])))
for t in doc["tensors"]:
    for s in t["slices"]:
        assert s["file"] == "shard-%d.h5" % s["owner"], s
EOF
	run "$LLMP" ckpt list "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -Eq '^ +300  latest .* 6 +4 +4  tp=2,' <<<"$output"
	grep -Eq '^ +200  complete .* 6 +4 +4  tp=2,' <<<"$output"
	run "$LLMP" ckpt verify "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^step-300: OK: 6 tensors, 15 slices in 4 shards' <<<"$output"

	py=$(h5py_python) || skip "no python3 with h5py (Debian: python3-h5py)"
	run "$py" "$CHECK_VIEW" corrupt "$ROOT/step-300" layers/0/w_row 300 1
	[ "$status" -eq 0 ]
	run "$LLMP" ckpt verify "$ROOT" --step 300
	echo "$output"
	[ "$status" -eq 1 ]
	grep -q "step-300: $ROOT/step-300/shard-1.h5: tensor layers/0/w_row: CRC-32C" <<<"$output"
	[ "$(grep -c 'CRC-32C' <<<"$output")" -eq 1 ]
}

# ------------------------------------------------------- damaged checkpoints

@test "fallback: a flipped byte in a shard of the newest: load takes the one before, naming the shard" {
	local py
	py=$(h5py_python) || skip "no python3 with h5py (Debian: python3-h5py)"
	save_reference
	# the w_row slice rank 1 owns (tp 1): found by its known bytes
	run "$py" "$CHECK_VIEW" corrupt "$ROOT/step-300" layers/0/w_row 300 1
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "corrupted $ROOT/step-300/shard-1.h5 at byte "* ]]

	load_as -N2 -n4 --llm-parallel=tp=2 --error="$WORK/err-%t" -- --expect-step 200
	assert_ranks_ok 4 8
	cat "$WORK"/err-*
	grep -q "fails its checksum" "$WORK/err-0"
	grep -q "tensor layers/0/w_row in $ROOT/step-300/shard-1.h5 fails its checksum" "$WORK/err-0"
	grep -q "trying step-200" "$WORK/err-0"
	for r in 1 2 3; do refute grep -q checksum "$WORK/err-$r"; done

	# another layout, where every rank reads that slice: the same
	load_as -N3 -n3 --llm-parallel=tp=1 -- --expect-step 200
	assert_ranks_ok 3 8
	grep -q "shard-1.h5 fails its checksum" <<<"$output"

	# asked for explicitly: an error on every rank, no fallback
	load_as -N2 -n4 --llm-parallel=tp=2 -- --step 300 --sync-exit 1 --expect-fail LLMP_ERR_IO \
		--expect-msg "$ROOT/step-300/shard-1.h5" --expect-msg "fails its checksum"
	assert_ranks_ok 4 3
	[ "$(grep -c '^rank [0-3]: llmp_ckpt_load: LLMP_ERR_IO (input/output error): .*checksum' <<<"$output")" -eq 4 ]
	refute grep -q 'trying step' <<<"$output"
	assert_cluster_idle
}

@test "fallback: a shard of the newest deleted, or its metadata damaged: the one before, naming the file" {
	save_reference
	mv "$ROOT/step-300/shard-2.h5" "$WORK/shard-2.h5"
	load_as -N2 -n4 --llm-parallel=tp=2 --error="$WORK/err-%t" -- --expect-step 200
	assert_ranks_ok 4 8
	cat "$WORK"/err-*
	grep -q "$ROOT/step-300/shard-2.h5: No such file or directory; trying step-200" "$WORK/err-0"
	load_as -N2 -n4 --llm-parallel=tp=4 -- --step 300 --sync-exit 1 --expect-fail LLMP_ERR_IO \
		--expect-msg "$ROOT/step-300/shard-2.h5"
	assert_ranks_ok 4 3
	[ "$(grep -c '^rank [0-3]: llmp_ckpt_load: LLMP_ERR_IO ' <<<"$output")" -eq 4 ]

	# the shard back, and the user metadata damaged instead
	mv "$WORK/shard-2.h5" "$ROOT/step-300/shard-2.h5"
	load_as -N2 -n4 --llm-parallel=tp=2 -- --expect-step 300
	assert_ranks_ok 4 8
	printf 'X' | dd of="$ROOT/step-300/meta.bin" bs=1 seek=3 conv=notrunc status=none
	load_as -N2 -n4 --llm-parallel=tp=2 --error="$WORK/err2-%t" -- --expect-step 200
	assert_ranks_ok 4 8
	grep -q "$ROOT/step-300/meta.bin is truncated or corrupted" "$WORK/err2-0"

	# both damaged: nothing left to fall back on
	rm "$ROOT/step-200/shard-0.h5"
	load_as -N2 -n4 --llm-parallel=tp=2 -- --sync-exit 1 --expect-fail LLMP_ERR_IO --expect-msg step-200/shard-0.h5
	assert_ranks_ok 4 3
	assert_cluster_idle
}

@test "load: each file of the step is read, or its size looked at, by one rank of four" {
	# At thousands of ranks a file read by every rank is a storm on one
	# server: the MANIFEST is read by rank 0 and handed to all, meta.bin by
	# rank 2, index.h5 checked by rank 1, shard i's size by rank i mod 4
	# (doc/checkpoint.md, Load). Seen in the system calls of every rank.
	bad() {
		echo "$*" >&2
		return 1
	}
	command -v strace >/dev/null || bad "strace not installed (scripts/install-deps.sh installs it)"
	save_reference
	run capped_srun 120 -N2 -n4 --llm-parallel=tp=2 bash -c \
		'exec strace -f -qq -e trace=openat,stat,newfstatat,statx -o "$0.$SLURM_PROCID" "$@"' \
		"$WORK/trace" "$CK_CHECK" load --root "$ROOT" --expect-step 300
	assert_ranks_ok 4 8
	local dir="$ROOT/step-300" r f
	# the ranks whose calls name a file of the step (opened, or stat'ed)
	ranks_touching() { # NAME CALLS-REGEX
		for r in 0 1 2 3; do
			grep -Eq "^[0-9]+ +($2)\(.*\"$dir/$1\"" "$WORK/trace.$r" && echo "$r"
		done | tr '\n' ' '
	}
	[ "$(ranks_touching MANIFEST openat)" = "0 " ] || bad "MANIFEST opened by ranks $(ranks_touching MANIFEST openat)"
	[ "$(ranks_touching meta.bin openat)" = "2 " ] || bad "meta.bin opened by ranks $(ranks_touching meta.bin openat)"
	[ "$(ranks_touching index.h5 openat)" = "1 " ] || bad "index.h5 opened by ranks $(ranks_touching index.h5 openat)"
	for f in 0 1 2 3; do
		[ "$(ranks_touching "shard-$f.h5" 'stat|newfstatat|statx')" = "$f " ] ||
			bad "shard-$f.h5's size looked at by ranks $(ranks_touching "shard-$f.h5" 'stat|newfstatat|statx')"
	done
	assert_cluster_idle
}

@test "failed load: every rank gets LLMP_ERR_IO even when ranks leave right after it (no barrier)" {
	# llmp_finalize is not collective, so a program may exit as soon as its
	# load failed. The ranks that learn the failure first must not make the
	# others fail otherwise. (The tests above put a barrier before
	# llmp_finalize, --sync-exit 1, so that they test the checkpoint alone.)
	local py i
	py=$(h5py_python) || skip "no python3 with h5py (Debian: python3-h5py)"
	save_reference
	run "$py" "$CHECK_VIEW" corrupt "$ROOT/step-300" layers/0/w_row 300 1
	[ "$status" -eq 0 ]
	for i in 1 2 3 4 5; do
		load_as -N2 -n4 --llm-parallel=tp=2 -- --step 300 --expect-fail LLMP_ERR_IO \
			--expect-msg "$ROOT/step-300/shard-1.h5"
		assert_ranks_ok 4 3
	done
	assert_cluster_idle
}

# ------------------------------------------------------- a killed writer

@test "kill: a writer killed -9 mid-save; the newest step-N loads, step-N.tmp is ignored, then cleared" {
	local srun_pid victim step_status newest tmp t started=$SECONDS
	# 12.6 MB a save, 200 saves: the loop runs far longer than the wait below
	LLMP_TIMEOUT=15 capped_srun 300 -N2 -n4 --llm-parallel=tp=2 --kill-on-bad-exit=0 \
		--output="$WORK/save-%t.out" "$CK_CHECK" save --root "$ROOT" --big 64 --keep 2 \
		--steps "$(seq -s, 1 200)" &
	srun_pid=$!
	# kill once a checkpoint is complete (latest) and the next one is under way (a .tmp)
	wait_save_under_way
	victim=$(sed -n 's/^rank 1: pid \([0-9]*\)$/\1/p' "$WORK/save-1.out")
	[ -n "$victim" ]
	kill -9 "$victim"
	wait "$srun_pid" && step_status=0 || step_status=$?
	cat "$WORK"/save-*.out | tail -n 40
	ls -la "$ROOT"
	# the step failed (a task died: srun says 137) and ended well before the cap
	[ "$step_status" -ne 0 ]
	[ "$step_status" -ne 124 ]
	[ $((SECONDS - started)) -lt 250 ]
	# the loop was cut short: nobody saved the last step
	refute grep -q '^rank [0-3]: saved step 200$' "$WORK"/save-*.out
	refute grep -q '^rank 1: [0-9]* checks' "$WORK/save-1.out"
	refute kill -0 "$victim" 2>/dev/null
	assert_cluster_idle

	newest=$(complete_steps | head -n1)
	[ -n "$newest" ]
	echo "newest complete: step-$newest; latest: $(cat "$ROOT/latest")"
	# at most keep + 1 complete ones (a kill between commit and retention)
	[ "$(complete_steps | wc -l)" -le 3 ]
	tmp=$(find "$ROOT" -mindepth 1 -maxdepth 1 -name 'step-*.tmp' -printf '%f\n')
	[ "$(wc -w <<<"$tmp")" -le 1 ]
	if [ -n "$tmp" ]; then
		t=${tmp#step-}
		t=${t%.tmp}
		echo "the kill left $tmp"
		[ "$t" -gt "$newest" ]
	else
		# the kill fell between two saves: make the partial save it could have left
		t=$((newest + 1))
		echo "the kill left no .tmp; making step-$t.tmp from step-$newest, one shard cut"
		cp -r "$ROOT/step-$newest" "$ROOT/step-$t.tmp"
		truncate -s 1000 "$ROOT/step-$t.tmp/shard-0.h5"
	fi

	# the newest complete one loads, under another layout; the .tmp is ignored
	load_as -N3 -n3 --llm-parallel=tp=3 -- --big 64 --expect-step "$newest"
	assert_ranks_ok 3 8
	refute grep -q 'llmp: .*trying step' <<<"$output" # not even tried
	[ -d "$ROOT/step-$t.tmp" ]
	# a save of the step the .tmp was left by clears it and commits
	run capped_srun 120 -N2 -n4 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" --big 64 --keep 2 \
		--steps "$t"
	assert_ranks_ok 4 3
	[ -z "$(find "$ROOT" -name '*.tmp')" ]
	[ -d "$ROOT/step-$t" ]
	[ "$(cat "$ROOT/latest")" = "step-$t" ]
	load_as -N2 -n2 --llm-parallel=tp=2 -- --big 64 --expect-step "$t"
	assert_ranks_ok 2 8
	assert_cluster_idle
	assert_queue_empty
}

# ------------------------------------------------------ what is refused

@test "singleton: badargs with no launcher: every bad argument refused with a message, no crash" {
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID \
		timeout -k 5 60 "$CK_CHECK" badargs --root "$ROOT"
	assert_ranks_ok 1 150
	grep -q "^rank 0: load from an empty root: LLMP_ERR_IO .*$ROOT/empty" <<<"$output"
	grep -q "^rank 0: load of step 8, which was never saved: LLMP_ERR_IO .*step-8" <<<"$output"
}

@test "badargs under srun: the same on every rank of 3 over 2 nodes, the collectives stay matched" {
	run capped_srun 60 -N2 -n3 "$CK_CHECK" badargs --root "$ROOT"
	assert_ranks_ok 3 150
	[ "$(grep -c '^rank [0-2]: save with meta NULL and metalen 5: LLMP_ERR_ARG ' <<<"$output")" -eq 3 ]
	[ "$(grep -c '^rank [0-2]: save under a root that is a regular file: LLMP_ERR_IO ' <<<"$output")" -eq 3 ]
	assert_cluster_idle
}

@test "mismatch: inconsistent registrations fail save on every rank; bad loads name tensor and dir" {
	run capped_srun 60 -N2 -n4 "$CK_CHECK" mismatch --root "$ROOT"
	assert_ranks_ok 4 30
	local what
	for what in "another global shape on the last rank" "another dtype on the last rank" \
		"slices that leave a hole" "slices that overlap" "a tensor only rank 0 registered"; do
		[ "$(grep -c "^rank [0-3]: save: $what: LLMP_ERR_MISMATCH " <<<"$output")" -eq 4 ]
	done
	[ "$(grep -c "^rank [0-3]: load: .*: LLMP_ERR_MISMATCH .*$ROOT/step-2" <<<"$output")" -eq 12 ]
	[ ! -e "$ROOT/step-1" ]
	assert_cluster_idle
	# and on 3 nodes, one rank each
	run capped_srun 60 -N3 -n3 "$CK_CHECK" mismatch --root "$WORK/ckpt3"
	assert_ranks_ok 3 30
	assert_cluster_idle
}
