/* Every register of an instruction probe's hit through djp_hit_reg, in each
 * way a hit reaches its handler: a lean jump, whose trampoline leaves
 * %rbx, %rbp and %r12-%r15 in their registers (kernel/callee_saved.c finds
 * them by unwinding the handler's frames), with the handler alone or run
 * by the dispatcher beside another, with handlers that save and clobber
 * them first, and a thread's first hit, which the trampoline's slow stub
 * sends through the C dispatcher; the full jump; int3.  The probed code checks afterwards that
 * its registers and vector registers are what they were. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <stdio.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "kernel/engine.h"

#define OPTS(...) (&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), __VA_ARGS__ })

/*
 * long pr_regs(void): loads a canary into each callee-saved register and
 * into %xmm0, %xmm1 and %xmm15, keeps %rsp in the thread's pr_sp, then at pr_point
 * the probed instructions; returns 0 when every one of them
 * still holds its canary afterwards, else 1.
 */
#define C_RBX 0x1b1b1b1b00000003L
#define C_RBP 0x1b1b1b1b00000006L
#define C_R12 0x1b1b1b1b0000000cL
#define C_R13 0x1b1b1b1b0000000dL
#define C_R14 0x1b1b1b1b0000000eL
#define C_R15 0x1b1b1b1b0000000fL
__asm__(".pushsection .text\n"
	".globl pr_regs\n"
	".type pr_regs,@function\n"
	"pr_regs:\n"
	"	push %rbx\n"
	"	push %rbp\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %r14\n"
	"	push %r15\n"
	"	movabs $0x1b1b1b1b00000003,%rbx\n"
	"	movabs $0x1b1b1b1b00000006,%rbp\n"
	"	movabs $0x1b1b1b1b0000000c,%r12\n"
	"	movabs $0x1b1b1b1b0000000d,%r13\n"
	"	movabs $0x1b1b1b1b0000000e,%r14\n"
	"	movabs $0x1b1b1b1b0000000f,%r15\n"
	"	movq %rbx,%xmm0\n"
	"	movq %rbp,%xmm1\n"
	"	movq %r15,%xmm15\n"
	"	mov %rsp,%fs:pr_sp@tpoff\n"
	"	nop\n"
	".globl pr_point\n"
	"pr_point:\n"
	"	lea 1(%rbx),%rax\n"
	"	add %rbp,%rax\n"
	"	xor %eax,%eax\n"
	"	movabs $0x1b1b1b1b00000003,%rcx\n"
	"	cmp %rcx,%rbx\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movabs $0x1b1b1b1b00000006,%rcx\n"
	"	cmp %rcx,%rbp\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movabs $0x1b1b1b1b0000000c,%rcx\n"
	"	cmp %rcx,%r12\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movabs $0x1b1b1b1b0000000d,%rcx\n"
	"	cmp %rcx,%r13\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movabs $0x1b1b1b1b0000000e,%rcx\n"
	"	cmp %rcx,%r14\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movabs $0x1b1b1b1b0000000f,%rcx\n"
	"	cmp %rcx,%r15\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movq %xmm0,%rcx\n"
	"	cmp %rcx,%rbx\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movq %xmm1,%rcx\n"
	"	cmp %rcx,%rbp\n"
	"	setne %dl\n	or %dl,%al\n"
	"	movq %xmm15,%rcx\n"
	"	cmp %rcx,%r15\n"
	"	setne %dl\n	or %dl,%al\n"
	"	pop %r15\n"
	"	pop %r14\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbp\n"
	"	pop %rbx\n"
	"	ret\n"
	".size pr_regs, .-pr_regs\n"
	/*
	 * void pr_clobbering_call(void (*fn)(const struct djp_hit *), const
	 * struct djp_hit *hit): saves the six callee-saved registers (with
	 * the CFI that says where), puts other values in them, calls
	 * fn(hit), puts them back.  A handler that calls it makes the
	 * unwinder read each register from a save slot, not a register.
	 */
	".globl pr_clobbering_call\n"
	".type pr_clobbering_call,@function\n"
	"pr_clobbering_call:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n	.cfi_adjust_cfa_offset 8\n	.cfi_rel_offset %rbx,0\n"
	"	push %rbp\n	.cfi_adjust_cfa_offset 8\n	.cfi_rel_offset %rbp,0\n"
	"	push %r12\n	.cfi_adjust_cfa_offset 8\n	.cfi_rel_offset %r12,0\n"
	"	push %r13\n	.cfi_adjust_cfa_offset 8\n	.cfi_rel_offset %r13,0\n"
	"	push %r14\n	.cfi_adjust_cfa_offset 8\n	.cfi_rel_offset %r14,0\n"
	"	push %r15\n	.cfi_adjust_cfa_offset 8\n	.cfi_rel_offset %r15,0\n"
	"	sub $8,%rsp\n	.cfi_adjust_cfa_offset 8\n"
	"	mov %rdi,%rax\n"
	"	mov %rsi,%rdi\n"
	"	mov $0x5a5a,%ebx\n	mov $0x5a5a,%ebp\n	mov $0x5a5a,%r12d\n"
	"	mov $0x5a5a,%r13d\n	mov $0x5a5a,%r14d\n	mov $0x5a5a,%r15d\n"
	"	call *%rax\n"
	"	add $8,%rsp\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r15\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r14\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r13\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r12\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rbp\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rbx\n	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size pr_clobbering_call, .-pr_clobbering_call\n"
	".popsection\n");
