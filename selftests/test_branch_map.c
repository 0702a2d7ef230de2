/*
 * What djp_jump_run takes from an object's branch map (arch/x86/
 * branch_targets.c) in place of a decode of the whole function: only for a
 * function the map knows whole, one whose start its walk restarted at and
 * that decoded without a failure.  Each map here is made by hand over the
 * bytes of one function, so that it says exactly what the case needs.
 */
#include <errno.h>

#include "arch/x86/arch.h"
#include "harness.h"

/* At 0x1000: mov %rdi,%rax; 1: sub $1,%rax; jne 1b; ret.  The jne lands 3
 * bytes into the entry's 7-byte run. */
static const uint8_t loop_fn[] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0xc3 };
/* At 0x1000: mov %rdi,%rax; sub $1,%rax; ret. */
static const uint8_t plain_fn[] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0xc3 };

#define AT 0x1000

static int run(const uint8_t *code, size_t size, const struct djp_branch_map *m, unsigned *len, const char **why)
{
	unsigned pre = 0;
	*len = 0;
	*why = NULL;
	return djp_jump_run(code, size, AT, AT, m, 0, &pre, len, why);
}

TEST(branch_map_known_function_needs_no_whole_decode)
{
	uint64_t start = AT;
	struct djp_branch_map m = { .starts = &start, .nstarts = 1 };
	unsigned len;
	const char *why;

	/* What the map says of the function is taken: it holds no target,
	 * so the jne it would hold for a real walk is not looked for. */
	CHECK_EQ(run(loop_fn, sizeof(loop_fn), &m, &len, &why), 0);
	CHECK_EQ(len, 7);
	CHECK_EQ(run(plain_fn, sizeof(plain_fn), &m, &len, &why), 0);
	CHECK_EQ(len, 7);
}

TEST(branch_map_function_not_restarted_at_is_decoded_whole)
{
	uint64_t other = AT - 16;
	struct djp_branch_map m = { .starts = &other, .nstarts = 1 };
	unsigned len;
	const char *why;

	CHECK_EQ(run(loop_fn, sizeof(loop_fn), &m, &len, &why), -EBUSY);
	CHECK(why && strstr(why, "lands inside"));
	CHECK_EQ(run(plain_fn, sizeof(plain_fn), &m, &len, &why), 0);
	CHECK_EQ(len, 7);
}

TEST(branch_map_function_with_a_byte_that_did_not_decode_is_decoded_whole)
{
	uint64_t start = AT, bad = AT + 7;
	struct djp_branch_map m = { .starts = &start, .nstarts = 1, .bad = &bad, .nbad = 1 };
	unsigned len;
	const char *why;

	CHECK_EQ(run(loop_fn, sizeof(loop_fn), &m, &len, &why), -EBUSY);
	CHECK(why && strstr(why, "lands inside"));
	/* a failure past the function's end is another function's */
	bad = AT + sizeof(loop_fn);
	CHECK_EQ(run(loop_fn, sizeof(loop_fn), &m, &len, &why), 0);
}
