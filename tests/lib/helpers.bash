# SPDX-License-Identifier: BSD-3-Clause
# helpers.bash - shared setup for the bats tests of the `llmp` tool.
#
# `make check` exports LLMP_BUILDDIR and LLMP_SRCDIR; when they are unset the
# tests run against a tree built in place (`bats tests/cli.bats` from the
# repository root after `make`).

bats_require_minimum_version 1.5.0

: "${LLMP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${LLMP_BUILDDIR:=$LLMP_SRCDIR}"
LLMP="$LLMP_BUILDDIR/cli/llmp"

llmp_setup() {
	if [ ! -x "$LLMP" ]; then
		echo "llmp binary not found at $LLMP (build first, or set LLMP_BUILDDIR)" >&2
		return 1
	fi
}

# JSON checks parse the document with Python's json module.
need_python() {
	command -v python3 >/dev/null || skip "python3 not found"
}

# The setup of a test of ck_check's checkpoints run as a PMIx singleton or
# under mpirun: llmp and ck_check built, python3, the sanitizer build's leak
# suppressions (libpmix keeps memory past PMIx_Finalize, tests/lsan.supp;
# their summary kept off stderr, which tests read), and ROOT, the checkpoint
# root in the test's own directory.
ckpt_setup() {
	CK_CHECK="$LLMP_BUILDDIR/tests/ckpt/ck_check"
	llmp_setup
	[ -x "$CK_CHECK" ] || skip "ck_check not built ($CK_CHECK)"
	need_python
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp:print_suppressions=0"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
	ROOT="$BATS_TEST_TMPDIR/ckpt"
}

# Run llmp with stdout in $output and stderr in $stderr.
llmp() {
	run --separate-stderr "$LLMP" "$@"
}

fail() {
	printf '%s\n' "$@" >&2
	printf -- '--- status: %s\n--- stdout:\n%s\n--- stderr:\n%s\n' \
		"${status-}" "${output-}" "${stderr-}" >&2
	return 1
}

assert_status() {
	[ "$status" -eq "$1" ] || fail "expected exit status $1, got $status"
}

# assert_contains TEXT NEEDLE...: every NEEDLE is a substring of TEXT.
assert_contains() {
	local text=$1 needle
	shift
	for needle in "$@"; do
		[[ "$text" == *"$needle"* ]] || fail "expected to find '$needle' in:" "$text"
	done
}

assert_not_contains() {
	local text=$1 needle
	shift
	for needle in "$@"; do
		[[ "$text" != *"$needle"* ]] || fail "did not expect '$needle' in:" "$text"
	done
}

# assert_line_matches REGEX: some line of $output matches the extended regex.
assert_line_matches() {
	grep -Eq -- "$1" <<<"$output" || fail "no line of stdout matches /$1/"
}

# expect_usage_error "NEEDLE1|NEEDLE2..." ARGS...: llmp ARGS exits 2, prints
# nothing on stdout and one message on stderr that holds every needle.
expect_usage_error() {
	local needles=$1 needle
	shift
	llmp "$@"
	assert_status 2
	[ -z "$output" ] || fail "expected no stdout for: llmp $*"
	[ -n "$stderr" ] || fail "expected a message on stderr for: llmp $*"
	IFS='|' read -r -a needle <<<"$needles"
	assert_contains "$stderr" "${needle[@]}"
}

# The group kinds a layout document must name, Megatron's tokens.
GROUP_KINDS="tp pp cp dp ep dp-cp tp-cp tp-pp tp-dp tp-dp-cp expert-tp expert-dp
tp-ep tp-ep-pp embedding position-embedding"

