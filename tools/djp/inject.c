/*
 * Loading libdjprobe.so into a running process from outside, as gdb's
 * `call` does: one thread is stopped with ptrace, made to call the
 * loader's dlopen, and given back every register it had.
 *
 * Which dlopen.  glibc 2.34 and later export dlopen from libc.so.6 (older
 * ones have __libc_dlopen_mode, called with __RTLD_DLOPEN).  The address
 * is the symbol's value in the file mapped in the target, read with
 * libelf, plus the mapping's load bias from /proc/PID/maps: nothing of our
 * own libc is assumed.  A process without libc.so (a static program) has no
 * loader to ask, and one that links libdjprobe statically already has an
 * engine of its own: both are refused.
 *
 * Which thread, and when.  The call runs dlopen, malloc and the library's
 * constructor on the stopped thread.  If that thread was stopped while
 * holding one of libc's own locks (inside malloc, say), the call would wait
 * for itself forever.  So a thread qualifies only when it was stopped in a
 * system call that waits (read, poll, futex, nanosleep, ...: a thread
 * sleeping there holds no libc lock that dlopen takes), or in code outside
 * libc and the loader.  Threads are seized one at a time (PTRACE_SEIZE and
 * PTRACE_INTERRUPT, which stops only that thread) and let go at once when
 * they do not qualify; the others never stop.  After a few rounds without
 * one, the injection is refused rather than risked.
 *
 * The call.  Below the thread's stack pointer, past the red zone, go the
 * library's path and a return address; %rip is dlopen, %rdi the path, %rsi
 * RTLD_NOW, and orig_rax -1, so that the kernel does not restart the
 * interrupted system call with these registers.  The return address is a
 * `syscall` instruction in libc's code, and the thread runs under
 * PTRACE_SYSCALL: the system call entry at that address, with %rsp just
 * above the return address, is the return from dlopen (its number is the
 * handle), and is skipped.  No fault is used for the return: the kernel
 * forces a fault's signal on the thread, which unblocks it and resets its
 * handler when the program blocked it, and that would stay changed.  Then
 * the thread is stopped once more in the kernel's signal path
 * (PTRACE_INTERRUPT), and the saved registers and the whole extended state
 * go back (PTRACE_SETREGS, NT_X86_XSTATE), orig_rax and the -ERESTART*
 * value included: when the thread resumes, the kernel restarts or fails
 * its system call as it would have done had it never stopped.  Signals
 * that arrive for the thread while it is held are taken from it and sent
 * again after it is let go.
 *
 * What it cannot give back: the program's libc now has one more library
 * and a thread (the agent), as with LD_PRELOAD.  The library's symbols do
 * not interpose on the program's calls by themselves (they were bound
 * before it came); the engine rewrites the GOT slots of the few it needs
 * when it starts (kernel/got_patch.c).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "lib/mapped_file.h"

#define MAX_RANGES 16
#define MAX_PENDING 32
#define ROUNDS 50	      /* tries over every thread for one that qualifies */
#define CALL_TIMEOUT_MS 30000 /* dlopen and the constructor */
#define RTLD_DLOPEN_FLAG 0x80000000 /* glibc's __RTLD_DLOPEN, for __libc_dlopen_mode */

struct target {
	pid_t pid;
	uintptr_t dlopen;
	int mode;
	uintptr_t lo[MAX_RANGES], hi[MAX_RANGES]; /* libc's and the loader's code */
	unsigned nranges;
	int pending[MAX_PENDING]; /* signals taken from the held thread */
	unsigned npending;
	char *err;
	size_t errsz;
};

static int fail(struct target *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, t->errsz, fmt, ap);
	va_end(ap);
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Value of the defined dynamic symbol `name` in the ELF file `path`, and the
 * lowest PT_LOAD address (the bias is the mapping's start less that). */
static bool elf_symbol(const char *path, const char *name, uint64_t *value, uint64_t *first_load)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t nph;
	bool found = false;

	if (fd < 0)
		return false;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return false;
	}
	*first_load = UINT64_MAX;
	if (!elf_getphdrnum(elf, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < *first_load)
				*first_load = ph.p_vaddr & ~(uint64_t)0xfff;
		}
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !(n = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
			    strcmp(n, name))
				continue;
			*value = sym.st_value;
			found = true;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return found && *first_load != UINT64_MAX;
}

