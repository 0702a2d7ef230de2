/*
 * Who may load the agent into a process: whoever ptrace lets attach to it
 * (tools/djp/attach/inject.c seizes the thread with ptrace, and the kernel
 * decides).  The same user and root may; another user may not, and is told
 * so in one line, the process left as it was.  With Yama, ptrace_scope 1
 * (only a parent, or CAP_SYS_PTRACE) and 2 (only CAP_SYS_PTRACE) refuse
 * the same user, naming the setting, and let root in; 3 refuses everyone.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

#define NOBODY 65534
#define SCOPE "/proc/sys/kernel/yama/ptrace_scope"

/* djp trace -x PID tt_tick as uid for half a second. */
static struct tproc *attach_as(pid_t pid, int uid, int *status)
{
	char spid[16];
	struct tproc *p;
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.5", "-x", spid, "tt_tick", NULL },
		     false, uid);
	*status = tt_finish(p, 20000);
	return p;
}

static void expect_traced(pid_t pid, int uid, const char *who)
{
	int st;
	struct tproc *p = attach_as(pid, uid, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !tt_count(p->obuf, " tt_tick "))
		djp_test_fail(__FILE__, __LINE__, "%s: status %#x: %s", who, st, p->ebuf);
	free(p);
}

static void expect_refused(pid_t pid, int uid, const char *what, const char *who)
{
	int st;
	struct tproc *p = attach_as(pid, uid, &st);
	if (!WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, what))
		djp_test_fail(__FILE__, __LINE__, "%s: status %#x: %s", who, st, p->ebuf);
	free(p);
}

/* Whether /proc/PID/maps names a file containing `name`. */
static bool maps_name(pid_t pid, const char *name)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, name) != NULL;
	fclose(f);
	return found;
}

/* A trace_target without the agent, as uid. */
static struct tproc *target_as(int uid)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "1000", NULL }, false, uid);
	CHECK(tt_wait_out(t, "ready", 10000));
	return t;
}

static void target_end(struct tproc *t)
{
	CHECK(tt_wait_restored(t->pid, tt_target(false), 2000));
	tt_kill(t);
	free(t);
}

TEST_TIMEOUT(inject_permission_matrix, 120)
{
	struct tproc *t;

	if (geteuid() != 0)
		SKIP("needs root to run processes as another user");
	/* the same user, then root, into a process of nobody's */
	t = target_as(NOBODY);
	expect_traced(t->pid, NOBODY, "the same user");
	target_end(t);
	t = target_as(NOBODY);
	expect_traced(t->pid, -1, "root");
	target_end(t);
	/* another user: refused, nothing of the target touched */
	t = target_as(-1);
	expect_refused(t->pid, NOBODY, "belongs to another user", "another user");
	/* The tool has exited, so an injection would have been done; the
	 * target has answered a command since, so it runs on.  Then: no
	 * library loaded, no agent listening, no site changed. */
	tt_send(t, "kinds 1\n");
	CHECK(tt_wait_out(t, "kinds done", 10000));
	CHECK(!maps_name(t->pid, "libdjprobe"));
	CHECK(!tt_wait_agent(t->pid, 0));
	CHECK_EQ(tt_sites_changed(t->pid, tt_target(false), &(int){ 0 }), 0);
	tt_kill(t);
	free(t);
}

TEST_TIMEOUT(inject_follows_yama_ptrace_scope, 120)
{
	char was[16] = "";
	FILE *f = fopen(SCOPE, "r");
	struct tproc *t;

	if (!f)
		SKIP("no Yama in this kernel (" SCOPE ")");
	if (!fgets(was, sizeof(was), f))
		was[0] = 0;
	fclose(f);
	if (geteuid() != 0)
		SKIP("needs root to set ptrace_scope");
	for (int scope = 1; scope <= 2; scope++) {
		char want[64];
		f = fopen(SCOPE, "w");
		CHECK(f && fprintf(f, "%d\n", scope) > 0 && fclose(f) == 0);
		t = target_as(NOBODY);
		snprintf(want, sizeof(want), "kernel.yama.ptrace_scope = %d", scope);
		expect_refused(t->pid, NOBODY, want, "the same user, not a parent");
		expect_traced(t->pid, -1, "root (CAP_SYS_PTRACE)");
		target_end(t);
	}
	f = fopen(SCOPE, "w");
	CHECK(f && fputs(was, f) >= 0 && fclose(f) == 0);
}

/* The Yama note of a refused attach, where the machine has no Yama (or
 * has it at 0): a fake ptrace_scope, on a tmpfs over /proc/sys/kernel in
 * a mount namespace of djp's own, read by the same code as the kernel's
 * file.  The refusal itself is real: the target already has a tracer
 * (this test), so the kernel refuses djp's PTRACE_SEIZE with EPERM, as
 * Yama would; the target's status is hidden there (/dev/null over it),
 * or djp would name its tracer instead. */
TEST_TIMEOUT(inject_refusal_names_the_yama_setting, 60)
{
	static const char *const why[] = { [1] = ": only a parent or CAP_SYS_PTRACE may attach",
					   [2] = ": only CAP_SYS_PTRACE may attach", [3] = ": no process may attach" };
	struct tproc *t;

	if (geteuid() != 0)
		SKIP("needs root for a mount namespace");
	t = target_as(-1);
	CHECK_EQ(ptrace(PTRACE_SEIZE, t->pid, 0, 0), 0);
	for (int scope = 1; scope <= 3; scope++) {
		char cmd[8192], want[128];
		struct tproc *p;
		int st;
		snprintf(cmd, sizeof(cmd),
			 "mount -t tmpfs none /proc/sys/kernel && mkdir /proc/sys/kernel/yama && "
			 "echo %d >/proc/sys/kernel/yama/ptrace_scope && mount --bind /dev/null /proc/%d/task/%d/status && "
			 "exec '%s' trace -x %d tt_tick",
			 scope, (int)t->pid, (int)t->pid, tt_djp(), (int)t->pid);
		p = tt_spawn((char *const[]){ "/usr/bin/unshare", "-m", "/bin/sh", "-c", cmd, NULL }, false, -1);
		st = tt_finish(p, 20000);
		snprintf(want, sizeof(want), "ptrace refused (kernel.yama.ptrace_scope = %d%s)", scope, why[scope]);
		if (!WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, want))
			djp_test_fail(__FILE__, __LINE__, "scope %d: status %#x: %s", scope, st, p->ebuf);
		if (scope == 1)
			printf("# %s", p->ebuf);
		free(p);
	}
	/* left as it was */
	tt_send(t, "kinds 1\n");
	CHECK(tt_wait_out(t, "kinds done", 10000));
	CHECK(!maps_name(t->pid, "libdjprobe"));
	CHECK_EQ(tt_sites_changed(t->pid, tt_target(false), &(int){ 0 }), 0);
	tt_kill(t);
	free(t);
}
