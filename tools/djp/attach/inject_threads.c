/*
 * Which thread of the target calls the loader, and how a thread is stopped
 * and given back (inject.c has the rest of the essay).
 *
 * The call runs dlopen, malloc and the library's constructor on the stopped
 * thread.  If that thread was stopped while holding one of libc's own locks
 * (inside malloc, say), the call would wait for itself forever.  So a
 * thread qualifies only when it was stopped in a system call that waits
 * (read, poll, futex, nanosleep, ...: a thread sleeping there holds no libc
 * lock that dlopen takes), or in code outside libc and the loader; and
 * only when
 *
 *  - no signal frame is on its stack: a thread that waits in read or
 *    sigsuspend inside a signal handler may have interrupted malloc, whose
 *    lock it then holds for as long as it waits.  A frame is found by its
 *    first word, the handler's return address, which glibc's sigaction
 *    makes __restore_rt (`mov $15,%rax; syscall`, found in libc's code by
 *    those bytes), followed by a ucontext whose flags are the kernel's;
 *    its saved %rip says what the signal interrupted.  The lock such a
 *    thread may hold is one the loader needs on any thread: when the
 *    signal interrupted libc or the loader, a thread that waits in the
 *    handler refuses the whole injection, and one that runs there makes
 *    the round take no thread.  One stopped at the handler's first
 *    instruction runs there, though orig_rax still names the system call
 *    the signal broke off (judge).  A frame whose signal broke off a
 *    system call that waits is harmless: the code it interrupted held no
 *    lock (interrupted_wait); and a copy of a frame's first word in bytes
 *    a frame never wrote is no frame (the ucontext's flags are checked);
 *
 *  - it has INJECT_STACK_NEED bytes of stack below its %rsp, in the mapping
 *    that holds %rsp (for the main thread's [stack], down to where
 *    RLIMIT_STACK lets it grow): a thread left with 3 KiB would fault in
 *    the loader and leave the loader's lock held.  A stack in a file
 *    mapping or the heap (a coroutine's) cannot be measured: passed over.
 *
 * Threads are seized one at a time (PTRACE_SEIZE and PTRACE_INTERRUPT,
 * which stops only that thread) and let go at once when they do not
 * qualify; the others never stop.  A thread in uninterruptible sleep (a
 * vfork parent) is not seized at all: it would stop only once it woke.  After a few rounds without one, the
 * injection is refused rather than risked, saying why the threads were
 * passed over.
 *
 * Stopping.  Every wait for a stop is bounded (INJECT_STOP_TIMEOUT_MS), and
 * PTRACE_CONT is only ever given to a thread in a stop: a thread that runs
 * (one inside the loader, at the call's timeout) is sent PTRACE_INTERRUPT
 * alone, and its interrupt stop is waited for.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/djp/attach/inject_target.h"
#include "lib/mapped_file.h"

#define ROUNDS 50 /* tries over every thread for one that qualifies */
#define SCAN_MAX (8u << 20) /* bytes of stack looked at for signal frames */
#define STACK_GUARD_GAP ((uintptr_t)256 << 12)

/* System calls a thread waits in without holding a lock of libc's. */
static bool waiting_call(long nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_poll:
	case SYS_select:
	case SYS_pause:
	case SYS_nanosleep:
	case SYS_accept:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_wait4:
	case SYS_rt_sigtimedwait:
	case SYS_rt_sigsuspend:
	case SYS_futex:
	case SYS_clock_nanosleep:
	case SYS_epoll_wait:
	case SYS_waitid:
	case SYS_pselect6:
	case SYS_ppoll:
	case SYS_epoll_pwait:
	case SYS_accept4:
	case SYS_recvmmsg:
		return true;
	default:
		return false;
	}
}

void inject_take_signal(struct target *t, int sig)
{
	if (t->npending < INJECT_MAX_PENDING)
		t->pending[t->npending++] = sig;
}

/* Wait for thread tid's next stop, at most timeout_ms.  0, -1 when it is
 * gone, -2 on the timeout. */
static int wait_stop(pid_t tid, int *status, int timeout_ms)
{
	double end = inject_now_ms() + timeout_ms, idle = inject_now_ms();
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == tid)
			return WIFSTOPPED(*status) ? 0 : -1;
		if (r < 0)
			return -1;
		if (inject_now_ms() > end)
			return -2;
		/* a stop comes within microseconds: yield, then nap */
		if (inject_now_ms() - idle < 2)
			sched_yield();
		else
			nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
}

/* The PTRACE_EVENT_STOP of PTRACE_INTERRUPT is in the kernel's signal path,
 * where registers can go back and the interrupted system call's restart is
 * still to be decided.  `held`: the thread is in another ptrace stop now,
 * and is resumed (PTRACE_CONT) to reach it; otherwise it runs, and only the
 * interrupt is sent.  Signals on their way to the thread are taken, for
 * later. */
