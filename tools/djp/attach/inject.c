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
 * Which thread (inject_threads.c): one stopped in a system call that waits,
 * or outside libc, with no signal frame on its stack and room below its
 * %rsp for the loader; none of the process's threads may wait inside a
 * signal handler.  And whether the process's seccomp filter would let the
 * loader and the agent make their system calls (inject_seccomp.c).
 *
 * What the process would lack is looked at first, so that the refusal
 * names it: a library path that does not exist in its mount namespace (a
 * container), fewer free descriptors under its RLIMIT_NOFILE than the
 * loader and the agent take, another tracer (a process has one).
 *
 * The call.  Below the thread's stack pointer, past the red zone, go the
 * library's path and a return address; %rip is dlopen, %rdi the path, %rsi
 * RTLD_NOW, and orig_rax -1, so that the kernel does not restart the
 * interrupted system call with these registers.  The return address is a
 * `syscall` instruction in libc's code, and the thread runs under
 * PTRACE_SYSCALL: the system call entry at that address, with %rsp just
 * above the return address, is the return from the call (its number is
 * the value returned), and becomes a getpid, harmless (not the usual -1:
 * seccomp sees the number after the tracer, and an allow-list filter
 * kills on -1).  From that stop another call can
 * be made the same way: dlerror() when dlopen returned NULL, whose text
 * then says why (a full descriptor table, a missing dependency), and the
 * library's djp_agent_start(), whose value says whether the agent's thread
 * and socket came up (an RLIMIT_AS too small for the thread's stack).
 * No fault is used for the return: the kernel forces a fault's signal on
 * the thread, which unblocks it and resets its handler when the program
 * blocked it, and that would stay changed.  Then the thread is stopped
 * once more in the kernel's signal path (PTRACE_INTERRUPT), and the saved
 * registers and the whole extended state go back (PTRACE_SETREGS,
 * NT_X86_XSTATE), orig_rax and the -ERESTART* value included: when the
 * thread resumes, the kernel restarts or fails its system call as it would
 * have done had it never stopped.  Signals that arrive for the thread
 * while it is held are taken from it and sent again after it is let go.
 *
 * Every wait is bounded.  A call that does not return within 30 s
 * (DJP_INJECT_TIMEOUT seconds: a lock that does not come free, a
 * constructor of the program's own library that waits on another thread)
 * is interrupted (PTRACE_INTERRUPT alone: the thread runs, and
 * PTRACE_CONT would resume it past its interrupt stop), and the thread
 * gets its registers back; whatever the loader held then stays held,
 * which is why the choice of thread is careful.
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
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/djp/attach/inject.h"
#include "tools/djp/attach/inject_target.h"
#include "lib/mapped_file.h"

#define CALL_TIMEOUT_MS 30000	    /* dlopen and the constructor; DJP_INJECT_TIMEOUT */
#define RTLD_DLOPEN_FLAG 0x80000000 /* glibc's __RTLD_DLOPEN, for __libc_dlopen_mode */
/* Descriptors the loader (one at a time) and the agent (its socket, a
 * session's socket, rings and marker log, the files it reads) hold at once. */
#define AGENT_FDS 8
/* The system call a call's return makes instead of the one the `syscall`
 * instruction would: the kernel runs seccomp after the tracer's syscall
 * entry stop, on the number the tracer left, so the usual -1 ("skip")
 * would meet an allow-list filter and kill the process.  getpid is one of
 * the agent's calls (kernel/agent/agent_syscalls.c), which the seccomp
 * check has let through. */
#define SKIP_NR ((unsigned long)SYS_getpid)

int inject_fail(struct target *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, t->errsz, fmt, ap);
	va_end(ap);
	return -1;
}

double inject_now_ms(void)
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

/* libc's __restore_rt, the return address of every handler glibc's
 * sigaction installs: `mov $15,%rax; syscall` (rt_sigreturn). */
static void find_restorers(struct target *t)
{
	static const uint8_t pat[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	static uint8_t buf[65536];
	for (unsigned r = 0; r < t->nranges; r++)
		for (uintptr_t a = t->lo[r]; a + sizeof(pat) <= t->hi[r]; a += sizeof(buf) - sizeof(pat)) {
			size_t n = t->hi[r] - a < sizeof(buf) ? t->hi[r] - a : sizeof(buf);
			struct iovec local = { buf, n }, remote = { (void *)a, n };
			ssize_t got = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);
			for (ssize_t i = 0; i + (ssize_t)sizeof(pat) <= got; i++)
				if (!memcmp(buf + i, pat, sizeof(pat)) && t->nrestorers < INJECT_MAX_RESTORERS) {
					uintptr_t at = a + (uintptr_t)i;
					bool seen = false;
					for (unsigned k = 0; k < t->nrestorers; k++)
						seen |= t->restorer[k] == at;
					if (!seen)
						t->restorer[t->nrestorers++] = at;
				}
			if (got < (ssize_t)n)
				break;
		}
}

/* Was the process started with DJP_AGENT=0, which keeps the library's
 * agent from starting? */
static bool agent_off(pid_t pid)
{
	char path[64], buf[65536];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; i < n; i += (ssize_t)strnlen(buf + i, (size_t)(n - i)) + 1)
		if (!strncmp(buf + i, "DJP_AGENT=0", 11) && (i + 11 >= n || !buf[i + 11]))
			return true;
	return false;
}

