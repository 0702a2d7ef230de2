/*
 * A quiet thread (kernel/rcu.c: the agent's, or a program's thread while
 * it runs the library's own work) at a site in every state: its hits are
 * dropped, but it runs the displaced instructions, or follows the jump,
 * exactly as any thread does.  qt_work begins as free() does, with a
 * test and a conditional jump (3 and 6 bytes), so that a jump over its
 * entry covers two instructions and a thread resumed after the first
 * one would run the middle of the jump.  One thread calls it, quiet,
 * while the main thread arms it (a full jump, a lean one, an int3) and
 * takes it away again, and calls it too: every result is right, and the
 * handler counts the main thread's calls exactly.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "kernel/engine.h"

/* long qt_work(long x): 3x + 1, or 7 for 0 */
__asm__(".pushsection .text\n"
	".globl qt_work\n"
	".type qt_work,@function\n"
	"qt_work:\n"
	"	test %rdi,%rdi\n"
	"	.byte 0x0f,0x84\n" /* je rel32: 6 bytes, as free()'s */
	"	.long 2f-(.+4)\n"
	"	lea 1(%rdi,%rdi,2),%rax\n"
	"	ret\n"
	"2:	mov $7,%eax\n"
	"	ret\n"
	".size qt_work, .-qt_work\n"
	".popsection\n");
long qt_work(long x);

static atomic_long qt_hits;
static atomic_bool qt_stop;
static atomic_long qt_calls, qt_wrong;

static void qt_count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&qt_hits, 1);
}

static void *quiet_caller(void *arg)
{
	void *q = djp__quiet_begin();
	(void)arg;
	while (!atomic_load(&qt_stop))
		for (long x = 0; x < 64; x++) {
			if (qt_work(x) != (x ? 3 * x + 1 : 7))
				atomic_fetch_add(&qt_wrong, 1);
			atomic_fetch_add(&qt_calls, 1);
		}
	djp__quiet_end(q);
	return NULL;
}

TEST_TIMEOUT(engine_quiet_thread_runs_a_site_being_armed_and_disarmed, 120)
{
	static const unsigned flags[] = { 0, DJP_GPR_ONLY, DJP_FORCE_INT3 };
	const struct djp_point_opts where = { .sz = sizeof(where), .func = "qt_work" };
	long mine = 0;
	int jumps = 0;
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, quiet_caller, NULL), 0);
	while (atomic_load(&qt_calls) == 0) /* the thread is quiet and calling */
		sched_yield();
	for (int round = 0; round < 300; round++) {
		int id = djp_connect_at(&where, qt_count, NULL, flags[round % 3]);
		CHECK(id >= 0);
		/* a jump over both instructions, or the int3 asked for; a jump
		 * the engine kept out because the quiet thread was inside its
		 * run each time it looked (preempted there on a busy machine)
		 * is an int3 too, which the rounds must not all be */
		if (flags[round % 3] & DJP_FORCE_INT3)
			CHECK_EQ(*(volatile uint8_t *)qt_work, 0xcc);
		else if (*(volatile uint8_t *)qt_work == 0xe9)
			jumps++;
		else
			CHECK_EQ(*(volatile uint8_t *)qt_work, 0xcc);
		for (long x = 0; x < 8; x++, mine++)
			CHECK_EQ(qt_work(x), x ? 3 * x + 1 : 7);
		CHECK_EQ(djp_disconnect(id), 0);
	}
	atomic_store(&qt_stop, true);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(atomic_load(&qt_wrong), 0);
	CHECK_EQ(atomic_load(&qt_hits), mine); /* the quiet thread's: none */
	CHECK(jumps >= 100);		       /* of 200 rounds that asked for one */
	printf("# %ld calls of the quiet thread, %ld hits of the main thread's %ld calls; %d of 200 jumps placed\n",
	       atomic_load(&qt_calls), atomic_load(&qt_hits), mine, jumps);
}