int inject_stop_in_signal_path(struct target *t, pid_t tid, bool held)
{
	int st, r;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || (held && ptrace(PTRACE_CONT, tid, 0, 0) < 0))
		return -1;
	for (;;) {
		if ((r = wait_stop(tid, &st, INJECT_STOP_TIMEOUT_MS)))
			return r;
		if (st >> 16 == PTRACE_EVENT_STOP)
			return 0;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80))
			inject_take_signal(t, WSTOPSIG(st));
		/* Another stop came first.  A system call the interrupt broke
		 * off under PTRACE_SYSCALL reports its exit stop instead of the
		 * interrupt stop (ptrace(2)): the interrupt is asked for again
		 * before the thread, in a stop, resumes. */
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || ptrace(PTRACE_CONT, tid, 0, 0) < 0)
			return -1;
	}
}

void inject_let_go(struct target *t, pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, 0, 0);
	for (unsigned i = 0; i < t->npending; i++)
		syscall(SYS_tgkill, t->pid, tid, t->pending[i]);
	t->npending = 0;
}

static bool in_libc(const struct target *t, uintptr_t pc)
{
	for (unsigned i = 0; i < t->nranges; i++)
		if (pc >= t->lo[i] && pc < t->hi[i])
			return true;
	return false;
}

static const char *scope_note(void)
{
	static char note[96];
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	if (v < 0)
		return "";
	snprintf(note, sizeof(note), " (kernel.yama.ptrace_scope = %d%s)", v,
		 v == 1	  ? ": only a parent or CAP_SYS_PTRACE may attach"
		 : v == 2 ? ": only CAP_SYS_PTRACE may attach"
		 : v == 3 ? ": no process may attach"
			  : "");
	return note;
}

/* Why PTRACE_SEIZE of thread tid was refused: its tracer, or Yama. */
static int refused(struct target *t, pid_t tid)
{
	char path[96], line[256], comm[64] = "?";
	long tracer = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid, (int)tid);
	if ((f = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
				break;
		fclose(f);
	}
	if (tracer <= 0)
		return inject_fail(t, "ptrace refused%s", scope_note());
	snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	return inject_fail(t, "ptrace refused: it is already traced by process %ld (%s), and a process has one tracer",
			   tracer, comm);
}

/* ---- what is on a thread's stack -------------------------------------------- */

/* The stack below rsp that the thread may still use: in the mapping that
 * holds rsp; for the main thread's [stack], down to where RLIMIT_STACK
 * lets it grow (and not into the mapping below).  0 when rsp is not in a
 * stack-like mapping. */
static size_t stack_room(const struct target *t, uintptr_t rsp, uintptr_t *top)
{
	char path[64], line[4200];
	struct djp_mapping m;
	uintptr_t prev_hi = 0;
	size_t room = 0;
	FILE *f;

	*top = rsp;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!djp_mapping_parse(line, &m))
			continue;
		if (rsp >= m.lo && rsp < m.hi) {
			*top = m.hi;
			if (!strcmp(m.path, "[stack]")) {
				/* it grows down to hi - RLIMIT_STACK, and never to
				 * within the kernel's stack_guard_gap (256 pages) of
				 * the mapping below */
				struct rlimit rl;
				uintptr_t low = m.lo, floor = prev_hi + STACK_GUARD_GAP;
				if (prlimit(t->pid, RLIMIT_STACK, NULL, &rl) == 0 &&
				    (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > m.hi))
					low = 0;
				else if (rl.rlim_cur < m.hi && m.hi - rl.rlim_cur < m.lo)
					low = m.hi - rl.rlim_cur;
				if (low < floor && floor < m.lo)
					low = floor;
				room = rsp > low ? rsp - low : 0;
			} else if (!m.path[0] || !strncmp(m.path, "[anon", 5)) {
				room = rsp - m.lo;
			}
			break;
		}
		prev_hi = m.hi;
	}
	fclose(f);
	return room;
}

static bool in_libc(const struct target *t, uintptr_t pc);

/* The signal frames on the stack from rsp to top: a word that is libc's
 * __restore_rt, followed by a ucontext (flags the kernel's: UC_FP_XSTATE,
 * UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS) and a saved %rip.  FRAME_LIBC
 * when one of them interrupted libc's or the loader's code; FRAME_AT_SP
 * when one starts at rsp itself. */
enum { FRAME = 1, FRAME_LIBC = 2, FRAME_AT_SP = 4 };