/* The loader's dlopen in the target, and where libc's and the loader's
 * code is. */
static int find_loader(struct target *t, const char *lib)
{
	char path[64], line[4200], file[PATH_MAX + 64];
	struct djp_mapping m, libc = { 0 };
	bool have_libc = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return fail(t, "cannot read its memory map: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *b;
		if (!djp_mapping_parse(line, &m) || !m.path[0])
			continue;
		b = base_name(m.path);
		if (!strcmp(b, base_name(lib)) || !strncmp(b, "libdjprobe.so", 13)) {
			fclose(f);
			return fail(t, "%s is loaded in it but its agent is not running (DJP_AGENT=0?)", b);
		}
		if (djp_path_is_libc(b) && !have_libc && m.offset == 0) {
			libc = m;
			have_libc = true;
		}
		if (m.exec && (djp_path_is_libc(b) || !strncmp(b, "ld-", 3)) && t->nranges < MAX_RANGES) {
			t->lo[t->nranges] = m.lo;
			t->hi[t->nranges++] = m.hi;
		}
	}
	fclose(f);
	if (!have_libc)
		return fail(t, "cannot load the agent: no libc.so in it (a static program has no loader to ask)");
	if (djp_mapping_file(t->pid, &libc, file, sizeof(file)))
		return fail(t, "cannot read its libc (%s)", libc.path);
	{
		uint64_t value, first;
		if (elf_symbol(file, "dlopen", &value, &first)) {
			t->mode = 2; /* RTLD_NOW */
		} else if (elf_symbol(file, "__libc_dlopen_mode", &value, &first)) {
			t->mode = 2 | RTLD_DLOPEN_FLAG;
		} else {
			return fail(t, "cannot load the agent: no dlopen in its libc (%s)", libc.path);
		}
		t->dlopen = libc.lo - first + value;
	}
	/* A program that links libdjprobe statically has an engine already. */
	{
		uint64_t v, first;
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
		if (elf_symbol(path, "djp_connect", &v, &first))
			return fail(t, "it links libdjprobe statically but did not start its agent (djp_agent_start)");
	}
	return 0;
}

/* ---- threads ---------------------------------------------------------------- */

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

static void take_signal(struct target *t, int sig)
{
	if (t->npending < MAX_PENDING)
		t->pending[t->npending++] = sig;
}

/* Wait for thread tid's next stop.  0, or -1 when it is gone. */
static int wait_stop(pid_t tid, int *status)
{
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != tid || !WIFSTOPPED(*status))
			return -1;
		return 0;
	}
}

/* Stop thread tid in the kernel's signal path: the PTRACE_EVENT_STOP of
 * PTRACE_INTERRUPT, where registers can go back and the interrupted system
 * call's restart is still to be decided.  `held`: it is in another stop
 * now, and is resumed (PTRACE_CONT) to reach it.  Signals on their way to
 * the thread are taken, for later.  0, or -1 when it is gone. */
static int stop_in_signal_path(struct target *t, pid_t tid, bool held)
{
	int st;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || (held && ptrace(PTRACE_CONT, tid, 0, 0) < 0))
		return -1;
	for (;;) {
		if (wait_stop(tid, &st))
			return -1;
		if (st >> 16 == PTRACE_EVENT_STOP)
			return 0;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80))
			take_signal(t, WSTOPSIG(st));
		if (ptrace(PTRACE_CONT, tid, 0, 0) < 0)
			return -1;
	}
}

static bool in_libc(const struct target *t, uintptr_t pc)
{
	for (unsigned i = 0; i < t->nranges; i++)
		if (pc >= t->lo[i] && pc < t->hi[i])
			return true;
	return false;
}

static void let_go(struct target *t, pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, 0, 0);
	for (unsigned i = 0; i < t->npending; i++)
		syscall(SYS_tgkill, t->pid, tid, t->pending[i]);
	t->npending = 0;
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

/* Seize the threads one at a time until one qualifies; its tid (held and
 * stopped, its registers in *regs), or -1. */
