// SPDX-License-Identifier: GPL-2.0
/*
 * A hit: running a site's handlers, and what a handler may ask of it.
 *
 * Three paths lead here with a struct pt_regs: the trampoline (ktramp.c,
 * regs built by ktramp_entry.S), the int3 of a batch in progress (ktrap.c)
 * and a kprobe (kprobe_fallback.c).  All three call djp_dispatch(), which
 * disables preemption, so that the handler list read under RCU-sched stays
 * alive and disconnect's grace period waits for every handler, and takes a
 * nesting count per CPU and per context (task, softirq, hard interrupt,
 * NMI-like trap): a marker hit from inside a handler, in the handler's own
 * context, is counted as a miss, not run, so a handler can never recurse
 * into itself through a marker it calls; an interrupt that arrives while a
 * handler runs, and hits a marker, is a hit like any other.
 *
 * Arguments are not copied at the hit: djp_hit_arg() decodes the
 * location the record gives (lib/argloc.c's parse, made at discovery)
 * from the registers, and reads a memory operand with
 * copy_from_kernel_nofault(), which returns 0 for an address that faults
 * rather than oopsing in the handler's context.
 */
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/uaccess.h>

#include "djprobe_int.h"

/* Per CPU and per context (task, softirq, hardirq, NMI-like): a handler
 * interrupted by an interrupt whose code hits a marker is not recursion. */
static DEFINE_PER_CPU(unsigned int[4], djp_nesting);
DEFINE_PER_CPU(unsigned long, djp_misses);

/* /sys/module/djprobe/parameters/misses: the hits not run, all CPUs, and
 * those kprobes did not pass on (a kprobe hit while another kprobe is
 * handled on the CPU), counted as each kprobe goes. */
static int misses_get(char *buf, const struct kernel_param *kp)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(djp_misses, cpu);
	sum += atomic_long_read(&djp_kp_missed);
	return sysfs_emit(buf, "%lu\n", sum);
}

static int misses_set(const char *val, const struct kernel_param *kp)
{
	pr_warn("djprobe: misses=%s: the miss count is read-only\n", val);
	return -EPERM;
}

static const struct kernel_param_ops misses_ops = { .set = misses_set, .get = misses_get };
module_param_cb(misses, &misses_ops, NULL, 0444);
MODULE_PARM_DESC(misses, "marker hits not run because a handler was running on the CPU (read-only)");

notrace void djp_dispatch(const struct djp_ksite *site, struct pt_regs *regs)
{
	const struct djp_hlist *hl;
	struct djp_hit hit = { site, regs };
	unsigned int i;

	unsigned int *nesting;

	preempt_disable_notrace();
	nesting = &this_cpu_ptr(djp_nesting)[interrupt_context_level()];
	if (++*nesting == 1) {
		hl = rcu_dereference_sched(site->handlers);
		for (i = 0; hl && i < hl->n; i++)
			hl->h[i].fn(&hit, hl->h[i].data);
	} else {
		__this_cpu_inc(djp_misses);
	}
	--*nesting;
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(djp_dispatch);

/* A register of enum djp_reg (user space's order, which argloc uses). */
static u64 reg_value(const struct djp_hit *hit, int reg)
{
	const struct pt_regs *r = hit->regs;

	switch (reg) {
	case DJP_REG_RAX: return r->ax;
	case DJP_REG_RCX: return r->cx;
	case DJP_REG_RDX: return r->dx;
	case DJP_REG_RSI: return r->si;
	case DJP_REG_RDI: return r->di;
	case DJP_REG_R8: return r->r8;
	case DJP_REG_R9: return r->r9;
	case DJP_REG_R10: return r->r10;
	case DJP_REG_R11: return r->r11;
	case DJP_REG_RBX: return r->bx;
	case DJP_REG_RBP: return r->bp;
	case DJP_REG_R12: return r->r12;
	case DJP_REG_R13: return r->r13;
	case DJP_REG_R14: return r->r14;
	case DJP_REG_R15: return r->r15;
	case DJP_REG_RSP: return r->sp;
	/* an operand relative to %rip is relative to the next instruction */
	case DJP_REG_RIP: return hit->site->addr + DJP_SITE_LEN;
	default: return 0;
	}
}

int64_t djp_hit_arg(const struct djp_hit *hit, unsigned int i)
{
	const struct djp_argloc *a;
	unsigned long addr;
	u64 v = 0;

	if (i >= hit->site->m->nargs)
		return 0;
	a = &hit->site->m->arg[i];
	switch (a->kind) {
	case DJP_LOC_REG:
		v = reg_value(hit, a->reg) >> a->reg_shift;
		break;
	case DJP_LOC_IMM:
		v = (u64)a->disp;
		break;
	case DJP_LOC_MEM:
	case DJP_LOC_ABS:
		addr = a->kind == DJP_LOC_ABS ? (unsigned long)a->disp
					       : djp_argloc_mem_addr(a, a->reg >= 0 ? reg_value(hit, a->reg) : 0,
								     a->index >= 0 ? reg_value(hit, a->index) : 0);
		if (a->size > sizeof(v) || copy_from_kernel_nofault(&v, (const void *)addr, a->size))
			v = 0;
		break;
	default:
		return 0;
	}
	return (int64_t)djp_argloc_extend(v, a);
}
EXPORT_SYMBOL_GPL(djp_hit_arg);
NOKPROBE_SYMBOL(djp_hit_arg);

uint64_t djp_hit_reg(const struct djp_hit *hit, unsigned int dwarf_reg)
{
	const struct pt_regs *r = hit->regs;

	switch (dwarf_reg) {
	case 0: return r->ax;
	case 1: return r->dx;
	case 2: return r->cx;
	case 3: return r->bx;
	case 4: return r->si;
	case 5: return r->di;
	case 6: return r->bp;
	case 7: return r->sp;
	case 8: return r->r8;
	case 9: return r->r9;
	case 10: return r->r10;
	case 11: return r->r11;
	case 12: return r->r12;
	case 13: return r->r13;
	case 14: return r->r14;
	case 15: return r->r15;
	case 16: return hit->site->addr;
	default: return 0;
	}
}
EXPORT_SYMBOL_GPL(djp_hit_reg);

const char *djp_hit_name(const struct djp_hit *hit)
{
	return hit->site->m->name;
}
EXPORT_SYMBOL_GPL(djp_hit_name);

unsigned int djp_hit_nargs(const struct djp_hit *hit)
{
	return hit->site->m->nargs;
}
EXPORT_SYMBOL_GPL(djp_hit_nargs);

uintptr_t djp_hit_site(const struct djp_hit *hit)
{
	return hit->site->addr;
}
EXPORT_SYMBOL_GPL(djp_hit_site);

const char *djp_hit_module(const struct djp_hit *hit)
{
	return hit->site->kmod->name;
}
EXPORT_SYMBOL_GPL(djp_hit_module);

const char *djp_hit_format(const struct djp_hit *hit)
{
	return hit->site->m->format;
}
EXPORT_SYMBOL_GPL(djp_hit_format);