/* The loader's dlopen in the target, where libc's and the loader's code
 * is, and whether the library is there already. */
static int find_loader(struct target *t, const char *lib)
{
	char path[64], line[4200], file[PATH_MAX + 64];
	struct djp_mapping m, libc = { 0 };
	bool have_libc = false;
	char loaded[256] = ""; /* its name, when the library is mapped */
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return inject_fail(t, "cannot read its memory map: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *b;
		if (!djp_mapping_parse(line, &m) || !m.path[0])
			continue;
		b = base_name(m.path);
		if ((!strcmp(b, base_name(lib)) || !strncmp(b, "libdjprobe.so", 13)) && !t->loaded_lo) {
			if (agent_off(t->pid)) {
				fclose(f);
				return inject_fail(t, "%s is loaded in it but its agent is off (DJP_AGENT=0 in its environment)",
						   b);
			}
			if (m.offset == 0 && !djp_mapping_file(t->pid, &m, t->loaded_file, sizeof(t->loaded_file)))
				t->loaded_lo = m.lo;
			snprintf(loaded, sizeof(loaded), "%.200s", b);
		}
		if (djp_path_is_libc(b) && !have_libc && m.offset == 0) {
			libc = m;
			have_libc = true;
		}
		if (m.exec && (djp_path_is_libc(b) || !strncmp(b, "ld-", 3)) && t->nranges < INJECT_MAX_RANGES) {
			t->lo[t->nranges] = m.lo;
			t->hi[t->nranges++] = m.hi;
		}
	}
	fclose(f);
	/* never a second copy beside it: its start, or nothing */
	if (loaded[0] && !t->loaded_lo)
		return inject_fail(t, "%s is loaded in it without its agent, and its file cannot be read to start it",
				   loaded);
	if (!have_libc)
		return inject_fail(t, "cannot load the agent: no libc.so in it (a static program has no loader to ask)");
	if (djp_mapping_file(t->pid, &libc, file, sizeof(file)))
		return inject_fail(t, "cannot read its libc (%s)", libc.path);
	{
		uint64_t value, first;
		if (elf_symbol(file, "dlopen", &value, &first)) {
			t->mode = 2; /* RTLD_NOW */
		} else if (elf_symbol(file, "__libc_dlopen_mode", &value, &first)) {
			t->mode = 2 | RTLD_DLOPEN_FLAG;
		} else {
			return inject_fail(t, "cannot load the agent: no dlopen in its libc (%s)", libc.path);
		}
		t->dlopen = libc.lo - first + value;
		if (t->mode == 2 && elf_symbol(file, "dlerror", &value, &first))
			t->dlerror = libc.lo - first + value;
	}
	/* A program that links libdjprobe statically has an engine already. */
	{
		uint64_t v, first;
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
		if (elf_symbol(path, "djp_connect", &v, &first))
			return inject_fail(t, "it links libdjprobe statically but did not start its agent (djp_agent_start)");
	}
	find_restorers(t);
	return 0;
}

