/*
 * Another tool's uprobe (perf, bpftrace, SystemTap) put on an instruction
 * djprobe has armed.  Over a jump, the kernel writes its int3 over the
 * jump's first byte, and when the uprobe goes it writes back the file's
 * first byte, in front of the jump's tail, which would leave a torn
 * instruction the program dies on: the agent sees the foreign int3 and
 * gives the site back to the original instructions behind it first.  An
 * int3 inside the jump's bytes bends its target: the agent gives the site
 * back to the original instructions around it.
 * Over an int3 of ours, the kernel takes the int3 for its own and, when
 * the uprobe goes, writes the file's byte over it: the site would go
 * silent.  Either way the site, given up, is retaken once the uprobe is
 * gone (kernel/arm.c, djp_sites_yield_to_foreign_traps), and djp says
 * that hits were lost.  The uprobe here is opened as bpftrace opens one,
 * with perf_event_open on the uprobe PMU.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lib/func_symbols.h"
#include "test_trace_util.h"

/* A uprobe at file offset `off` of `path`, in every process that maps it;
 * -1 when this kernel has no uprobe PMU. */
static int uprobe_open(const char *path, uint64_t off)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	struct perf_event_attr a;
	int type = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	if (type < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = (uint32_t)type;
	a.config1 = (uint64_t)(uintptr_t)path;
	a.config2 = off;
	return (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The file offset of runtime address addr in process pid. */
static uint64_t file_offset(pid_t pid, uintptr_t addr)
{
	char path[64], line[4096];
	unsigned long lo, hi;
	unsigned long long off;
	uint64_t r = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %llx", &lo, &hi, &off) == 3 && addr >= lo && addr < hi)
			r = addr - lo + off;
	fclose(f);
	CHECK(r != 0);
	return r;
}

static bool tail_is(pid_t pid, uintptr_t a, const uint8_t *want, int n)
{
	for (int i = 1; i < n; i++)
		if (tt_byte_at(pid, a + (uintptr_t)i) != want[i])
			return false;
	return true;
}

/* Room for every event of the 200,000 calls, whenever the tool drains:
 * the count must be exact. */
#define RING "16777216"

/* djp stopped: it counted `events` hits of `name`, and said that some
 * were lost to another tool's breakpoint. */
static void check_trace(struct tproc *d, const char *name, unsigned long long events)
{
	unsigned long long got = 0, lost = 0;
	int st;
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp trace ended with status %#x: %s", st, d->ebuf);
	if (!tt_summary_row(d->ebuf, name, &got, &lost))
		got = 0; /* a marker without events has no row */
	if (got != events)
		djp_test_fail(__FILE__, __LINE__, "%s: %llu events, not %llu: %s", name, got, events, d->ebuf);
	if (!strstr(d->ebuf, "another tool's breakpoint"))
		djp_test_fail(__FILE__, __LINE__, "no word of the site lost for a while: %s", d->ebuf);
}

/* func_target -w n, ready for a tool. */
static struct tproc *target(const char *n)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_func_target(), "-w", (char *)n, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	return t;
}

/* djp trace -x on t: `point`, its events counted (written nowhere), with
 * `opt` (NULL: none). */
static struct tproc *trace_x(const struct tproc *t, const char *opt, const char *point)
{
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	if (opt)
		return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, (char *)opt, "-o", "/dev/null",
						 "--buffer-size", RING, (char *)point, NULL },
				false, -1);
	return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "-o", "/dev/null", "--buffer-size", RING,
					 (char *)point, NULL },
			false, -1);
}

/* A uprobe at runtime address a of t's program, or the test skipped
 * (t and d ended) where the kernel has no uprobe PMU. */
static int uprobe_at(struct tproc *t, struct tproc *d, uintptr_t a)
{
	char real[4096];
	int fd;
	CHECK(realpath(tt_func_target(), real) != NULL);
	if ((fd = uprobe_open(real, file_offset(t->pid, a))) < 0) {
		tt_kill(d);
		tt_kill(t);
		SKIP("no uprobe PMU in this kernel (perf_event_open)");
	}
	return fd;
}

