// SPDX-License-Identifier: GPL-2.0
/*
 * djp_kimage.ko: the kernel image's markers against the tracepoints they
 * sit beside (selftests/kcheck/kimage_cmp.sh drives it).
 *
 * Every marker of the patch series is a line next to the tracepoint of the
 * same name, so over one run both must count the same hits.  For each
 * name the script adds, this module connects a counting handler to the
 * marker (djp_connect("vmlinux:NAME")) and a counting probe to the
 * tracepoint (tracepoint_probe_register on the tracepoint found by name
 * with for_each_kernel_tracepoint), or a kprobe on a function where the
 * marker is the first thing its function does unconditionally and no
 * tracepoint is there (page_fault, in handle_mm_fault).  The script then
 * opens the gate, runs a workload, closes the gate, and reads the counts.
 *
 * What makes "equal" exact rather than "about equal" is when a hit may be
 * counted; connecting and disconnecting two probes is never one atomic
 * step, so neither is allowed to decide:
 *
 *  - the gate: both handlers count only while it is open, and it is
 *    opened and closed inside stop_machine(), when every other CPU spins
 *    with interrupts off.  A pair whose two lines run with interrupts or
 *    preemption disabled (the scheduler's, interrupts', timers', the
 *    net softirq's) can then never be cut in half by the gate;
 *  - the task filter, for pairs in task context that a task could be
 *    preempted between (fork, exec, exit, the allocator, page faults, the
 *    mutex, block submission): those count only in tasks named
 *    "kimage_work", the workload, and only before the task's exit_notify()
 *    (exit_state still 0).  Every such task is created after the gate
 *    opened, and has passed exit_notify() before the shell's wait()
 *    returns, which is before the gate closes: each of their hits is
 *    inside the window for both probes.
 *
 * The lock tracepoints are in every sleeping and spinning lock's slow
 * path; the markers of the same names only in the mutex's (the series put
 * them there).  So their oracle ("tp:mutex") counts what the mutex's lines
 * would: a contention_begin whose flags have LCB_F_MUTEX, and a
 * contention_end of the lock the same task last began to wait for with
 * LCB_F_MUTEX (a task waits for one mutex at a time; the spinlocks it
 * contends for meanwhile, the mutex's own wait_lock among them, end with
 * another lock).  The task's pending mutex is kept in a small table claimed
 * with cmpxchg: a probe inside a spinlock's slow path may take no lock.
 *
 * A probe on a tracepoint is called with the tracepoint's arguments after
 * `data`; the counter takes `data` only, which the x86-64 calling
 * convention allows (the kernel is built without CFI).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/stop_machine.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <djprobe/djprobe.h>

#include "kimage_selftest.h"

#define KC_MAX 24
#define KC_COMM "kimage_work"
#define KC_WAITERS 64
/* include/trace/events/lock.h */
#define KC_LCB_F_MUTEX (1U << 5)

struct kc_pair {
	char name[32];
	bool task_only;
	atomic64_t marker, oracle;
	int id;				/* the marker's probe */
	struct tracepoint *tp;		/* the oracle: a tracepoint, */
	void *tp_probe;
	struct kprobe kp;		/* or a kprobe when kp.addr */
	char kp_symbol[KSYM_NAME_LEN];
};

static struct kc_pair kc_pairs[KC_MAX];
static unsigned int kc_npairs;
static bool kc_gate;

/* The mutex each workload task is waiting for ("tp:mutex"). */
static struct {
	struct task_struct *task;
	void *lock;
} kc_waiters[KC_WAITERS];
static atomic_t kc_waiters_full;
static DEFINE_MUTEX(kc_lock);

static bool kc_counted(const struct kc_pair *p)
{
	if (!READ_ONCE(kc_gate))
		return false;
	return !p->task_only ||
	       (!current->exit_state && !strncmp(current->comm, KC_COMM, sizeof(current->comm)));
}

static void kc_on_marker(const struct djp_hit *hit, void *data)
{
	struct kc_pair *p = data;

	if (kc_counted(p))
		atomic64_inc(&p->marker);
}

