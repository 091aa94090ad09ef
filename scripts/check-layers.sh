#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Check the layers: which part of the tree may include which, and which
# folder of runtime/ may include which.
#
#   scripts/check-layers.sh [--root DIR]   check the tree at DIR (default: this checkout)
#   scripts/check-layers.sh --publics      print the table publics (below): "HEADER PART" a line
#
# The table below is the rule runtime/README.md draws. A folder may include
# its own headers (#include "x.h") and the runtime folders its row names
# (#include "runtime/FOLDER/x.h"); nothing under runtime/ may include plugin/,
# cli/ or bench/, which sit above the library. A row can name one file, for
# a part that is a library of its own (the run record). The longest matching
# row applies; a folder of runtime/ with no row fails, so a new folder gets
# its place in the table the day it appears.
#
# Above that, the parts of the tree (the table `parts` below, drawn in
# doc/architecture.md): common/ at the bottom, the machine model
# (topology/) on it, the planner (planner/) on both, then the runtime, the
# plugin and the tools. A part's file may include its own part's headers
# and those of the parts its row names. tests/ and examples/ are not checked.
#
# The public headers (include/llmp/, the table `publics` below, which
# include/llmp/README.md draws) belong to the part that implements them: a
# part may include <llmp/NAME.h> only when it may include that part, so the
# planner cannot reach the runtime's llmp.h through the public path. A
# public header includes the others by bare name ("llmp_status.h") under
# the same rule, and a header of include/llmp/ without a row fails.
#
# A folder of runtime/ may call only the public functions (llmp_*) defined
# in its own folder and those its row names: a public header is shared by
# several folders (llmp.h is init's, comm's and coll's; llmp_job.h is job/'s
# and the run record's), so an include alone does not show a call upwards.
#
# The transport is sealed: UCX (ucp_*, ucs_*, UCP_*, UCS_*) is used in code
# only under runtime/comm/; the layers above go through comm/transport.h.
#
# Every violation is printed as FILE:LINE: what, and the exit status is 1.
set -euo pipefail

# path under runtime/ | the runtime folders it may include
layers='
comm          |
coll          | comm
device        | comm coll
ckpt          | comm coll device ckpt/format
ckpt/format   |
job           | comm coll ckpt ckpt/format
job/job_record.c | ckpt/format
job/job_record.h | ckpt/format
job/job_driver.c |
job/job_driver.h |
init          | comm coll device
'
transport_home=comm

# part | the parts it may include
parts='
common   |
topology | common
planner  | common topology
kernels  | common
runtime  | common topology planner kernels
plugin   | common topology planner
cli      | common topology planner kernels runtime
bench    | common topology planner kernels runtime
'

# public header | the part that implements it (llmp_env.h declares names only:
# common, so any part may include it)
publics='
llmp_status.h    | common
llmp_env.h       | common
llmp_dtype.h     | kernels
llmp_spec.h      | planner
llmp_ckpt_spec.h | planner
llmp_plan.h      | planner
llmp_json.h      | planner
llmp.h           | runtime
llmp_ckpt.h      | runtime
llmp_device.h    | runtime
llmp_job.h       | runtime
'