long pr_regs(void);
void pr_clobbering_call(void (*fn)(const struct djp_hit *), const struct djp_hit *hit);
extern const char pr_point[];
__thread uintptr_t pr_sp; /* each thread's %rsp at pr_point */

static atomic_long hits, bad;

static void check_regs(const struct djp_hit *hit)
{
	static const struct {
		unsigned dwarf;
		uint64_t want;
	} c[] = { { 3, C_RBX }, { 6, C_RBP }, { 12, C_R12 }, { 13, C_R13 }, { 14, C_R14 }, { 15, C_R15 } };
	atomic_fetch_add(&hits, 1);
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (djp_hit_reg(hit, c[i].dwarf) != c[i].want)
			atomic_fetch_add(&bad, 1);
	if (djp_hit_reg(hit, 7) != pr_sp || djp_hit_reg(hit, 16) != (uintptr_t)pr_point)
		atomic_fetch_add(&bad, 1);
}

static void plain(const struct djp_hit *hit, void *data)
{
	(void)data;
	check_regs(hit);
}

static void clobbering(const struct djp_hit *hit, void *data)
{
	(void)data;
	pr_clobbering_call(check_regs, hit);
}

static void other(const struct djp_hit *hit, void *data)
{
	(void)hit, (void)data;
}

static void run(int n)
{
	for (int i = 0; i < n; i++)
		if (pr_regs())
			atomic_fetch_add(&bad, 1000000);
}

static void *run_ten(void *arg)
{
	(void)arg;
	run(10);
	return NULL;
}

TEST(point_regs_every_register_every_way)
{
	static const struct {
		const char *what;
		djp_handler_fn fn;
		unsigned flags;
		int second; /* another handler on the site: the dispatcher runs the list */
		uint8_t byte;
	} way[] = {
		{ "lean jump", plain, DJP_GPR_ONLY, 0, 0xe9 },
		{ "lean jump, handler clobbers", clobbering, DJP_GPR_ONLY, 0, 0xe9 },
		{ "lean jump, two handlers", plain, DJP_GPR_ONLY, 1, 0xe9 },
		{ "lean jump, two handlers, clobbering", clobbering, DJP_GPR_ONLY, 1, 0xe9 },
		{ "full jump", plain, 0, 0, 0xe9 },
		{ "full jump, handler clobbers", clobbering, 0, 0, 0xe9 },
		{ "int3", plain, DJP_FORCE_INT3, 0, 0xcc },
		{ "int3, handler clobbers", clobbering, DJP_FORCE_INT3 | DJP_GPR_ONLY, 0, 0xcc },
	};
	CHECK_EQ(pr_regs(), 0);
	for (unsigned w = 0; w < sizeof(way) / sizeof(way[0]); w++) {
		int id, id2 = -1;
		atomic_store(&hits, 0);
		atomic_store(&bad, 0);
		id = djp_connect_at(OPTS(.func = "pr_regs", .offset = (uintptr_t)pr_point - (uintptr_t)pr_regs), way[w].fn,
				    NULL, way[w].flags);
		CHECK(id >= 0);
		if (way[w].second) {
			id2 = djp_connect_at(OPTS(.addr = (uintptr_t)pr_point), other, NULL, way[w].flags);
			CHECK(id2 >= 0);
		}
		if (*(const uint8_t *)pr_point != way[w].byte)
			djp_test_fail(__FILE__, __LINE__, "%s: the site holds %#x, not %#x", way[w].what,
				      *(const uint8_t *)pr_point, way[w].byte);
		run(2000);
		/* a new thread: its first hit registers it (the slow path) */
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, run_ten, NULL), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
		if (atomic_load(&hits) != 2010 || atomic_load(&bad))
			djp_test_fail(__FILE__, __LINE__, "%s: %ld hits of 2010, %ld wrong", way[w].what,
				      atomic_load(&hits), atomic_load(&bad));
		CHECK_EQ(djp_disconnect(id), 0);
		if (id2 >= 0)
			CHECK_EQ(djp_disconnect(id2), 0);
	}
	CHECK_EQ(pr_regs(), 0);
}