TEST_TIMEOUT(trace_x_jump_under_a_foreign_uprobe_is_given_back, 90)
{
	struct tproc *t = target("200000"), *d;
	uint8_t orig[8];
	uintptr_t a = tt_func_addr(t->pid, tt_func_target(), "ft_work");
	int fd, i;

	for (i = 0; i < 8; i++)
		orig[i] = (uint8_t)tt_byte_at(t->pid, a + (uintptr_t)i);
	d = trace_x(t, NULL, "func:ft_work");
	tt_wait_byte(t->pid, a, 0xe9, 10000);

	fd = uprobe_at(t, d, a);
	tt_wait_byte(t->pid, a, 0xcc, 5000); /* the kernel's int3 over our jump */
	/* the agent gives the tail back, under that int3 */
	for (i = 0; i < 100 && !tail_is(t->pid, a, orig, 5); i++)
		usleep(50000);
	CHECK(tail_is(t->pid, a, orig, 5));
	/* the kernel writes the file's first byte back, the instruction is
	 * whole, and the agent takes the site again */
	close(fd);
	tt_wait_byte(t->pid, a, 0xe9, 10000);

	/* the program runs every call, each one traced */
	tt_send(t, "go\n");
	tt_wait_func_target_sum(t, 200000);
	check_trace(d, "func:ft_work", 200000);
	tt_end(t);
}

/* The offset of ft_work's last byte, its `ret` at -O2. */
static uint64_t last_byte(void)
{
	struct djp_func_table *ft = NULL;
	char err[256], real[4096];
	uint64_t off = 0;
	CHECK(realpath(tt_func_target(), real) != NULL);
	CHECK_EQ(djp_funcs_read(real, &ft, err, sizeof(err)), 0);
	for (size_t i = 0; i < ft->count; i++)
		if (!strcmp(ft->v[i].name, "ft_work"))
			off = ft->v[i].size - 1;
	djp_funcs_free(ft);
	CHECK(off != 0);
	return off;
}

TEST_TIMEOUT(trace_x_int3_a_foreign_uprobe_wrote_over_is_retaken, 90)
{
	struct tproc *t = target("200000"), *d;
	char point[64];
	uint64_t off = last_byte();
	uintptr_t r = tt_func_addr(t->pid, tt_func_target(), "ft_work") + off;

	/* a ret, an int3 probe as --int3 asks (without it, a jump whose run
	 * starts before the ret covers it: kernel/func_code.c) */
	CHECK_EQ(tt_byte_at(t->pid, r), 0xc3);
	snprintf(point, sizeof(point), "func:ft_work+%#lx", (unsigned long)off);
	d = trace_x(t, "--int3", point);
	tt_wait_byte(t->pid, r, 0xcc, 10000);

	/* the kernel finds an int3 there and takes it for its own; when the
	 * uprobe goes, it writes the file's byte, the ret, over it */
	close(uprobe_at(t, d, r));
	/* the agent arms it again (without the look, the ret stays) */
	tt_wait_byte(t->pid, r, 0xcc, 10000);

	tt_send(t, "go\n");
	tt_wait_func_target_sum(t, 200000);
	check_trace(d, point, 200000);
	tt_end(t);
}

/* A uprobe inside the jump's bytes: at entry_pushes+2, an instruction of the
 * file that the jump over the function's entry covers.  The kernel's int3
 * bends the jump's target at once; the agent gives the site back to the
 * original instructions around that int3, and when the uprobe goes (the
 * kernel writing the file's byte there, not the jump's), takes it again. */
TEST_TIMEOUT(trace_x_jump_with_a_foreign_uprobe_inside_is_given_back, 90)
{
	struct tproc *t = target("200000"), *d;
	uint8_t orig[8];
	uintptr_t a = tt_func_addr(t->pid, tt_func_target(), "entry_pushes");
	int fd, i, b;

	for (i = 0; i < 8; i++)
		orig[i] = (uint8_t)tt_byte_at(t->pid, a + (uintptr_t)i);
	CHECK_EQ(orig[2], 0x53); /* push %rbx, after push %r12 */
	d = trace_x(t, NULL, "func:entry_pushes");
	tt_wait_byte(t->pid, a, 0xe9, 10000);

	fd = uprobe_at(t, d, a + 2);
	/* the original instructions, the kernel's int3 at +2 left alone */
	for (i = 0; i < 200; i++) {
		for (b = 0; b < 8 && tt_byte_at(t->pid, a + (uintptr_t)b) == (b == 2 ? 0xcc : orig[b]); b++)
			;
		if (b == 8)
			break;
		usleep(50000);
	}
	if (b < 8)
		djp_test_fail(__FILE__, __LINE__, "byte %d of entry_pushes is %#x", b, tt_byte_at(t->pid, a + (uintptr_t)b));
	close(fd);
	tt_wait_byte(t->pid, a, 0xe9, 10000); /* taken again */

	tt_send(t, "go\n");
	tt_wait_func_target_sum(t, 200000);
	check_trace(d, "func:entry_pushes", 200000);
	tt_end(t);
}