static pid_t pick_thread(struct target *t, struct user_regs_struct *regs)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	for (int round = 0; round < ROUNDS; round++) {
		DIR *d = opendir(path);
		struct dirent *e;
		if (!d)
			return fail(t, "cannot list its threads: %s", strerror(errno)), -1;
		while ((e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid <= 0)
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
				if (errno == EPERM) {
					closedir(d);
					return fail(t, "ptrace refused%s", scope_note()), -1;
				}
				continue; /* gone */
			}
			if (!stop_in_signal_path(t, tid, false) && ptrace(PTRACE_GETREGS, tid, 0, regs) == 0 &&
			    ((long)regs->orig_rax >= 0 ? waiting_call((long)regs->orig_rax) : !in_libc(t, regs->rip))) {
				closedir(d);
				return tid;
			}
			let_go(t, tid);
		}
		closedir(d);
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	return fail(t, "no thread of it could be stopped where calling the loader is safe (all busy in libc)"), -1;
}

/* ---- the call --------------------------------------------------------------- */

static bool write_mem(pid_t pid, uintptr_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)addr, len };
	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* A `syscall` instruction (0f 05) in libc's code, for the return of the
 * call: 0 when none is found. */
static uintptr_t find_syscall_insn(const struct target *t)
{
	static uint8_t buf[65536];
	for (unsigned r = 0; r < t->nranges; r++)
		for (uintptr_t a = t->lo[r]; a + 1 < t->hi[r]; a += sizeof(buf) - 1) {
			size_t n = t->hi[r] - a < sizeof(buf) ? t->hi[r] - a : sizeof(buf);
			struct iovec local = { buf, n }, remote = { (void *)a, n };
			ssize_t got = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);
			for (ssize_t i = 0; i + 1 < got; i++)
				if (buf[i] == 0x0f && buf[i + 1] == 0x05)
					return a + (uintptr_t)i;
			if (got <= 0)
				break;
		}
	return 0;
}

/* Put the thread's registers and extended state back, and let it go.  It
 * must be stopped in the kernel's signal path (an interrupt stop), where
 * the interrupted system call's restart is decided after it resumes. */
static void give_back(struct target *t, pid_t tid, const struct user_regs_struct *saved, struct iovec *xs)
{
	ptrace(PTRACE_SETREGS, tid, 0, saved);
	if (xs)
		ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, xs);
	let_go(t, tid);
}

/* What makes a process one not to stop: init, a kernel thread, a zombie. */
static int not_injectable(struct target *t)
{
	char path[64], buf[1024], *c;
	unsigned long flags = 0;
	char state = 0;
	FILE *f;
	int n = 0;

	if (t->pid == 1)
		return fail(t, "it is init: the agent is not loaded into it (start it with LD_PRELOAD=libdjprobe.so)");
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return fail(t, "it has exited");
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		n = sscanf(c + 2, "%c %*d %*d %*d %*d %*d %lu", &state, &flags);
	fclose(f);
	if (n != 2)
		return fail(t, "cannot read its state");
	if (state == 'Z' || state == 'X')
		return fail(t, "it has exited (a zombie its parent has not reaped)");
	if (flags & 0x00200000) /* PF_KTHREAD */
		return fail(t, "it is a kernel thread");
	return 0;
}

