/* Ring buffers: %s arguments are copied bounded, NUL-terminated and
 * fault-safe. */
#include <sys/mman.h>

#include "test_ring_util.h"
#include "kernel/engine.h"

static const char *str_arg(const struct djp_event *ev, unsigned i, uint32_t *len, uint64_t *flags)
{
	const char *s = djp_event_str(ev, i, len, flags);
	if (!s)
		djp_test_fail(__FILE__, __LINE__, "argument %u is not a valid string descriptor", i);
	return s;
}

TEST(ring_strings_bounded_and_terminated)
{
	struct djp_region *r = small_region(2, 65536, 4, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	char longstr[201];
	uint64_t args[5], flags;
	uint32_t len;
	const char *s;

	CHECK(c);
	memset(longstr, 'x', 200);
	longstr[200] = 0;
	longstr[0] = 'A';
	args[0] = 5;
	args[1] = (uintptr_t) "hello";
	args[2] = (uintptr_t)longstr;
	args[3] = 0;
	args[4] = (uintptr_t) "";
	CHECK_EQ(djp_ring_record(r, 1, args, 5, 0x1e, 0), 0);	/* default bound: 64 */
	CHECK_EQ(djp_ring_record(r, 2, args, 5, 0x04, 16), 0);	/* longstr only, bound 16 */
	CHECK_EQ(djp_ring_record(r, 3, args, 2, 0xfe, 5000), 0); /* mask beyond nargs; bound clamped */
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 3);

	CHECK_EQ(got.ev[0]->flags, DJP_EVF_STRINGS);
	CHECK_EQ(got.ev[0]->args[0], 5);
	s = str_arg(got.ev[0], 1, &len, &flags);
	CHECK_STR(s, "hello");
	CHECK_EQ(len, 5);
	CHECK_EQ(flags, 0);
	s = str_arg(got.ev[0], 2, &len, &flags);
	CHECK_EQ(len, 63);
	CHECK_EQ(flags, DJP_STR_TRUNCATED);
	CHECK(!strncmp(s, longstr, 63) && s[63] == 0);
	s = str_arg(got.ev[0], 3, &len, &flags);
	CHECK_STR(s, "(null)");
	CHECK_EQ(flags, DJP_STR_NULL);
	s = str_arg(got.ev[0], 4, &len, &flags);
	CHECK_STR(s, "");
	CHECK_EQ(flags, 0);
	/* header + 5 words + each string's pointer (8) and text: "hello\0" (8)
	 * + 64 + "(null)\0" (8) + "\0" (8) */
	CHECK_EQ(got.ev[0]->size, 16 + 40 + 4 * 8 + 8 + 64 + 8 + 8);
	CHECK_EQ(djp_event_str_addr(got.ev[0], 1), args[1]); /* the pointer is kept */
	CHECK_EQ(djp_event_str_addr(got.ev[0], 2), args[2]);
	CHECK_EQ(djp_event_str_addr(got.ev[0], 3), 0);
	CHECK_EQ(djp_event_str_addr(got.ev[0], 0), 0); /* no string */
	CHECK(!djp_event_str(got.ev[0], 0, NULL, NULL)); /* 5 is no descriptor */

	CHECK_EQ(got.ev[1]->args[1], args[1]); /* not a string this time: the word as is */
	s = str_arg(got.ev[1], 2, &len, &flags);
	CHECK_EQ(len, 15);
	CHECK_EQ(flags, DJP_STR_TRUNCATED);
	CHECK_EQ(got.ev[1]->size, 16 + 40 + 8 + 16);

	CHECK_EQ(got.ev[2]->nargs, 2);
	CHECK_EQ(got.ev[2]->args[0], 5);
	CHECK_STR(str_arg(got.ev[2], 1, NULL, NULL), "hello");
	for (size_t i = 0; i < got.n; i++)
		CHECK_EQ(got.ev[i]->size % 8, 0);
	collected_free(&got);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

/* Pointers that fault in every way, through whichever copy the ring has. */
static void bad_pointers(void)
{
	struct djp_region *r = small_region(2, 65536, 4, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t args[7], flags;
	uint32_t len;

	CHECK(c && m != MAP_FAILED);
	CHECK_EQ(mprotect(m + pg, pg, PROT_NONE), 0);
	CHECK_EQ(munmap(m + 2 * pg, pg), 0);
	memset(m + pg - 20, 'z', 20);	    /* aligned words up to the page end */
	memcpy(m + pg - 3, "abc", 3);	    /* runs into a PROT_NONE page */
	memcpy(m + pg - 64, "xy", 3);	    /* ends before it */
	args[0] = (uintptr_t)(m + pg - 3);
	args[1] = (uintptr_t)(m + pg);	    /* PROT_NONE */
	args[2] = (uintptr_t)(m + 2 * pg);  /* unmapped */
	args[3] = 1;			    /* nonsense */
	args[4] = (uintptr_t)(m + pg - 64);
	args[5] = UINT64_MAX - 8;	    /* wraps */
	args[6] = (uintptr_t)(m + pg - 20);
	CHECK_EQ(djp_ring_record(r, 1, args, 7, 0x7f, 0), 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 1);

	CHECK_STR(str_arg(got.ev[0], 0, &len, &flags), "abc");
	CHECK_EQ(flags, DJP_STR_FAULT);
	for (unsigned i = 1; i <= 3; i++) {
		CHECK_STR(str_arg(got.ev[0], i, &len, &flags), "<bad>");
		CHECK_EQ(flags, DJP_STR_FAULT);
	}
	CHECK_STR(str_arg(got.ev[0], 4, &len, &flags), "xy");
	CHECK_EQ(flags, 0);
	CHECK_STR(str_arg(got.ev[0], 5, &len, &flags), "<bad>");
	CHECK_EQ(flags, DJP_STR_FAULT);
	CHECK_STR(str_arg(got.ev[0], 6, &len, &flags), "zzzzzzzzzzzzzzzzzabc");
	CHECK_EQ(flags, DJP_STR_FAULT);
	CHECK_EQ(djp_event_str_addr(got.ev[0], 1), args[1]);
	collected_free(&got);
	djp_consumer_close(c);
	djp_region_destroy(r);
	munmap(m, 2 * pg);
}

TEST(ring_strings_bad_pointer_does_not_crash)
{
	bad_pointers(); /* process_vm_readv */
}

/* The same through the in-process copy and its fault handler
 * (kernel/safe_copy.c): without the fixup, the first bad pointer kills. */
TEST(ring_strings_fast_copy_bad_pointer_does_not_crash)
{
	CHECK_EQ(djp_safe_copy_enable(), 0);
	bad_pointers();
}

TEST(ring_string_descriptor_validation)
{
	uint64_t buf[8] = { 0 };
	struct djp_event *ev = (struct djp_event *)buf;

	ev->size = 40;
	ev->nargs = 1;
	ev->flags = DJP_EVF_STRINGS;
	memcpy(&buf[3], "hi\0", 3);
	ev->args[0] = 24 | 2u << 16;
	CHECK_STR(djp_event_str(ev, 0, NULL, NULL), "hi");
	ev->args[0] = 16 | 2u << 16; /* points at the argument words */
	CHECK(!djp_event_str(ev, 0, NULL, NULL));
	ev->args[0] = 24 | 20u << 16; /* runs past the event */
	CHECK(!djp_event_str(ev, 0, NULL, NULL));
	ev->args[0] = 24 | 1u << 16; /* no NUL where the length says */
	CHECK(!djp_event_str(ev, 0, NULL, NULL));
	ev->args[0] = 25 | 1u << 16; /* misaligned */
	CHECK(!djp_event_str(ev, 0, NULL, NULL));
	ev->args[0] = 24 | 2u << 16;
	ev->flags = 0;
	CHECK(!djp_event_str(ev, 0, NULL, NULL));
	ev->flags = DJP_EVF_STRINGS;
	CHECK(!djp_event_str(ev, 1, NULL, NULL));
}

/* DJP_EVF_CPU: the CPU word closes the event, after any string; strings
 * and arguments read as before, and an event without it says -1. */
TEST(ring_event_cpu_word)
{
	struct djp_region *r = small_region(2, 65536, 4, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	uint64_t args[2] = { 7, (uintptr_t) "hi" };

	CHECK(c);
	CHECK_EQ(djp_ring_record_cpu(r, 1, args, 2, 0x2, 0, 3), 0);
	CHECK_EQ(djp_ring_record_cpu(r, 2, args, 1, 0, 0, 0), 0);
	CHECK_EQ(djp_ring_record(r, 3, args, 1, 0, 0), 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 3);
	CHECK_EQ(got.ev[0]->flags, DJP_EVF_STRINGS | DJP_EVF_CPU);
	CHECK_EQ(djp_event_cpu(got.ev[0]), 3);
	CHECK_STR(str_arg(got.ev[0], 1, NULL, NULL), "hi");
	CHECK_EQ(got.ev[0]->args[0], 7);
	CHECK_EQ(got.ev[0]->size, 16 + 16 + 8 + 8 + 8); /* words, pointer, "hi\0", cpu */
	CHECK_EQ(got.ev[1]->flags, DJP_EVF_CPU);
	CHECK_EQ(djp_event_cpu(got.ev[1]), 0);
	CHECK_EQ(got.ev[1]->size, 16 + 8 + 8);
	CHECK_EQ(djp_event_cpu(got.ev[2]), -1);
	CHECK_EQ(got.ev[2]->size, 16 + 8);
	djp_consumer_close(c);
	djp_region_destroy(r);
	collected_free(&got);
}

/* DJP_EVF_USTACK: the stack's words, then their count, after any string
 * and before the CPU word; arguments, strings and the CPU read as before,
 * a stack longer than DJP_RING_MAX_STACK is cut there, and an event
 * without one says none. */
TEST(ring_event_ustack_words)
{
	struct djp_region *r = small_region(2, 65536, 4, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	uint64_t args[2] = { 7, (uintptr_t) "hi" }, pcs[DJP_RING_MAX_STACK + 5];
	const uint64_t *st;
	unsigned n;

	CHECK(c);
	for (unsigned i = 0; i < DJP_RING_MAX_STACK + 5; i++)
		pcs[i] = 0x400000 + 16 * i;
	CHECK_EQ(djp_ring_record_ext(r, 1, args, 2, 0x2, 0, 3, NULL, 0, pcs, 3), 0);
	CHECK_EQ(djp_ring_record_ext(r, 2, args, 1, 0, 0, -1, NULL, 0, pcs, 0), 0);
	CHECK_EQ(djp_ring_record_ext(r, 3, args, 0, 0, 0, -1, NULL, 0, pcs, DJP_RING_MAX_STACK + 5), 0);
	CHECK_EQ(djp_ring_record_cpu(r, 4, args, 1, 0, 0, 1), 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 4);

	CHECK_EQ(got.ev[0]->flags, DJP_EVF_STRINGS | DJP_EVF_CPU | DJP_EVF_USTACK);
	CHECK_EQ(got.ev[0]->size, 16 + 16 + 8 + 8 + 3 * 8 + 8 + 8); /* words, pointer, "hi\0", pcs, n, cpu */
	CHECK_EQ(djp_event_cpu(got.ev[0]), 3);
	CHECK_STR(str_arg(got.ev[0], 1, NULL, NULL), "hi");
	CHECK_EQ(got.ev[0]->args[0], 7);
	st = djp_event_ustack(got.ev[0], &n);
	CHECK(st != NULL);
	CHECK_EQ(n, 3);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(st[i], pcs[i]);

	CHECK_EQ(got.ev[1]->flags, DJP_EVF_USTACK); /* recorded, empty */
	CHECK(djp_event_ustack(got.ev[1], &n) != NULL);
	CHECK_EQ(n, 0);
	CHECK_EQ(got.ev[1]->args[0], 7);

	st = djp_event_ustack(got.ev[2], &n);
	CHECK(st != NULL);
	CHECK_EQ(n, DJP_RING_MAX_STACK);
	CHECK_EQ(st[n - 1], pcs[DJP_RING_MAX_STACK - 1]);
	CHECK_EQ(djp_event_cpu(got.ev[2]), -1);

	CHECK(djp_event_ustack(got.ev[3], &n) == NULL);
	CHECK_EQ(n, 0);
	CHECK_EQ(djp_event_cpu(got.ev[3]), 1);
	djp_consumer_close(c);
	djp_region_destroy(r);
	collected_free(&got);
}

/* DJP_EVF_REGS: the registers' words and their count before the user
 * stack, read beside a string, the stack and the CPU; a count the event
 * cannot hold is none; an event without them says none. */
TEST(ring_event_regs_words)
{
	struct djp_region *r = small_region(2, 65536, 4, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	uint64_t args[2] = { 7, (uintptr_t) "hi" }, pcs[2] = { 0x401000, 0x402000 }, regs[DJP_RING_MAX_REGS + 3];
	const uint64_t *w;
	unsigned n;

	CHECK(c);
	for (unsigned i = 0; i < DJP_RING_MAX_REGS + 3; i++)
		regs[i] = 0x1000 + i;
	CHECK_EQ(djp_ring_record_ext(r, 1, args, 2, 0x2, 0, 3, regs, 18, pcs, 2), 0);
	CHECK_EQ(djp_ring_record_ext(r, 2, args, 1, 0, 0, -1, regs, DJP_RING_MAX_REGS + 3, NULL, 0), 0);
	CHECK_EQ(djp_ring_record_ext(r, 3, args, 1, 0, 0, -1, NULL, 0, pcs, 1), 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 3);

	CHECK_EQ(got.ev[0]->flags, DJP_EVF_STRINGS | DJP_EVF_CPU | DJP_EVF_USTACK | DJP_EVF_REGS);
	CHECK_EQ(got.ev[0]->size, 16 + 16 + 8 + 8 + 18 * 8 + 8 + 2 * 8 + 8 + 8);
	CHECK_STR(str_arg(got.ev[0], 1, NULL, NULL), "hi");
	CHECK_EQ(djp_event_cpu(got.ev[0]), 3);
	w = djp_event_ustack(got.ev[0], &n);
	CHECK(w && n == 2 && w[0] == pcs[0] && w[1] == pcs[1]);
	w = djp_event_regs(got.ev[0], &n);
	CHECK(w != NULL);
	CHECK_EQ(n, 18);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(w[i], regs[i]);

	w = djp_event_regs(got.ev[1], &n); /* cut at the most */
	CHECK(w != NULL);
	CHECK_EQ(n, DJP_RING_MAX_REGS);
	CHECK_EQ(w[n - 1], regs[DJP_RING_MAX_REGS - 1]);
	CHECK_EQ(got.ev[1]->args[0], 7);

	CHECK(djp_event_regs(got.ev[2], &n) == NULL);
	CHECK_EQ(n, 0);
	djp_consumer_close(c);
	djp_region_destroy(r);
	collected_free(&got);
	{
		uint64_t buf[8] = { 0 };
		struct djp_event *ev = (struct djp_event *)buf;
		ev->size = 48; /* header, one argument, two words, the count */
		ev->nargs = 1;
		ev->flags = DJP_EVF_REGS;
		buf[5] = 2;
		CHECK(djp_event_regs(ev, &n) != NULL && n == 2);
		buf[5] = 3; /* more than it holds */
		CHECK(djp_event_regs(ev, &n) == NULL && n == 0);
	}
}

/* A reader takes no count on trust: one that says more words than the
 * event holds between its arguments and its end is no stack. */
TEST(ring_event_ustack_validation)
{
	uint64_t buf[8] = { 0 };
	struct djp_event *ev = (struct djp_event *)buf;
	unsigned n;

	ev->size = 48; /* header, one argument, two pcs, the count */
	ev->nargs = 1;
	ev->flags = DJP_EVF_USTACK;
	buf[3] = 0x401000;
	buf[4] = 0x402000;
	buf[5] = 2;
	CHECK(djp_event_ustack(ev, &n) == &buf[3]);
	CHECK_EQ(n, 2);
	buf[5] = 3; /* would read the argument as a pc */
	CHECK(djp_event_ustack(ev, &n) == NULL);
	CHECK_EQ(n, 0);
	buf[5] = (uint64_t)1 << 62; /* 8 * count wraps */
	CHECK(djp_event_ustack(ev, &n) == NULL);
	buf[5] = 2;
	ev->flags |= DJP_EVF_CPU; /* then the count is the word before the last */
	CHECK(djp_event_ustack(ev, &n) == NULL);
	ev->size = 56;
	buf[6] = 1;
	CHECK(djp_event_ustack(ev, &n) == &buf[3]);
	CHECK_EQ(djp_event_cpu(ev), 1);
	ev->size = 24; /* no room for a count */
	ev->flags = DJP_EVF_USTACK;
	CHECK(djp_event_ustack(ev, &n) == NULL);
}
