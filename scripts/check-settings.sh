#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Check that the table of settings (cli/settings.c, printed by
# `llmp info --settings`) names everything the code reads, and nothing else:
#
#   scripts/check-settings.sh [--root DIR] LLMP   the tree at DIR (default: this checkout),
#                                                 the table of the llmp binary LLMP
#
# The code is the C and Python of runtime/ plugin/ cli/ common/ kernels/
# topology/ planner/ include/ and python/llmp/ (not tests/, bench/ or the
# table itself). It reads:
#   - every LLMP_ENV_* macro of include/llmp/llmp_env.h that code uses;
#   - every string literal "LLMP_..." that is not a name of the API (an
#     identifier of include/llmp/'s other headers, LLMP_ERR_ARG, LLMP_FLOAT32...);
#   - every name a getenv-like call reads by literal (getenv, spank_getenv,
#     the plugin's step_env, Python's os.environ.get / os.environ[...]);
#   - every plugstack.conf key plugin/site.c parses.
# Each must be a row of the table; each row must still be read (a literal or
# a used macro), and each LLMP_* row and plugstack key must appear in the man
# pages (doc/*.1 doc/*.3 doc/*.8; python/README.md for the Python package's). LLMP_<DIM>_SIZE and LLMP_<DIM>_RANK are
# made from the axis names (plugin/task_env.c), documented as LLMP_ DIM _SIZE:
# they are in the table, and exempt from the last two checks.
#
# Every problem is printed as one line; the exit status is 1 if any.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --root ]; then
	[ -d "${2:-}" ] || { echo "check-settings.sh: --root needs a directory, got '${2:-}'" >&2; exit 2; }
	root=$(cd "$2" && pwd)
	shift 2
fi
[ $# -eq 1 ] || { echo "usage: check-settings.sh [--root DIR] LLMP" >&2; exit 2; }
llmp=$1
case $llmp in */*) llmp=$(cd "$(dirname "$llmp")" && pwd)/$(basename "$llmp") ;; esac # before the cd below
command -v gcc >/dev/null || { echo "check-settings.sh: gcc not found (it strips the headers' comments)" >&2; exit 2; }
cd "$root"

json=$("$llmp" info --settings --format json) || { echo "check-settings.sh: $llmp info --settings failed" >&2; exit 2; }
table_of() { # KIND: the table's names of that kind, one a line
	grep -oE '"name":"[^"]*","kind":"'"$1"'"' <<<"$json" | sed 's/^"name":"\([^"]*\)".*/\1/' | sort -u
}
env_rows=$(table_of environment)
site_rows=$(table_of plugstack)
[ -n "$env_rows" ] && [ -n "$site_rows" ] || { echo "check-settings.sh: no table in $llmp's output" >&2; exit 2; }

