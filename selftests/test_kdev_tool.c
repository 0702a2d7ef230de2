/*
 * The djp tool's kernel side without a kernel module: what `djp list -k`,
 * `djp trace -k` and kernel probe scripts say when /dev/djprobe is not
 * there, is not the device, or may not be opened (one line, status 1,
 * nothing on stdout); the new probe points parse; and the rings'
 * read-only consumer reads a region laid out as <djprobe/kdev.h> says
 * (the kernel's writer, kmod/kring.c, writes exactly this) without
 * writing a byte of it.  DJP_KDEV points the tool at another path.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <djprobe/kdev.h>

#include "harness.h"
#include "lib/ring.h"
#include "test_trace_util.h"

static struct tproc *run(char *const argv[], int uid, int *status)
{
	struct tproc *p = tt_spawn(argv, false, uid);
	*status = tt_finish(p, 20000);
	return p;
}

static void expect_one_line(struct tproc *p, int status, const char *line)
{
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 1);
	if (tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, line))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	CHECK_EQ(p->olen, 0);
}

TEST(kernel_commands_without_the_device)
{
	struct tproc *p;
	int st;

	setenv("DJP_KDEV", "/nonexistent/djprobe", 1);
	p = run((char *const[]){ (char *)tt_djp(), "list", "-k", NULL }, -1, &st);
	expect_one_line(p, st, "djp: list -k: djprobe.ko is not loaded (no /nonexistent/djprobe)\n");
	free(p);
	p = run((char *const[]){ (char *)tt_djp(), "trace", "-k", "--json", "x*", NULL }, -1, &st);
	expect_one_line(p, st, "djp: trace -k: djprobe.ko is not loaded (no /nonexistent/djprobe)\n");
	free(p);
	p = run((char *const[]){ (char *)tt_djp(), "-e", "probe module(\"m*\").mark(\"x\") { n++ } probe end { println(n) }",
				 NULL },
		-1, &st);
	expect_one_line(p, st, "djp: djprobe.ko is not loaded (no /nonexistent/djprobe)\n");
	free(p);
}

/* A file that is not the device: open works (as root), INFO does not. */
TEST(kernel_commands_on_something_else)
{
	char dir[] = "/tmp/djp-kdev-XXXXXX", path[64];
	struct tproc *p;
	int st, fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/djprobe", dir);
	CHECK((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	setenv("DJP_KDEV", path, 1);
	p = run((char *const[]){ (char *)tt_djp(), "list", "-k", NULL }, -1, &st);
	expect_one_line(p, st, "not djprobe.ko's device");
	free(p);
	if (geteuid() == 0) {
		/* root's 0600 file, as the device is: another user may not */
		p = run((char *const[]){ (char *)tt_djp(), "trace", "-k", "x", NULL }, 65534, &st);
		expect_one_line(p, st, "kernel markers are for root only (CAP_SYS_ADMIN)");
		free(p);
	}
	unlink(path);
	rmdir(dir);
}

/* The probe points parse (-p1 stops after the parse) and usage errors. */
TEST(kernel_probe_points_parse)
{
	struct tproc *p;
	int st;

	p = run((char *const[]){ (char *)tt_djp(), "-p1", "-e",
				 "probe kernel.mark(\"a*\"), module(\"djp_*\").mark(\"b\") { println(pp(), $arg1, $$name) }",
				 NULL },
		-1, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(p);
	p = run((char *const[]){ (char *)tt_djp(), "-e", "probe kernel.mark(\"a\") { }", "-c", "true", NULL }, -1, &st);
	expect_one_line(p, st, "-c and -x name a process");
	free(p);
	p = run((char *const[]){ (char *)tt_djp(), "trace", "-k", "--snapshot", "x", NULL }, -1, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK(strstr(p->ebuf, "djp trace -k: unknown option") != NULL);
	free(p);
}

/* A region as the kernel lays it out: header, 2 slots (CPUs) of 4 sub-
 * buffers of 1 KiB, events with the task and CPU words. */
#define NSB 4u
#define RING 4096u

static uint64_t *put_event(uint8_t *data, uint64_t *head, uint32_t id, unsigned nargs, uint64_t task, uint64_t cpu)
{
	uint64_t *e = (uint64_t *)(data + (*head & (RING - 1)));
	uint32_t size = 16 + 8 * nargs + 16;
	e[0] = 1000 + *head;
	for (unsigned i = 0; i < nargs; i++)
		e[2 + i] = 100 * (uint64_t)id + i;
	e[2 + nargs] = task;
	e[3 + nargs] = cpu;
	e[1] = id | (uint64_t)size << 32 | (uint64_t)nargs << 48 | (uint64_t)(DJP_KEVF_TASK | DJP_KEVF_CPU) << 56;
	*head += size;
	return e;
}

/* An event with one %s argument, as kmod/kring.c's put_strings writes it:
 * the descriptor in the argument word, then the pointer and the text. */
static void put_string_event(uint8_t *data, uint64_t *head, uint32_t id, const char *text, uint64_t task, uint64_t cpu)
{
	uint64_t *e = (uint64_t *)(data + (*head & (RING - 1)));
	uint32_t len = (uint32_t)strlen(text), off = 16 + 8, size;
	e[0] = 5000;
	e[off / 8] = 0xffffffff81234567ull; /* the pointer */
	memcpy((char *)e + off + 8, text, len + 1);
	e[2] = off | (uint64_t)len << 16 | DJP_KSTR_ADDR;
	off += 8 + ((len + 1 + 7) & ~7u);
	e[off / 8] = task;
	e[off / 8 + 1] = cpu;
	size = off + 16;
	e[1] = id | (uint64_t)size << 32 | (uint64_t)1 << 48 |
	       (uint64_t)(DJP_KEVF_TASK | DJP_KEVF_CPU | DJP_KEVF_STRINGS) << 56;
	*head += size;
}

struct seen {
	int n;
	char str[8][64];
	uint32_t ids[8];
	uint64_t tasks[8];
	int cpus[8];
	int64_t arg0[8];
};

static int on_ev(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct seen *s = arg;
	uint64_t task = 0;
	(void)tid;
	CHECK(s->n < 8);
	CHECK(djp_event_task(ev, &task));
	CHECK_EQ((unsigned)djp_event_cpu(ev), slot);
	s->ids[s->n] = ev->marker_id;
	s->tasks[s->n] = task;
	s->cpus[s->n] = djp_event_cpu(ev);
	s->arg0[s->n] = ev->nargs ? (int64_t)ev->args[0] : -1;
	snprintf(s->str[s->n], sizeof(s->str[s->n]), "%s", djp_event_str(ev, 0, NULL, NULL) ?: "-");
	s->n++;
	return 0;
}

TEST(kernel_rings_read_in_place_read_only)
{
	uint64_t slot_hdr = (offsetof(struct djp_kslot_hdr, sb) + NSB * sizeof(struct djp_ksubbuf_rec) + 4095) & ~4095ull;
	uint64_t stride = slot_hdr + RING, total = DJP_KRING_HDR_SIZE + 2 * stride;
	uint8_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *copy;
	struct djp_kregion_hdr *h = (struct djp_kregion_hdr *)base;
	struct djp_drain_ops ops = { .event = on_ev };
	struct djp_consumer *c;
	struct seen s = { 0 };
	uint64_t head[2] = { 0, 0 };

	CHECK(base != MAP_FAILED);
	*h = (struct djp_kregion_hdr){ .magic = DJP_KRING_MAGIC, .version = DJP_KRING_VERSION,
				       .hdr_size = sizeof(*h), .slot_hdr_size = (uint32_t)slot_hdr, .nslots = 2,
				       .ring_size = RING, .subbuf_size = RING / NSB, .nsubbufs = NSB,
				       .slot_stride = stride, .slots_offset = DJP_KRING_HDR_SIZE, .total_size = total,
				       .str_bound = 64, .slots_used = 2 };
	h->clock.kind = 1, h->clock.mult = 1, h->clock.raw_hz = 1000000000;
	for (unsigned i = 0; i < 2; i++) {
		struct djp_kslot_hdr *sl = (struct djp_kslot_hdr *)(base + DJP_KRING_HDR_SIZE + i * stride);
		sl->owner = (uint64_t)i << 32 | DJP_KSLOT_ACTIVE;
		sl->sb[0].seq = 1;
	}
	struct djp_kslot_hdr *s0 = (struct djp_kslot_hdr *)(base + DJP_KRING_HDR_SIZE),
			     *s1 = (struct djp_kslot_hdr *)(base + DJP_KRING_HDR_SIZE + stride);
	put_event((uint8_t *)s0 + slot_hdr, &head[0], 0xc0001000u, 2, (uint64_t)42 << 32 | 43, 0);
	put_event((uint8_t *)s0 + slot_hdr, &head[0], 0xc0002000u, 0, 0, 0); /* an interrupt's */
	put_event((uint8_t *)s1 + slot_hdr, &head[1], 0xc0003000u, 12, (uint64_t)7 << 32 | 9, 1);
	put_string_event((uint8_t *)s1 + slot_hdr, &head[1], 0xc0004000u, "eth0", (uint64_t)5 << 32 | 6, 1);
	s0->head = head[0], s0->nevents = 2;
	s1->head = head[1], s1->nevents = 2;
	CHECK((copy = malloc(total)) != NULL);
	memcpy(copy, base, total);
	CHECK(mprotect(base, total, PROT_READ) == 0); /* a store would fault */

	CHECK((c = djp_consumer_open_mapped(base, total)) != NULL);
	CHECK_EQ(djp_consumer_drain(c, &ops, &s), 4);
	CHECK_EQ(s.n, 4);
	CHECK_EQ(s.ids[0], 0xc0001000u);
	CHECK_EQ(s.tasks[0], (uint64_t)42 << 32 | 43);
	CHECK_EQ(s.arg0[0], 100 * (int64_t)0xc0001000u);
	CHECK_EQ(s.ids[1], 0xc0002000u);
	CHECK_EQ(s.tasks[1], 0);
	CHECK_EQ(s.ids[2], 0xc0003000u);
	CHECK_EQ(s.cpus[2], 1);
	CHECK_EQ(s.tasks[2], (uint64_t)7 << 32 | 9);
	CHECK_STR(s.str[2], "-");
	CHECK_EQ(s.ids[3], 0xc0004000u);
	CHECK_STR(s.str[3], "eth0");
	CHECK_EQ(s.tasks[3], (uint64_t)5 << 32 | 6);
	CHECK_EQ(s.cpus[3], 1);
	CHECK_EQ(djp_consumer_tail(c, 0), head[0]);
	CHECK_EQ(djp_consumer_tail(c, 1), head[1]);
	CHECK_EQ(djp_consumer_drain(c, &ops, &s), 0); /* the private tail holds */
	CHECK(memcmp(copy, base, total) == 0);
	djp_consumer_close(c); /* unmaps */
	free(copy);
}
