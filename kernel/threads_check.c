/*
 * Is any thread inside a range of instructions a jump is about to cover?
 *
 * An instruction probe armed as a jump writes five bytes over the first
 * instructions of its range (kernel/points.c chose the range: whole
 * instructions, none a jump target).  A thread that is between two of
 * those instructions when the tail is written would go on with the
 * middle of a jump: the one thing that must never happen.  The kernel's
 * optprobes wait for such tasks with synchronize_rcu_tasks; the seeds'
 * djprobe froze every process.  Here, by the time the check runs, the
 * first byte of every range is an int3 that every core has seen
 * (arch/x86/text_poke.c), so no thread can *enter* a range any more but
 * by that int3, which the trap handler serves.  What is left is to learn,
 * once, whether a thread is inside one now:
 *
 *   - where it is: the instruction pointer it was interrupted at;
 *   - where it will return to from a signal handler it is running (or is
 *     blocked in): the interrupted contexts of the signal frames on its
 *     stacks.  A thread interrupted inside a range by a signal whose
 *     handler then waits (or spins, or sleeps) is the case a register
 *     snapshot misses, and sigreturn would drop it into the middle of the
 *     jump.  The frames are found by their return address, the restorer
 *     every handler of the process returns through (glibc's __restore_rt,
 *     read off this handler's own frame), with the user code segment
 *     (0x33) in the saved context as a second signature.  A stray word
 *     that looks like a frame can only make a range look busy.
 *
 * Only the thread itself can tell both soundly (from outside, its stack
 * changes under the reader), so every thread of the process, this one
 * included, is sent the engine's signal and answers from its handler; the
 * writer waits for every answer.  A range with a thread inside is asked
 * about again a few times (a thread leaves a few instructions quickly),
 * then its site stays an int3 probe, which is always correct.  A thread
 * that does not answer in time (stopped, or in uninterruptible sleep) makes
 * every range of the round count as busy.  The stacks are read with
 * process_vm_readv, bounded by the mapping the stack pointer is in (read
 * from /proc/self/maps before the signals), so a stale bound costs a
 * failed read, never a fault.
 *
 * In a process whose threads are stopped for the batch (kernel/freeze.c:
 * a thread blocks SIGTRAP, and so the engine's signal too), none can
 * answer a signal, and none needs to: a stopped thread's stack does not
 * change under the reader.  djp_stopped_check_run checks that each is
 * stopped, reads where it is from /proc/self/task/TID/syscall (its stack
 * pointer and instruction pointer; in a system call, the instruction it
 * restarts at too, two bytes back) and scans its stack for signal frames
 * the same way, the restorer taken from the kernel's record of the SIGTRAP
 * handler.  It makes system calls only, into what djp_stopped_check_new
 * allocated before the threads were stopped: one of them may have been
 * stopped inside malloc, or holding a stdio lock.
 *
 * Cost and side effect: one signal per thread per batch that turns an
 * instruction probe into a jump (never for markers, whose NOP is one
 * instruction).  The signal is SA_RESTART: reads, writes and futex waits
 * restart; poll, epoll_wait and select return EINTR, as they may for any
 * signal.  DJP_FORCE_INT3 probes never ask.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "kernel/arming.h"

#define ROUNDS 20	       /* asks before a busy range gives up its jump */
#define ANSWER_NS 200000000L   /* a round waits this long for every thread */
#define SCAN_MAX (1u << 20)    /* bytes of one stack read at most */
#define FRAME_DEPTH 8	       /* stacks one thread's frames chain through */

struct check_req {
	struct djp_poke *p;
	size_t n;
	const struct djp_maps *maps; /* where stacks are bounded */
	const pid_t *tids;
	_Atomic unsigned *answer; /* per thread: the round it answered */
	atomic_uchar *busy;	  /* per poke */
	atomic_bool unknown;	  /* a stack that could not be read: all busy */
	unsigned round;
};

static _Atomic(struct check_req *) active;
static atomic_int inflight;

/*
 * A thread inside a range, or inside a trampoline or an out-of-line copy
 * that will send it into one: each ends with a jump back to its site's
 * instructions after the ones it ran, at the end of the range the site
 * had when the code was made (DJP_SITE_MAX_LEN bytes at most; a site may
 * since have shrunk, kernel/points.c).  A thread preempted there, its
 * site disarmed and a neighbour's jump armed over that place, would go
 * on with the middle of the jump: the stress of arming every offset of
 * a function while threads run it died so, at the end of a jump's cmp.
 */
