#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What counting per communicator costs end to end (the goal: under 1% of an
# 8-byte allreduce): `llmp bench`'s 8-byte allreduce on 2 local ranks
# (mpirun, UCX), with BUILD's llmp-bench (counting) and with one built from
# the same sources with -DLLMP_BENCH_NO_COUNTING (runtime/comm/metrics.h:
# calls neither read the clock nor count), in alternating rounds so that
# both see the same load; the median of each and their ratio.
#
#   scripts/bench-metrics-ab.sh [BUILD [ROUNDS [ITERATIONS]]]
#
# BUILD defaults to build/; the second build goes to BUILD-nocount (configured
# and built on first use, llmp-bench only). doc/benchmarks.md has the figures.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
rounds=${2:-10}
iters=${3:-50000}
nocount=$build-nocount

if [ ! -x "$nocount/cli/bench/llmp-bench" ] || [ "$nocount/cli/bench/llmp-bench" -ot "$src/runtime/comm/metrics.h" ]; then
	mkdir -p "$nocount"
	(cd "$nocount" && { [ -f Makefile ] || "$src/configure" -q CPPFLAGS=-DLLMP_BENCH_NO_COUNTING; } &&
		make -s -j2 cli/bench/llmp-bench) >"$nocount/bench-build.log" 2>&1 ||
		{ tail -n 20 "$nocount/bench-build.log" >&2; exit 1; }
fi

# The mean time of one 8-byte allreduce, in microseconds, by one llmp-bench.
one_run() { # llmp-bench
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$1" bench -b 8 -e 8 \
		-n "$iters" -w $((iters / 10)) -C 0 2>/dev/null | awk '!/^#/ && $1 == 8 { print $5 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# The mean of the middle half of the rounds: finer than the 0.01 us that llmp bench prints, which
# is 2% of an 8-byte allreduce, and as deaf as the median to the rounds that others' work slowed.
midmean() { sort -g | awk '{ v[NR] = $1 } END { lo = int(NR / 4) + 1; hi = NR - int(NR / 4); for (i = lo; i <= hi; i++) s += v[i]; printf "%.4f", s / (hi - lo + 1) }'; }

a=() b=()
for ((i = 1; i <= rounds; i++)); do
	a+=("$(one_run "$build/cli/bench/llmp-bench")")
	b+=("$(one_run "$nocount/cli/bench/llmp-bench")")
	echo "round $i: counting ${a[-1]} us, not counting ${b[-1]} us"
done
# The median, and the fastest round: on a loaded machine others' work only adds time, so the
# fastest rounds are the nearest to the cost of the code itself.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }
ma=$(printf '%s\n' "${a[@]}" | median) mb=$(printf '%s\n' "${b[@]}" | median)
fa=$(printf '%s\n' "${a[@]}" | sort -g | head -n 1) fb=$(printf '%s\n' "${b[@]}" | sort -g | head -n 1)
echo "# 8-byte allreduce, 2 ranks, $iters iterations x $rounds rounds each (us):"
echo "median: counting $ma, not counting $mb, ratio $(ratio "$ma" "$mb")"
qa=$(printf '%s\n' "${a[@]}" | midmean) qb=$(printf '%s\n' "${b[@]}" | midmean)
echo "middle half's mean: counting $qa, not counting $qb, ratio $(ratio "$qa" "$qb")"
echo "fastest: counting $fa, not counting $fb, ratio $(ratio "$fa" "$fb")"
