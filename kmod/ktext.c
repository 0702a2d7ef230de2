// SPDX-License-Identifier: GPL-2.0
/*
 * Writing module text, and the sync between the steps of a batch.
 *
 * Module text is read-only (CONFIG_STRICT_MODULE_RWX), and the kernel's own
 * writer, text_poke(), is not exported.  But module text lives in the
 * vmalloc area, so its pages are vmalloc_to_page()'s to find: a batch maps
 * every page it touches a second time, writable and not executable, with
 * one vmap(), writes through that alias, and unmaps it.  A site may cross
 * a page, so a write is translated a page's part at a time.  One mutex
 * serialises writers (the engine's own; other patchers of the kernel
 * write other bytes).
 *
 * The protocol itself is user space's: arch/x86/text_poke.c, compiled here
 * unchanged through kmod/compat/ (its arch_text_* calls land below), does
 * the three steps (int3 everywhere; sync; tails; sync; first bytes; sync)
 * and the rollback.  What differs is the sync, chosen by the module
 * parameter `sync`, writable at run time:
 *
 *   ipi           an IPI runs sync_core() on every CPU and the batch waits
 *                 for them all: the kernel's text_poke_sync().  Other CPUs
 *                 keep running and may hit a site's int3 meanwhile
 *                 (ktrap.c); under an emulator one of them may loop on a
 *                 stale int3, which the wait undoes (renew_first_bytes).
 *   stop_machine  the whole batch runs inside stop_machine(): the first
 *                 CPU to arrive does every write, the others spin until it
 *                 is done, then every CPU runs sync_core() before it leaves,
 *                 so nobody executes a byte of a site mid-change.  The
 *                 syncs between steps are then no-ops.  The alias is mapped
 *                 before (vmap sleeps); text_poke.c's small allocation
 *                 takes GFP_ATOMIC there (kmod/compat/stdlib.h).
 */
#include <linux/cpu.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/sort.h>
#include <linux/stop_machine.h>
#include <linux/vmalloc.h>
#include <asm/cpufeature.h>
#include <asm/pgtable.h>
#include <asm/processor.h>
#include <asm/sync_core.h>
#include <asm/unaligned.h>

#include "arch/x86/arch.h"
#include "djprobe_int.h"

int djp_sync_mode = DJP_SYNC_IPI;

static const char *const sync_names[] = { "ipi", "stop_machine" };

static int sync_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(sync_names, val);

	if (i < 0) {
		pr_warn("djprobe: sync=%.*s: not ipi or stop_machine\n", (int)strcspn(val, "\n"), val);
		return -EINVAL;
	}
	WRITE_ONCE(djp_sync_mode, i);
	return 0;
}

static int sync_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", sync_names[READ_ONCE(djp_sync_mode)]);
}

static const struct kernel_param_ops sync_ops = { .set = sync_set, .get = sync_get };
module_param_cb(sync, &sync_ops, NULL, 0644);
MODULE_PARM_DESC(sync, "how a batch serialises CPUs: ipi (sync_core on each CPU) or stop_machine");

static DEFINE_MUTEX(text_mutex);

/* The writable alias of the pages of one batch. */
struct djp_text_alias {
	unsigned int npages;
	unsigned long *base;	/* page addresses in text, sorted, unique */
	u8 *map;		/* their alias, in the same order */
};

/* The alias of the batch under way (text_mutex), for arch_text_open(). */
static struct djp_text_alias *current_alias;

static int ulong_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static void alias_free(struct djp_text_alias *a)
{
	if (!a)
		return;
	if (a->map)
		vunmap(a->map);
	kfree(a->base);
	kfree(a);
}

