/*
 * A handler that walks the stack (DJP__STACK) reads %rsp and %rbp from the
 * view, which a marker's lean trampoline keeps only in the site's
 * DJP__STACK variant.  A site's new list is published before its text
 * jumps to the variant the list asks for, so for the length of the batch
 * that adds such a handler the old trampoline runs it too: the handler
 * must then be skipped (a counted miss), never given the stale words the
 * old view left in those slots.  Four threads (more than the cores) run a
 * marker whose %rbp holds a new value at every call while a stack handler
 * comes and goes beside a plain one that stays: every %rsp and %rbp the
 * stack handler reads is the site's own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "kernel/engine.h"
#include "vec_site.h"

/* void sv_site(void): %rbp = ++sv_count, %rsp kept in sv_sp, then the
 * marker "sv_site". */
__thread uintptr_t sv_sp, sv_count;
__asm__(".pushsection .text\n"
	".globl sv_site\n"
	".type sv_site,@function\n"
	"sv_site:\n"
	"	push %rbp\n"
	"	mov %fs:sv_count@tpoff,%rbp\n"
	"	inc %rbp\n"
	"	mov %rbp,%fs:sv_count@tpoff\n"
	"	mov %rsp,%fs:sv_sp@tpoff\n"
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" DJP_TEST_RECORD("sv_site")
	"	pop %rbp\n"
	"	ret\n"
	".size sv_site, .-sv_site\n"
	".popsection\n");
void sv_site(void);

static atomic_long plain_hits, stack_hits, bad;
static atomic_bool stop;

static void plain(const struct djp_hit *hit, void *data)
{
	(void)hit, (void)data;
	atomic_fetch_add(&plain_hits, 1);
}

static void walker(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&stack_hits, 1);
	if (djp_hit_reg(hit, 7) != sv_sp || djp_hit_reg(hit, 6) != sv_count)
		atomic_fetch_add(&bad, 1);
}

static void *runner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		for (int i = 0; i < 100; i++)
			sv_site();
	return NULL;
}

TEST_TIMEOUT(stack_handler_never_sees_a_view_without_rsp_rbp, 60)
{
	pthread_t t[4];
	long rounds = 0;
	int keep = djp_connect("sv_site", plain, NULL, DJP_GPR_ONLY);

	CHECK(keep >= 0);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, runner, NULL), 0);
	for (time_t end = time(NULL) + 3; time(NULL) < end; rounds++) {
		int id = djp__connect("sv_site", walker, NULL, rounds % 3 ? DJP_GPR_ONLY : 0,
				      &(struct djp_connect_opts){ .stack = true });
		CHECK(id >= 0);
		usleep(2000);
		CHECK_EQ(djp_disconnect(id), 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(djp_disconnect(keep), 0);
	if (atomic_load(&bad) || atomic_load(&stack_hits) < rounds || atomic_load(&plain_hits) < rounds)
		djp_test_fail(__FILE__, __LINE__, "%ld rounds, %ld stack hits, %ld wrong, %ld plain hits", rounds,
			      atomic_load(&stack_hits), atomic_load(&bad), atomic_load(&plain_hits));
}