/*
 * Did the signal of frame w (its sigcontext's words) break off a system
 * call that waits?  The kernel saved %rip at the `syscall` instruction
 * with %rax its number, to restart it (SA_RESTART); or just after it with
 * %rax -EINTR, when the number is the one glibc's wrapper loaded right
 * before (`mov $NR,%eax`, or `xor %eax,%eax` for read).  Code stopped
 * there holds no lock of libc's, as a thread waiting there does not: the
 * frame is harmless (PostgreSQL's workers, forked inside the postmaster's
 * handler that broke off its wait, live in that handler).
 */
static bool interrupted_wait(const struct target *t, const uint64_t *w)
{
	uint8_t b[9]; /* %rip - 7 to %rip + 2 */
	struct iovec l = { b, sizeof(b) }, r = { (void *)(uintptr_t)(w[22] - 7), sizeof(b) };
	long rax = (long)w[19];

	if (process_vm_readv(t->pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(b))
		return false;
	if (b[7] == 0x0f && b[8] == 0x05)
		return rax >= 0 && waiting_call(rax);
	if (b[5] != 0x0f || b[6] != 0x05 || rax != -EINTR)
		return false;
	if (b[3] == 0x31 && b[4] == 0xc0)
		return waiting_call(0);
	return b[0] == 0xb8 && waiting_call((long)(b[1] | b[2] << 8 | b[3] << 16 | (uint32_t)b[4] << 24));
}

static int signal_frames(const struct target *t, uintptr_t rsp, uintptr_t top)
{
	static uint64_t buf[8192];
	uintptr_t a = rsp & ~(uintptr_t)7;
	int found = 0;

	if (!t->nrestorers)
		return 0;
	if (top - a > SCAN_MAX)
		top = a + SCAN_MAX;
	while (a < top) {
		size_t n = top - a < sizeof(buf) ? top - a : sizeof(buf);
		struct iovec local = { buf, n }, remote = { (void *)a, n };
		ssize_t got = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);
		if (got <= 0)
			break;
		for (size_t i = 0; i < (size_t)got / 8; i++) {
			bool restorer = false;
			for (unsigned r = 0; r < t->nrestorers; r++)
				restorer |= buf[i] == t->restorer[r];
			if (!restorer)
				continue;
			/* rt_sigframe: pretcode, then ucontext: uc_flags, uc_link,
			 * uc_stack (3 words), then the sigcontext: r8..r15, rdi, rsi,
			 * rbp, rbx, rdx, rax, rcx, rsp, rip.  The kernel (4.6 on)
			 * sets UC_SIGCONTEXT_SS and UC_STRICT_RESTORE_SS in every
			 * 64-bit frame, UC_FP_XSTATE besides where it has XSAVE, and
			 * no uc_link: a stale copy of the return address in a
			 * frame's unwritten bytes (PostgreSQL's backends have them)
			 * is not a frame. */
			uint64_t w[23];
			struct iovec l2 = { w, sizeof(w) }, r2 = { (void *)(a + i * 8), sizeof(w) };
			if (process_vm_readv(t->pid, &l2, 1, &r2, 1, 0) != (ssize_t)sizeof(w) || (w[1] & ~7ull) ||
			    (w[1] & 6) != 6 || w[2] || !w[22])
				continue;
			if (a + i * 8 == rsp)
				found |= FRAME_AT_SP;
			if (!interrupted_wait(t, w))
				found |= FRAME | (in_libc(t, w[22]) ? FRAME_LIBC : 0);
		}
		a += (uintptr_t)got & ~(uintptr_t)7;
		if ((size_t)got < n)
			break;
	}
	return found;
}

static void let_go_kept(struct target *t, pid_t tid, const int *kept, unsigned nkept)
{
	t->npending = nkept;
	memcpy(t->pending, kept, sizeof(t->pending));
	inject_let_go(t, tid);
}

/* ---- the choice ------------------------------------------------------------- */

enum verdict { PASS, TAKE, BUSY, REFUSE };

/* Look at thread tid, stopped in the signal path, its registers in *regs.
 * A thread inside a signal handler is never taken; one whose handler
 * interrupted libc may hold a lock of libc's: while it waits there, the
 * injection is refused, and while it runs, no thread is taken this round
 * (it will have left the handler, or be waiting in it, the next).  A
 * handler that broke off a wait (interrupted_wait) is no handler here. */
static enum verdict judge(struct target *t, pid_t tid, const struct user_regs_struct *regs)
{
	long nr = (long)regs->orig_rax;
	bool waiting = nr >= 0 && waiting_call(nr);
	uintptr_t top;
	size_t room = stack_room(t, regs->rsp, &top);
	int frames = signal_frames(t, regs->rsp, top);

	/* Stopped at a handler's first instruction: the kernel has just
	 * built the frame (at %rsp; %rdx the ucontext in it, %rax 0) for a
	 * signal that interrupted a wait, and the number of that system call
	 * is still in orig_rax.  The thread waits in nothing: it is about to
	 * run the handler, and will have left it, or be waiting in it, the
	 * next round.  (Under load the kernel can switch away right after
	 * building the frame; such a thread was refused as one that waits.) */
	if ((frames & FRAME_AT_SP) && regs->rax == 0 && regs->rdx == regs->rsp + 8)
		waiting = false;