/* Where `lib` is mapped in the target once loaded: the address of its
 * symbol `name`, or 0. */
static uintptr_t lib_symbol(const struct target *t, const char *lib, const char *name)
{
	char path[64], line[4200];
	struct djp_mapping m;
	uint64_t value, first;
	uintptr_t addr = 0;
	FILE *f;

	if (!elf_symbol(lib, name, &value, &first))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (!addr && fgets(line, sizeof(line), f))
		if (djp_mapping_parse(line, &m) && m.offset == 0 && !strcmp(base_name(m.path), base_name(lib)))
			addr = m.lo - first + value;
	fclose(f);
	return addr;
}

/* ---- what the process lacks ------------------------------------------------- */

/* A zombie leader's threads that live on (its main thread called
 * pthread_exit): the kernel keeps the group's count in the leader's
 * status; 0 for a process that has exited. */
static int live_threads(pid_t pid)
{
	char path[64], line[256];
	int threads = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &threads) == 1)
			break;
	fclose(f);
	return threads > 1 ? threads - 1 : 0;
}

/* What makes a process one not to stop: init, a kernel thread, a zombie. */
static int not_injectable(struct target *t)
{
	char path[64], buf[1024], *c;
	unsigned long flags = 0;
	char state = 0;
	int n = 0, ppid = 0;
	FILE *f;

	if (t->pid == 1)
		return inject_fail(t, "it is init: the agent is not loaded into it (start it with LD_PRELOAD=libdjprobe.so)");
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return inject_fail(t, "it has exited");
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		n = sscanf(c + 2, "%c %d %*d %*d %*d %*d %lu", &state, &ppid, &flags);
	fclose(f);
	if (n != 3)
		return inject_fail(t, "cannot read its state");
	if (state == 'Z' && (n = live_threads(t->pid)) > 0)
		return inject_fail(t,
				   "its main thread has ended (pthread_exit) and %d other thread%s run%s on: attaching "
				   "to such a process is not supported yet",
				   n, n == 1 ? "" : "s", n == 1 ? "s" : "");
	if (state == 'Z' || state == 'X')
		return inject_fail(t, "it has exited (a zombie its parent has not reaped)");
	if (flags & 0x00200000) /* PF_KTHREAD */
		return inject_fail(t, "it is a kernel thread");
	/* A child of vfork runs in its parent's memory until it execs or
	 * exits: a library loaded or an agent started there would be the
	 * parent's too, its state written over by a thread the parent does
	 * not know.  (kcmp says so where the kernel has it.) */
	if (ppid > 0 && syscall(SYS_kcmp, t->pid, ppid, 1 /* KCMP_VM */, 0, 0) == 0)
		return inject_fail(t, "it runs in its parent's memory (a child of vfork, until it execs or exits)");
	return 0;
}

/* The library must be there at the same path in the mount namespace of
 * the thread that calls the loader (a namespace is a thread's): the loader
 * opens it there. */
static int lib_reachable(struct target *t, const char *lib, pid_t tid)
{
	char path[PATH_MAX + 64];
	struct stat mine, its;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/ns/mnt", (int)t->pid, (int)tid);
	if (stat("/proc/self/ns/mnt", &mine) || stat(path, &its) || mine.st_ino == its.st_ino)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/root%s", (int)t->pid, (int)tid, lib);
	if (access(path, R_OK) == 0)
		return 0;
	return inject_fail(t,
			   "it runs in another mount namespace (a container?), where %s does not exist: its loader "
			   "could not open it (make the library reachable there at this path, or set DJP_PRELOAD to a "
			   "path both namespaces have)",
			   lib);
}

