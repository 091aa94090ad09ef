#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Set up this machine and run the tests of llmp. With no argument, every
# stage, as CI does (.ci/run):
#   packages   the Debian packages (as root; skipped with a note otherwise)
#   python     a virtual environment with PyTorch for the Python tests (scripts/python-env.sh)
#   check      build, then `make check`: unit, CLI, Python and local Slurm cluster tests
#   asan       the unit, CLI, singleton runtime, example, llmp ckpt (damaged checkpoints
#              included) and job-end tests again, built with ASan + UBSan (and GCC's
#              float-cast-overflow, which -fsanitize=undefined leaves out)
#   valgrind   the unit tests under valgrind
#   fuzz       short libFuzzer runs of the layout parser, the topology file reader and
#              the model descriptions through the chooser and the plugin's decision
#              (FUZZ_SECONDS each, default 60)
#   format     the C sources as .clang-format writes them (scripts/format.sh --check),
#              and which runtime folder may include which (scripts/check-layers.sh)
#   distcheck  `make distcheck`, testing the quick set (below) from the tarball
#   packaging  `make deb` and `make rpm` from distcheck's tarball, lintian and rpmlint
#              (packaging/README.md), and the .deb files installed here, serving the local
#              Slurm cluster's jobs (tests/packages.bats; as root)
#
#   scripts/test.sh --quick          build, the tests that need no root, cluster or
#                                    PyTorch, and the format check (a few minutes;
#                                    the packages installed first: scripts/install-deps.sh)
#   scripts/test.sh --stage a,b      only the named stages, in the order above
#   scripts/test.sh --list           the stages
#   scripts/test.sh --slurm RELEASE  the cluster suites' smoke set on another Slurm
#                                    release (24.11: Debian 13, 26.05: sid), in a root
#                                    file system of that Debian built once with mmdebstrap
#                                    (scripts/slurm-release-test.sh; as root). Given
#                                    alone it runs only that; add --stage to run both.
#                                    LLMP_SLURM_RELEASES="24.11 26.05" adds it to a full run.
#
# Every stage runs even if an earlier one failed; the last line is the total,
# "N passed, N failed, N skipped", and the exit status is 1 if anything failed.
# A test skipped for a reason not listed in allowed_skips counts as failed.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"

all_stages=(packages python check asan valgrind fuzz format distcheck packaging)
# The suites of --quick: no root, no cluster, no PyTorch.
quick_tests='$(unit_tests) tests/cli.bats tests/topo.bats tests/job_end.bats tests/runtime_singleton.bats tests/example_mlp.bats tests/ckpt_tool.bats tests/ckpt_damage.bats tests/device_ckpt.bats tests/info.bats tests/debug_log.bats'

usage() {
	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"
	exit "$1"
}

stages=("${all_stages[@]}")
quick=no
releases=()
stages_given=no
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=yes stages=(check format) ;;
	--stage)
		[ $# -ge 2 ] || usage 2
		IFS=, read -r -a stages <<<"$2"
		stages_given=yes
		shift
		;;
	--stage=*)
		IFS=, read -r -a stages <<<"${1#--stage=}"
		stages_given=yes
		;;
	--slurm)
		[ $# -ge 2 ] || usage 2
		releases+=("$2")
		shift
		;;
	--slurm=*) releases+=("${1#--slurm=}") ;;
	--list)
		printf '%s\n' "${all_stages[@]}"
		exit 0
		;;
	-h | --help) usage 0 ;;
	*)
		echo "test: unknown argument '$1'" >&2
		usage 2
		;;
	esac
	shift
done
for stage in "${stages[@]}"; do
	[[ " ${all_stages[*]} " == *" $stage "* ]] ||
		{ echo "test: unknown stage '$stage' (scripts/test.sh --list)" >&2; exit 2; }
done

