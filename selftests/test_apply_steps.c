/*
 * The six steps of a batch that both engines run (kernel/apply_steps.c),
 * with steps that only write down that they ran: the order, where
 * DJP_APPLY_PUBLISH_FIRST puts step 4, and what a failure at each step
 * leads to, as user space's arm.c and djprobe.ko's kconnect.c rely on it.
 * Each letter is a step: d decide, t trampolines, c check, l leave,
 * p publish, e enter, u unpublish, r retire (then g when with a grace
 * period, and x after a failure), D discard.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "harness.h"
#include "kernel/apply_steps.h"

struct fake {
	char log[32];
	size_t n;
	char fail;	/* the step that fails, or 0 */
	bool retired;	/* what publish says: an old list was there */
};

static void note(struct fake *f, char c)
{
	if (f->n + 1 < sizeof(f->log))
		f->log[f->n++] = c;
}

static int step(void *ctx, char c)
{
	struct fake *f = ctx;
	note(f, c);
	return f->fail == c ? -EBUSY : 0;
}

static int f_decide(void *ctx)
{
	return step(ctx, 'd');
}

static int f_tramps(void *ctx)
{
	return step(ctx, 't');
}

static int f_check(void *ctx)
{
	return step(ctx, 'c');
}

static int f_leave(void *ctx)
{
	return step(ctx, 'l');
}

static int f_enter(void *ctx)
{
	return step(ctx, 'e');
}

static void f_unpublish(void *ctx)
{
	step(ctx, 'u');
}

static void f_discard(void *ctx)
{
	step(ctx, 'D');
}

static bool f_publish(void *ctx)
{
	step(ctx, 'p');
	return ((struct fake *)ctx)->retired;
}

static void f_retire(void *ctx, bool grace, int err)
{
	step(ctx, 'r');
	if (grace)
		note(ctx, 'g');
	if (err)
		note(ctx, 'x');
}

/* user space's shape: no step 3 of its own, lists put back on failure */
static const struct djp_apply_ops user_ops = {
	.decide = f_decide, .tramps = f_tramps, .check = f_check, .publish = f_publish,
	.enter = f_enter, .unpublish = f_unpublish, .retire = f_retire, .discard = f_discard,
};
/* djprobe.ko's: a step 3, no check after step 2, no unpublish */
static const struct djp_apply_ops kmod_ops = {
	.decide = f_decide, .tramps = f_tramps, .leave = f_leave, .publish = f_publish,
	.enter = f_enter, .retire = f_retire, .discard = f_discard,
};

static const char *run(const struct djp_apply_ops *ops, unsigned flags, char fail, bool retired, int *err)
{
	static struct fake f;
	memset(&f, 0, sizeof(f));
	f.fail = fail;
	f.retired = retired;
	*err = djp_apply_steps(ops, &f, flags);
	return f.log;
}

TEST(apply_steps_order_and_what_a_failure_undoes)
{
	int err;

	/* arming sites that had no list: no grace period owed */
	CHECK_STR(run(&user_ops, 0, 0, false, &err), "dtcper");
	CHECK_EQ(err, 0);
	CHECK_STR(run(&user_ops, 0, 0, true, &err), "dtcperg");
	/* a refusal before step 4: the new lists freed, nothing else */
	CHECK_STR(run(&user_ops, 0, 'd', true, &err), "dD");
	CHECK_EQ(err, -EBUSY);
	CHECK_STR(run(&user_ops, 0, 't', true, &err), "dtD");
	CHECK_STR(run(&user_ops, 0, 'c', true, &err), "dtcD");
	/* the bootstrap failed: the old lists back, then a grace period
	 * whether or not an old list was there (the new ones may be running) */
	CHECK_STR(run(&user_ops, 0, 'e', false, &err), "dtcpeurgx");
	CHECK_EQ(err, -EBUSY);

	/* a connect: publish after step 3, which may refuse it unpublished */
	CHECK_STR(run(&kmod_ops, 0, 0, true, &err), "dtlperg");
	CHECK_STR(run(&kmod_ops, 0, 'l', true, &err), "dtlD");
	CHECK_EQ(err, -EBUSY);
	/* step 5 failed: the new lists stay (no unpublish), step 6 still runs */
	CHECK_STR(run(&kmod_ops, 0, 'e', true, &err), "dtlpergx");
	CHECK_EQ(err, -EBUSY);
	/* a disconnect or a module event: publish first */
	CHECK_STR(run(&kmod_ops, DJP_APPLY_PUBLISH_FIRST, 0, true, &err), "dtplerg");
	CHECK_EQ(err, 0);
	CHECK_STR(run(&kmod_ops, DJP_APPLY_PUBLISH_FIRST, 'd', true, &err), "dD");
	/* step 3 failed after publishing: no step 5, step 6 all the same */
	CHECK_STR(run(&kmod_ops, DJP_APPLY_PUBLISH_FIRST, 'l', false, &err), "dtplrx");
	CHECK_EQ(err, -EBUSY);
}

TEST(apply_steps_way_a_list_asks_for)
{
	/* no handler: off, whatever the site was */
	CHECK_EQ(djp_way_wanted(0, false, DJP_WAY_JUMP, true), DJP_WAY_OFF);
	CHECK_EQ(djp_way_wanted(0, true, DJP_WAY_TRAP, false), DJP_WAY_OFF);
	/* user space follows the list */
	CHECK_EQ(djp_way_wanted(2, false, DJP_WAY_TRAP, false), DJP_WAY_JUMP);
	CHECK_EQ(djp_way_wanted(2, true, DJP_WAY_JUMP, false), DJP_WAY_TRAP);
	/* djprobe.ko keeps an armed site's way; an off site chooses */
	CHECK_EQ(djp_way_wanted(1, true, DJP_WAY_JUMP, true), DJP_WAY_JUMP);
	CHECK_EQ(djp_way_wanted(1, false, DJP_WAY_TRAP, true), DJP_WAY_TRAP);
	CHECK_EQ(djp_way_wanted(1, true, DJP_WAY_OFF, true), DJP_WAY_TRAP);
	CHECK_EQ(djp_way_wanted(1, false, DJP_WAY_OFF, true), DJP_WAY_JUMP);
}