static void mark(struct check_req *q, uintptr_t rip)
{
	const struct djp_site *from = arch_tramp_site_of(rip);
	for (size_t i = 0; i < q->n; i++) {
		uintptr_t a = q->p[i].addr, end = a + q->p[i].len;
		/* (the site's own code returns to the end of its range: a site
		 * is armed as a jump only with the range its jump was made for) */
		bool near = from && from->addr != a && from->addr < end && from->addr + DJP_SITE_MAX_LEN > a;
		if (q->p[i].check && ((rip > a && rip < end) || near))
			atomic_store(&q->busy[i], 1);
	}
}

/* The writable mapping holding a, where a stack is; NULL: none. */
static const struct djp_map *mapping_of(const struct check_req *q, uintptr_t a)
{
	const struct djp_map *m = djp_maps_find(q->maps, a);
	return m && (m->prot & (PROT_READ | PROT_WRITE)) == (PROT_READ | PROT_WRITE) ? m : NULL;
}

static ssize_t read_self(void *to, uintptr_t from, size_t n)
{
	struct iovec l = { to, n }, r = { (void *)from, n };
	return syscall(SYS_process_vm_readv, getpid(), &l, 1UL, &r, 1UL, 0UL);
}

/* The signal frames on the stack above sp: their interrupted contexts.
 * Read in small pieces (this runs on whatever stack the signal found,
 * perhaps a small alternate one). */
static void scan(struct check_req *q, uintptr_t sp, uintptr_t restorer, int depth)
{
	const size_t gregs_at = offsetof(ucontext_t, uc_mcontext.gregs);
	const struct djp_map *m = mapping_of(q, sp);
	uint64_t words[64];
	uintptr_t at, to;

	if (!m || depth > FRAME_DEPTH || restorer < 4096) {
		atomic_store(&q->unknown, true);
		return;
	}
	to = m->hi;
	if (to - sp > SCAN_MAX) { /* too deep to read whole: cannot tell */
		atomic_store(&q->unknown, true);
		to = sp + SCAN_MAX;
	}
	for (at = sp & ~(uintptr_t)7; at < to; at += sizeof(words)) {
		size_t n = to - at < sizeof(words) ? to - at : sizeof(words);
		if (read_self(words, at, n) != (ssize_t)n) {
			atomic_store(&q->unknown, true);
			return;
		}
		for (size_t k = 0; k < n / 8; k++) {
			greg_t g[NGREG];
			uintptr_t frame = at + 8 * k;
			if (words[k] != restorer || read_self(g, frame + 8 + gregs_at, sizeof(g)) != (ssize_t)sizeof(g))
				continue;
			if ((g[REG_CSGSFS] & 0xffff) != 0x33) /* not a user context */
				continue;
			mark(q, (uintptr_t)g[ARCH_GREG_PC]);
			/* a frame on another stack (an alternate signal stack)
			 * names the stack it interrupted: read that one too */
			if (mapping_of(q, (uintptr_t)g[ARCH_GREG_SP]) != m)
				scan(q, (uintptr_t)g[ARCH_GREG_SP], restorer, depth + 1);
		}
	}
}

/* The engine's signal handler's part (engine_signal.c): answer the check
 * in progress, if one is. */
void djp_threads_check_answer(void *ucv)
{
	const ucontext_t *uc = ucv;
	struct check_req *q;
	pid_t me;

	atomic_fetch_add(&inflight, 1);
	if ((q = atomic_load(&active))) {
		me = (pid_t)syscall(SYS_gettid);
		mark(q, (uintptr_t)uc->uc_mcontext.gregs[ARCH_GREG_PC]);
		/* the restorer this handler returns through is every handler's */
		scan(q, (uintptr_t)uc->uc_mcontext.gregs[ARCH_GREG_SP], ((const uintptr_t *)ucv)[-1], 0);
		for (size_t i = 0; q->tids[i]; i++)
			if (q->tids[i] == me)
				atomic_store(&q->answer[i], q->round);
	}
	atomic_fetch_sub(&inflight, 1);
}