	if (frames & FRAME_LIBC) {
		t->in_handler = tid;
		return waiting ? REFUSE : BUSY;
	}
	if (frames & FRAME)
		return PASS;
	if (nr >= 0 ? !waiting : in_libc(t, regs->rip))
		return PASS;
	if (room < INJECT_STACK_NEED) {
		if (!t->short_stack || room < t->short_room) {
			t->short_stack = tid;
			t->short_room = room;
		}
		return PASS;
	}
	return TAKE;
}

/* A thread in uninterruptible sleep ('D': in vfork until the child execs
 * or exits, on a hung file system) would not stop for PTRACE_INTERRUPT
 * until it woke, and could then not be let go (PTRACE_DETACH needs a
 * stop) before the tool exits: it is passed over without being seized. */
static bool uninterruptible(const struct target *t, pid_t tid)
{
	char path[96], buf[512], *c;
	bool d = false;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)t->pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return false;
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		d = c[1] == ' ' && c[2] == 'D';
	fclose(f);
	return d;
}

static int refuse_in_handler(struct target *t)
{
	return inject_fail(t,
			   "its thread %d waits inside a signal handler: the code the signal interrupted may hold a "
			   "lock of libc's that the loader needs (the agent is not loaded)",
			   (int)t->in_handler);
}

pid_t inject_pick_thread(struct target *t, struct user_regs_struct *regs)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	for (int round = 0; round < ROUNDS; round++) {
		DIR *d = opendir(path);
		struct dirent *e;
		pid_t chosen = -1;
		int kept[INJECT_MAX_PENDING]; /* the chosen one's taken signals */
		unsigned nkept = 0;
		bool busy = false;
		if (!d)
			return inject_fail(t, "cannot list its threads: %s", strerror(errno)), -1;
		/* every thread is looked at, the chosen one held meanwhile: one
		 * waiting in a handler refuses the injection */
		while ((e = readdir(d))) {
			struct user_regs_struct r;
			pid_t tid = (pid_t)atoi(e->d_name);
			enum verdict v;
			int s;
			if (tid <= 0 || uninterruptible(t, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
				if (errno != EPERM)
					continue; /* gone */
				closedir(d);
				if (chosen > 0)
					let_go_kept(t, chosen, kept, nkept);
				return refused(t, tid), -1;
			}
			if ((s = inject_stop_in_signal_path(t, tid, false)) == -2) {
				closedir(d);
				if (chosen > 0)
					let_go_kept(t, chosen, kept, nkept);
				return inject_fail(t, "its thread %d did not stop within %d s", (int)tid,
						   INJECT_STOP_TIMEOUT_MS / 1000),
				       -1;
			}
			if (s || ptrace(PTRACE_GETREGS, tid, 0, &r) < 0) {
				inject_let_go(t, tid);
				continue;
			}
			/* every thread runs the engine's signal handlers, and
			 * filters are a thread's own: each is looked at */
			if (inject_seccomp_check(t, tid)) {
				inject_let_go(t, tid);
				closedir(d);
				if (chosen > 0)
					let_go_kept(t, chosen, kept, nkept);
				return -1;
			}
			v = judge(t, tid, &r);
			busy |= v == BUSY;
			if (v == TAKE && chosen < 0) {
				chosen = tid;
				*regs = r;
				nkept = t->npending;
				memcpy(kept, t->pending, sizeof(kept));
				t->npending = 0;
				continue;
			}
			inject_let_go(t, tid);
			if (v == REFUSE) {
				closedir(d);
				if (chosen > 0)
					let_go_kept(t, chosen, kept, nkept);
				return refuse_in_handler(t), -1;
			}
		}
		closedir(d);
		if (chosen > 0 && busy) {
			let_go_kept(t, chosen, kept, nkept);
			chosen = -1;
		}
		if (chosen > 0) {
			memcpy(t->pending, kept, sizeof(kept));
			t->npending = nkept;
			return chosen;
		}
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	if (t->in_handler)
		return inject_fail(t,
				   "no thread of it could be stopped where calling the loader is safe (its thread %d "
				   "was inside a signal handler that interrupted libc each time)",
				   (int)t->in_handler),
		       -1;
	if (t->short_stack)
		return inject_fail(t,
				   "no thread of it could be stopped where calling the loader is safe (its thread %d, "
				   "waiting, has %zu bytes of stack left below %%rsp; the loader needs %d)",
				   (int)t->short_stack, t->short_room, INJECT_STACK_NEED),
		       -1;
	return inject_fail(t, "no thread of it could be stopped where calling the loader is safe (all busy in libc)"), -1;
}