int djp_fds_free(pid_t pid, long *nfree, unsigned long long *limit)
{
	char path[64];
	struct rlimit rl;
	struct dirent *e;
	long below = 0;
	DIR *d;

	if (prlimit(pid, RLIMIT_NOFILE, NULL, &rl))
		return -errno;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > LONG_MAX)
		rl.rlim_cur = LONG_MAX;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strtoul(e->d_name, NULL, 10) < rl.rlim_cur)
			below++; /* a descriptor numbered above the limit takes no room */
	closedir(d);
	*nfree = (long)rl.rlim_cur - below;
	*limit = rl.rlim_cur;
	return 0;
}

/* Free descriptors under its RLIMIT_NOFILE: the loader opens each file it
 * maps, the agent its sockets and memfds. */
static int fds_free(struct target *t)
{
	unsigned long long limit;
	long nfree;

	if (djp_fds_free(t->pid, &nfree, &limit) || nfree >= AGENT_FDS)
		return 0; /* unreadable: ptrace will say why */
	return inject_fail(t, "it has %ld of its %llu descriptors free (RLIMIT_NOFILE): the loader and the agent need %d",
			   nfree, limit, AGENT_FDS);
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
	inject_let_go(t, tid);
}

/* One thread held for calls: its registers as they were, where the calls
 * return, and their stack. */
struct call_site {
	pid_t tid;
	struct user_regs_struct saved;
	struct iovec xs, *xsp;
	uintptr_t stub, sp;
	bool at_return; /* in the syscall-entry stop of a call's return */
};

enum { CALL_OK, CALL_GONE, CALL_STUCK, CALL_LOST, CALL_FAULT, CALL_NO_STACK };

static int end_calls(struct target *t, struct call_site *c);

/* Call fn(a0, a1) on the held thread; *ret its value.  On CALL_OK the
 * thread is left in the stop of the return; on CALL_STUCK, CALL_FAULT and
 * CALL_NO_STACK it has its registers back and is let go; on CALL_GONE it
 * is gone. */
static int remote_call(struct target *t, struct call_site *c, uintptr_t fn, uint64_t a0, uint64_t a1, uint64_t *ret,
		       int *fault)
{
	struct user_regs_struct call = c->saved;
	double t0 = inject_now_ms(), idle_since = 0;
	int st;

	if (!write_mem(t->pid, c->sp, &c->stub, 8)) {
		if (c->at_return)
			end_calls(t, c);
		else
			give_back(t, c->tid, &c->saved, c->xsp);
		return CALL_NO_STACK;
	}
	call.rip = fn;
	call.rdi = a0;
	call.rsi = a1;
	call.rsp = c->sp;
	call.rax = 0;
	/* From the interrupt stop: no system call restart with these.  From
	 * the return of a call, whose system call entry is under way: one that
	 * does nothing runs instead (see skip_return) */
	call.orig_rax = c->at_return ? SKIP_NR : (unsigned long)-1;
	call.eflags &= ~0x400ul;	   /* DF clear, as the ABI wants at a call */
	if (ptrace(PTRACE_SETOPTIONS, c->tid, 0, PTRACE_O_TRACESYSGOOD) < 0 ||
	    ptrace(PTRACE_SETREGS, c->tid, 0, &call) < 0 || ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
		return CALL_GONE;
	c->at_return = false;
	/* Run the call, through the loader's own system calls, to the return. */
	for (;;) {
		pid_t r = waitpid(c->tid, &st, __WALL | WNOHANG);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r == c->tid && !WIFSTOPPED(st)))
			return CALL_GONE;
		if (r == 0) {
			double now = inject_now_ms();
			if (now - t0 > t->call_timeout_ms) {
				/* stuck (a lock that never comes free): the thread
				 * runs, so it is interrupted, not resumed, and given
				 * back as it was; what the call holds stays held */
				switch (inject_stop_in_signal_path(t, c->tid, false)) {
				case 0:
					give_back(t, c->tid, &c->saved, c->xsp);
					return CALL_STUCK;
				case -2:
					return CALL_LOST;
				default:
					return CALL_GONE;
				}
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
			if (ptrace(PTRACE_GETREGS, c->tid, 0, &now) == 0 && now.rip == c->stub + 2 &&
			    now.rsp == c->sp + 8 &&
			    ptrace(PTRACE_GET_SYSCALL_INFO, c->tid, (void *)sizeof(info), &info) > 0 &&
			    info.op == PTRACE_SYSCALL_INFO_ENTRY) {
				*ret = now.orig_rax;
				c->at_return = true;
				return CALL_OK;
			}
		} else if (st >> 16 == 0) {
			int sig = WSTOPSIG(st);
			if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
				/* a fault inside the call: give it back as it was */
				*fault = sig;
				if (inject_stop_in_signal_path(t, c->tid, true))
					return CALL_GONE;
				give_back(t, c->tid, &c->saved, c->xsp);
				return CALL_FAULT;
			}
			inject_take_signal(t, sig);
		}
		if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) < 0)
			return CALL_GONE;
	}
}

