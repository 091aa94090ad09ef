#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Observability on a real three-node Slurm cluster: libllmp's counters
# against bytes worked out by tests/runtime/rt_check (metrics), a rank
# slowed on purpose blamed by the others, and the same straggler in
# examples/mlp_train named by `llmp top` from the LLMP_METRICS files
# (doc/metrics-json.md), whose every complete line parses.

load cluster/common
load runtime/common

MLP="$LLMP_BUILDDIR/examples/mlp_train"

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }

setup() {
	[ -x "$RT_CHECK" ] || skip "rt_check not built ($RT_CHECK)"
	[ -x "$MLP" ] || skip "mlp_train not built ($MLP)"
	cluster_setup
}

# srun --mpi=pmix, capped: a hang fails the test instead of stalling the suite.
rt_srun() { # seconds srun-arguments...
	local limit=$1
	shift
	LLMP_TIMEOUT=${LLMP_TIMEOUT:-60} timeout -k 10 "$limit" srun --mpi=pmix "$@"
}

@test "counters: bytes of doubling, ring and allgather per group, 4 ranks on 2 nodes" {
	run rt_srun 180 -N2 -n4 "$RT_CHECK" metrics --parallel tp=2
	assert_ranks_ok 4 50
}

@test "counters: 3 ranks (not a power of two) on 3 nodes" {
	run rt_srun 180 -N3 -n3 "$RT_CHECK" metrics
	assert_ranks_ok 3 20
}

@test "counters: rank 1 sleeps before each allreduce: the others wait for it, it waits for nobody" {
	run rt_srun 180 -N2 -n2 "$RT_CHECK" metrics --victim 1 --sleep 0.05
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
assert cells[2] == 0 and all(v == 255 or k == 2 for k, v in cells.items()), cells  # only rank 2 fully red
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
