#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Observability on a real three-node Slurm cluster: libllmp's counters
# against bytes worked out by tests/runtime/rt_check (metrics), a rank
# slowed on purpose blamed by the others, and the same straggler in
# examples/mlp_train named by `llmp top` from the LLMP_METRICS files
# (doc/metrics-json.md), whose every complete line parses, and by `llmp
# report` in a page that Debian's chromium draws with the rank red on the grid.

load cluster/common
load runtime/common

MLP="$LLMP_BUILDDIR/examples/mlp_train"

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }

setup() {
	[ -x "$RT_CHECK" ] || skip "rt_check not built ($RT_CHECK)"
	[ -x "$MLP" ] || skip "mlp_train not built ($MLP)"
	cluster_setup
	need_mpi_pmix_where_used
}

# Debian's chromium without a display, as root (so no sandbox), a profile of the test's own.
browser() {
	command -v chromium >/dev/null || { echo "no chromium: scripts/install-deps.sh installs it" >&2; return 1; }
	timeout -k 5 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--force-device-scale-factor=1 --user-data-dir="$WORK/chromium" "$@" 2>"$WORK/chromium.log" ||
		{ tail -n 20 "$WORK/chromium.log" >&2; return 1; }
}

@test "counters: bytes of doubling, ring and allgather per group, 4 ranks on 2 nodes" {
	run capped_srun 180 -N2 -n4 "$RT_CHECK" metrics --parallel tp=2
	assert_ranks_ok 4 50
}

@test "counters: 3 ranks (not a power of two) on 3 nodes" {
	run capped_srun 180 -N3 -n3 "$RT_CHECK" metrics
	assert_ranks_ok 3 20
}

@test "counters: rank 1 sleeps before each allreduce: the others wait for it, it waits for nobody" {
	run capped_srun 180 -N2 -n2 "$RT_CHECK" metrics --victim 1 --sleep 0.05
	assert_ranks_ok 2 20
	grep -q "^rank 0: straggler: .* last member 1 " <<<"$output"
}

