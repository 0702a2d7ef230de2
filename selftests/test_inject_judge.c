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

/* Does thread tid of pid wait in read: asleep ('S'), its system call
 * read?  (The call alone is what the thread last entered: one just let go
 * at a handler's first instruction, about to run, still shows read.) */
static bool in_read(pid_t pid, pid_t tid)
{
	char path[96], line[512], *c;
	bool asleep = false, yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if ((f = fopen(path, "r"))) {
		asleep = fgets(line, sizeof(line), f) && (c = strrchr(line, ')')) && c[1] == ' ' && c[2] == 'S';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (asleep && (f = fopen(path, "r"))) {
		yes = fgets(line, sizeof(line), f) && !strncmp(line, "0 ", 2);
		fclose(f);
	}
	return yes;
}

/* Wait (a second at most) for thread tid of pid to wait in read. */
static void wait_in_read(pid_t pid, pid_t tid)
{
	for (int i = 0; i < 1000 && !in_read(pid, tid); i++)
		usleep(1000);
	CHECK(in_read(pid, tid));
}

/* The thread of pid, other than its main one, that waits in read, once
 * there is one (a second at most). */
static pid_t reading_thread(pid_t pid)
{
	char path[96];
	pid_t found = -1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (int i = 0; i < 1000 && found < 0; i++) {
		struct dirent *e;
		DIR *d;
		if (i)
			usleep(1000);
		CHECK((d = opendir(path)) != NULL);
		while (found < 0 && (e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid > 0 && tid != pid && in_read(pid, tid))
				found = tid;
		}
		closedir(d);
	}
	CHECK(found > 0);
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

/* hostile_target with `opt`, ready, and the injector's view of it. */
static struct tproc *target_start(const char *opt, struct target *t)
{
	struct tproc *p;
	if (geteuid() != 0)
		SKIP("needs root to trace the target whatever ptrace_scope says");
	p = tt_spawn((char *const[]){ (char *)djp_test_path("trace_progs/hostile_target"), (char *)opt, NULL }, false,
		     -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	t->pid = p->pid;
	CHECK_EQ(find_loader(t, "libdjprobe.so"), 0);
	find_restorers(t);
	CHECK(t->nrestorers > 0);
	return p;
}

/* The target answers, and ends. */
static void target_end(struct tproc *p)
{
	tt_send(p, "ping\n");
	CHECK(tt_wait_out(p, "pong", 10000));
	tt_end(p);
}

/* Thread tid seized and stopped as the injector stops it: its registers. */
static void hold(pid_t tid, struct user_regs_struct *r)
{
	CHECK_EQ(ptrace(PTRACE_SEIZE, tid, 0, 0), 0);
	CHECK_EQ(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0);
	CHECK_EQ(stop_of(tid) >> 16, PTRACE_EVENT_STOP);
	CHECK_EQ(ptrace(PTRACE_GETREGS, tid, 0, r), 0);
}

/* Is there, in the `bytes` above held thread tid's %rsp, the handler's
 * return address (__restore_rt), and after it flags as a kernel's
 * ucontext has them (`kernel_flags`) or not? */
static bool frame_start_above(const struct target *t, pid_t tid, uintptr_t rsp, size_t bytes, bool kernel_flags)
{
	for (uintptr_t a = rsp & ~(uintptr_t)7; a < rsp + bytes; a += 8) {
		long w = ptrace(PTRACE_PEEKDATA, tid, a, 0);
		for (unsigned k = 0; k < t->nrestorers; k++)
			if ((uintptr_t)w == t->restorer[k] &&
			    ((ptrace(PTRACE_PEEKDATA, tid, a + 8, 0) & 6) == 6) == kernel_flags)
				return true;
	}
	return false;
}

TEST_TIMEOUT(inject_judges_a_thread_at_a_handlers_first_instruction_running, 60)
{
	struct target t = { .err = (char[256]){ 0 }, .errsz = 256 };
	struct user_regs_struct r;
	/* a wait whose frame the injector cannot tell from other code of
	 * libc's (read through syscall(2), no SA_RESTART): only the state of
	 * the thread says it runs */
	struct tproc *p = target_start("--usr1-raw", &t);
	pid_t tid = reading_thread(p->pid);
	int st;

	/* waiting in read, no handler: the thread to take */
	hold(tid, &r);
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
	wait_in_read(p->pid, tid);
	hold(tid, &r);
	CHECK_EQ(judge(&t, tid, &r), TAKE);
	CHECK_EQ(ptrace(PTRACE_DETACH, tid, 0, 0), 0);

	target_end(p);
}

/* A thread waiting in read whose frame holds a copy of a signal frame's
 * start (trace_progs/hostile_target --stale-frame: the return address
 * __restore_rt, a saved %rip in libc, zeros for the ucontext's flags): no
 * kernel made it, so the thread is taken.  It used to be seen as waiting
 * inside a handler that interrupted libc, and the injection refused:
 * PostgreSQL's busy backends were never injected ("all busy in libc"),
 * their frames carrying such copies. */
TEST_TIMEOUT(inject_judges_a_copy_of_a_frames_start_no_frame, 60)
{
	struct target t = { .err = (char[256]){ 0 }, .errsz = 256 };
	struct user_regs_struct r;
	struct tproc *p = target_start("--stale-frame", &t);
	pid_t tid = reading_thread(p->pid);

	hold(tid, &r);
	/* the premise: the copy is in the stack above %rsp */
	CHECK(frame_start_above(&t, tid, r.rsp, 4096, false));
	CHECK_EQ(judge(&t, tid, &r), TAKE);
	CHECK_EQ(ptrace(PTRACE_DETACH, tid, 0, 0), 0);
	target_end(p);
}

/* Threads that live in a handler whose signal broke off their read, and
 * wait in read there (trace_progs/hostile_target --waits-in-handler: the
 * read to be restarted, SA_RESTART; and the read that returns EINTR):
 * the code the signal interrupted holds no lock, so they are taken, as
 * PostgreSQL's workers forked inside the postmaster's handler must be.
 * They used to be seen as waiting inside a handler that interrupted libc,
 * and the injection refused. */
TEST_TIMEOUT(inject_judges_a_handler_that_broke_off_a_wait_harmless, 60)
{
	struct target t = { .err = (char[256]){ 0 }, .errsz = 256 };
	struct tproc *p = target_start("--waits-in-handler", &t);
	const char *l;
	int n = 0;

	CHECK(tt_wait_out(p, "in handler 12 ", 10000)); /* SIGUSR2 */
	CHECK(tt_wait_out(p, "in handler 23 ", 10000)); /* SIGURG */
	for (l = strstr(p->obuf, "in handler "); l; l = strstr(l + 1, "in handler ")) {
		struct user_regs_struct r;
		int sig = 0, tid = 0;
		CHECK_EQ(sscanf(l, "in handler %d %d", &sig, &tid), 2);
		wait_in_read(p->pid, tid); /* back in read, inside the handler */
		hold(tid, &r);
		/* the premise: waiting in read, below a frame the kernel made */
		CHECK_EQ((long)r.orig_rax, SYS_read);
		CHECK(frame_start_above(&t, tid, r.rsp, 8192, true));
		if (judge(&t, tid, &r) != TAKE)
			djp_test_fail(__FILE__, __LINE__, "thread %d in the handler of signal %d: verdict %d", tid, sig,
				      (int)judge(&t, tid, &r));
		CHECK_EQ(ptrace(PTRACE_DETACH, tid, 0, 0), 0);
		n++;
	}
	CHECK_EQ(n, 2);
	target_end(p);
}
