# bash completion for mafsbx (the helper CLI) and mafsbxfs (the daemon).
#
# mafsbx: the commands, each command's options (the lists below are
# checked against `mafsbx COMMAND --help` by tests/packaging), the values
# of options that take a fixed set, and sandbox names where a command takes
# one (exec, dispose, fingerprint), from `mafsbx ls -q` on the engine the
# command line names (-H/--host, --context), bounded to 3 seconds.
# mafsbxfs: the -o options (after a comma too) and the mount point.
#
# Installed as <datadir>/bash-completion/completions/mafsbx (and a link
# named mafsbxfs), where bash-completion loads it on first use; it needs
# nothing from bash-completion itself, so `source` works as well.

_mafsbx_commands="acquire exec dispose mkimage reap ls fingerprint thaw help"

# Each command's options, as its --help lists them (engine options and -h
# are added below for every command).
_mafsbx_opts_acquire="--scope --thread --agent --call --kind --image --image-id --output --egress-allow --work-dir --cap --env --label --isolation-scope --pull-timeout --json"
_mafsbx_opts_exec="-w --cwd --workdir -e --env --env-file -u --user -i --interactive -d --detach -t --tty --timeout --on-timeout"
_mafsbx_opts_dispose="--scope --thread --agent --call --kind --id"
_mafsbx_opts_mkimage="-t --tag --egress-proxy --proxy-program --busybox"
_mafsbx_opts_reap="--older-than --scope --dry-run --json -v --verbose"
_mafsbx_opts_ls="--scope -q --quiet --format --json"
_mafsbx_opts_fingerprint="--json -o --output --diff --strict --max-entries --max-hash-bytes --max-ms --max-depth"
_mafsbx_opts_thaw="--rundir --json -v --verbose"
_mafsbx_opts_engine="-H --host --context -h --help"

# Options that take an argument (the word after them is that argument).
_mafsbx_takes_arg=" --scope --thread --agent --call --kind --image --image-id --output --egress-allow --work-dir --cap --env --label --isolation-scope --pull-timeout -w --cwd --workdir -e --env-file -u --user --timeout --on-timeout --id -t --tag --proxy-program --busybox --older-than --format -o --diff --max-entries --max-hash-bytes --max-ms --max-depth --rundir -H --host --context "