@test "llmp top and llmp report name the rank slowed on purpose in mlp_train: text, JSON, an HTML page" {
	# (srun's --export would split the value at its commas: the environment carries it)
	LLMP_METRICS="$WORK/metrics,every=0.2s,prom" run timeout -k 10 240 srun --mpi=pmix -N2 -n4 \
		--llm-parallel=tp=2 --llm-checkpoint="$WORK/ckpt" "$MLP" --steps 40 --slow-rank 2 --slow-ms 30
	echo "$output" | tail -n 20
	[ "$status" -eq 0 ]
	[ "$(ls "$WORK/metrics"/rank-*.jsonl | wc -l)" -eq 4 ]
	[ "$(ls "$WORK/metrics"/rank-*.prom | wc -l)" -eq 4 ]
	# more than the last line: one every 0.2 s of a run of over a second
	[ "$(wc -l <"$WORK/metrics/rank-00000.jsonl")" -ge 3 ]
	# every line of every file is a whole JSON object
	for f in "$WORK/metrics"/rank-*.jsonl; do
		python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$f"
	done
	run "$LLMP" top "$WORK/metrics"
	echo "$output"
	[ "$status" -eq 0 ]
	# the first straggler named is rank 2
	grep -A1 '^stragglers:' <<<"$output" | grep -qE '^  rank 2 '
	run "$LLMP" top "$WORK/metrics" --format json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["stragglers"][0]["rank"] == 2, d["stragglers"]; assert d["ranks"] == 4' <<<"$output"
	# The same as a page: three pictures, the straggler named and red on the grid, tags balanced.
	run "$LLMP" report "$WORK/metrics" -o "$WORK/report.html"
	[ "$status" -eq 0 ] && [ "$output" = "$WORK/report.html" ] || { echo "$output"; false; }
	! ls "$WORK"/report.html.tmp.* 2>/dev/null
	python3 - "$WORK/report.html" <<'PY'
import re, sys
from html.parser import HTMLParser
html = open(sys.argv[1]).read()
assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
assert [c for c in re.findall(r'<svg class="(\w+)"', html)] == ["traffic", "steps", "stragglers"], html[:200]
assert "The others waited longest for <b>rank 2</b>" in html
grid = re.search(r'<svg class="stragglers".*?</svg>', html, re.S).group(0)
cells = dict((int(r), int(g)) for g, r in re.findall(r'fill="rgb\(255,(\d+),\d+\)" stroke="#999"><title>rank (\d+):', grid))
# Rank 2 fully red. Another rank is white or light: one waiting in a chain behind rank 2 (its tp
# partner, 3) passes the wait on a little late, so its score may be a few percent of rank 2's.
assert cells[2] == 0 and all(v >= 200 for k, v in cells.items() if k != 2), cells
assert len(re.findall(r"<polyline", html)) >= 1  # one line per group kind
class Balance(HTMLParser):
    void = {"meta", "line"}
    def __init__(self):
        super().__init__()
        self.stack = []
    def handle_starttag(self, tag, attrs):
        if tag not in self.void:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        pass
    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
        self.stack.pop()
b = Balance()
b.feed(html)
assert not b.stack, b.stack
PY
	# The page in a real browser, Debian's chromium: its screenshot holds the three pictures, and
	# the slowed rank's cell is red where tp=2's grid puts rank 2 (tests/cluster/report_page.py
	# works out where); the browser's XML parser, stricter than its HTML one, reads it whole.
	browser --window-size=800,2000 --screenshot="$WORK/report.png" "file://$WORK/report.html"
	python3 "$BATS_TEST_DIRNAME/cluster/report_page.py" "$WORK/report.png" 2 2 2
	cp "$WORK/report.html" "$WORK/report.xhtml"
	browser --dump-dom "file://$WORK/report.xhtml" >"$WORK/report.dom"
	python3 - "$WORK/report.dom" <<'PY'
import sys
import xml.etree.ElementTree as ET
text = open(sys.argv[1]).read()
assert "parsererror" not in text, text[:2000]
svg = "{http://www.w3.org/2000/svg}"
pics = {e.get("class"): e for e in ET.fromstring(text).iter(svg + "svg")}
assert list(pics) == ["traffic", "steps", "stragglers"], list(pics)
assert len(pics["stragglers"].findall(svg + "rect")) == 4  # a cell per rank
assert len(pics["steps"].findall(svg + "rect")) == 4  # a bar per rank
assert len(pics["traffic"].findall(svg + "polyline")) >= 2  # a line per group kind
PY
	cd "$WORK" # a short name, which messages show whole
	run "$LLMP" report no-such-dir
	[ "$status" -eq 1 ] && grep -q "llmp report: no-such-dir: cannot read the directory" <<<"$output" || { echo "$output"; false; }
	run "$LLMP" report --colour "$WORK/metrics"
	[ "$status" -eq 2 ] && grep -q "llmp report: unknown option '--colour'" <<<"$output" || { echo "$output"; false; }
	for cmd in top report; do
		run "$LLMP" "$cmd"
		[ "$status" -eq 2 ] && grep -q "llmp $cmd: no DIR given (see --help)" <<<"$output" || { echo "$output"; false; }
		run "$LLMP" "$cmd" "$WORK/metrics" "$WORK/metrics"
		[ "$status" -eq 2 ] && grep -q "llmp $cmd: more than one DIR (see --help)" <<<"$output" || { echo "$output"; false; }
	done
}

@test "llmp top skips a half-written last line, as a killed job leaves it" {
	mkdir -p "$WORK/m"
	LLMP_METRICS="$WORK/m,every=0" run timeout -k 10 240 srun --mpi=pmix -N1 -n2 \
		--llm-checkpoint="$WORK/ckpt2" "$MLP" --steps 5
	[ "$status" -eq 0 ]
	head -c 100 "$WORK/m/rank-00000.jsonl" >>"$WORK/m/rank-00001.jsonl"
	run "$LLMP" top "$WORK/m" --format json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); r=[x for x in d["ranks_detail"] if x["rank"]==1][0]; assert r["partial_line_skipped"] and r["final"], r' <<<"$output"
}

