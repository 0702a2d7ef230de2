/*
 * A traced program's own faults do what they do without djp, while its
 * %s marker has strings copied (kernel/safe_copy.c, lib/real_signal.c):
 * a crash reporter's SA_RESETHAND handler that returns runs once and the
 * program dies by SIGSEGV; an ignored fault kills; a handler without
 * SA_NODEFER runs with its signal and sa_mask blocked, on its alternate
 * stack, and a fault inside it kills; one without SA_ONSTACK runs on the
 * stack that faulted; a handler installed with the raw
 * rt_sigaction system call is the program's, and a bad string is then
 * copied without a fault.  Each under -c (the agent preloaded) and -x
 * (injected), with the in-process copy and with process_vm_readv (a thread
 * that blocks SIGSEGV from the start: the agent keeps no handler).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *fault_target(void)
{
	static char *p;
	return p ? p : (p = strdup(djp_test_path("trace_progs/fault_target")));
}

/* How a run ended: the program's exit code, or 128 + its signal. */
static int code_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

struct run {
	int code;	    /* the program's, as above; -1: it did not end */
	char out[sizeof(((struct tproc *)0)->obuf)];    /* what it printed */
	char events[sizeof(((struct tproc *)0)->obuf)]; /* djp's event lines */
};

/* fault_target traced by `djp trace ft_str`, injected or launched, with the
 * fast copy or not; its strings copied once, then `cmd`. */
static void run_case(bool inject, bool fast, const char *cmd, struct run *r)
{
	struct tproc *t, *p;
	char *block = fast ? NULL : "--block-faults";
	const char *want = fast ? "copy fast" : "copy syscall";
	int st;

	if (inject) {
		char spid[16];
		t = tt_spawn((char *const[]){ (char *)fault_target(), block, NULL }, false, -1);
		CHECK(tt_wait_out(t, "ready", 10000));
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "ft_str", NULL }, false, -1);
		CHECK(tt_wait_armed(t->pid, fault_target(), 10000));
	} else {
		char line[4200];
		uint64_t segv = 1ull << (SIGSEGV - 1), old;
		snprintf(line, sizeof(line), "%s %s", fault_target(), block ? block : "");
		/* without the fast copy: the command starts with SIGSEGV
		 * blocked, so that its agent refuses to keep a handler */
		if (!fast)
			syscall(SYS_rt_sigprocmask, SIG_BLOCK, &segv, &old, 8);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", line, "ft_str", NULL }, false, -1);
		if (!fast)
			syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, 8);
		t = p; /* the command's stdin and stdout are the tool's */
		CHECK(tt_wait_out(p, "ready", 10000));
	}
	tt_send(t, "copy\n");
	if (!tt_wait_out(t, want, 10000))
		djp_test_fail(__FILE__, __LINE__, "%s, want %s: %s", inject ? "-x" : "-c", want, t->obuf);
	tt_send(t, "str\n");
	CHECK(tt_wait_out(t, "str done", 10000));
	CHECK(tt_wait_out(p, "ft_str s=<bad>", 10000));
	tt_send(t, cmd);
	tt_send(t, "\n");
	close(t->in);
	t->in = -1;
	st = tt_finish(t, 15000);
	r->code = st == -1 ? -1 : code_of(st);
	memcpy(r->out, t->obuf, sizeof(r->out));
	if (inject) {
		/* the tool ends with the process */
		CHECK(code_of(tt_finish(p, 15000)) == 0);
		free(t);
	}
	memcpy(r->events, p->obuf, sizeof(r->events));
	free(p);
}

/* cmd under the four ways, each ending with `code` and printing `said`
 * once (NULL: nothing to look for). */
static void every_way(const char *cmd, int code, const char *said)
{
	static struct run r;
	for (int i = 0; i < 4; i++) {
		bool inject = i & 1, fast = !(i & 2);
		run_case(inject, fast, cmd, &r);
		if (r.code != code || (said && tt_count(r.out, said) != 1))
			djp_test_fail(__FILE__, __LINE__, "%s %s, %s copy: ended %d, want %d: %s", cmd,
				      inject ? "-x" : "-c", fast ? "fast" : "syscall", r.code, code, r.out);
	}
}

TEST_TIMEOUT(trace_fault_resethand_handler_runs_once, 120)
{
	every_way("resethand", 128 + SIGSEGV, "handler\n");
}

TEST_TIMEOUT(trace_fault_ignored_kills, 120)
{
	every_way("ignore", 128 + SIGSEGV, NULL);
}

TEST_TIMEOUT(trace_fault_deferring_handler_masked_on_its_stack, 120)
{
	every_way("defer", 128 + SIGSEGV, "handler ok\n");
}

TEST_TIMEOUT(trace_fault_handler_without_onstack_on_its_stack, 120)
{
	every_way("mainstack", 5, "handler on its stack\n");
}

/* The raw handler exits 99 on a fault: a bad string must not be one.  The
 * program waits until sigaction() shows its handler (the agent's look gave
 * the signal back), then hits the marker with a bad string and exits 7. */
TEST_TIMEOUT(trace_fault_raw_handler_and_bad_string, 120)
{
	static struct run r;
	for (int i = 0; i < 4; i++) {
		bool inject = i & 1, fast = !(i & 2);
		run_case(inject, fast, "raw", &r);
		if (r.code != 7 || !strstr(r.out, "released\n") || tt_count(r.events, "ft_str s=<bad>") != 2)
			djp_test_fail(__FILE__, __LINE__, "raw %s, %s copy: ended %d, want 7: %s / %s",
				      inject ? "-x" : "-c", fast ? "fast" : "syscall", r.code, r.out, r.events);
	}
}