/* Four threads (more than the cores) run the probed code while the probe
 * is connected and disconnected over and over, lean and full in turn, so
 * that hits arrive through the jump, through the int3 of each arming and
 * disarming, and through each thread's first hit: every value read is
 * exact, and the code's own registers survive every one. */
static atomic_bool stress_stop;
static atomic_long stress_calls;

static void *stress_runner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stress_stop)) {
		run(100);
		atomic_fetch_add(&stress_calls, 100);
	}
	return NULL;
}

/* For 3 s, four threads run the probed code while a probe at `where`
 * is connected and disconnected, `pause` apart, with the plain and the
 * clobbering handler and lean and full in turn.  Returns the rounds. */
static long churn(const struct djp_point_opts *where, useconds_t pause)
{
	pthread_t t[4];
	long rounds = 0;

	atomic_store(&hits, 0);
	atomic_store(&bad, 0);
	atomic_store(&stress_stop, false);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, stress_runner, NULL), 0);
	for (time_t end = time(NULL) + 3; time(NULL) < end; rounds++) {
		int id = djp_connect_at(where, rounds & 1 ? clobbering : plain, NULL, rounds % 3 ? DJP_GPR_ONLY : 0);
		CHECK(id >= 0);
		usleep(pause);
		CHECK_EQ(djp_disconnect(id), 0);
	}
	atomic_store(&stress_stop, true);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	return rounds;
}

TEST_TIMEOUT(point_regs_while_armed_and_disarmed, 60)
{
	const long off = (long)((uintptr_t)pr_point - (uintptr_t)pr_regs);
	long rounds = churn(OPTS(.func = "pr_regs", .offset = (uint64_t)off), 10000);

	if (atomic_load(&bad) || atomic_load(&hits) < rounds)
		djp_test_fail(__FILE__, __LINE__, "%ld rounds, %ld calls, %ld hits, %ld wrong", rounds,
			      atomic_load(&stress_calls), atomic_load(&hits), atomic_load(&bad));
	CHECK_EQ(*(const uint8_t *)pr_point, 0x48); /* lea 1(%rbx),%rax: the text as it was */
}

/*
 * A site's handler list is published before its text jumps to the
 * trampoline the new list asks for, so for the length of a batch the old
 * trampoline runs the new list.  The recorder's fast entry alone makes a
 * prefetching trampoline; a handler added beside it must find every
 * register in the view that trampoline made, %rsp included (a return
 * probe's hook writes through it: a view without it crashed the program).
 * Four threads run the probed code while a second handler comes and goes
 * beside a fast entry that stays.
 */
static atomic_long fast_hits;

static void fast_entry(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	(void)hit, (void)plan, (void)a0, (void)a1, (void)a2, (void)a3;
	atomic_fetch_add(&fast_hits, 1);
}

static djp_fast_entry_fn fast_plan(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	*plan = (struct djp_fast_plan){ .data = data, .id = s->id, .nargs = s->m->nargs };
	return fast_entry;
}

static void fast_slow_path(const struct djp_hit *hit, void *data)
{
	(void)hit, (void)data;
	atomic_fetch_add(&fast_hits, 1);
}

TEST_TIMEOUT(point_regs_when_a_handler_joins_a_fast_entry, 60)
{
	char pattern[64];
	struct djp_point *pt;
	long rounds;
	int fast;

	snprintf(pattern, sizeof(pattern), "func:pr_regs+%#lx", (unsigned long)((uintptr_t)pr_point - (uintptr_t)pr_regs));
	CHECK_EQ(djp__point_parse(pattern, &pt), 0);
	fast = djp__connect(NULL, fast_slow_path, NULL, DJP_GPR_ONLY,
			    &(struct djp_connect_opts){ .point = pt, .plan = fast_plan });
	CHECK(fast >= 0);
	rounds = churn(OPTS(.addr = (uintptr_t)pr_point), 2000);
	CHECK_EQ(djp_disconnect(fast), 0);
	if (atomic_load(&bad) || atomic_load(&hits) < rounds || atomic_load(&fast_hits) < rounds)
		djp_test_fail(__FILE__, __LINE__, "%ld rounds, %ld hits, %ld wrong, %ld fast hits", rounds,
			      atomic_load(&hits), atomic_load(&bad), atomic_load(&fast_hits));
	CHECK_EQ(*(const uint8_t *)pr_point, 0x48);
}
