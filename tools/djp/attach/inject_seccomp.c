/*
 * Would a seccomp filter kill the target for the injection?
 *
 * A process under a seccomp filter (/proc/PID/task/TID/status says
 * "Seccomp: 2") runs every system call through it; a filter that answers
 * SECCOMP_RET_KILL_PROCESS, KILL_THREAD or TRAP for a call the loader or
 * the agent makes (openat, clone3, socket, memfd_create, membarrier, ...)
 * would kill the program or send it SIGSYS halfway through the injection
 * or later, when the agent works.  Filters are a thread's own: the thread
 * that makes the call passes its filters to the agent's thread, and every
 * thread runs the engine's signal handlers.  So every thread's filters are
 * read as each is stopped to be looked at (inject_threads.c), with
 * PTRACE_SECCOMP_GET_FILTER, which the kernel allows with CAP_SYS_ADMIN on
 * a stopped tracee, and run here, each on every call of
 * kernel/agent/agent_syscalls.c with the arguments listed there: a small
 * interpreter of classic BPF over struct seccomp_data, with what the
 * kernel's seccomp_check_filter lets a filter use.  The kernel runs every
 * filter and keeps the strongest answer, so one filter that kills is
 * enough to refuse.  An answer of ERRNO (or TRACE, which fails the call
 * with ENOSYS when no tracer asks for it) is a failed call the code copes
 * with; USER_NOTIF leaves the call to a supervisor nobody here knows, and
 * is refused with the others.
 *
 * Strict mode (Seccomp: 1) allows read, write, exit and sigreturn only:
 * refused.  A filter that cannot be read (no CAP_SYS_ADMIN, a kernel
 * without CONFIG_CHECKPOINT_RESTORE) is refused unless --force.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "tools/djp/attach/inject_target.h"
#include "kernel/agent/agent_syscalls.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#define MAX_FILTERS 64
#define BPF_MAXINSNS_SECCOMP 4096

/* Run filter f (n instructions) on d; its answer, or KILL_PROCESS for a
 * program the kernel would not have taken (it never runs those). */
static uint32_t run(const struct sock_filter *f, unsigned n, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	const uint8_t *data = (const uint8_t *)d;

	for (unsigned pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t src = BPF_SRC(i->code) == BPF_X ? x : i->k;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;
			switch (BPF_MODE(i->code)) {
			case BPF_ABS:
				if (BPF_SIZE(i->code) != BPF_W || i->k >= sizeof(*d) || i->k & 3)
					return SECCOMP_RET_KILL_PROCESS;
				memcpy(&v, data + i->k, 4);
				break;
			case BPF_LEN:
				v = sizeof(*d);
				break;
			case BPF_IMM:
				v = i->k;
				break;
			case BPF_MEM:
				if (i->k >= BPF_MEMWORDS)
					return SECCOMP_RET_KILL_PROCESS;
				v = mem[i->k];
				break;
			default:
				return SECCOMP_RET_KILL_PROCESS;
			}
			if (BPF_CLASS(i->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (i->k >= BPF_MEMWORDS)
				return SECCOMP_RET_KILL_PROCESS;
			mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV:
				if (!src)
					return SECCOMP_RET_KILL_PROCESS; /* the kernel: return 0 */
				a /= src;
				break;
			case BPF_MOD:
				if (!src)
					return SECCOMP_RET_KILL_PROCESS;
				a %= src;
				break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			break;
		case BPF_JMP: {
			bool taken;
			if (BPF_OP(i->code) == BPF_JA) {
				pc += i->k;
				break;
			}
			switch (BPF_OP(i->code)) {
			case BPF_JEQ: taken = a == src; break;
			case BPF_JGT: taken = a > src; break;
			case BPF_JGE: taken = a >= src; break;
			case BPF_JSET: taken = (a & src) != 0; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			pc += taken ? i->jt : i->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? a : i->k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS; /* ran off the end: the kernel refuses such filters */
}

static const char *action_name(uint32_t action)
{
	switch (action) {
	case SECCOMP_RET_KILL_PROCESS: return "kills the process";
	case SECCOMP_RET_KILL_THREAD: return "kills the thread";
	case SECCOMP_RET_TRAP: return "sends SIGSYS";
	case SECCOMP_RET_USER_NOTIF: return "leaves it to a supervisor";
	default: return "answers what this kernel does not know";
	}
}

static bool harmless(uint32_t action)
{
	return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG || action == SECCOMP_RET_ERRNO ||
	       action == SECCOMP_RET_TRACE;
}

static int seccomp_mode(struct target *t, pid_t tid)
{
	char path[96], line[256];
	int mode = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

static int check_filters(struct target *t, pid_t tid, int mode);

int inject_seccomp_check(struct target *t, pid_t tid)
{
	int mode;

	for (unsigned i = 0; i < t->nseccomp_ok; i++)
		if (t->seccomp_ok[i] == tid)
			return 0;
	if ((mode = seccomp_mode(t, tid)) <= 0 || check_filters(t, tid, mode))
		return mode <= 0 ? 0 : -1;
	if (t->nseccomp_ok < sizeof(t->seccomp_ok) / sizeof(t->seccomp_ok[0]))
		t->seccomp_ok[t->nseccomp_ok++] = tid;
	return 0;
}

static int check_filters(struct target *t, pid_t tid, int mode)
{
	static struct sock_filter f[BPF_MAXINSNS_SECCOMP];

	if (mode == 1)
		return inject_fail(t, "it runs in seccomp strict mode, where the loader's calls kill it");
	for (long k = 0; k < MAX_FILTERS; k++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)k, NULL);
		if (n < 0 && errno == ENOENT)
			return 0; /* every filter looked at */
		if (n < 0 || n > BPF_MAXINSNS_SECCOMP ||
		    ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)k, f) != n) {
			if (t->force)
				return 0;
			return inject_fail(t,
					   "it runs under a seccomp filter that cannot be read here (%s%s), which "
					   "could kill it for a call the loader or the agent makes: --force injects "
					   "anyway",
					   strerror(errno), errno == EACCES ? ": reading it needs CAP_SYS_ADMIN" : "");
		}
		for (size_t c = 0; c < djp_agent_nsyscalls; c++) {
			const struct djp_agent_syscall *s = &djp_agent_syscalls[c];
			struct seccomp_data d = { .nr = s->nr, .arch = AUDIT_ARCH_X86_64 };
			uint32_t action;
			memcpy(d.args, s->args, sizeof(s->args));
			action = run(f, (unsigned)n, &d) & SECCOMP_RET_ACTION_FULL;
			if (!harmless(action))
				return inject_fail(t,
						   "its thread %d's seccomp filter %s on %s, a system call the loader "
						   "or the agent makes (the agent is not loaded)",
						   (int)tid, action_name(action), s->name);
		}
	}
	return inject_fail(t, "it runs under more than %d seccomp filters", MAX_FILTERS);
}
