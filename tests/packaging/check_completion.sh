#!/usr/bin/env bash
# check_completion.sh SCRIPT MAFSBX MAFSBXFS
#
# The bash completion script (contrib/completion/mafsbx.bash):
#  1. its syntax (bash -n);
#  2. its functions driven as bash drives them (COMP_LINE, COMP_POINT, and
#     COMP_WORDS split at blanks, '=' and ':' as bash splits them): the
#     commands, each command's options, option values, mafsbxfs's -o list
#     (after a comma and an '=' too), nothing after exec's NAME;
#  3. the option lists agree with the programs: every option each
#     `mafsbx COMMAND --help` lists is completed and nothing else, and every
#     -o option `mafsbxfs --help` lists is completed;
#  4. sandbox names, from the real engine: a sandbox made with the built
#     mafsbx is offered after `mafsbx exec` and `mafsbx dispose`.
# Part 4 skips (77) when no engine answers, unless MAFSBX_REQUIRE_ENGINE=1.
set -u
script=$1 cli=$2 daemon=$3
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

bash -n "$script" || { echo "FAIL: bash -n $script" >&2; exit 1; }

# The built programs under the names the script completes.
work=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-completion.XXXXXX") || exit 1
name=
cleanup() {
	[ -n "$name" ] && "$cli" dispose "$name" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
ln -s "$(readlink -f "$cli")" "$work/mafsbx"
ln -s "$(readlink -f "$daemon")" "$work/mafsbxfs"
PATH=$work:$PATH

# shellcheck source=/dev/null
. "$script" || { echo "FAIL: sourcing $script" >&2; exit 1; }

# complete LINE: run the registered function with the cursor at the end of
# LINE; prints COMPREPLY sorted, one a line.
complete_line() {
	local line=$1 w run=
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMP_WORDS=()
	# bash's split: blanks, and each run of '=' or ':' is a word of its own
	for w in $line; do
		while [[ $w =~ ^([^=:]*)([=:]+)(.*)$ ]]; do
			[ -n "${BASH_REMATCH[1]}" ] && COMP_WORDS+=("${BASH_REMATCH[1]}")
			COMP_WORDS+=("${BASH_REMATCH[2]}")
			w=${BASH_REMATCH[3]}
		done
		[ -n "$w" ] && COMP_WORDS+=("$w")
	done
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	run=$(complete -p "${COMP_WORDS[0]}" 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
	[ -n "$run" ] || { echo "no completion registered for ${COMP_WORDS[0]}"; return; }
	COMPREPLY=()
	"$run" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}" | sort -u | sed '/^$/d'
}

# expect LINE WORD...: the completions of LINE are exactly WORD...
expect() {
	local line=$1
	shift
	local want got
	want=$(printf '%s\n' "$@" | sort -u | sed '/^$/d')
	got=$(complete_line "$line")
	[ "$got" = "$want" ] || bad "'$line': got [$(echo $got)], want [$(echo $want)]"
}

# has LINE WORD...: the completions of LINE include every WORD
has() {
	local line=$1 got w
	shift
	got=$(complete_line "$line")
	for w in "$@"; do
		grep -qxF -- "$w" <<<"$got" || bad "'$line': '$w' is not offered (got [$(echo $got)])"
	done
}

# 2. driven as bash drives it
expect "mafsbx " acquire exec dispose mkimage reap ls fingerprint thaw help
expect "mafsbx e" exec
expect "mafsbx --v" --version
expect "mafsbx help f" fingerprint
expect "mafsbx exec --inter" --interactive
expect "mafsbx exec --de" --detach
has "mafsbx exec -" -w -e -u -i -d -t --timeout -H --context
expect "mafsbx acquire --cap files_" files_in files_out files_delete
expect "mafsbx acquire --isolation-scope c" conversation call
expect "mafsbx ls --format " table json
expect "mafsbx ls --q" --quiet
expect "mafsbx exec box sh -" ""
# exec -e KEY takes KEY from here: this shell's variable names; --env-file: a file
export MAFSBX_COMPLETION_VAR=1
expect "mafsbx exec -e MAFSBX_COMPLETION_V" MAFSBX_COMPLETION_VAR
expect "mafsbx exec box --env MAFSBX_COMPLETION_V" MAFSBX_COMPLETION_VAR
expect "mafsbx acquire --env MAFSBX_COMPLETION_V" ""
expect "mafsbx exec --env-file ${script%/*}/mafsbx.ba" "${script%/*}/mafsbx.bash"
expect "mafsbx exec box -- " ""
expect "mafsbxfs -o pl" placement= plane=
expect "mafsbxfs -o plane=lo" local
expect "mafsbxfs -o plane=" =auto =local =engine
expect "mafsbxfs -o ro,loglevel=i" info
expect "mafsbxfs -o allow_other,max_th" allow_other,max_threads=
has "mafsbxfs -" -o -f -d -s --help --version

# 3. the lists agree with the programs' --help
# The options of a help text: the first column of its "Options:" lines.
help_options() {
	awk '/^Options:/ { on = 1; next } on && /^$/ { on = 0 } on' |
		sed -E 's/^ +//; s/ {2,}.*//' | tr ',' ' ' | tr ' ' '\n' | grep -E '^--?[a-zA-Z][-a-zA-Z]*$' | sort -u
}
for cmd in acquire exec dispose mkimage reap ls fingerprint thaw; do
	from_help=$("$cli" "$cmd" --help | help_options)
	[ -n "$from_help" ] || { bad "mafsbx $cmd --help lists no options"; continue; }
	offered=$(complete_line "mafsbx $cmd -" | grep -E '^--?[a-zA-Z]')
	[ "$from_help" = "$offered" ] ||
		bad "mafsbx $cmd: --help lists [$(echo $from_help)], the completion offers [$(echo $offered)]"
done
fs_help=$("$daemon" --help | grep -oE -- '-o [a-z_]+' | sed 's/^-o //' | sort -u)
fs_offered=$(complete_line "mafsbxfs -o " | sed 's/=$//' | sort -u)
[ -n "$fs_help" ] || bad "mafsbxfs --help lists no -o options"
[ "$fs_help" = "$fs_offered" ] ||
	bad "mafsbxfs: --help lists -o [$(echo $fs_help)], the completion offers [$(echo $fs_offered)]"

# 4. sandbox names from the real engine
if ! "$cli" ls -q >/dev/null 2>&1; then
	if [ "${MAFSBX_REQUIRE_ENGINE:-0}" = 1 ]; then
		bad "no engine answers"
		exit 1
	fi
	[ "$fail" = 0 ] || exit 1
	echo "SKIP: no engine answers (parts 1-3 passed)" >&2
	exit 77
fi
image=${MAFSBX_IMAGE:-mafsbx/busybox:latest}
scope=completion-$$-$(date +%s)
name=$("$cli" acquire --scope "$scope" --thread t --agent a --kind k --image "$image") ||
	{ bad "acquire failed"; exit 1; }
prefix=${name:0:22}
has "mafsbx exec $prefix" "$name"
has "mafsbx exec -e A=1 -w /tmp $prefix" "$name"
has "mafsbx dispose $name $prefix" "$name"
expect "mafsbx exec $name " ""
has "mafsbx fingerprint $prefix" "$name"

[ "$fail" = 0 ] && echo "completion: all checks passed"
exit "$fail"