@test "the records name the job's LLMP_MODEL and LLMP_GPU, and llmp calibrate reads the directory" {
	mkdir -p "$WORK/mg"
	local model=layers=2,hidden=64,heads=2,seq=64,vocab=256,gbs=2
	LLMP_MODEL=$model LLMP_GPU=h100 LLMP_METRICS="$WORK/mg,every=0" run timeout -k 10 240 srun --mpi=pmix -N1 -n2 \
		--llm-checkpoint="$WORK/ckpt3" "$MLP" --steps 5
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	python3 - "$WORK/mg/rank-00000.jsonl" "$model" <<-'PY'
		import json, sys
		last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
		assert last["model"] == sys.argv[2] and last["gpu"] == "h100", last
	PY
	# a toy model's steps are no H100's: calibrate reads the run and says what it cannot fit
	run "$LLMP" calibrate "$WORK/mg"
	[ "$status" -eq 0 ] || grep -q "^llmp calibrate: $WORK/mg/rank-00000.jsonl: no efficiency fits it: " <<<"$output" ||
		{ echo "$output"; false; }
}

@test "llmp report: PyTorch's flight recorder dumps named with llmp's groups and each rank's coordinates" {
	# A gloo job under tp=2 whose rank 3 leaves out the last dp allreduce: rank 1 times out there.
	# The plugin points the recorder at LLMP_METRICS's fr/; tests/cluster/torch_fr.py dumps through
	# llmp.fr.dump() and prints each call it made, which the annotated dumps must list.
	local py=${LLMP_PYTHON:-$LLMP_BUILDDIR/venv/bin/python}
	[ -x "$py" ] || { echo "no Python with torch at $py: run scripts/python-env.sh (or set LLMP_PYTHON)"; false; }
	export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$LLMP_SRCDIR/python
	export LLMP_LIBRARY=$LLMP_BUILDDIR/runtime/.libs/libllmp.so.0
	LLMP_METRICS="$WORK/job,every=0" run timeout -k 10 240 srun --mpi=pmix -N2 --ntasks-per-node=2 \
		--llm-parallel=tp=2 --llm-checkpoint="$WORK/ck" "$py" "$LLMP_SRCDIR/tests/cluster/torch_fr.py" 3
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q '^rank 1: dp allreduce failed' <<<"$output" || { echo "$output"; false; }
	grep '^call ' <<<"$output" >"$WORK/calls" # each rank's lines in its order
	[ -f "$WORK/job/fr/rank_0" ] && [ -f "$WORK/job/fr/rank_3" ] || { ls -R "$WORK/job"; false; }
	# The page: python3 (no torch) reads the pickles through llmp.fr.
	LLMP_PYTHON=python3 run "$LLMP" report "$WORK/job" -o "$WORK/fr.html"
	[ "$status" -eq 0 ] && [ "$output" = "$WORK/fr.html" ] || { echo "$output"; false; }
	grep -qF '<li>dp group [1, 3]: rank 3 did not reach call #4</li>' "$WORK/fr.html"
	for r in 0 1 2 3; do
		grep -qF "<h3>rank $r: tp $((r % 2)) cp 0 ep 0 dp $((r / 2)) pp 0</h3>" "$WORK/fr.html" ||
			{ sed -n '/Flight recorder/,$p' "$WORK/fr.html"; false; }
	done
	# Every call each rank made, in order, under the name of its llmp group, whose ranks are
	# the ones tp=2 gives (tp: 2k, 2k+1; dp: k, k+2), worked out here.
	"$LLMP" plan --world 4 --parallel tp=2 --format json >"$WORK/layout.json"
	python3 -m llmp.fr "$WORK/job/fr" --layout "$WORK/layout.json" --format json --last 100 >"$WORK/fr.json"
	python3 - "$WORK/fr.json" "$WORK/calls" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
made = {}
for line in open(sys.argv[2]):
    _, rank, kind, n = line.split()
    made.setdefault(int(rank), []).append((kind, int(n)))
groups = {g["torch_name"]: g for g in a["groups"]}
for g in a["groups"]:
    if g["kind"] == "tp":
        k = g["ranks"][0] // 2
        assert g["ranks"] == [2 * k, 2 * k + 1], g
    elif g["kind"] == "dp":
        k = g["ranks"][0]
        assert g["ranks"] == [k, k + 2], g
for r in a["ranks"]:
    rank = r["rank"]
    got = [(c["group"], c["seq"]) for c in r["last"] if c["group"] in ("tp", "dp")]
    assert got == made[rank], (rank, got, made[rank])
    assert all(rank in groups[c["torch_name"]]["ranks"] for c in r["last"]), r
assert [(g["kind"], g["behind"]) for g in a["groups"] if g["behind"]] == [("dp", [3])], a["groups"]
PY
}