# --slurm alone runs only the other releases; a full run adds LLMP_SLURM_RELEASES.
if [ ${#releases[@]} -gt 0 ] && [ "$stages_given" = no ] && [ "$quick" = no ]; then
	stages=()
elif [ ${#releases[@]} -eq 0 ] && [ -n "${LLMP_SLURM_RELEASES:-}" ]; then
	read -r -a releases <<<"$LLMP_SLURM_RELEASES"
fi

passed=0 failed=0 skipped=0
failures=()

# Add the counts of an automake test-suite.log to the totals.
count_suite() {
	local log=$1 stage=$2 p f s
	if [ ! -f "$log" ]; then
		failed=$((failed + 1))
		failures+=("$stage: no test-suite.log (the build failed)")
		return
	fi
	p=$(awk '/^# PASS:/ {print $3}' "$log")
	s=$(awk '/^# SKIP:/ {print $3}' "$log")
	f=$(awk '/^# (FAIL|XPASS|ERROR):/ {n += $3} END {print n + 0}' "$log")
	passed=$((passed + ${p:-0}))
	skipped=$((skipped + ${s:-0}))
	failed=$((failed + f))
	[ "$f" -eq 0 ] || failures+=("$stage: $f failed, see $log")
}

# A test may skip only for what this machine cannot have; these are those
# reasons, as extended regular expressions on the reason the test gives.
# Anything else (a package the scripts forgot, a program not built) is a
# failure: such a skip would hide a test on every fresh machine.
allowed_skips=(
	'the local Slurm cluster needs root' # test.sh run as a user: no daemons, no namespaces
	'leaves -m arbitrary pending \(a Slurm defect since 23\.11\)' # slurm_layouts.bats on 23.11+
	'this Slurm has no mpi/pmix plugin' # Debian sid's slurm-wlm 26.05.5, built without PMIx
)

# Move the skips of an automake test-suite.log whose reason is not allowed
# from the skipped count to the failed one, naming each.
check_skips() {
	local log=$1 stage=$2 line reason pattern ok
	[ -f "$log" ] || return 0
	while IFS= read -r line; do
		reason=${line##*# SKIP}
		reason=${reason# }
		ok=no
		for pattern in "${allowed_skips[@]}"; do
			[[ $reason =~ $pattern ]] && ok=yes
		done
		[ "$ok" = yes ] && continue
		skipped=$((skipped - 1))
		failed=$((failed + 1))
		failures+=("$stage: skipped for a reason test.sh does not allow: ${line#SKIP: }")
	done < <(grep -E '^SKIP: .* # SKIP' "$log")
}

# Run a command with its output in a log, shown (the end of it) only on failure.
quietly() { # log command...
	local log=$1
	shift
	if "$@" >"$log" 2>&1; then
		return 0
	fi
	tail -n 40 "$log"
	return 1
}

# A stage that is one check of its own: passes or fails as a whole.
count_step() {
	local stage=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("$stage")
	fi
}

stage_packages() {
	if [ "$(id -u)" -eq 0 ]; then
		scripts/install-deps.sh || { echo "test: installing packages failed" >&2; exit 1; }
	else
		echo "test: not root, so no packages installed and cluster tests will be skipped" >&2
	fi
}

build=$src/build

stage_python() {
	echo "== the Python environment of the python/ tests (PyTorch from PyPI: scripts/python-env.sh)"
	mkdir -p "$build"
	if py=$(scripts/python-env.sh "$build/venv"); then
		export LLMP_PYTHON=$py # tests/python.bats runs pytest with it, in make check and distcheck
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("python environment: scripts/python-env.sh $build/venv failed")
	fi
}

stage_check() {
	local tests=()
	[ "$quick" = no ] || tests=(TESTS="$quick_tests tests/surface.bats tests/layers.bats tests/docs.bats")
	echo "== build and make check${tests:+ (quick: no root, cluster or PyTorch)}"
	rm -f "$build/test-suite.log"
	if LLMP_BUILD_DIR=$build scripts/build.sh; then
		make -C "$build" check "${tests[@]}"
	fi
	count_suite "$build/test-suite.log" "make check"
	check_skips "$build/test-suite.log" "make check"
}

stage_asan() {
	echo "== unit, CLI, topology, singleton runtime example, llmp ckpt, damaged-checkpoint and job-end tests under AddressSanitizer + UndefinedBehaviorSanitizer"
	local asan=$src/build-asan
	local san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all"
	rm -f "$asan/test-suite.log"
	if LLMP_BUILD_DIR=$asan scripts/build.sh --disable-cluster-tests \
		CFLAGS="$san" LDFLAGS="-fsanitize=address,undefined,float-cast-overflow"; then
		ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
			make -C "$asan" check TESTS="$quick_tests"
	fi
	count_suite "$asan/test-suite.log" "sanitizer tests"
	check_skips "$asan/test-suite.log" "sanitizer tests"
}

stage_valgrind() {
	echo "== unit tests under valgrind"
	local vg_log=$build/valgrind-suite.log
	rm -f "$build"/tests/*.vg.log "$build"/tests/unit/*.vg.log "$build"/tests/fuzz/*.vg.log
	make -C "$build" check TESTS='$(unit_tests)' TEST_SUITE_LOG=valgrind-suite.log \
		LOG_COMPILER="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect"
	count_suite "$vg_log" "valgrind"
	check_skips "$vg_log" "valgrind"
}

stage_fuzz() {
	echo "== fuzzing the layout parser, the topology file reader, then the model descriptions, for ${FUZZ_SECONDS:-60} s each"
	count_step "fuzz" quietly "$build/fuzz.log" make -C "$build" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
	grep '^Done' "$build/fuzz.log" || true
}

stage_format() {
	echo "== the C sources as clang-format writes them (.clang-format), and the runtime's layers"
	mkdir -p "$build"
	count_step "format" quietly "$build/format.log" scripts/format.sh --check
	count_step "layers" quietly "$build/layers.log" scripts/check-layers.sh
}

# The tarball built, installed and tested out of tree: the quick set, as the
# sanitizer stage runs it. The whole check already ran in this tree, and a
# file the tarball lacks is named by dist_complete below, so running every
# suite again from the tarball (10 min on 2 cores) would find nothing new.
stage_distcheck() {
	echo "== make distcheck (the quick set from the tarball)"
	count_step "distcheck" quietly "$build/distcheck.log" make -C "$build" distcheck \
		DISTCHECK_CONFIGURE_FLAGS=--disable-cluster-tests TESTS="$quick_tests"
	grep -A1 'archives ready' "$build/distcheck.log" || true
	count_step "the tarball carries every tracked file" dist_complete
}

# Every file git tracks is in distcheck's tarball, but for those that only
# serve the repository itself: a suite left out of EXTRA_DIST fails in
# distcheck only after the whole check has run, and names no file.
dist_complete() {
	local tarball missing
	tarball=$(ls "$build"/llmp-*.tar.gz 2>/dev/null | head -n1)
	[ -n "$tarball" ] || { echo "no tarball in $build"; return 1; }
	[ -d "$src/.git" ] || return 0 # a tree unpacked from the tarball itself
	missing=$(comm -13 <(tar tzf "$tarball" | sed 's|^[^/]*/||' | sort) \
		<(git -C "$src" ls-files | grep -vE '^(\.ci/|\.gitignore$|\.clang-format$|m4/\.gitkeep$)' | sort))
	[ -z "$missing" ] && return 0
	echo "tracked but not in $tarball (add them to EXTRA_DIST):"
	echo "$missing"
	return 1
}

stage_packaging() {
	echo "== packages: make deb, make rpm (from distcheck's tarball), lintian, rpmlint, the .deb files serving the cluster"
	local tarball
	tarball=$(ls "$build"/llmp-*.tar.gz 2>/dev/null | head -n1) # distcheck's; else make deb makes one
	count_step "make deb" quietly "$build/deb.log" make -C "$build" deb DIST_TARBALL="$tarball"
	count_step "lintian" quietly "$build/lintian.log" sh -c 'cd "$1/packages/deb" && lintian --pedantic -I \
		--suppress-tags-from-file "$2/packaging/lintian.suppress" --fail-on warning ./*.changes' sh "$build" "$src"
	# rpmbuild --nodeps: Debian has no slurm-devel, pmix-devel, ... to satisfy BuildRequires
	count_step "make rpm" quietly "$build/rpm.log" make -C "$build" rpm DIST_TARBALL="$tarball" RPMBUILD_FLAGS=--nodeps
	count_step "rpmlint" quietly "$build/rpmlint.log" sh -c 'rpmlint -r "$2/packaging/llmp.rpmlintrc" "$1"/packages/rpm/RPMS/*/*.rpm' \
		sh "$build" "$src"
	count_step "installed .deb packages on the cluster" quietly "$build/packages-test.log" \
		env LLMP_SRCDIR="$src" LLMP_BUILDDIR="$build" bats tests/packages.bats
}

# Each stage's minutes, said after it: what to look at when CI grows long.
timed() { # STAGE-FUNCTION [ARGS]
	local start=$SECONDS
	"$@"
	echo "-- $1 ${2:-}: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
}
for stage in "${all_stages[@]}"; do
	[[ " ${stages[*]} " == *" $stage "* ]] && timed "stage_$stage"
done

# The smoke set on another Slurm release: its own counts, from its last line.
slurm_release() { # RELEASE
	local log=$build/slurm-$1.log line p f s
	mkdir -p "$build"
	echo "== the cluster suites' smoke set on Slurm $1 (scripts/slurm-release-test.sh; log in $log)"
	if [ "$(id -u)" -ne 0 ]; then
		echo "test: not root, so Slurm $1 is not run" >&2
		failed=$((failed + 1))
		failures+=("Slurm $1: needs root")
		return
	fi
	scripts/slurm-release-test.sh "$1" >"$log" 2>&1
	line=$(grep '^slurm-release-test: .* passed, ' "$log" | tail -n1)
	echo "${line:-no summary: see $log}"
	if [ -z "$line" ]; then
		tail -n 40 "$log"
		failed=$((failed + 1))
		failures+=("Slurm $1: no result, see $log")
		return
	fi
	p=$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")
	f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
	s=$(sed -E 's/.* ([0-9]+) skipped.*/\1/' <<<"$line")
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -eq 0 ] || failures+=("Slurm $1: $f failed, see $log")
}
for release in "${releases[@]}"; do
	timed slurm_release "$release"
done

for f in "${failures[@]}"; do
	echo "FAILED: $f"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