root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --publics ] && [ $# -eq 1 ]; then
	echo "$publics" | sed -n 's/^\([^ |]*\) *| *\([^ ]*\) *$/\1 \2/p'
	exit 0
fi
if [ "${1:-}" = --root ]; then
	[ -d "${2:-}" ] || { echo "check-layers.sh: --root needs a directory, got '${2:-}'" >&2; exit 2; }
	root=$(cd "$2" && pwd)
	shift 2
fi
[ $# -eq 0 ] || { echo "check-layers.sh: unknown argument '$1' (usage: check-layers.sh [--root DIR])" >&2; exit 2; }
[ -d "$root/runtime" ] || { echo "check-layers.sh: $root has no runtime/ folder" >&2; exit 2; }
command -v gcc >/dev/null || { echo "check-layers.sh: gcc not found (it strips comments for the UCX check)" >&2; exit 2; }
cd "$root"

declare -A allowed
while IFS='|' read -r path targets; do
	path=$(echo "$path" | tr -d ' ')
	[ -n "$path" ] || continue
	allowed[$path]=$(echo "$targets" | xargs)
done <<<"$layers"

# The row of a file: its longest path prefix (file, then folders upwards).
row_of() {
	local rel=${1#runtime/}
	while :; do
		if [ -n "${allowed[$rel]+x}" ]; then
			echo "$rel"
			return
		fi
		case $rel in
		*/*) rel=${rel%/*} ;;
		*) return 1 ;;
		esac
	done
}

bad=0
complain() {
	echo "$1" >&2
	bad=$((bad + 1))
}

# The includes of a file, as LINE:PATH, for every #include "..." it has.
includes_of() {
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$1" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/' || true
}

declare -A part_allowed
while IFS='|' read -r part targets; do
	part=$(echo "$part" | tr -d ' ')
	[ -n "$part" ] || continue
	part_allowed[$part]=$(echo "$targets" | xargs)
done <<<"$parts"

declare -A public_part
while IFS='|' read -r header part; do
	header=$(echo "$header" | tr -d ' ')
	[ -n "$header" ] || continue
	public_part[$header]=$(echo "$part" | xargs)
done <<<"$publics"

# The public headers a file includes, as LINE:NAME: <llmp/NAME.h> or <NAME.h>
# for a NAME of include/llmp/ (as installed users may write it).
public_includes_of() {
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' "$1" |
		sed -n 's/^\([0-9]*\):[^<]*<\(llmp\/\)\{0,1\}\([^>/]*\)>.*/\1:\3/p' |
		while IFS=: read -r line name; do
			[ -f "include/llmp/$name" ] && echo "$line:$name"
		done || true
}

# Whether part $1 may include part $2.
may_include() {
	[ "$1" = "$2" ] && return 0
	local t
	for t in ${part_allowed[$1]:-}; do
		[ "$t" = "$2" ] && return 0
	done
	return 1
}

npublic=0
if [ -d include/llmp ]; then
	while IFS= read -r f; do
		name=${f##*/}
		if [ -z "${public_part[$name]+x}" ]; then
			complain "$f: has no row in scripts/check-layers.sh's publics: say which part implements it"
			continue
		fi
		npublic=$((npublic + 1))
		owner=${public_part[$name]}
		while IFS=: read -r line target; do
			[ -f "include/llmp/$target" ] && [ -n "${public_part[$target]+x}" ] || continue
			may_include "$owner" "${public_part[$target]}" ||
				complain "$f:$line: includes $target, the public header of ${public_part[$target]}/, but $owner/ (whose header this is) may include only: ${part_allowed[$owner]:-its own headers} (scripts/check-layers.sh)"
		done < <(includes_of "$f")
	done < <(find include/llmp -maxdepth 1 -type f -name '*.h' | sort)
fi

nparts=0
for part in "${!part_allowed[@]}"; do
	[ -d "$part" ] || continue
	while IFS= read -r f; do
		nparts=$((nparts + 1))
		while IFS=: read -r line target; do
			case $target in
			*/*) ;;
			*) continue ;; # a header of the file's own folder
			esac
			to=${target%%/*}
			[ "$to" = "$part" ] && continue
			ok=no
			for t in ${part_allowed[$part]}; do
				[ "$t" = "$to" ] && ok=yes
			done
			[ $ok = yes ] ||
				complain "$f:$line: includes $target, but $part/ may include only: ${part_allowed[$part]:-its own headers} (scripts/check-layers.sh; doc/architecture.md has the parts)"
		done < <(includes_of "$f")
		while IFS=: read -r line name; do
			owner=${public_part[$name]:-}
			[ -n "$owner" ] || continue # a header without a row is named above
			may_include "$part" "$owner" ||
				complain "$f:$line: includes <llmp/$name>, the public header of $owner/, but $part/ may include only: ${part_allowed[$part]:-its own headers} (scripts/check-layers.sh; include/llmp/README.md says who implements it)"
		done < <(public_includes_of "$f")
	done < <(find "$part" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)
done
for d in */; do
	d=${d%/}
	case $d in tests | examples | build* | _* | doc | etc | include | scripts | packaging | python | m4 | autom4te.cache | build-aux) continue ;; esac
	[ -n "${part_allowed[$d]+x}" ] && continue
	# A build tree (distcheck's _build, an out-of-tree build under any name) holds generated C.
	[ -z "$(find "$d" -maxdepth 2 -name config.status -print -quit)" ] || continue
	if find "$d" -type f \( -name '*.c' -o -name '*.h' \) | grep -q .; then
		complain "$d/ holds C but has no row in scripts/check-layers.sh's parts: say which parts it may include"
	fi
done

mapfile -t files < <(find runtime -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)

# Whether runtime row $1 may call what row $2 defines: its own, a library of
# its own folder (a file's row, as job/ uses job/job_record.c), or a row its
# row names.
folder_may() {
	[ "$1" = "$2" ] && return 0
	case $2 in */*.c) [ "$1" = "${2%/*}" ] && return 0 ;; esac
	local t
	for t in ${allowed[$1]:-}; do
		[ "$t" = "$2" ] || [ "$t" = "${2%/*.c}" ] && return 0
	done
	return 1
}

# The row of each public function the runtime defines: a line of a .c file
# that starts with its type and names llmp_x( without ending in ';'.
declare -A defined_in
for f in "${files[@]}"; do
	case $f in *.c) ;; *) continue ;; esac
	row=$(row_of "$f") || continue
	while IFS= read -r fn; do
		defined_in[$fn]=$row
	done < <(grep -E '^[a-z][a-z0-9_ ]*[ *]llmp_[a-z0-9_]+\(' "$f" | grep -v ';[[:space:]]*$' |
		sed -E 's/^[^(]*[ *](llmp_[a-z0-9_]+)\(.*/\1/' || true)
done
for f in "${files[@]}"; do
	if ! row=$(row_of "$f"); then
		complain "$f: runtime/$(dirname "${f#runtime/}") has no row in scripts/check-layers.sh's table: say which layers it may include"
		continue
	fi
	while IFS=: read -r line target; do
		case $target in
		runtime/*)
			folder=${target#runtime/}
			folder=${folder%/*}
			[ "$folder" = "$row" ] && continue
			ok=no
			for t in ${allowed[$row]}; do
				[ "$t" = "$folder" ] && ok=yes
			done
			[ $ok = yes ] ||
				complain "$f:$line: includes $target, but runtime/$row/ may include only: ${allowed[$row]:-its own headers} (scripts/check-layers.sh; runtime/README.md has the layers)"
			;;
		plugin/* | cli/* | bench/*)
			complain "$f:$line: includes $target: the runtime must not include ${target%%/*}/, which sits above libllmp"
			;;
		*../*)
			complain "$f:$line: includes $target: name another folder's header from the root (\"runtime/FOLDER/x.h\"), not with .."
			;;
		esac
	done < <(includes_of "$f")
	# A public function is declared in a header several folders share (llmp.h): call only those of
	# the folders the row names. Comments may name any; gcc strips them without expanding anything.
	while IFS= read -r fn; do
		home=${defined_in[$fn]:-}
		[ -n "$home" ] && ! folder_may "$row" "$home" || continue
		where=runtime/$home
		case $home in *.c) ;; *) where=$where/ ;; esac
		complain "$f: calls $fn, defined in $where, but runtime/$row/ may use only: ${allowed[$row]:-its own folder} (scripts/check-layers.sh; runtime/README.md has the layers)"
	done < <(gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null |
		grep -oE '\bllmp_[a-z0-9_]+[[:space:]]*\(' | tr -d ' \t(' | sort -u || true)
	if [ "$row" != "$transport_home" ] && [ "${row%%/*}" != "$transport_home" ]; then
		# Comments may name UCX; code may not. gcc strips the comments without expanding anything.
		while IFS= read -r hit; do
			hit=${hit%%[[:space:](]*}
			complain "$f: calls UCX directly ($hit): above runtime/$transport_home/, use comm/transport.h"
		done < <(gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null |
			grep -oE '\b(ucp|ucs)_[a-z_]+[[:space:]]*\(|\bUC[PS]_[A-Z_]+' | sort -u || true)
	fi
done

if [ "$bad" -gt 0 ]; then
	echo "check-layers.sh: $bad violation(s) of the layers" >&2
	exit 1
fi
echo "check-layers.sh: $nparts files of ${#part_allowed[@]} parts keep their parts' layers, $npublic public headers theirs; ${#files[@]} files of runtime/ keep their layers"