# The command line up to the cursor split at blanks only (bash also splits
# COMP_WORDS at '=' and ':', which would cut "-e K=V" or "-o plane=auto"
# apart): _mafsbx_w (the words), _mafsbx_cword (the current one's index).
_mafsbx_words()
{
	local line=${COMP_LINE:0:COMP_POINT}
	read -ra _mafsbx_w <<<"$line"
	[[ -z $line || $line == *[[:blank:]] ]] && _mafsbx_w+=("")
	_mafsbx_cword=$((${#_mafsbx_w[@]} - 1))
}

# COMPREPLY holds whole words; bash replaces only its own current word (the
# part after the last '=' or ':'): drop what comes before that part.
_mafsbx_trim()
{
	local full=${_mafsbx_w[_mafsbx_cword]} word=${COMP_WORDS[COMP_CWORD]}
	[[ $word == "=" || $word == ":" ]] && word=${full: -1}
	local lead=${full%"$word"}
	[[ -n $lead && $full == *"$word" ]] || return 0
	local i
	for i in "${!COMPREPLY[@]}"; do
		COMPREPLY[i]=${COMPREPLY[i]#"$lead"}
	done
}

# The sandboxes on the engine that the command line names.
_mafsbx_names()
{
	local -a engine=()
	local i
	for ((i = 1; i < _mafsbx_cword; i++)); do
		case ${_mafsbx_w[i]} in
		-H | --host | --context)
			engine+=("${_mafsbx_w[i]}" "${_mafsbx_w[i + 1]}")
			;;
		esac
	done
	timeout 3 "${_mafsbx_w[0]}" ls -q "${engine[@]}" 2>/dev/null
}

_mafsbx()
{
	local -a _mafsbx_w
	local _mafsbx_cword
	COMPREPLY=()
	_mafsbx_complete
	_mafsbx_trim
}

_mafsbx_complete()
{
	_mafsbx_words
	local cur=${_mafsbx_w[_mafsbx_cword]} prev=
	((_mafsbx_cword > 0)) && prev=${_mafsbx_w[_mafsbx_cword - 1]}

	# the command: the first word that is not a global option
	local cmd= i operands=0 dashdash=0
	for ((i = 1; i < _mafsbx_cword; i++)); do
		local w=${_mafsbx_w[i]}
		if [[ -z $cmd ]]; then
			[[ $w == -* ]] || cmd=$w
			continue
		fi
		if [[ $w == -- ]]; then
			dashdash=1
		elif ((dashdash)) || [[ $w != -* ]]; then
			# an operand, unless it is the argument of the option before it
			local before=${_mafsbx_w[i - 1]}
			[[ $i -gt 1 && $before == -* && $_mafsbx_takes_arg == *" $before "* &&
				! ($cmd == exec && $before == -t) ]] || ((operands++))
		fi
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$_mafsbx_commands" -- "$cur")
		fi
		return 0
	fi
	if [[ $cmd == help ]]; then
		((operands == 0)) && mapfile -t COMPREPLY < <(compgen -W "${_mafsbx_commands% help}" -- "$cur")
		return 0
	fi
	# exec: everything after NAME's command starts is the guest's
	if [[ $cmd == exec ]] && { ((dashdash)) || ((operands >= 2)); }; then
		return 0
	fi

	# the argument of an option
	case $prev in
	--cap)
		mapfile -t COMPREPLY < <(compgen -W "exec files_in files_out files_delete host_tools reclaim" -- "$cur")
		return 0
		;;
	--isolation-scope)
		mapfile -t COMPREPLY < <(compgen -W "conversation call" -- "$cur")
		return 0
		;;
	--format)
		mapfile -t COMPREPLY < <(compgen -W "table json" -- "$cur")
		return 0
		;;
	-H | --host)
		mapfile -t COMPREPLY < <(compgen -W "unix:// tcp:// ssh://" -- "$cur")
		compopt -o nospace 2>/dev/null
		return 0
		;;
	--busybox | --proxy-program | --diff | --rundir | --env-file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return 0
		;;
	-e | --env)
		# exec -e KEY takes KEY's value from here: offer this shell's variable names
		if [[ $cmd == exec && $cur != *=* ]]; then
			mapfile -t COMPREPLY < <(compgen -e -- "$cur")
			return 0
		fi
		;;
	-o | --output)
		if [[ $cmd == fingerprint ]]; then
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			return 0
		fi
		;;
	esac
	if [[ $_mafsbx_takes_arg == *" $prev "* && $prev == -* ]]; then
		# -t is exec's --tty (no argument) but mkimage's --tag
		if ! [[ $cmd == exec && $prev == -t ]]; then
			return 0
		fi
	fi

	if [[ $cur == -* ]]; then
		local opts_var=_mafsbx_opts_$cmd
		mapfile -t COMPREPLY < <(compgen -W "${!opts_var} $_mafsbx_opts_engine" -- "$cur")
		return 0
	fi
	case $cmd in
	exec | fingerprint)
		((operands == 0)) && mapfile -t COMPREPLY < <(compgen -W "$(_mafsbx_names)" -- "$cur")
		[[ $cmd == fingerprint && $cur == */* ]] && mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		;;
	dispose)
		mapfile -t COMPREPLY < <(compgen -W "$(_mafsbx_names)" -- "$cur")
		;;
	esac
	return 0
}

# mafsbxfs: its own -o options and libfuse's that apply (mafsbxfs --help).
_mafsbxfs_o="host= context= image= scope= attr_timeout= entry_timeout= max_read= max_write= exec_timeout= max_exec_timeout= pull_timeout= pids_limit= cap_drop_all memory= cpus= egress_proxy_image= egress_outbound_network= plane= frozen_reads burst_ms= listing= uid= gid= umask= loglevel= max_requests= max_open_per_user= max_calls_per_user= reply_budget= spool_budget= max_threads= max_idle_threads= clone_fd allow_other allow_root default_permissions auto_unmount fsname= subtype= debug"

_mafsbxfs()
{
	local -a _mafsbx_w
	local _mafsbx_cword
	COMPREPLY=()
	_mafsbxfs_complete
	_mafsbx_trim
}

_mafsbxfs_complete()
{
	_mafsbx_words
	local cur=${_mafsbx_w[_mafsbx_cword]} prev=
	((_mafsbx_cword > 0)) && prev=${_mafsbx_w[_mafsbx_cword - 1]}
	if [[ $prev == -o ]]; then
		# a comma-separated list: complete its last item
		local head= item=$cur
		if [[ $cur == *,* ]]; then
			head=${cur%,*},
			item=${cur##*,}
		fi
		case $item in
		plane=*) mapfile -t COMPREPLY < <(compgen -P "$head" -W "plane=auto plane=local plane=engine" -- "$item") ;;
		loglevel=*) mapfile -t COMPREPLY < <(compgen -P "$head" -W "loglevel=error loglevel=warning loglevel=info loglevel=debug" -- "$item") ;;
		*=*) ;;
		*) mapfile -t COMPREPLY < <(compgen -P "$head" -W "$_mafsbxfs_o" -- "$item") ;;
		esac
		compopt -o nospace 2>/dev/null
		return 0
	fi
	if [[ $prev == -H || $prev == --host || $prev == --context ]]; then
		return 0
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "-o -f -d -s -H --host --context -h --help -V --version" -- "$cur")
		return 0
	fi
	mapfile -t COMPREPLY < <(compgen -d -- "$cur")
	return 0
}

complete -F _mafsbx mafsbx
complete -F _mafsbxfs mafsbxfs