static void kc_on_tracepoint(void *data)
{
	struct kc_pair *p = data;

	if (kc_counted(p))
		atomic64_inc(&p->oracle);
}

static int kc_on_kprobe(struct kprobe *kp, struct pt_regs *regs)
{
	struct kc_pair *p = container_of(kp, struct kc_pair, kp);

	if (kc_counted(p))
		atomic64_inc(&p->oracle);
	return 0;
}

static int kc_waiter_slot(bool claim)
{
	unsigned int i;

	for (i = 0; i < KC_WAITERS; i++)
		if (READ_ONCE(kc_waiters[i].task) == current)
			return i;
	if (!claim)
		return -1;
	for (i = 0; i < KC_WAITERS; i++)
		if (!cmpxchg(&kc_waiters[i].task, NULL, current))
			return i;
	atomic_inc(&kc_waiters_full);
	return -1;
}

static void kc_on_mutex_begin(void *data, void *lock, unsigned int flags)
{
	struct kc_pair *p = data;
	int i;

	if (!(flags & KC_LCB_F_MUTEX) || !kc_counted(p))
		return;
	i = kc_waiter_slot(true);
	if (i >= 0)
		WRITE_ONCE(kc_waiters[i].lock, lock);
	atomic64_inc(&p->oracle);
}

static void kc_on_mutex_end(void *data, void *lock, int ret)
{
	struct kc_pair *p = data;
	int i;

	if (!kc_counted(p))
		return;
	i = kc_waiter_slot(false);
	if (i < 0 || READ_ONCE(kc_waiters[i].lock) != lock)
		return;
	WRITE_ONCE(kc_waiters[i].lock, NULL);
	smp_store_release(&kc_waiters[i].task, NULL);
	atomic64_inc(&p->oracle);
}

struct kc_find {
	const char *name;
	struct tracepoint *tp;
};

static void kc_find_tp(struct tracepoint *tp, void *priv)
{
	struct kc_find *f = priv;

	if (!strcmp(tp->name, f->name))
		f->tp = tp;
}

static void kc_release(struct kc_pair *p)
{
	if (p->id >= 0)
		djp_disconnect(p->id);
	if (p->tp) {
		tracepoint_probe_unregister(p->tp, p->tp_probe, p);
		tracepoint_synchronize_unregister();
	}
	if (p->kp.addr || p->kp.symbol_name)
		unregister_kprobe(&p->kp);
	memset(p, 0, sizeof(*p));
	p->id = -1;
}

static int kc_flip(void *on)
{
	WRITE_ONCE(kc_gate, !!on);
	return 0;
}

/* "NAME any|task tp|tp:mutex|kprobe:SYMBOL": connects both probes, gate
 * closed. */
static int kc_add(const char *spec)
{
	char name[32], class[8], oracle[8 + KSYM_NAME_LEN], pattern[48];
	struct kc_pair *p;
	int err;

	if (sscanf(spec, "%31s %7s %199s", name, class, oracle) != 3 ||
	    (strcmp(class, "any") && strcmp(class, "task")))
		return -EINVAL;
	if (kc_npairs == KC_MAX || READ_ONCE(kc_gate))
		return -EBUSY;
	p = &kc_pairs[kc_npairs];
	memset(p, 0, sizeof(*p));
	p->id = -1;
	strscpy(p->name, name, sizeof(p->name));
	p->task_only = !strcmp(class, "task");
	if (!strcmp(oracle, "tp") || !strcmp(oracle, "tp:mutex")) {
		struct kc_find f = { .name = name };
		void *probe = kc_on_tracepoint;

		if (!strcmp(oracle, "tp:mutex")) {
			if (!strcmp(name, "contention_begin"))
				probe = kc_on_mutex_begin;
			else if (!strcmp(name, "contention_end"))
				probe = kc_on_mutex_end;
			else
				return -EINVAL;
		}

		for_each_kernel_tracepoint(kc_find_tp, &f);
		if (!f.tp) {
			pr_info("# no tracepoint named %s\n", name);
			return -ENOENT;
		}
		err = tracepoint_probe_register(f.tp, probe, p);
		if (err)
			return err;
		p->tp = f.tp;
		p->tp_probe = probe;
	} else if (!strncmp(oracle, "kprobe:", 7)) {
		strscpy(p->kp_symbol, oracle + 7, sizeof(p->kp_symbol));
		p->kp.symbol_name = p->kp_symbol;
		p->kp.pre_handler = kc_on_kprobe;
		err = register_kprobe(&p->kp);
		if (err) {
			memset(&p->kp, 0, sizeof(p->kp));
			kc_release(p);
			return err;
		}
	} else {
		return -EINVAL;
	}
	snprintf(pattern, sizeof(pattern), "vmlinux:%s", name);
	p->id = djp_connect(pattern, kc_on_marker, p, 0);
	if (p->id < 0) {
		err = p->id;
		pr_info("# djp_connect(%s): %d\n", pattern, err);
		kc_release(p);
		return err;
	}
	kc_npairs++;
	return 0;
}

