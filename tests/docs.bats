#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# scripts/check-docs.sh: the tree explains itself. Checked on this tree, and
# on small trees made here with one violation each, so that every check is
# seen to fail, naming the file and line (the expected lines are written
# from the script's rules, by hand). Needs no build, root or network.

load lib/helpers

setup() {
	CHECK="$LLMP_SRCDIR/scripts/check-docs.sh"
	T="$BATS_TEST_TMPDIR/tree"
	# A tree that passes: a README with a link, a doc, a suite, and the unit
	# tests' rules with the table that lists them.
	mkdir -p "$T/doc" "$T/tests/unit"
	cat >"$T/README.md" <<-'EOF'
		# A project
		See [the doc](doc/guide.md), NVIDIA/nccl#1676 and
		https://github.com/NVIDIA/nccl/issues/304; the report says
		`rank 3 did not reach call #4`, drawn with stroke="#333".
	EOF
	printf '# Guide\nBack to [the top](../README.md#a-project), tests/a.bats.\n' >"$T/doc/guide.md"
	printf '#!/usr/bin/env bats\n' >"$T/tests/a.bats"
	cat >"$T/tests/unit/local.mk" <<-'EOF'
		unit_tests = tests/unit/test_one \
			tests/fuzz/fuzz_replay
		if HAVE_X
		unit_tests += tests/unit/test_two
		endif
		check_PROGRAMS += $(unit_tests)
	EOF
	cat >"$T/tests/README.md" <<-'EOF'
		# tests

		Unit tests:

		| program | what it covers |
		|---|---|
		| `test_one` | one |
		| `test_two` | two |
		| `fuzz/fuzz_replay` | the corpus |

		After the table.
	EOF
}

# The check on T must fail with exactly these lines (and the count).
fails_with() {
	run "$CHECK" --root "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	local line
	for line in "$@"; do
		[[ "$output" == *"$line"* ]] || { echo "missing: $line"; return 1; }
	done
	[[ "$output" == *"$# problem(s)"* ]]
}

@test "docs: this tree cites only itself and public sources, and its docs point at what is there" {
	run "$CHECK" --root "$LLMP_SRCDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"the docs cite only the tree and public sources"* ]]
}

@test "docs: the tree made here passes" {
	run "$CHECK" --root "$T"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "docs: a note kept outside the tree is named, with file and line" {
	printf 'x\n(see ../shared/reference/topology.md section 9)\n' >>"$T/doc/guide.md"
	printf '/* worked by hand (reference/gpu.md) */\n' >"$T/a.c"
	printf '# from seeds/layouts.txt\n' >"$T/b.sh"
	printf 'as gpudirect.md \302\2471.4 says\n' >"$T/c.txt"
	printf 'README.md, then Contract 2 of DESIGN.md\n' >"$T/d.txt"
	fails_with "doc/guide.md:4: cites a note outside the tree ('../shared/')" \
		"a.c:1: cites a note outside the tree ('reference/gpu.md')" \
		"b.sh:1: cites a note outside the tree ('seeds/')" \
		"c.txt:1: cites a note outside the tree ('.md §1')" \
		"c.txt:1: names gpudirect.md, which is no file of the tree" \
		"d.txt:1: names DESIGN.md, which is no file of the tree"
}

@test "docs: an issue number is named, with file and line; owner/repo#N, URLs, colours and call #N are not" {
	printf 'Goal (issue 26): fast.\nIssue #18'"'"'s goal is met.\n' >"$T/e.md"
	printf '# open in issues 12\n# and PR 7\n' >"$T/f.sh"
	printf 'the version rule (#1676) and\n#44: a heading\nfixed in NVIDIA/nccl#928, #929\n' >"$T/g.md"
	fails_with "e.md:1: cites an issue by its number ('issue 26')" \
		"e.md:2: cites an issue by its number ('Issue #18')" \
		"f.sh:1: cites an issue by its number ('issues 12')" \
		"f.sh:2: cites an issue by its number ('PR 7')" \
		"g.md:1: a bare '#1676' reads as an issue number" \
		"g.md:2: a bare '#44' reads as an issue number" \
		"g.md:3: a bare '#929' reads as an issue number"
}

@test "docs: a markdown link to nothing is named; URLs, anchors and code are not links" {
	cat >>"$T/README.md" <<-'EOF'
		Read [the old page](doc/old.md#top) and [this](#a-project), [web](https://example.org/x.md).
		`[not](a/link.md)`

		```
		[nor](this/one.md)
		```
	EOF
	mkdir -p "$T/sub"
	printf '[up](../doc/gone.md "title")\n' >"$T/sub/README.md"
	fails_with "README.md:5: links to doc/old.md#top, which is not in the tree" \
		"sub/README.md:1: links to ../doc/gone.md, which is not in the tree" \
		"README.md:5: names doc/old.md, which is not in the tree"
}

@test "docs: a doc, suite or script named but absent is named, wherever it is named" {
	printf '/* the rules: doc/guide.md, doc/rules.md\n * and doc/llmp.7 */\n' >"$T/h.c"
	printf '# run by tests/gone.bats\n# and scripts/gone.sh; not other/doc/x.md\n' >"$T/i.mk"
	fails_with "h.c:1: names doc/rules.md, which is not in the tree" \
		"h.c:2: names doc/llmp.7, which is not in the tree" \
		"i.mk:1: names tests/gone.bats, which is not in the tree" \
		"i.mk:2: names scripts/gone.sh, which is not in the tree"
}

@test "docs: a unit test missing from tests/README.md's table is named, and a row for no program" {
	sed -i 's#tests/unit/test_two#tests/unit/test_two tests/unit/test_three#' "$T/tests/unit/local.mk"
	sed -i '/`test_one`/d' "$T/tests/README.md"
	sed -i 's#^| `fuzz/fuzz_replay`#| `test_gone` | gone |\n&#' "$T/tests/README.md"
	fails_with "tests/unit/local.mk:1: builds test_one, which tests/README.md's unit-test table does not list" \
		"tests/unit/local.mk:4: builds test_three, which tests/README.md's unit-test table does not list" \
		"tests/README.md:8: lists test_gone, which tests/unit/local.mk does not build"
}