# check_layout_json FILE WORLD TP PP CP EP ETP ORDER
#
# Checks a whole-world document against groups recomputed here, in Python,
# from Megatron-Core's RankGenerator rules (not from llmp): the grid is a
# mixed-radix number over ORDER with the leftmost dimension fastest; a group
# kind masks some dimensions; groups are numbered by the unmasked coordinates
# and members by the masked ones, both leftmost-fastest. Dense grid tp cp dp
# pp (ep=1); expert grid etp ep edp pp (cp=1). Embedding: first and last stage
# of each pipeline group; position-embedding: the first.
check_layout_json() {
	python3 - "$@" <<'EOF'
import json, sys

path, world, tp, pp, cp, ep, etp, order = sys.argv[1:]
world, tp, pp, cp, ep, etp = map(int, (world, tp, pp, cp, ep, etp))
order = order.split("-")
doc = json.load(open(path))

def die(msg):
    sys.exit("layout check: " + msg)

dp = world // (tp * pp * cp)
edp = world // (etp * ep * pp)
if doc.get("world") != world:
    die("world %r" % doc.get("world"))
if doc.get("order") != "-".join(order):
    die("order %r, expected %r" % (doc.get("order"), "-".join(order)))
want_sizes = {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "ep": ep,
              "expert-tp": etp, "expert-dp": edp}
for k, v in want_sizes.items():
    if doc["sizes"].get(k) != v:
        die("sizes[%s] = %r, expected %d" % (k, doc["sizes"].get(k), v))
if not isinstance(doc.get("warnings"), list):
    die("warnings is not a list")

kinds = ("tp pp cp dp ep dp-cp tp-cp tp-pp tp-dp tp-dp-cp expert-tp expert-dp "
         "tp-ep tp-ep-pp embedding position-embedding").split()
if sorted(doc["groups"]) != sorted(kinds):
    die("group kinds %s" % sorted(doc["groups"]))

def groups(sizes, masked):
    """Megatron's generate_masked_orthogonal_rank_groups over `order`."""
    shape = [sizes[d] for d in order]
    stride, s = [], 1
    for n in shape:
        stride.append(s)
        s *= n
    assert s == world
    m = [i for i, d in enumerate(order) if d in masked]
    u = [i for i, d in enumerate(order) if d not in masked]
    def digits(index, axes):
        out = []
        for a in axes:
            out.append(index % shape[a])
            index //= shape[a]
        return out
    gsize = 1
    for a in m:
        gsize *= shape[a]
    result = []
    for g in range(world // gsize):
        base = sum(c * stride[a] for c, a in zip(digits(g, u), u))
        result.append([base + sum(c * stride[a] for c, a in zip(digits(r, m), m))
                       for r in range(gsize)])
    return result

dense = {"tp": tp, "cp": cp, "ep": 1, "dp": dp, "pp": pp}
expert = {"tp": etp, "cp": 1, "ep": ep, "dp": edp, "pp": pp}
want = {
    "tp": groups(dense, {"tp"}), "pp": groups(dense, {"pp"}),
    "cp": groups(dense, {"cp"}), "dp": groups(dense, {"dp"}),
    "dp-cp": groups(dense, {"dp", "cp"}), "tp-cp": groups(dense, {"tp", "cp"}),
    "tp-pp": groups(dense, {"tp", "pp"}), "tp-dp": groups(dense, {"tp", "dp"}),
    "tp-dp-cp": groups(dense, {"tp", "dp", "cp"}),
    "ep": groups(expert, {"ep"}), "expert-tp": groups(expert, {"tp"}),
    "expert-dp": groups(expert, {"dp"}), "tp-ep": groups(expert, {"tp", "ep"}),
    "tp-ep-pp": groups(expert, {"tp", "ep", "pp"}),
}
want["embedding"] = [[g[0], g[-1]] if len(g) > 1 else g for g in want["pp"]]
want["position-embedding"] = [[g[0]] for g in want["pp"]]

for kind in kinds:
    got = doc["groups"][kind]
    if got != want[kind]:
        die("%s groups %s, expected %s" % (kind, got[:8], want[kind][:8]))
    if kind in ("embedding", "position-embedding"):
        continue
    # Every plain kind partitions the world.
    flat = sorted(r for g in got for r in g)
    if flat != list(range(world)):
        die("%s groups do not partition 0..%d" % (kind, world - 1))
EOF
}

# check_rank_json FULL RANKFILE RANK: the rank view holds the rank, its
# coordinates and, for each kind, exactly the group of the full document that
# contains the rank (or none).
check_rank_json() {
	python3 - "$@" <<'EOF'
import json, sys

full, view = (json.load(open(p)) for p in sys.argv[1:3])
rank = int(sys.argv[3])

def die(msg):
    sys.exit("rank check: " + msg)

if view.get("rank") != rank:
    die("rank %r" % view.get("rank"))
for k in ("world", "order", "sizes"):
    if view.get(k) != full.get(k):
        die("%s differs from the full document" % k)
coords = view.get("coords")
if not isinstance(coords, dict):
    die("no coords")
for k in ("tp", "pp", "cp", "dp", "ep", "expert-tp", "expert-dp"):
    if not (isinstance(coords.get(k), int) and 0 <= coords[k] < full["sizes"][k]):
        die("coords[%s] = %r" % (k, coords.get(k)))
if sorted(view["groups"]) != sorted(full["groups"]):
    die("group kinds differ")
for kind, groups in full["groups"].items():
    mine = [g for g in groups if rank in g]
    if view["groups"][kind] != mine:
        die("%s: %r, expected %r" % (kind, view["groups"][kind], mine))
    if kind not in ("embedding", "position-embedding") and len(mine) != 1:
        die("%s: rank in %d groups" % (kind, len(mine)))
# Position along each dense axis from the groups: index within its group.
for axis in ("tp", "pp", "cp", "dp"):
    if view["groups"][axis][0].index(rank) != coords[axis]:
        die("coords[%s] = %d but the rank is member %d of its %s group"
            % (axis, coords[axis], view["groups"][axis][0].index(rank), axis))
EOF
}