static void kc_reset(void)
{
	unsigned int i;

	if (READ_ONCE(kc_gate))
		stop_machine(kc_flip, NULL, NULL);
	for (i = 0; i < kc_npairs; i++)
		kc_release(&kc_pairs[i]);
	kc_npairs = 0;
	memset(kc_waiters, 0, sizeof(kc_waiters));
	atomic_set(&kc_waiters_full, 0);
}

static int kc_set_add(const char *val, const struct kernel_param *kp)
{
	int err;

	mutex_lock(&kc_lock);
	err = kc_add(val);
	mutex_unlock(&kc_lock);
	return err;
}

static const struct kernel_param_ops kc_add_ops = { .set = kc_set_add };
module_param_cb(add, &kc_add_ops, NULL, 0200);
MODULE_PARM_DESC(add, "NAME any|task tp|tp:mutex|kprobe:SYMBOL: count marker NAME beside its oracle");

static int kc_set_gate(const char *val, const struct kernel_param *kp)
{
	bool on;
	int err = kstrtobool(val, &on);

	if (err)
		return err;
	mutex_lock(&kc_lock);
	stop_machine(kc_flip, on ? (void *)1 : NULL, NULL);
	mutex_unlock(&kc_lock);
	return 0;
}

static const struct kernel_param_ops kc_gate_ops = { .set = kc_set_gate };
module_param_cb(gate, &kc_gate_ops, NULL, 0200);
MODULE_PARM_DESC(gate, "1: start counting, 0: stop (each inside stop_machine)");

static int kc_set_reset(const char *val, const struct kernel_param *kp)
{
	mutex_lock(&kc_lock);
	kc_reset();
	mutex_unlock(&kc_lock);
	return 0;
}

static const struct kernel_param_ops kc_reset_ops = { .set = kc_set_reset };
module_param_cb(reset, &kc_reset_ops, NULL, 0200);
MODULE_PARM_DESC(reset, "disconnect every probe and forget the counts");

/* "NAME MARKER ORACLE" a line */
static int kc_get_counts(char *buf, const struct kernel_param *kp)
{
	unsigned int i;
	int n = 0;

	mutex_lock(&kc_lock);
	if (atomic_read(&kc_waiters_full))
		n += scnprintf(buf, PAGE_SIZE, "waiters-table-full %d -1\n", atomic_read(&kc_waiters_full));
	for (i = 0; i < kc_npairs; i++)
		n += scnprintf(buf + n, PAGE_SIZE - n, "%s %lld %lld\n", kc_pairs[i].name,
			       atomic64_read(&kc_pairs[i].marker), atomic64_read(&kc_pairs[i].oracle));
	mutex_unlock(&kc_lock);
	return n;
}

static const struct kernel_param_ops kc_counts_ops = { .get = kc_get_counts };
module_param_cb(counts, &kc_counts_ops, NULL, 0400);
MODULE_PARM_DESC(counts, "NAME MARKER_HITS ORACLE_HITS, a line per name");

static int __init kc_init(void)
{
	return 0;
}

static void __exit kc_exit(void)
{
	mutex_lock(&kc_lock);
	kc_reset();
	mutex_unlock(&kc_lock);
	kimage_stress_exit();
}

module_init(kc_init);
module_exit(kc_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe selftest: the kernel image's markers against their tracepoints, and their patching under load");