code=()
for d in runtime plugin cli common kernels topology planner include; do
	[ -d "$d" ] && mapfile -t -O ${#code[@]} code < <(find "$d" -type f \( -name '*.c' -o -name '*.h' \) ! -path cli/settings.c | sort)
done
[ -d python/llmp ] && mapfile -t -O ${#code[@]} code < <(find python/llmp -type f -name '*.py' | sort)
[ ${#code[@]} -gt 0 ] || { echo "check-settings.sh: no code under $root" >&2; exit 2; }

# The macros of llmp_env.h and their names (LLMP_ENV_TIMEOUT "LLMP_TIMEOUT"), the prefix aside;
# the header itself reads nothing: what counts is the code that uses a macro.
env_h=include/llmp/llmp_env.h
reading=()
for f in "${code[@]}"; do
	[ "$f" = "$env_h" ] || reading+=("$f")
done
macros=$(sed -n 's/^#define \(LLMP_ENV_[A-Z0-9_]*\) "\(LLMP_[A-Z0-9_]*\)".*/\1 \2/p' "$env_h")
# The API's identifiers: every LLMP_ word of the other public headers, comments stripped.
api=$(for h in include/llmp/*.h; do
	[ "$h" = "$env_h" ] || gcc -fpreprocessed -dD -E -P -x c "$h" 2>/dev/null
done | grep -oE '\bLLMP_[A-Z0-9_]+\b' | sort -u)

dims='^LLMP_(TP|CP|EP|DP|PP|EXPERT_TP|EXPERT_DP)_(SIZE|RANK)$'
bad=0
complain() {
	echo "$1" >&2
	bad=$((bad + 1))
}
in_rows() { grep -qxF "$1" <<<"$2"; }

# What the code reads, as "NAME FILE" lines.
read_names=$(
	while read -r macro name; do
		[ "$name" = LLMP_ ] && continue
		f=$(grep -lw "$macro" "${reading[@]}" | head -1 || true)
		[ -z "$f" ] || echo "$name $f"
	done <<<"$macros"
	grep -oHE '"LLMP_[A-Z0-9_]+"' "${reading[@]}" | sed 's/^\([^:]*\):"\(.*\)"$/\2 \1/' |
		grep -vE '^LLMP_ENV_' | while read -r name f; do
		in_rows "$name" "$api" || echo "$name $f"
	done
	grep -oHE '\b(getenv|secure_getenv|spank_getenv|step_env|step_env_whole)\((sp, *)?"[A-Za-z_][A-Za-z0-9_]*"' \
		"${reading[@]}" | sed 's/^\([^:]*\):.*"\([^"]*\)"$/\2 \1/'
	grep -oHE 'environ(\.get\(|\[)"[A-Za-z_][A-Za-z0-9_]*"' "${reading[@]}" |
		sed 's/^\([^:]*\):.*"\([^"]*\)"$/\2 \1/' || true # none at all is no error
)
while read -r name f; do
	[ -n "$name" ] || continue
	case $name in *_) continue ;; esac # a prefix (SLURM_SPANK_...), not a name
	in_rows "$name" "$env_rows" ||
		complain "$f reads $name, which the table of settings lacks: give it a row in cli/settings.c (llmp info --settings)"
done < <(sort -u -k1,1 <<<"$read_names")

# Every row still read by something, and documented.
mans=(doc/*.1 doc/*.3 doc/*.8 python/README.md)
while read -r name; do
	[[ $name =~ $dims ]] && continue
	grep -q "^$name " <<<"$read_names" || grep -qF "\"$name\"" "${reading[@]}" ||
		complain "the table of settings has $name, which no code reads: remove its row from cli/settings.c"
	case $name in LLMP_*)
		grep -qw -- "$name" "${mans[@]}" ||
			complain "the table of settings has $name, which no man page names (doc/llmp.1, doc/llmp.3, doc/llm_parallel.8; python/README.md)"
		;;
	esac
done <<<"$env_rows"

# plugstack.conf: the keys plugin/site.c parses, against the table's.
site_keys=$(grep -oE 'is_key\(arg, klen, "[a-z_]+"\)|\{ "[a-z_]+", &site->' plugin/site.c | grep -oE '"[a-z_]+"' | tr -d '"' | sort -u)
while read -r key; do
	in_rows "$key" "$site_rows" ||
		complain "plugin/site.c reads the plugstack argument $key=, which the table of settings lacks: give it a row in cli/settings.c"
done <<<"$site_keys"
while read -r key; do
	in_rows "$key" "$site_keys" ||
		complain "the table of settings has the plugstack argument $key=, which plugin/site.c does not read"
	grep -qE "^\.B[IR]? \\\\?\"?$key=|[ ,]$key=" doc/llm_parallel.8 ||
		complain "the table of settings has the plugstack argument $key=, which doc/llm_parallel.8 does not name"
done <<<"$site_rows"

if [ "$bad" -gt 0 ]; then
	echo "check-settings.sh: $bad problem(s) with the table of settings" >&2
	exit 1
fi
echo "check-settings.sh: $(wc -l <<<"$env_rows") variables and $(wc -l <<<"$site_rows") plugstack arguments: the table names what ${#code[@]} files read, and the man pages name them"
