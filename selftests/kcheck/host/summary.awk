#!/usr/bin/awk -f
# Reads the kcheck guest's serial console and prints its TAP results in the
# form make check prints (numbered "ok N name" lines, then "N passed, N
# failed"), exiting 1 when anything failed.
#
# A result line is "SOURCE: ok N - name", "SOURCE: not ok N - name # why"
# or "SOURCE: # diagnostic", after the kernel's "[ time]" stamp if printk
# wrote it; "SOURCE: 1..N" is a plan.  Passing is more than having no "not
# ok": every source named in `expect` must print its plan and exactly that
# many results (a module that did not load, a script cut short), the guest
# must reach "kcheck: done" (a hang, a panic), and the console must hold no
# kernel report of a bug (an oops, a WARNING, a lockdep or KASAN report,
# sleeping in atomic context, a stall).  Each of those becomes a failed
# result of its own, with the first line that shows it.
# Usage: awk -v expect="SRC..." -v status=QEMU_EXIT -f summary.awk LOG
BEGIN {
	nexp = split(expect, want, " ")
	n = 0; passed = 0; failed = 0; skipped = 0
	bug = ""
}
function result(ok, text, skip) {
	n++
	if (ok) {
		printf "ok %d %s%s\n", n, text, skip ? " # SKIP" : ""
		if (skip) skipped++; else passed++
	} else {
		printf "not ok %d %s\n", n, text
		failed++
	}
}
{
	sub(/\r+$/, "")
	line = $0
	# The kernel's own reports: any of these is a bug, whoever caused it.
	if (bug == "" && line ~ /(BUG:|WARNING:|Oops|general protection fault|Kernel panic|possible (circular|recursive) locking|inconsistent lock state|UBSAN:|INFO: task .* blocked|rcu_sched self-detected stall|rcu: INFO|Call Trace:)/)
		bug = line
	sub(/^\[ *[0-9]+\.[0-9]+\] /, "", line)
	if (!match(line, /^[A-Za-z0-9_.-]+: /))
		next
	src = substr(line, 1, RLENGTH - 2)
	rest = substr(line, RLENGTH + 1)
	if (rest ~ /^1\.\.[0-9]+$/) {
		plan[src] = substr(rest, 4) + 0
	} else if (rest ~ /^(not )?ok [0-9]+( |$)/) {
		ok = rest !~ /^not /
		sub(/^(not )?ok [0-9]+ *(- )?/, "", rest)
		skip = ok && rest ~ /# *SKIP/
		count[src]++
		result(ok, src ": " rest, skip)
	} else if (rest ~ /^#/) {
		sub(/^# */, "", rest)
		print "# " src ": " rest
	} else if (src == "kcheck" && rest == "done") {
		done = 1
	}
}
END {
	for (i = 1; i <= nexp; i++) {
		s = want[i]
		if (!(s in plan))
			result(0, s ": reported its plan # no \"" s ": 1..N\" line: it did not run")
		else if (count[s] != plan[s])
			result(0, s ": every planned test reported # " count[s] + 0 " of " plan[s] " results")
	}
	if (!done)
		result(0, "kcheck: the guest finished # no \"kcheck: done\" (QEMU exit status " status (status == 124 ? ", timed out" : "") ")")
	if (bug != "")
		result(0, "kcheck: no kernel bug report on the console # " bug)
	if (skipped)
		printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
	else
		printf "%d passed, %d failed\n", passed, failed
	exit failed > 0
}