/* djp trace --int3: breakpoints only, so that another tool's uprobes on
 * the same function, at its entry and inside what a jump would cover,
 * leave the program whole while it runs through them (a jump there would
 * be bent under the running program before any look could mend it).  The
 * kernel takes our int3 for its own while its uprobe is there; when the
 * uprobe goes, the site is retaken. */
TEST_TIMEOUT(trace_x_int3_option_runs_beside_uprobes_in_use, 90)
{
	struct tproc *t = target("200000"), *d;
	uintptr_t a = tt_func_addr(t->pid, tt_func_target(), "entry_pushes");
	int fd0, fd2;

	d = trace_x(t, "--int3", "func:entry_pushes");
	tt_wait_byte(t->pid, a, 0xcc, 10000); /* an int3, where a jump would be */
	fd0 = uprobe_at(t, d, a);
	fd2 = uprobe_at(t, d, a + 2);
	tt_send(t, "go\n"); /* every call through both uprobes */
	tt_wait_func_target_sum(t, 200000);
	close(fd0);
	close(fd2);
	tt_wait_byte(t->pid, a, 0xcc, 10000); /* the file's byte, then ours again */
	check_trace(d, "func:entry_pushes", 0); /* the kernel had every hit */
	tt_end(t);
}

/* A script's --int3 (stap has no such option; djp's scripts take it as
 * djp trace does): the function's entry is an int3, and every call counts. */
TEST_TIMEOUT(script_int3_option_arms_breakpoints, 60)
{
	struct tproc *t = target("1000");

	CHECK_EQ(tt_script_count_calls(t, "entry_pushes", "--int3", 0xcc, 1000), 1000);
	tt_end(t);
}

/* The same jump in a process whose one thread blocks every signal
 * (sigblock_target): taking the site back once the uprobe is gone is a
 * batch no request of the tool's asked for, so the agent asks the tool of
 * its own accord to stop the thread for it; every call after is traced. */
TEST_TIMEOUT(trace_x_jump_retaken_where_sigtrap_is_blocked, 90)
{
	char prog[4096], pid[32];
	struct tproc *t, *d;
	uint8_t orig[8];
	uintptr_t a;
	int fd, i;

	CHECK(realpath(djp_test_path("trace_progs/sigblock_target"), prog) != NULL);
	t = tt_spawn((char *const[]){ prog, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	a = tt_func_addr(t->pid, prog, "sb_work");
	for (i = 0; i < 8; i++)
		orig[i] = (uint8_t)tt_byte_at(t->pid, a + (uintptr_t)i);
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "-o", "/dev/null", "func:sb_work", NULL },
		     false, -1);
	tt_wait_byte(t->pid, a, 0xe9, 10000);
	if ((fd = uprobe_open(prog, file_offset(t->pid, a))) < 0) {
		tt_kill(d);
		tt_kill(t);
		SKIP("no uprobe PMU in this kernel (perf_event_open)");
	}
	tt_wait_byte(t->pid, a, 0xcc, 5000);
	for (i = 0; i < 100 && !tail_is(t->pid, a, orig, 5); i++)
		usleep(50000);
	CHECK(tail_is(t->pid, a, orig, 5));
	close(fd);
	tt_wait_byte(t->pid, a, 0xe9, 10000); /* taken back, the thread stopped */
	tt_send(t, "run 1000\n");
	CHECK(tt_wait_out(t, "ran 1000", 10000));
	check_trace(d, "func:sb_work", 1000);
	tt_end(t);
}