static int inject(pid_t pid, const char *lib, char *err, size_t errsz)
{
	static uint8_t xstate[65536] __attribute__((aligned(64)));
	struct target t = { .pid = pid, .err = err, .errsz = errsz };
	struct user_regs_struct saved, call;
	struct iovec xs = { xstate, sizeof(xstate) }, *xsp;
	size_t len = strlen(lib) + 1;
	uintptr_t str, sp, stub;
	uint64_t handle = 0;
	pid_t tid;
	int st;
	double t0 = now_ms(), idle_since = 0;

	if (lib[0] != '/')
		return fail(&t, "%s: the library path must be absolute", lib);
	if (not_injectable(&t) || find_loader(&t, lib))
		return -1;
	if (!(stub = find_syscall_insn(&t)))
		return fail(&t, "cannot read its libc's code");
	if ((tid = pick_thread(&t, &saved)) < 0)
		return -1;
	xsp = ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &xs) == 0 ? &xs : NULL;

	/* the path, and the return address: the syscall instruction */
	sp = (saved.rsp - 128 - 256) & ~(uintptr_t)15;
	str = (sp - len) & ~(uintptr_t)15;
	sp = str - 8; /* %rsp at a function's entry: 8 mod 16 */
	if (!write_mem(pid, str, lib, len) || !write_mem(pid, sp, &stub, 8)) {
		let_go(&t, tid);
		return fail(&t, "cannot write to its stack: %s", strerror(errno));
	}
	call = saved;
	call.rip = t.dlopen;
	call.rdi = str;
	call.rsi = (unsigned long)(unsigned)t.mode;
	call.rsp = sp;
	call.rax = 0;
	call.orig_rax = (unsigned long)-1; /* no system call restart with these */
	call.eflags &= ~0x400ul;	   /* DF clear, as the ABI wants at a call */
	if (ptrace(PTRACE_SETOPTIONS, tid, 0, PTRACE_O_TRACESYSGOOD) < 0 ||
	    ptrace(PTRACE_SETREGS, tid, 0, &call) < 0 || ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0) {
		give_back(&t, tid, &saved, xsp);
		return fail(&t, "cannot make its thread %d call the loader: %s", (int)tid, strerror(errno));
	}
	/* Run the call, through the loader's own system calls, to the return. */
	for (;;) {
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r == tid && !WIFSTOPPED(st)))
			return fail(&t, "it exited while the agent was being loaded");
		if (r == 0) {
			double now = now_ms();
			if (now - t0 > CALL_TIMEOUT_MS) {
				/* stuck in the loader (a lock that never comes free):
				 * give the thread back as it was; what the loader holds
				 * stays held */
				if (!stop_in_signal_path(&t, tid, true))
					give_back(&t, tid, &saved, xsp);
				return fail(&t, "its loader did not return within %d s", CALL_TIMEOUT_MS / 1000);
			}
			/* the loader's system calls stop it every few microseconds:
			 * yield for a while, then nap */
			if (!idle_since)
				idle_since = now;
			if (now - idle_since < 2)
				sched_yield();
			else
				nanosleep(&(struct timespec){ 0, 200000 }, NULL);
			continue;
		}
		idle_since = 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			struct user_regs_struct now;
			struct __ptrace_syscall_info info;
			if (ptrace(PTRACE_GETREGS, tid, 0, &now) == 0 && now.rip == stub + 2 && now.rsp == sp + 8 &&
			    ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), &info) > 0 &&
			    info.op == PTRACE_SYSCALL_INFO_ENTRY) {
				/* back from dlopen, at the syscall: skip it, and stop
				 * where the registers can go back */
				handle = now.orig_rax;
				now.orig_rax = (unsigned long)-1;
				if (ptrace(PTRACE_SETREGS, tid, 0, &now) < 0 ||
				    stop_in_signal_path(&t, tid, true) < 0)
					return fail(&t, "it exited while the agent was being loaded");
				break;
			}
		} else if (st >> 16 == 0) {
			int sig = WSTOPSIG(st);
			if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
				/* a fault inside the loader: give it back as it was */
				if (!stop_in_signal_path(&t, tid, true))
					give_back(&t, tid, &saved, xsp);
				return fail(&t, "its loader faulted (signal %d) loading %s", sig, lib);
			}
			take_signal(&t, sig);
		}
		ptrace(PTRACE_SYSCALL, tid, 0, 0);
	}
	/* everything back as it was, the interrupted system call included */
	give_back(&t, tid, &saved, xsp);
	if (!handle)
		return fail(&t, "its loader could not load %s", lib);
	return 0;
}

/*
 * The injection with the tool's own termination signals held off: between
 * the moment the thread is sent into dlopen and the moment its registers
 * are back, the tool must not die, or the thread would return from dlopen
 * into the `syscall` instruction with nobody to catch it.  ^C, SIGTERM and
 * the like wait the tens of milliseconds it takes; SIGKILL cannot.
 */
int djp_inject(pid_t pid, const char *lib, char *err, size_t errsz)
{
	static const int held[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2 };
	sigset_t set, old;
	int ret;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		sigaddset(&set, held[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	ret = inject(pid, lib, err, errsz);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}
