#!/usr/bin/env bash
# check_docs.sh MAFSBXFS MAFSBX MAN_MAFSBXFS MAN_MAFSBX USAGE_MD
#
# --help, the man pages and doc/usage.md agree:
#  1. every -o option `mafsbxfs --help` lists is in mafsbxfs(1) and in
#     doc/usage.md's options table, and neither documents a -o option the
#     daemon does not list;
#  2. where --help gives a number as an option's default, mafsbxfs(1) gives
#     the same number in that option's entry and usage.md in its table row;
#  3. every option each `mafsbx COMMAND --help` lists is in mafsbx(1).
set -u
daemon=$1 cli=$2 man_fs=$3 man_cli=$4 usage=$5
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# A man page as plain text for grepping: "\-" as "-", "\ " as " ", no font escapes.
plain() { sed -e 's/\\-/-/g; s/\\ / /g; s/\\f[BIRP]//g; s/\\&//g; s/\\c$//' "$1"; }
plain "$man_fs" >"${TMPDIR:-/tmp}/check_docs.$$.fs"
plain "$man_cli" >"${TMPDIR:-/tmp}/check_docs.$$.cli"
trap 'rm -f "${TMPDIR:-/tmp}/check_docs.$$".*' EXIT
fs_text=${TMPDIR:-/tmp}/check_docs.$$.fs
cli_text=${TMPDIR:-/tmp}/check_docs.$$.cli

help=$("$daemon" --help) || { echo "FAIL: mafsbxfs --help" >&2; exit 1; }
help_opts=$(grep -oE -- '-o [a-z_]+' <<<"$help" | sed 's/^-o //' | sort -u)
[ -n "$help_opts" ] || { echo "FAIL: mafsbxfs --help lists no -o option" >&2; exit 1; }

# 1. the -o options, both ways
table=$(grep -E '^\| `-' "$usage")
for o in $help_opts; do
	grep -qE -- "-o ?$o([= ]|$)|-o ?$o\\b" "$fs_text" || bad "mafsbxfs(1) does not document -o $o"
	grep -qE -- "\`-o $o([=\`])" <<<"$table" || bad "doc/usage.md's options table lacks -o $o"
done
for o in $(grep -oE -- '^\.B[I]? -o ?[a-z_]+' "$fs_text" | sed -E 's/^\.BI? -o ?//' | sort -u); do
	grep -qx -- "$o" <<<"$help_opts" || bad "mafsbxfs(1) documents -o $o, which --help does not list"
done
for o in $(grep -oE -- '`-o [a-z_]+' <<<"$table" | sed 's/^`-o //' | sort -u); do
	grep -qx -- "$o" <<<"$help_opts" || bad "doc/usage.md documents -o $o, which --help does not list"
done

# 2. numeric defaults: "-o NAME=... (default N[unit]" in --help, possibly on
#    the next line; a size (64M) may read "64 MiB" in the man page
while IFS=$'\t' read -r o d; do
	[ -n "$o" ] || continue
	num=${d%%[!0-9]*}
	unit=${d#"$num"}
	n=$num
	[ -z "$unit" ] || n="$num ?$unit(i?B)?"
	# the man page entry: from the .TP naming the option to the next .TP/.SS/.SH
	entry=$(awk -v o="$o" '
		/^\.(TP|SS|SH)/ { if (on) exit; pending = 1; next }
		pending { pending = 0; if (index($0, "-o " o "=") || index($0, "-o " o " ") || $0 ~ ("-o " o "$")) on = 1 }
		on' "$fs_text")
	grep -qE "[Dd]efault:? ($n\\b|[^.]*\\b$n\\b)" <<<"$entry" ||
		bad "mafsbxfs(1): -o $o: --help says default $d; the page says: $(tr '\n' ' ' <<<"$entry" | cut -c1-200)"
	row=$(grep -E -- "\`-o $o[=\`]" <<<"$table" | head -n1)
	[ -z "$row" ] || grep -qE "\| *\`?$n\\b" <<<"$row" ||
		bad "doc/usage.md: -o $o: --help says default $d; the table row: $row"
done < <(awk '
	/^ +-o [a-z_]+=/ { match($0, /-o [a-z_]+/); o = substr($0, RSTART + 3, RLENGTH - 3) }
	/^ +-o / && !/^ +-o [a-z_]+=/ { o = "" }
	o != "" && match($0, /\(default [0-9]+[KMGT]?/) { print o "\t" substr($0, RSTART + 9, RLENGTH - 9); o = "" }
' <<<"$help")

# 3. the CLI's options in mafsbx(1)
for cmd in acquire exec dispose mkimage reap ls fingerprint thaw; do
	opts=$("$cli" "$cmd" --help | awk '/^Options:/ { on = 1; next } on && /^$/ { on = 0 } on' |
		sed -E 's/^ +//; s/ {2,}.*//' | tr ',' ' ' | tr ' ' '\n' | grep -E '^--[a-z][-a-z]*$' | sort -u)
	for o in $opts; do
		grep -qE -- "(^|[^-a-z])$o([^-a-z]|$)" "$cli_text" || bad "mafsbx(1) does not document $cmd $o"
	done
done

[ "$fail" = 0 ] && echo "--help, the man pages and doc/usage.md agree"
exit "$fail"
