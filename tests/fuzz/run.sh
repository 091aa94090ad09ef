#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/run.sh NAME FUZZER [libFuzzer options...] - one fuzzer run of
# `make fuzz` (tests/fuzz/local.mk), its output in NAME.out beside the fuzzer.
#
# A run is random: what a failed one found must survive the build directory
# it ran in (CI's is thrown away). So a failure ends with the seed and each
# input the fuzzer saved (crash, leak, timeout, oom), gzipped as base64, with
# the command that brings it back: the last lines of any log that keeps only
# its tail are enough to reproduce the failure.
set -u
name=$1
fuzzer=$2
shift 2
dir=$(dirname "$fuzzer")
out=$dir/$name.out
rm -f "$dir/$name"-crash-* "$dir/$name"-leak-* "$dir/$name"-timeout-* "$dir/$name"-oom-*
status=0
"$fuzzer" -artifact_prefix="$dir/$name-" "$@" >"$out" 2>&1 || status=$?
if [ "$status" -eq 0 ]; then
	grep '^Done' "$out"
	exit 0
fi
tail -n 30 "$out"
echo "== $name failed ($status); $(grep -m1 'INFO: Seed:' "$out")"
for f in "$dir/$name"-crash-* "$dir/$name"-leak-* "$dir/$name"-timeout-* "$dir/$name"-oom-*; do
	[ -f "$f" ] || continue
	echo "== $f ($(wc -c <"$f") bytes), to run it again:"
	echo "echo $(gzip -9nc <"$f" | base64 -w0) | base64 -d | gunzip >input && $fuzzer input"
done
exit "$status"