static pid_t *read_tids(size_t *n)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	pid_t *v = NULL;
	size_t cap = 0;

	*n = 0;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (*n + 1 >= cap) {
			void *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[(*n)++] = (pid_t)atoi(de->d_name);
	}
	if (d)
		closedir(d);
	if (v)
		v[*n] = 0;
	return v;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One round: every thread asked; true when none is inside a range
 * (busy[] says which are). */
static bool one_round(struct djp_poke *p, size_t n, atomic_uchar *busy, unsigned round)
{
	struct check_req q = { .p = p, .n = n, .busy = busy, .round = round };
	struct djp_maps maps = { 0 };
	pid_t *tids;
	size_t ntids = 0;
	bool all = true, any = false;
	int sig = djp_engine_signal();
	uint64_t until;

	djp_maps_read(&maps);
	tids = read_tids(&ntids);
	q.answer = calloc(ntids + 1, sizeof(*q.answer));
	if (!maps.m || !tids || !q.answer || !sig) {
		free(maps.m);
		free(tids);
		free((void *)q.answer);
		for (size_t i = 0; i < n; i++)
			atomic_store(&busy[i], p[i].check);
		return false;
	}
	q.maps = &maps;
	q.tids = tids;
	for (size_t i = 0; i < n; i++)
		atomic_store(&busy[i], 0);
	atomic_store(&active, &q);
	for (size_t i = 0; i < ntids; i++)
		if (syscall(SYS_tgkill, getpid(), tids[i], sig) && errno == ESRCH)
			atomic_store(&q.answer[i], round); /* gone: runs nothing */
	until = now_ns() + ANSWER_NS;
	for (;;) {
		all = true;
		for (size_t i = 0; i < ntids && all; i++)
			all = atomic_load(&q.answer[i]) == round;
		if (all || now_ns() > until)
			break;
		usleep(20);
	}
	atomic_store(&active, NULL);
	while (atomic_load(&inflight)) /* a late handler may still read q */
		sched_yield();
	for (size_t i = 0; i < n; i++) {
		if (p[i].check && (!all || atomic_load(&q.unknown)))
			atomic_store(&busy[i], 1);
		any |= atomic_load(&busy[i]) != 0;
	}
	free(maps.m);
	free(tids);
	free((void *)q.answer);
	return !any;
}

/* The restorer every handler of the process returns through, as the
 * kernel holds it for SIGTRAP's (the engine's handler, installed by libc's
 * sigaction); 0 when it cannot tell. */
static uintptr_t restorer_of_sigtrap(void)
{
	struct {
		uintptr_t handler;
		unsigned long flags;
		uintptr_t restorer;
		uint64_t mask;
	} k;
	if (syscall(SYS_rt_sigaction, SIGTRAP, NULL, &k, sizeof(k.mask)))
		return 0;
	return k.flags & 0x04000000 /* SA_RESTORER */ ? k.restorer : 0;
}

/* A file of /proc/self/task/TID read whole into buf (NUL-terminated):
 * its length, or -1.  System calls only: this runs while the other
 * threads are stopped, one of them perhaps inside malloc. */
static ssize_t task_file(pid_t tid, const char *name, char *buf, size_t sz)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sz - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* Where stopped thread tid is: its stack and instruction pointers, and
 * whether it is in a system call.  False when it cannot be read (running:
 * not stopped after all). */
static bool stopped_at(pid_t tid, uintptr_t *sp, uintptr_t *pc, bool *in_call)
{
	char buf[512], *end;
	unsigned long v[9];
	int k = 0;

	if (task_file(tid, "syscall", buf, sizeof(buf)) <= 0)
		return false;
	/* "NR ARG1..ARG6 SP PC", or "-1 SP PC" out of a call, or "running" */
	for (char *at = buf; k < 9; at = end, k++) {
		v[k] = strtoul(at, &end, 0);
		if (end == at)
			break;
	}
	if (k != 3 && k != 9)
		return false;
	*in_call = k == 9;
	*sp = v[k - 2];
	*pc = v[k - 1];
	return true;
}

/* 1: thread tid is stopped (or on its way out); 0: it runs; -1: gone. */
static int is_stopped(pid_t tid)
{
	char buf[512], *p;
	if (task_file(tid, "stat", buf, sizeof(buf)) <= 0)
		return -1;
	/* "TID (COMM) S ...": the state after the last ')' */
	if (!(p = strrchr(buf, ')')) || p[1] != ' ')
		return 0;
	return strchr("tTZX", p[2]) != NULL;
}

