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
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
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
	".globl sv_site_marker\n"
	"sv_site_marker:\n"
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" DJP_TEST_RECORD("sv_site")
	"	pop %rbp\n"
	"	ret\n"
	".size sv_site, .-sv_site\n"
	".popsection\n");
void sv_site(void);
extern const char sv_site_marker[];

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

/* djp_hit_reg at a marker: a jump's trampoline keeps the caller-saved
 * registers and those the arguments read (sv_site has none), and the rest
 * of its view is whatever the stack held, so %rsp and %rbp read 0 there;
 * the DJP__STACK variant and an int3 give them exactly. */
static atomic_long reg_hits, reg_wrong;
static bool reg_exact;

static void reg_reader(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&reg_hits, 1);
	if (reg_exact ? djp_hit_reg(hit, 7) != sv_sp || djp_hit_reg(hit, 6) != sv_count
		      : djp_hit_reg(hit, 7) != 0 || djp_hit_reg(hit, 6) != 0)
		atomic_fetch_add(&reg_wrong, 1);
}

TEST(marker_hit_reg_reads_only_what_the_view_holds)
{
	static const struct {
		const char *what;
		unsigned flags;
		bool stack, exact;
		uint8_t byte;
	} way[] = {
		{ "lean jump", DJP_GPR_ONLY, false, false, 0xe9 },
		{ "full jump", 0, false, false, 0xe9 },
		{ "lean jump, stack variant", DJP_GPR_ONLY, true, true, 0xe9 },
		{ "full jump, stack variant", 0, true, true, 0xe9 },
		{ "int3", DJP_FORCE_INT3, false, true, 0xcc },
	};
	for (unsigned w = 0; w < sizeof(way) / sizeof(way[0]); w++) {
		int id = djp__connect("sv_site", reg_reader, NULL, way[w].flags,
				      &(struct djp_connect_opts){ .stack = way[w].stack });
		CHECK(id >= 0);
		reg_exact = way[w].exact;
		atomic_store(&reg_hits, 0);
		atomic_store(&reg_wrong, 0);
		for (int i = 0; i < 1000; i++)
			sv_site();
		if (*(const uint8_t *)sv_site_marker != way[w].byte || atomic_load(&reg_hits) != 1000 ||
		    atomic_load(&reg_wrong))
			djp_test_fail(__FILE__, __LINE__, "%s: site byte %#x, %ld hits of 1000, %ld wrong", way[w].what,
				      *(const uint8_t *)sv_site_marker, atomic_load(&reg_hits), atomic_load(&reg_wrong));
		CHECK_EQ(djp_disconnect(id), 0);
	}
}

static void count_call(const struct djp_hit *hit, void *data)
{
	(void)hit;
	++*(int *)data;
}

/* A list of a lean handler and one that may touch vector state, run as a
 * lean trampoline from before the batch that added the second would run
 * it: the second is skipped, and the skip is a counted miss, which the
 * tool reports; the full trampoline runs both. */
TEST(lean_list_counts_the_handler_it_skips)
{
	static struct djp_site site;
	struct djp_handler_list *l = calloc(1, sizeof(*l) + 2 * sizeof(l->h[0]));
	uintptr_t frame[32] = { (uintptr_t)&site | DJP_HIT_KEY_SITE }; /* the key, below the view */
	const struct djp_hit *hit = (const struct djp_hit *)&frame[1];
	int lean = 0, other = 0;

	CHECK(l != NULL);
	l->n = 2;
	l->h[0] = (struct djp_handler){ .fn = count_call, .data = &lean, .flags = DJP_GPR_ONLY };
	l->h[1] = (struct djp_handler){ .fn = count_call, .data = &other, .flags = 0 };
	djp_list_seal(l, &site);
	l->lean.fn(hit, l->lean.data);
	CHECK_EQ(lean, 1);
	CHECK_EQ(other, 0);
	CHECK_EQ(atomic_load(&site.misses), 1);
	l->full.fn(hit, l->full.data);
	CHECK_EQ(lean, 2);
	CHECK_EQ(other, 1);
	CHECK_EQ(atomic_load(&site.misses), 1);
	free(l);
}
