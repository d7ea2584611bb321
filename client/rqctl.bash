# bash completion for rqctl(1)

# Process IDs, or with "task" thread IDs, from /proc.
_rqctl_ids()
{
	local ids
	if [[ $1 == task ]]; then
		ids=(/proc/[0-9]*/task/[0-9]*)
	else
		ids=(/proc/[0-9]*)
	fi
	printf '%s\n' "${ids[@]##*/}"
}

# Cgroup directories as paths in the cpu hierarchy: below the v1 cpu controller's
# mount where there is one, else below cgroup2's, with a leading slash.
_rqctl_cgroups()
{
	local root=/sys/fs/cgroup/cpu want=$1 d
	[[ -d $root ]] || root=/sys/fs/cgroup
	[[ $want == /* ]] || want=/$want
	compgen -d -- "$root$want" | while IFS= read -r d; do
		printf '%s\n' "${d#"$root"}"
	done
}

_rqctl()
{
	local cur prev cmd= cmdi=0 start=0 i w opts
	local has_value= has_target=
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}

	# The command is the first word that is not a global option or its argument.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s | --socket) i=$((i + 1)) ;;
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			cmdi=$i
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		case $prev in
		-s | --socket)
			COMPREPLY=($(compgen -f -- "$cur"))
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--socket --json --help --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W 'status reload set get explain reset list run latency sync
				import-ananicy gamemode-agent' -- "$cur"))
		fi
		return
	fi

	# The options given to the command so far; for run, where its command starts:
	# after "--", or at the first word that is not an option.
	for ((i = cmdi + 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-l | --latency)
			has_value=1
			i=$((i + 1))
			;;
		--latency=*) has_value=1 ;;
		-p | --pid | -t | --tid | -g | --cgroup)
			has_target=1
			i=$((i + 1))
			;;
		--pid=* | --tid=* | --cgroup=*) has_target=1 ;;
		--)
			[[ $cmd == run ]] && start=$((i + 1)) && break
			;;
		-*) ;;
		*)
			[[ $cmd == run ]] && start=$i && break
			;;
		esac
	done

	if ((start)); then
		if ((COMP_CWORD == start)); then
			COMPREPLY=($(compgen -c -- "$cur" | sort -u))
		elif declare -F _command_offset >/dev/null; then
			_command_offset "$start"
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return
	fi

	case $prev in
	-l | --latency)
		COMPREPLY=($(compgen -W "$(seq -20 19)" -- "$cur"))
		return
		;;
	-p | --pid)
		COMPREPLY=($(compgen -W "$(_rqctl_ids)" -- "$cur"))
		return
		;;
	-t | --tid)
		COMPREPLY=($(compgen -W "$(_rqctl_ids task)" -- "$cur"))
		return
		;;
	-g | --cgroup)
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(_rqctl_cgroups "$cur"))
		return
		;;
	esac

	case $cmd in
	import-ananicy)
		# Its one directory (an ananicy rules tree), or an option before it.
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--allow-spoofable --help' -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -d -- "$cur"))
		fi
		return
		;;
	gamemode-agent) opts='--help' ;;
	set) opts='-l --latency -p --pid -t --tid -g --cgroup' ;;
	get | explain | reset) opts='-p --pid -t --tid -g --cgroup' ;;
	latency) opts='--json' ;;
	run)
		if [[ -n $has_value && $cur != -* ]]; then
			COMPREPLY=($(compgen -c -- "$cur" | sort -u))
			return
		fi
		opts='-l --latency --'
		;;
	*) return ;;
	esac
	[[ -n $has_value ]] && opts=${opts/-l --latency/}
	[[ -n $has_target ]] && opts=${opts/-p --pid -t --tid -g --cgroup/}
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _rqctl rqctl
