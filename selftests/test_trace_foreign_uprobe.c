/*
 * Another tool's uprobe (perf, bpftrace, SystemTap) put on an instruction
 * djprobe has armed as a jump: the kernel writes its int3 over the jump's
 * first byte, and when the uprobe goes it writes back the file's first
 * byte, in front of the jump's tail, which would leave a torn instruction
 * the program dies on.  The agent sees the foreign int3 and gives the site
 * back to the original instructions behind it first (kernel/arm.c,
 * djp_sites_yield_to_foreign_traps).  The uprobe here is opened as
 * bpftrace opens one, with perf_event_open on the uprobe PMU.
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

TEST_TIMEOUT(trace_x_jump_under_a_foreign_uprobe_is_given_back, 90)
{
	struct tproc *t, *d;
	char pid[32], real[4096], want[64];
	uint8_t orig[8];
	uintptr_t a;
	long n = 200000, sum = 0;
	int fd, st, i;

	CHECK(realpath(tt_func_target(), real) != NULL);
	t = tt_spawn((char *const[]){ (char *)tt_func_target(), "-w", "200000", NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	a = tt_func_addr(t->pid, tt_func_target(), "ft_work");
	for (i = 0; i < 8; i++)
		orig[i] = (uint8_t)tt_byte_at(t->pid, a + (uintptr_t)i);
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "func:ft_work", NULL }, false, -1);
	tt_wait_byte(t->pid, a, 0xe9, 10000);

	fd = uprobe_open(real, file_offset(t->pid, a));
	if (fd < 0) {
		tt_kill(d);
		tt_kill(t);
		SKIP("no uprobe PMU in this kernel (perf_event_open)");
	}
	tt_wait_byte(t->pid, a, 0xcc, 5000); /* the kernel's int3 over our jump */
	/* the agent gives the tail back, under that int3 */
	for (i = 0; i < 100 && !tail_is(t->pid, a, orig, 5); i++)
		usleep(50000);
	CHECK(tail_is(t->pid, a, orig, 5));
	close(fd); /* the kernel writes the file's first byte back */
	tt_wait_byte(t->pid, a, orig[0], 5000);
	CHECK(tail_is(t->pid, a, orig, 8));

	/* the program runs the instruction whole */
	tt_send(t, "go\n");
	for (long k = 0; k < n; k++)
		sum += k * 7 + 3 + (k % 2 ? k : 0);
	snprintf(want, sizeof(want), "sum %ld\n", sum);
	CHECK(tt_wait_out(t, want, 20000));
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* and the tool says the site was lost */
	if (!strstr(d->ebuf, "another tool's breakpoint"))
		djp_test_fail(__FILE__, __LINE__, "no word of the lost site: %s", d->ebuf);
	tt_end(t);
}