struct djp_stopped_check {
	struct check_req q;
	struct djp_maps maps;
	uintptr_t restorer;
	pid_t *tids;
	size_t cap;
	char dents[4096];
};

struct djp_stopped_check *djp_stopped_check_new(struct djp_poke *p, size_t n)
{
	struct djp_stopped_check *c = calloc(1, sizeof(*c));
	size_t now = 0;
	pid_t *tids;

	if (!c)
		return NULL;
	c->q.p = p;
	c->q.n = n;
	c->q.busy = calloc(n ? n : 1, sizeof(*c->q.busy));
	c->restorer = restorer_of_sigtrap();
	djp_maps_read(&c->maps);
	c->q.maps = &c->maps;
	/* room for the threads there are now and as many more again: a
	 * stopped process makes none, and more is a round to try again */
	free(read_tids(&now));
	c->cap = 2 * now + 64;
	tids = calloc(c->cap, sizeof(*tids));
	c->tids = tids;
	if (!c->q.busy || !c->maps.m || !tids || !c->restorer) {
		djp_stopped_check_free(c);
		return NULL;
	}
	return c;
}

void djp_stopped_check_free(struct djp_stopped_check *c)
{
	if (!c)
		return;
	free((void *)c->q.busy);
	free(c->maps.m);
	free(c->tids);
	free(c);
}

/* The threads of the process now, by getdents64 into c->tids: how many,
 * or -1 (more than there is room for, or unreadable). */
static long list_tids(struct djp_stopped_check *c)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t n = 0;
	long got;

	if (fd < 0)
		return -1;
	while ((got = syscall(SYS_getdents64, fd, c->dents, sizeof(c->dents))) > 0)
		for (long at = 0; at < got;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(c->dents + at);
			at += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			if (n == c->cap) {
				close(fd);
				return -1;
			}
			c->tids[n++] = (pid_t)atoi(d->name);
		}
	close(fd);
	return got < 0 ? -1 : (long)n;
}

int djp_stopped_check_run(struct djp_stopped_check *c)
{
	struct check_req *q = &c->q;
	pid_t me = (pid_t)syscall(SYS_gettid);
	long ntids = list_tids(c);
	bool any = false;

	if (ntids < 0)
		return -EAGAIN;
	atomic_store(&q->unknown, false);
	for (size_t i = 0; i < q->n; i++)
		atomic_store(&q->busy[i], 0);
	for (long i = 0; i < ntids; i++) { /* every one stopped first */
		if (c->tids[i] != me && is_stopped(c->tids[i]) == 0)
			return -EDEADLK;
	}
	for (long i = 0; i < ntids && !atomic_load(&q->unknown); i++) {
		uintptr_t sp, pc;
		bool in_call;
		if (c->tids[i] == me)
			continue; /* the writer runs none of the text */
		if (!stopped_at(c->tids[i], &sp, &pc, &in_call)) {
			if (is_stopped(c->tids[i]) >= 0) /* not gone: cannot tell */
				atomic_store(&q->unknown, true);
			continue;
		}
		mark(q, pc);
		if (in_call) /* a restarted call goes back to its syscall */
			mark(q, pc - 2);
		scan(q, sp, c->restorer, 0);
	}
	for (size_t i = 0; i < q->n; i++)
		any |= q->p[i].check && (atomic_load(&q->unknown) || atomic_load(&q->busy[i]));
	return any ? -EAGAIN : 0;
}

void djp_threads_outside(struct djp_poke *p, size_t n)
{
	atomic_uchar *busy = calloc(n ? n : 1, sizeof(*busy));
	bool clear = false;

	if (!busy) {
		for (size_t i = 0; i < n; i++)
			p[i].demoted = p[i].check;
		return;
	}
	for (unsigned round = 1; round <= ROUNDS && !clear; round++) {
		clear = one_round(p, n, busy, round);
		if (!clear)
			usleep(round * 100);
	}
	for (size_t i = 0; i < n; i++)
		p[i].demoted = p[i].check && atomic_load(&busy[i]);
	free(busy);
}