/* Done with calls: skip the return's system call (SKIP_NR), stop where the
 * registers can go back, and give them back. */
static int end_calls(struct target *t, struct call_site *c)
{
	struct user_regs_struct now;
	if (ptrace(PTRACE_GETREGS, c->tid, 0, &now) < 0)
		return -1;
	now.orig_rax = SKIP_NR;
	if (ptrace(PTRACE_SETREGS, c->tid, 0, &now) < 0 || inject_stop_in_signal_path(t, c->tid, true))
		return -1;
	give_back(t, c->tid, &c->saved, c->xsp);
	return 0;
}

/* The text of a string in the target, at most sz - 1 bytes. */
static void read_string(pid_t pid, uintptr_t addr, char *out, size_t sz)
{
	struct iovec local = { out, sz - 1 }, remote = { (void *)addr, sz - 1 };
	ssize_t got = addr ? process_vm_readv(pid, &local, 1, &remote, 1, 0) : -1;
	out[got > 0 ? got : 0] = 0;
}

static int call_failed(struct target *t, pid_t tid, int r, int fault, const char *lib, const char *what)
{
	if (r == CALL_STUCK)
		return inject_fail(t,
				   "its %s did not return within %g s (its thread is given back; a lock the loader "
				   "took may stay held)",
				   what, t->call_timeout_ms / 1000);
	if (r == CALL_LOST)
		return inject_fail(t,
				   "its %s did not return within %g s, and its thread %d did not stop to be given "
				   "back (it is let go when djp exits)",
				   what, t->call_timeout_ms / 1000, (int)tid);
	if (r == CALL_NO_STACK)
		return inject_fail(t, "cannot write to its thread %d's stack", (int)tid);
	if (r == CALL_FAULT)
		return inject_fail(t, "its %s faulted (signal %d) loading %s", what, fault, lib);
	return inject_fail(t, "it exited while the agent was being loaded");
}