/* Map the pages of [addr[i], addr[i] + len[i]) for every i. */
static struct djp_text_alias *alias_map(const unsigned long *addr, const u8 *len, size_t n)
{
	struct djp_text_alias *a;
	struct page **pages = NULL;
	size_t i, k = 0;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return NULL;
	a->base = kmalloc_array(2 * n, sizeof(*a->base), GFP_KERNEL);
	if (!a->base)
		goto fail;
	/* A batch's sites come in address order, many to a page: dropping
	 * a page equal to the last one leaves a handful to sort, where
	 * sorting all 2n would be most of the time it takes to map. */
	for (i = 0; i < n; i++) {
		unsigned long first = addr[i] & PAGE_MASK, last = (addr[i] + len[i] - 1) & PAGE_MASK;

		if (k == 0 || a->base[k - 1] != first)
			a->base[k++] = first;
		if (last != first)
			a->base[k++] = last;
	}
	sort(a->base, k, sizeof(*a->base), ulong_cmp, NULL);
	for (i = 0; i < k; i++)
		if (a->npages == 0 || a->base[a->npages - 1] != a->base[i])
			a->base[a->npages++] = a->base[i];
	pages = kmalloc_array(a->npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		goto fail;
	for (i = 0; i < a->npages; i++) {
		/* module text, vmalloc-mapped in the modules area, or the
		 * kernel image's text (a marked kernel's), which lies in the
		 * image mapping below it: its page is found from the
		 * physical address, as __pa_symbol() gives it */
		if (a->base[i] >= MODULES_VADDR && a->base[i] < MODULES_END)
			pages[i] = vmalloc_to_page((void *)a->base[i]);
		else if (a->base[i] >= __START_KERNEL_map && a->base[i] < MODULES_VADDR)
			pages[i] = pfn_to_page(__pa_symbol(a->base[i]) >> PAGE_SHIFT);
		else
			goto fail;
		if (!pages[i])
			goto fail;
	}
	a->map = vmap(pages, a->npages, VM_MAP, PAGE_KERNEL);
	if (!a->map)
		goto fail;
	kfree(pages);
	return a;
fail:
	kfree(pages);
	alias_free(a);
	return NULL;
}

/* The alias of the text byte at `addr`, or NULL when it is not mapped. */
static u8 *alias_of(const struct djp_text_alias *a, unsigned long addr)
{
	unsigned long page = addr & PAGE_MASK;
	unsigned int lo = 0, hi = a->npages;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (a->base[mid] == page)
			return a->map + (size_t)mid * PAGE_SIZE + offset_in_page(addr);
		if (a->base[mid] < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int arch_text_open(struct djp_text_session *s, const uintptr_t *addrs, const uint8_t *lens, size_t n)
{
	size_t i;

	s->alias = current_alias;
	for (i = 0; i < n; i++)
		if (!s->alias || !alias_of(s->alias, addrs[i]) || !alias_of(s->alias, addrs[i] + lens[i] - 1))
			return -EFAULT;
	return 0;
}

/*
 * Copy with the fewest stores, each as wide as what is left allows.  Not
 * memcpy(): under an emulator that translates code (QEMU's TCG) every
 * store to a page holding translated code leaves the fast path, and
 * memcpy() may store a byte at a time (`rep movsb`): a 5-byte tail is two
 * stores here, where it was five (a thousand tails under TCG: 2.7 ms, was
 * 3.7).
 */
static void store_bytes(u8 *p, const u8 *buf, size_t len)
{
	while (len >= 8) {
		put_unaligned(get_unaligned((const u64 *)buf), (u64 *)p);
		p += 8, buf += 8, len -= 8;
	}
	if (len >= 4) {
		put_unaligned(get_unaligned((const u32 *)buf), (u32 *)p);
		p += 4, buf += 4, len -= 4;
	}
	if (len >= 2) {
		put_unaligned(get_unaligned((const u16 *)buf), (u16 *)p);
		p += 2, buf += 2, len -= 2;
	}
	if (len)
		WRITE_ONCE(*p, *buf);
}

int arch_text_write(struct djp_text_session *s, uintptr_t addr, const uint8_t *buf, size_t len)
{
	/* The first byte of a site is one store, which is all that other
	 * CPUs may see change under them without a sync; the protocol writes
	 * it alone.  Longer writes are tails, which no CPU runs while their
	 * first byte is an int3: copied a page's part at a time. */
	while (len) {
		size_t part = min_t(size_t, len, PAGE_SIZE - offset_in_page(addr));
		u8 *p = alias_of(s->alias, addr);

		if (!p)
			return -EFAULT;
		store_bytes(p, buf, part);
		addr += part;
		buf += part;
		len -= part;
	}
	return 0;
}

int arch_text_close(struct djp_text_session *s)
{
	return 0;
}

/*
 * The sync between steps with sync=ipi: the kernel's text_poke_sync(),
 * sync_core() on every CPU, waited for here.  Not on_each_cpu(), which
 * only waits, and may not be called with interrupts masked: the wait
 * below renews the batch's first bytes while it lasts (renew_first_bytes).
 * CPUs cannot come or go meanwhile (djp_text_batch holds
 * cpus_read_lock); one call_single_data per CPU serves every sync, since
 * each sync waits for all of them (text_mutex).
 */
static DEFINE_PER_CPU(call_single_data_t, sync_csd);
/* Spins of the wait between renewals: some 0.1-0.5 ms on a real CPU.  A
 * count, not a clock: with every CPU's interrupts masked no tick moves
 * jiffies, which is what local_clock() follows where the TSC is not
 * trusted (an emulator's often is not). */
#define SYNC_RENEW_SPINS 8192
static atomic_t sync_pending;

/* The batch under way (text_mutex), whose first bytes a long wait renews. */
static struct djp_poke *sync_batch;
static size_t sync_batch_n;

static void sync_core_csd(void *unused)
{
	sync_core();
	atomic_dec(&sync_pending);
}

/*
 * Store each site's first byte once more with the value it has now.  A
 * CPU sees no change (an identical single-byte store at an instruction
 * start), but an emulator that caches translated code sees one more write
 * to the page: QEMU's TCG can translate a site's bytes on one vCPU while
 * another vCPU's store to them bypasses its invalidation, and then runs
 * the stale int3 for ever (kprobes' stale-trap rule sends it back each
 * time, since memory no longer holds 0xcc); the store ends that.  It is
 * made once the batch is done, and while a sync waits long: the CPU that
 * runs such a stale int3 where the site's code masks interrupts
 * (__schedule) never takes the sync's IPI.  Real CPUs seldom wait that
 * long (a CPU with interrupts masked for a millisecond).
 */
static void renew_first_bytes(struct djp_poke *p, size_t n)
{
	struct djp_text_session s = { .alias = current_alias };
	size_t i;

	for (i = 0; i < n; i++) {
		u8 b = READ_ONCE(*(u8 *)p[i].addr);

		arch_text_write(&s, p[i].addr, &b, 1);
	}
}

static unsigned long sync_renewals;
module_param(sync_renewals, ulong, 0444);
MODULE_PARM_DESC(sync_renewals, "times a sync's wait stored the first bytes again (an emulator's stale int3)");

static int sync_ipi(void)
{
	unsigned long spins = 0;
	int cpu, self;

	/* As on_each_cpu() waits: this CPU kept (and, under an emulator,
	 * its interrupts masked: djp_text_batch says why); sending is
	 * allowed either way (the async form), and every other CPU waits
	 * for IPIs with its own unmasked. */
	self = get_cpu();
	atomic_set(&sync_pending, num_online_cpus() - 1);
	for_each_online_cpu(cpu) {
		call_single_data_t *csd = per_cpu_ptr(&sync_csd, cpu);

		if (cpu == self)
			continue;
		INIT_CSD(csd, sync_core_csd, NULL);
		if (smp_call_function_single_async(cpu, csd))
			atomic_dec(&sync_pending);	/* not possible: each csd is idle here */
	}
	sync_core();
	while (atomic_read_acquire(&sync_pending)) {
		cpu_relax();
		if (++spins % SYNC_RENEW_SPINS == 0) {
			WRITE_ONCE(sync_renewals, sync_renewals + 1);
			renew_first_bytes(sync_batch, sync_batch_n);
		}
	}
	put_cpu();
	return 0;
}

/*
 * Whether the CPUs are QEMU's TCG, which keeps a translation of code
 * another vCPU has just stored over (renew_first_bytes): CPUID's
 * hypervisor leaf says "TCGTCGTCGTCG" there.  Asked once.
 */
static int text_emulated = -1;

static bool text_is_emulated(void)
{
	if (READ_ONCE(text_emulated) < 0) {
		unsigned int eax = 0, sig[3] = { 0, 0, 0 };

		if (boot_cpu_has(X86_FEATURE_HYPERVISOR))
			cpuid(0x40000000, &eax, &sig[0], &sig[1], &sig[2]);
		WRITE_ONCE(text_emulated, !memcmp(sig, "TCGTCGTCGTCG", 12));
	}
	return text_emulated;
}

static int emulated_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", text_is_emulated());
}

static const struct kernel_param_ops emulated_ops = { .get = emulated_get };
module_param_cb(emulated, &emulated_ops, NULL, 0444);
MODULE_PARM_DESC(emulated, "1 when the CPUs are QEMU's TCG: a batch then masks the patcher's interrupts (ktext.c)");

static int sync_none(void)
{
	return 0;
}

struct stop_batch {
	struct djp_poke *p;
	size_t n;
	atomic_t arrived;
	atomic_t done;
	int ret;
};

static int stop_batch_fn(void *data)
{
	struct stop_batch *b = data;

	if (atomic_inc_return(&b->arrived) == 1) {
		b->ret = arch_poke_batch(b->p, b->n, sync_none, NULL);
		atomic_set_release(&b->done, 1);
	} else {
		while (!atomic_read_acquire(&b->done))
			cpu_relax();
	}
	sync_core();
	return 0;
}

int djp_text_batch(struct djp_poke *p, size_t n)
{
	unsigned long *addr;
	u8 *len;
	size_t i;
	int ret;

	if (!n)
		return 0;
	addr = kmalloc_array(n, sizeof(*addr) + 1, GFP_KERNEL);
	if (!addr)
		return -ENOMEM;
	len = (u8 *)(addr + n);
	for (i = 0; i < n; i++) {
		addr[i] = p[i].addr;
		len[i] = p[i].len;
	}
	mutex_lock(&text_mutex);
	current_alias = alias_map(addr, len, n);
	kfree(addr);
	if (!current_alias) {
		mutex_unlock(&text_mutex);
		return -ENOMEM;
	}
	if (READ_ONCE(djp_sync_mode) == DJP_SYNC_STOP_MACHINE) {
		struct stop_batch b = { .p = p, .n = n };

		atomic_set(&b.arrived, 0);
		atomic_set(&b.done, 0);
		ret = stop_machine(stop_batch_fn, &b, cpu_online_mask);
		if (!ret)
			ret = b.ret;
		if (!ret)
			renew_first_bytes(p, n);
	} else {
		/*
		 * No CPU comes or goes during the batch (the syncs wait for
		 * each online one).  Under TCG, the whole batch runs with
		 * this CPU's interrupts masked: from a first byte's store to
		 * its renewal (renew_first_bytes) nothing may stand
		 * between, since a CPU looping on a stale int3 where
		 * interrupts are masked (__schedule) holds its runqueue's
		 * lock meanwhile.  An interrupt here could spin for that lock
		 * as long as the loop lasts, and a patcher preempted here
		 * might find every CPU in such a loop, with none left to run
		 * it (four vCPUs did: three looped at sched_switch's site,
		 * the fourth was the patcher's, switching it out).  The
		 * writes are a few stores a site, as stop_machine's are;
		 * text_poke.c's allocation takes GFP_ATOMIC then
		 * (kmod/compat/stdlib.h).  On real CPUs no loop can form,
		 * and the batch waits as the kernel's text_poke_bp() does,
		 * its interrupts open: a CPU that waits with its own masked
		 * cannot answer a third CPU's IPI, whose sender may hold a
		 * lock the CPU we wait for spins on.
		 */
		bool masked = text_is_emulated();
		unsigned long flags = 0;

		cpus_read_lock();
		if (masked)
			local_irq_save(flags);
		sync_batch = p;
		sync_batch_n = n;
		ret = arch_poke_batch(p, n, sync_ipi, NULL);
		if (!ret)
			renew_first_bytes(p, n);
		sync_batch = NULL;
		sync_batch_n = 0;
		if (masked)
			local_irq_restore(flags);
		cpus_read_unlock();
	}
	alias_free(current_alias);
	current_alias = NULL;
	mutex_unlock(&text_mutex);
	return ret;
}

/* A writable alias of [start, start + len), for writes to text nobody
 * executes (free trampoline slots), kept across many writes. */
struct djp_text_alias *djp_text_alias_map(unsigned long start, size_t len)
{
	struct djp_text_alias *a;
	unsigned long *addr;
	u8 *lens;
	size_t n, i;

	n = (PAGE_ALIGN(start + len) - (start & PAGE_MASK)) >> PAGE_SHIFT;
	addr = kmalloc_array(n, sizeof(*addr) + 1, GFP_KERNEL);
	if (!addr)
		return NULL;
	lens = (u8 *)(addr + n);
	for (i = 0; i < n; i++) {
		addr[i] = (start & PAGE_MASK) + i * PAGE_SIZE;
		lens[i] = 1;
	}
	a = alias_map(addr, lens, n);
	kfree(addr);
	return a;
}

int djp_text_alias_write(struct djp_text_alias *a, unsigned long addr, const void *buf, size_t len)
{
	struct djp_text_session s = { .alias = a };
	int ret;

	if (!a)
		return -EFAULT;
	mutex_lock(&text_mutex);
	ret = arch_text_write(&s, addr, buf, len);
	mutex_unlock(&text_mutex);
	return ret;
}

void djp_text_alias_unmap(struct djp_text_alias *a)
{
	alias_free(a);
}
