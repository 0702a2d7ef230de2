// SPDX-License-Identifier: GPL-2.0
/*
 * Function points: kernel.function("NAME") and its .return, for the
 * tool's `djp trace -k func:NAME` and scripts, through the kernel's own
 * kprobes.
 *
 * How it works.  A CONNECT whose pattern starts with "func:" is not a
 * marker pattern: "func:NAME[+OFF]" is register_kprobe(symbol_name=NAME,
 * offset=OFF), "func:NAME%return" register_kretprobe(NAME).  NAME may be
 * "MODULE:NAME", as kprobes reads it.  kprobes chooses how: an int3, or,
 * where its optimiser can, a jump of its own (optprobes).  The handler
 * writes one event into the connecting file's per-CPU ring (kring.c),
 * as a marker's recorder does: the entry's six integer argument
 * registers (System V: %rdi %rsi %rdx %rcx %r8 %r9), or the return
 * value.  kprobes keeps a kprobe from firing inside another one's
 * handler on the same CPU (its nmissed), and the ring counts a hit inside
 * a hit (lost_nested), so the handler never recurses.
 *
 * Each point gets a synthetic marker id below 0x80000000, which no
 * marker's can be (its site lies in kernel or module text, at or above
 * 0xffffffff80000000), and is listed (LIST) beside the markers as
 * module "kernel", name "func:NAME" or "func:NAME%return", how "kprobe"
 * (both: the name says which), site its id: the tool names its events as it names a
 * module loaded late, by listing again.  unregister_k(ret)probe returns
 * once no handler runs, so the file's rings may go after it.
 */
#include <linux/idr.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "kfunc.h"

#define KFUNC_ID_BASE 0x10000000u
#define KFUNC_NAME_MAX 128

struct djp_kfunc {
	struct list_head node;	/* on kfuncs */
	struct djp_kring *ring;
	u32 marker_id;
	bool ret;
	char name[KFUNC_NAME_MAX]; /* "func:NAME..." as connected */
	struct kprobe kp;
	struct kretprobe krp;
};

static LIST_HEAD(kfuncs);
static DEFINE_MUTEX(kfuncs_lock);
static DEFINE_IDA(kfunc_ids);

u64 djp_dev_hit_task(void)
{
	unsigned long pc = preempt_count();

	/* an int3 trap counts as an NMI and a hard interrupt: not what it hit */
	if (pc & NMI_MASK)
		pc -= NMI_OFFSET + HARDIRQ_OFFSET;
	if (pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET))
		return 0;
	return (u64)task_tgid_nr(current) << 32 | (u32)task_pid_nr(current);
}
NOKPROBE_SYMBOL(djp_dev_hit_task);

static int kfunc_entry(struct kprobe *p, struct pt_regs *regs)
{
	struct djp_kfunc *f = container_of(p, struct djp_kfunc, kp);
	u64 args[6] = { regs->di, regs->si, regs->dx, regs->cx, regs->r8, regs->r9 };

	djp_kring_record(f->ring, f->marker_id, args, 6, 0, djp_dev_hit_task());
	return 0;
}
NOKPROBE_SYMBOL(kfunc_entry);

static int kfunc_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct djp_kfunc *f = container_of(get_kretprobe(ri), struct djp_kfunc, krp);
	u64 ret = regs_return_value(regs);

	/* the ring is its CPU's alone: no migration inside the record */
	preempt_disable_notrace();
	djp_kring_record(f->ring, f->marker_id, &ret, 1, 0, djp_dev_hit_task());
	preempt_enable_notrace();
	return 0;
}
NOKPROBE_SYMBOL(kfunc_return);

/* "func:NAME[+OFF]" or "func:NAME%return" into sym, off, ret. */
static int parse(const char *pattern, char *sym, size_t symsz, unsigned int *off, bool *ret)
{
	const char *s = pattern + strlen(DJP_KFUNC_PREFIX);
	size_t n = strcspn(s, "+%");

	*off = 0;
	*ret = false;
	if (!n || n >= symsz)
		return -EINVAL;
	memcpy(sym, s, n);
	sym[n] = 0;
	s += n;
	if (*s == '+') {
		char *end;

		*off = simple_strtoul(s + 1, &end, 0);
		if (end == s + 1 || *end)
			return -EINVAL;
	} else if (*s == '%') {
		if (strcmp(s, "%return"))
			return -EINVAL;
		*ret = true;
	}
	return 0;
}

int djp_kfunc_register(const char *pattern, struct djp_kring *ring, struct djp_kfunc **out)
{
	struct djp_kfunc *f;
	char sym[KSYM_NAME_LEN];
	unsigned int off;
	bool ret;
	int id, err;

	if (strlen(pattern) >= KFUNC_NAME_MAX || parse(pattern, sym, sizeof(sym), &off, &ret))
		return -EINVAL;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	id = ida_alloc_max(&kfunc_ids, DJP_KFUNC_ID_LIMIT - KFUNC_ID_BASE - 1, GFP_KERNEL);
	if (id < 0) {
		kfree(f);
		return id;
	}
	f->marker_id = KFUNC_ID_BASE + id;
	f->ring = ring;
	f->ret = ret;
	strscpy(f->name, pattern, sizeof(f->name));
	/* the name is only read at registration: kprobes keeps the address */
	if (ret) {
		f->krp.kp.symbol_name = sym;
		f->krp.handler = kfunc_return;
		err = register_kretprobe(&f->krp);
		f->krp.kp.symbol_name = NULL;
	} else {
		f->kp.symbol_name = sym;
		f->kp.offset = off;
		f->kp.pre_handler = kfunc_entry;
		err = register_kprobe(&f->kp);
		f->kp.symbol_name = NULL;
	}
	if (err) {
		ida_free(&kfunc_ids, id);
		kfree(f);
		return err;
	}
	mutex_lock(&kfuncs_lock);
	list_add_tail(&f->node, &kfuncs);
	mutex_unlock(&kfuncs_lock);
	*out = f;
	return 0;
}

void djp_kfunc_unregister(struct djp_kfunc *f)
{
	mutex_lock(&kfuncs_lock);
	list_del(&f->node);
	mutex_unlock(&kfuncs_lock);
	if (f->ret)
		unregister_kretprobe(&f->krp); /* returns when no handler runs */
	else
		unregister_kprobe(&f->kp);
	ida_free(&kfunc_ids, f->marker_id - KFUNC_ID_BASE);
	kfree(f);
}

int djp_kfunc_for_each(int (*fn)(const struct djp_kmarker *m, void *data), void *data)
{
	struct djp_kfunc *f;
	int ret = 0;

	mutex_lock(&kfuncs_lock);
	list_for_each_entry(f, &kfuncs, node) {
		struct djp_kmarker m = {
			.module = "kernel",
			.name = f->name,
			/* the names scripts read: $arg1..$arg6, $return */
			.format = f->ret ? "return=%#lx" : "arg1=%#lx arg2=%#lx arg3=%#lx arg4=%#lx arg5=%#lx arg6=%#lx",
			.args = "",
			.site = f->marker_id,
			.nargs = f->ret ? 1 : 6,
			.probes = 1,
			/* a return point too: its name says %return, and
			 * "kretprobe" is longer than the ABI's how[8] */
			.how = "kprobe",
		};

		ret = fn(&m, data);
		if (ret)
			break;
	}
	mutex_unlock(&kfuncs_lock);
	return ret;
}