/* The agent's start in the target: 0, or its failure said. */
static int start_said(struct target *t, uint64_t started)
{
	struct rlimit rl;
	char as[96] = "";
	if (!(int)started)
		return 0;
	if (prlimit(t->pid, RLIMIT_AS, NULL, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(as, sizeof(as), " (its RLIMIT_AS is %llu MiB)", (unsigned long long)rl.rlim_cur >> 20);
	return inject_fail(t, "its agent could not start: %s%s", strerror(-(int)started), as);
}

/*
 * The library is in the process already, without its agent: a child of
 * fork (a pre-fork server's worker forked after a tracing session, whose
 * parent's agent thread did not come along).  No dlopen: the held thread
 * calls the library's djp_agent_start, which starts the child's own.
 */
static int start_loaded(struct target *t, struct call_site *c)
{
	uint64_t value, first, started = 0;
	int r, fault = 0;

	if (!elf_symbol(t->loaded_file, "djp_agent_start", &value, &first)) {
		inject_let_go(t, c->tid);
		return inject_fail(t, "the libdjprobe.so loaded in it has no djp_agent_start");
	}
	c->xsp = ptrace(PTRACE_GETREGSET, c->tid, (void *)NT_X86_XSTATE, &c->xs) == 0 ? &c->xs : NULL;
	c->sp = ((c->saved.rsp - 128 - 256) & ~(uintptr_t)15) - 8; /* %rsp at a function's entry */
	r = remote_call(t, c, t->loaded_lo - first + value, 0, 0, &started, &fault);
	if (r != CALL_OK)
		return call_failed(t, c->tid, r, fault, t->loaded_file, "agent's start");
	if (end_calls(t, c))
		return inject_fail(t, "it exited while the agent was being started");
	return start_said(t, started);
}

static int inject(struct target *t, const char *lib)
{
	static uint8_t xstate[65536] __attribute__((aligned(64)));
	struct call_site c = { .xs = { xstate, sizeof(xstate) } };
	size_t len = strlen(lib) + 1;
	uintptr_t str, start;
	uint64_t handle = 0, started = 0;
	int r, fault = 0;

	if (lib[0] != '/')
		return inject_fail(t, "%s: the library path must be absolute", lib);
	if (not_injectable(t) || find_loader(t, lib) || fds_free(t))
		return -1;
	if (!(c.stub = find_syscall_insn(t)))
		return inject_fail(t, "cannot read its libc's code");
	if ((c.tid = inject_pick_thread(t, &c.saved)) < 0)
		return -1;
	if (t->loaded_lo)
		return start_loaded(t, &c);
	if (lib_reachable(t, lib, c.tid)) {
		inject_let_go(t, c.tid);
		return -1;
	}
	c.xsp = ptrace(PTRACE_GETREGSET, c.tid, (void *)NT_X86_XSTATE, &c.xs) == 0 ? &c.xs : NULL;

	/* the path, and the return address: the syscall instruction */
	c.sp = (c.saved.rsp - 128 - 256) & ~(uintptr_t)15;
	str = (c.sp - len) & ~(uintptr_t)15;
	c.sp = str - 8; /* %rsp at a function's entry: 8 mod 16 */
	if (!write_mem(t->pid, str, lib, len)) {
		inject_let_go(t, c.tid);
		return inject_fail(t, "cannot write to its thread %d's stack: %s", (int)c.tid, strerror(errno));
	}
	r = remote_call(t, &c, t->dlopen, str, (unsigned)t->mode, &handle, &fault);
	if (r != CALL_OK)
		return call_failed(t, c.tid, r, fault, lib, "loader");
	if (!handle) {
		char why[512] = "";
		uint64_t text = 0;
		if (t->dlerror && remote_call(t, &c, t->dlerror, 0, 0, &text, &fault) == CALL_OK)
			read_string(t->pid, text, why, sizeof(why));
		if (c.at_return)
			end_calls(t, &c);
		if (why[0])
			return inject_fail(t, "its loader could not load %s: %s", lib, why);
		return inject_fail(t, "its loader could not load %s", lib);
	}
	/* the agent's start, done by the constructor: its outcome */
	if ((start = lib_symbol(t, lib, "djp_agent_start")) &&
	    (r = remote_call(t, &c, start, 0, 0, &started, &fault)) != CALL_OK)
		return call_failed(t, c.tid, r, fault, lib, "agent's start");
	if (end_calls(t, &c))
		return inject_fail(t, "it exited while the agent was being loaded");
	return start_said(t, started);
}

/*
 * The injection with the tool's own termination signals held off: between
 * the moment the thread is sent into dlopen and the moment its registers
 * are back, the tool must not die, or the thread would return from dlopen
 * into the `syscall` instruction with nobody to catch it.  ^C, SIGTERM and
 * the like wait the tens of milliseconds it takes (every wait in it is
 * bounded); SIGKILL cannot.
 */
int djp_inject(pid_t pid, const char *lib, bool force, char *err, size_t errsz)
{
	static const int held[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2 };
	struct target t = { .pid = pid, .force = force, .err = err, .errsz = errsz, .call_timeout_ms = CALL_TIMEOUT_MS };
	const char *env = getenv("DJP_INJECT_TIMEOUT");
	sigset_t set, old;
	int ret;

	if (env && *env) {
		char *end;
		double s = strtod(env, &end);
		if (*end || !(s > 0) || s > 86400)
			return snprintf(err, errsz, "DJP_INJECT_TIMEOUT=%s: not a number of seconds", env), -1;
		t.call_timeout_ms = s * 1000;
	}

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		sigaddset(&set, held[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	ret = inject(&t, lib);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}
