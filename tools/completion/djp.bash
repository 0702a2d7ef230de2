# bash completion for djp, installed as
# $(PREFIX)/share/bash-completion/completions/djp.
#
# Subcommands and options come from this file.  Marker names and function
# names come from djp itself, for the program the command line names: the
# word after -c (its first word, looked up in PATH), the process after -x,
# or the first PATH of -a.
# `djp list --no-header` gives the markers (first column), and
# `djp -l 'process("PATH").function("PREFIX*")'` the functions (their
# names, without the @FILE:LINE DWARF adds), so the
# completion reads the same ELF files, SDT notes and symbol tables the
# trace will.

# The program a pattern will be matched in: -c's command, -x's process
# (its /proc/PID/exe for functions, the PID itself for markers), or -a's
# first PATH (a word with a '/' before any ':').
_djp_target()
{
	local i w
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-c) w=${COMP_WORDS[i + 1]}
		    # the command's first word, as typed: no eval of what the
		    # line holds ($(...) would run)
		    w=${w#[\'\"]}
		    w=${w%%[ \'\"]*}
		    [[ $w == */* ]] || w=$(type -P -- "$w")
		    [[ -n $w ]] && printf '%s\n' "$w"
		    return ;;
		-x) printf '%s\n' "${COMP_WORDS[i + 1]}"
		    return ;;
		-a) for ((i = i + 1; i < COMP_CWORD; i++)); do
			w=${COMP_WORDS[i]}
			[[ ${w%%:*} == */* ]] && { printf '%s\n' "$w"; return; }
		    done
		    return ;;
		esac
	done
}

_djp_markers()
{
	local target=$1
	[[ -n $target ]] || return
	"${COMP_WORDS[0]}" list --no-header "$target" 2>/dev/null | awk '$2 ~ /^0x/ { print $1 }'
}

_djp_functions()
{
	local target=$1 prefix=$2
	[[ -n $target ]] || return
	[[ $target =~ ^[0-9]+$ ]] && target=$(readlink "/proc/$target/exe" 2>/dev/null)
	[[ -n $target ]] || return
	"${COMP_WORDS[0]}" -l "process(\"$target\").function(\"$prefix*\")" 2>/dev/null |
		sed -n 's/.*\.function("\([^"@]*\)[^"]*")$/\1/p' | sort -u
}

_djp()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	local cmd=${COMP_WORDS[1]} opts target
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	case $prev in
	-c) COMPREPLY=($(compgen -c -- "$cur")); return ;;
	-x) COMPREPLY=($(compgen -W "$(cd /proc && printf '%s\n' [0-9]*)" -- "$cur")); return ;;
	-o | --replay) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--from) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	-f | --format) [[ $cmd == trace ]] && COMPREPLY=($(compgen -W "text json perfetto html ctf" -- "$cur")); return ;;
	--duration | --buffer-size | --title | -e | -l | -L | -D | -p | -s) return ;;
	esac

	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "list trace flame help --help -e -c -x -o -l -L -v -p -D -w \
			--int3 --no-children --dump-functions --suppress-time-limits" -- "$cur"))
		[[ $cur == -* ]] || COMPREPLY+=($(compgen -f -X '!*.stp' -- "$cur"))
		return
	fi

	case $cmd in
	list)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json --no-header -k --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur") \
				$(compgen -W "$(cd /proc && printf '%s\n' [0-9]*)" -- "$cur"))
		fi
		;;
	flame)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-o --title --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	trace)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-c -x -a -o -f -k --json --format --from --html --slice --snapshot --int3 \
				--duration --buffer-size --kprobe --force --no-children --help" -- "$cur"))
			return
		fi
		# bash splits words at the ':' of COMP_WORDBREAKS (func:NAME,
		# PROVIDER:NAME): the pattern as typed is the line's last word
		local head=
		if [[ -n ${COMP_LINE-} ]]; then
			local line=${COMP_LINE:0:COMP_POINT}
			cur=${line##*[[:space:]]}
			[[ $cur == *:* && $COMP_WORDBREAKS == *:* ]] && head=${cur%"${cur##*:}"}
		fi
		# -a's PATHs: files
		if [[ ${cur%%:*} == */* ]]; then
			COMPREPLY=($(compgen -f -- "$cur"))
			return
		fi
		target=$(_djp_target)
		if [[ $cur == func:* ]]; then
			COMPREPLY=($(compgen -P func: -W "$(_djp_functions "$target" "${cur#func:}")" \
				-- "${cur#func:}"))
		else
			COMPREPLY=($(compgen -W "$(_djp_markers "$target") func: line:" -- "$cur"))
			[[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == *: ]] && compopt -o nospace 2>/dev/null
		fi
		# and bash replaces only what follows the last ':'
		[[ -n $head ]] && COMPREPLY=("${COMPREPLY[@]#"$head"}")
		;;
	*)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-e -c -x -o -l -L -v -p -D -w -s -b --int3 \
				--force --no-children --dump-functions --suppress-time-limits --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	esac
}
complete -F _djp djp
