/*
 * The injector's look at one stopped thread (tools/djp/attach/
 * inject_threads.c, judge), on threads put by the test in the states it
 * must tell apart.  A thread stopped at a signal handler's first
 * instruction, the kernel having just built the frame for a signal that
 * broke off its read, still has read's number in orig_rax: it runs the
 * handler and waits in nothing, so no thread is taken that round, and the
 * injection is not refused as it is for a thread that waits inside a
 * handler (under load the kernel can switch away from a thread right
 * there; make check's stress saw the refusal now and then).  The test
 * puts the target's waiting thread there by a single step into the
 * handler, which stops before the handler's first instruction runs.
 */
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"
#include "tools/djp/attach/inject.c"
#include "tools/djp/attach/inject_seccomp.c"
#include "tools/djp/attach/inject_threads.c"

/* The thread of pid, other than its main one, that waits in read. */
static pid_t reading_thread(pid_t pid)
{
	char path[96], line[256];
	struct dirent *e;
	pid_t found = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	CHECK((d = opendir(path)) != NULL);
	while (found < 0 && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		FILE *f;
		if (tid <= 0 || tid == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
		if ((f = fopen(path, "r"))) {
			if (fgets(line, sizeof(line), f) && !strncmp(line, "0 ", 2))
				found = tid;
			fclose(f);
		}
	}
	closedir(d);
	return found;
}

/* The next stop of tid, which must be one. */
static int stop_of(pid_t tid)
{
	int st;
	CHECK_EQ(waitpid(tid, &st, __WALL), tid);
	CHECK(WIFSTOPPED(st));
	return st;
}

TEST_TIMEOUT(inject_judges_a_thread_at_a_handlers_first_instruction_running, 60)
{
	struct target t = { .err = (char[256]){ 0 }, .errsz = 256 };
	struct user_regs_struct r;
	struct tproc *p;
	pid_t tid = -1;
	int st;

	if (geteuid() != 0)
		SKIP("needs root to trace the target whatever ptrace_scope says");
	p = tt_spawn((char *const[]){ (char *)djp_test_path("trace_progs/hostile_target"), "--spare", "--usr1", NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	for (int i = 0; i < 1000 && tid < 0; i++, usleep(1000))
		tid = reading_thread(p->pid);
	CHECK(tid > 0);
	t.pid = p->pid;
	CHECK_EQ(find_loader(&t, "libdjprobe.so"), 0);
	find_restorers(&t);
	CHECK(t.nrestorers > 0);

	/* waiting in read, no handler: the thread to take */
	CHECK_EQ(ptrace(PTRACE_SEIZE, tid, 0, 0), 0);
	CHECK_EQ(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0);
	st = stop_of(tid);
	CHECK_EQ(st >> 16, PTRACE_EVENT_STOP);
	CHECK_EQ(ptrace(PTRACE_GETREGS, tid, 0, &r), 0);
	CHECK_EQ((long)r.orig_rax, SYS_read);
	CHECK_EQ(judge(&t, tid, &r), TAKE);

	/* SIGUSR1 breaks off the read; one step into its handler stops with
	 * the frame built and the handler's first instruction not yet run */
	CHECK_EQ(ptrace(PTRACE_CONT, tid, 0, 0), 0);
	CHECK_EQ(syscall(SYS_tgkill, p->pid, tid, SIGUSR1), 0);
	st = stop_of(tid);
	CHECK_EQ(WSTOPSIG(st), SIGUSR1);
	CHECK_EQ(ptrace(PTRACE_SINGLESTEP, tid, 0, SIGUSR1), 0);
	st = stop_of(tid);
	CHECK_EQ(WSTOPSIG(st), SIGTRAP);
	CHECK_EQ(ptrace(PTRACE_GETREGS, tid, 0, &r), 0);
	/* the premise: what the kernel leaves there */
	CHECK_EQ((long)r.orig_rax, SYS_read);
	CHECK_EQ((long)r.rax, 0);
	CHECK_EQ(r.rdx, r.rsp + 8);
	CHECK_EQ(r.rdi, SIGUSR1);
	CHECK_EQ(judge(&t, tid, &r), BUSY);

	/* let go, it runs the handler and reads again: taken */
	CHECK_EQ(ptrace(PTRACE_DETACH, tid, 0, 0), 0);
	for (int i = 0; i < 1000 && reading_thread(p->pid) != tid; i++)
		usleep(1000);
	CHECK_EQ(ptrace(PTRACE_SEIZE, tid, 0, 0), 0);
	CHECK_EQ(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0);
	st = stop_of(tid);
	CHECK_EQ(ptrace(PTRACE_GETREGS, tid, 0, &r), 0);
	CHECK_EQ(judge(&t, tid, &r), TAKE);
	CHECK_EQ(ptrace(PTRACE_DETACH, tid, 0, 0), 0);

	tt_send(p, "ping\n");
	CHECK(tt_wait_out(p, "pong", 10000));
	tt_end(p);
}
