# bash completion for rqctl(1)
_rqctl()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	case $prev in
	-s | --socket)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--socket --json --help --version' -- "$cur"))
	else
		COMPREPLY=($(compgen -W 'status reload' -- "$cur"))
	fi
}
complete -F _rqctl rqctl
