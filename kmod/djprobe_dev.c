// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/djprobe: the device through which the djp tool lists and traces the
 * markers of loaded modules (`djp list -k`, `djp trace -k`, scripts with
 * kernel.mark points).  Ioctls and the ring layout: <djprobe/kdev.h>.
 *
 * How it works.  The device is a client of the engine's public kernel API
 * and nothing more: djp_for_each_marker for the listing, djp_connect with
 * a recording handler, djp_disconnect.  Each open file is a tracing
 * session with its own per-CPU rings (kring.c), allocated at open and
 * mapped read-only by the tool, and its own probes: a CONNECT is one
 * djp_connect of the file's recorder with the file as its data, so it
 * covers modules loaded later as the engine's probes do, and the file
 * keeps the id.  DISCONNECT and the file's release give the ids back to
 * djp_disconnect, which returns when no handler runs anywhere; only then
 * are the rings freed.  A file can therefore never leave a probe armed,
 * whatever the tool does (a crash, a kill -9): release runs when the last
 * reference, the mapping's included, goes.
 *
 * One hit, one event, however many of the file's patterns match the
 * marker (a script's module("m").mark("*") and kernel.mark("x") both match
 * m's x): the engine calls the handler of each probe, and the handler of
 * probe i records only when no live probe of the same file before it, j <
 * i, matches the marker, since j's handler records it.  The patterns are
 * matched as the engine matches them (glob_match over the module's and the
 * marker's names).  A probe counts as live from when its djp_connect
 * returns until its disconnect starts, so a hit in those windows may be
 * recorded twice, never lost.
 *
 * The recorder runs in the context that hit the marker, preemption
 * disabled: it reads the hit's arguments and writes one event into the
 * ring of its CPU (kring.c), with the text of its %s arguments (the
 * marker's format read as the user-space recorder reads it, with
 * lib/format.h's one conversion parser), with the marker id the low 32 bits of the
 * site's address (module text lies in one 2 GiB window, so they name the
 * site; the tool maps them back through LIST) and the task: tgid and pid
 * of current, or 0 when the hit interrupted something (a hard interrupt, a
 * softirq).  An int3 trap (the bootstrap, a kprobe) enters NMI-like
 * context, counted in preempt_count as an NMI and a hard interrupt, which
 * says nothing of what it interrupted: that layer is taken off before the
 * look.
 *
 * A CONNECT of "func:NAME" or "func:NAME%return" is a function point
 * (kfunc.c): a kprobe or kretprobe of the file's, recording into the same
 * rings, listed beside the markers while it is connected.
 *
 * Root only: the device node is 0600 and open asks CAP_SYS_ADMIN, since a
 * probe sees the arguments of any kernel code that carries a marker.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/glob.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include <djprobe/djprobe.h>
#include <djprobe/kdev.h>

#include "lib/format.h"

#include "djprobe_dev.h"
#include "kfunc.h"
#include "kring.h"

#define DEV_MAX_PROBES 64
#define DEV_LIST_MAX 65536
#define DEV_NSUBBUFS 16
/* a function point's probe id: above any the engine hands out here */
#define DEV_KFUNC_ID 0x40000000

static unsigned int dev_ring_kb = 512;
module_param(dev_ring_kb, uint, 0444);
MODULE_PARM_DESC(dev_ring_kb, "/dev/djprobe: ring KiB per CPU per open file (a power of two, 16 or more)");

struct djp_dev_file;

/* One connected pattern of a file (the handler's data). */
struct djp_dev_probe {
	struct djp_dev_file *f;
	unsigned int idx;	/* in f->probes */
	int id;			/* the engine's, or DEV_KFUNC_ID + idx */
	struct djp_kfunc *fn;	/* a function point (kfunc.c), not a marker pattern */
	bool used;		/* connected (under f->lock) */
	bool live;		/* its hits are recorded: see the top */
	char pattern[DJP_KDEV_PATTERN_MAX];
	const char *modglob;	/* into pattern, NULL: any module */
	const char *nameglob;
};

struct djp_dev_file {
	struct mutex lock; /* probes' used, id, pattern */
	struct djp_dev_probe probes[DEV_MAX_PROBES];
	struct djp_kring ring;
};

/* Does a live probe of f before probe `before` match the hit's marker? */
static bool recorded_before(struct djp_dev_file *f, unsigned int before, const struct djp_hit *hit)
{
	const char *mod = NULL, *name = NULL;
	unsigned int j;

	for (j = 0; j < before; j++) {
		struct djp_dev_probe *p = &f->probes[j];

		if (!smp_load_acquire(&p->live)) /* its globs before the flag */
			continue;
		if (!name) {
			name = djp_hit_name(hit);
			mod = djp_hit_module(hit);
		}
		if ((!p->modglob || glob_match(p->modglob, mod ? mod : "")) && glob_match(p->nameglob, name ? name : ""))
			return true;
	}
	return false;
}

static void djp_dev_hit(const struct djp_hit *hit, void *data)
{
	struct djp_dev_probe *p = data;
	struct djp_dev_file *f = p->f;
	u64 args[DJP_KRING_MAX_ARGS];
	unsigned int n = djp_hit_nargs(hit), i;

	if (p->idx && recorded_before(f, p->idx, hit))
		return;

	if (n > DJP_KRING_MAX_ARGS)
		n = DJP_KRING_MAX_ARGS;
	for (i = 0; i < n; i++)
		args[i] = (u64)djp_hit_arg(hit, i);
	djp_kring_record(&f->ring, (u32)djp_hit_site(hit), args, n,
			 djp_format_str_mask(djp_hit_format(hit), n), djp_dev_hit_task());
}

static int djp_dev_open(struct inode *inode, struct file *file)
{
	struct djp_dev_file *f;
	u64 ring = (u64)dev_ring_kb * 1024;
	unsigned int i;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	for (i = 0; i < DEV_MAX_PROBES; i++) {
		f->probes[i].f = f;
		f->probes[i].idx = i;
	}
	ret = djp_kring_create(&f->ring, ring, DEV_NSUBBUFS);
	if (ret) {
		kfree(f);
		return ret;
	}
	file->private_data = f;
	return stream_open(inode, file);
}

/* Returns when no handler of p runs. */
static int probe_disconnect(struct djp_dev_probe *p)
{
	int ret = 0;

	WRITE_ONCE(p->live, false);
	if (p->fn)
		djp_kfunc_unregister(p->fn);
	else
		ret = djp_disconnect(p->id);
	p->fn = NULL;
	p->used = false;
	return ret;
}

static int djp_dev_release(struct inode *inode, struct file *file)
{
	struct djp_dev_file *f = file->private_data;
	unsigned int i;

	for (i = 0; i < DEV_MAX_PROBES; i++)
		if (f->probes[i].used)
			probe_disconnect(&f->probes[i]);
	djp_kring_destroy(&f->ring);
	kfree(f);
	return 0;
}

struct list_ctx {
	struct djp_kdev_marker *v;
	u32 cap, count;
};

static int list_one(const struct djp_kmarker *m, void *data)
{
	struct list_ctx *lc = data;
	struct djp_kdev_marker *o;

	if (lc->count++ >= lc->cap)
		return 0; /* counted only: the caller asks again */
	o = &lc->v[lc->count - 1];
	o->site = m->site;
	o->nargs = m->nargs;
	o->probes = m->probes;
	strscpy(o->module, m->module ? m->module : "", sizeof(o->module));
	strscpy(o->how, m->how ? m->how : "", sizeof(o->how));
	strscpy(o->name, m->name ? m->name : "", sizeof(o->name));
	strscpy(o->format, m->format ? m->format : "", sizeof(o->format));
	strscpy(o->args, m->args ? m->args : "", sizeof(o->args));
	return 0;
}

static long dev_list(void __user *uarg)
{
	struct djp_kdev_list req;
	struct list_ctx lc = {};
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	lc.cap = min_t(u32, req.cap, DEV_LIST_MAX);
	if (lc.cap) {
		lc.v = kvcalloc(lc.cap, sizeof(*lc.v), GFP_KERNEL);
		if (!lc.v)
			return -ENOMEM;
	}
	/* into our buffer under the engine's lock, to the tool after it */
	djp_for_each_marker(list_one, &lc);
	djp_kfunc_for_each(list_one, &lc);
	req.count = lc.count;
	if (lc.cap && copy_to_user(u64_to_user_ptr(req.buf), lc.v,
				   (size_t)min(lc.cap, lc.count) * sizeof(*lc.v)))
		ret = -EFAULT;
	else if (copy_to_user(uarg, &req, sizeof(req)))
		ret = -EFAULT;
	kvfree(lc.v);
	return ret;
}

static long dev_connect(struct djp_dev_file *f, void __user *uarg)
{
	struct djp_kdev_connect req;
	struct djp_dev_probe *p = NULL;
	unsigned int i;
	char *colon;
	int id;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!memchr(req.pattern, 0, sizeof(req.pattern)) || !req.pattern[0])
		return -EINVAL;
	if (req.flags & ~(DJP_FORCE_KPROBE | DJP_FORCE_INT3))
		return -EINVAL;
	mutex_lock(&f->lock);
	for (i = 0; i < DEV_MAX_PROBES && !p; i++)
		if (!f->probes[i].used)
			p = &f->probes[i];
	if (!p) {
		mutex_unlock(&f->lock);
		return -ENOSPC;
	}
	if (!strncmp(req.pattern, DJP_KFUNC_PREFIX, strlen(DJP_KFUNC_PREFIX))) {
		/* a function point: never live for recorded_before() */
		id = djp_kfunc_register(req.pattern, &f->ring, &p->fn);
		if (!id) {
			id = p->id = DEV_KFUNC_ID + p->idx;
			p->used = true;
		}
		mutex_unlock(&f->lock);
		goto out;
	}
	/* "MODGLOB:NAMEGLOB" or "NAMEGLOB", split for recorded_before() */
	memcpy(p->pattern, req.pattern, sizeof(p->pattern));
	colon = strchr(p->pattern, ':');
	if (colon)
		*colon = 0;
	p->modglob = colon ? p->pattern : NULL;
	p->nameglob = colon ? colon + 1 : p->pattern;
	id = djp_connect(req.pattern, djp_dev_hit, p, req.flags);
	if (id >= 0) {
		p->id = id;
		p->used = true;
		smp_store_release(&p->live, true);
	}
	mutex_unlock(&f->lock);
out:
	if (id < 0)
		return id;
	req.id = id;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT; /* connected all the same: release disconnects */
	return 0;
}

static long dev_disconnect(struct djp_dev_file *f, void __user *uarg)
{
	unsigned int i;
	int id, ret = -ENOENT;

	if (get_user(id, (int __user *)uarg))
		return -EFAULT;
	mutex_lock(&f->lock);
	for (i = 0; i < DEV_MAX_PROBES; i++)
		if (f->probes[i].used && f->probes[i].id == id) {
			ret = probe_disconnect(&f->probes[i]);
			break;
		}
	mutex_unlock(&f->lock);
	return ret;
}

static long dev_consumed(struct djp_dev_file *f, void __user *uarg)
{
	struct djp_kdev_consumed req;
	u64 __user *tails;
	unsigned int i;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.n > f->ring.nslots)
		return -EINVAL;
	tails = u64_to_user_ptr(req.tails);
	for (i = 0; i < req.n; i++) {
		u64 t;

		if (get_user(t, tails + i))
			return -EFAULT;
		djp_kring_consumed(&f->ring, i, t);
	}
	return 0;
}

static long djp_dev_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct djp_dev_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case DJP_KIOC_INFO: {
		struct djp_kdev_info info = {
			.nslots = f->ring.nslots,
			.nsubbufs = f->ring.nsubbufs,
			.ring_size = f->ring.ring_size,
			.region_size = f->ring.size,
		};

		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	}
	case DJP_KIOC_LIST:
		return dev_list(uarg);
	case DJP_KIOC_CONNECT:
		return dev_connect(f, uarg);
	case DJP_KIOC_DISCONNECT:
		return dev_disconnect(f, uarg);
	case DJP_KIOC_CONSUMED:
		return dev_consumed(f, uarg);
	}
	return -ENOTTY;
}

/* Read-only, the whole region from offset 0 or a part of it. */
static int djp_dev_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct djp_dev_file *f = file->private_data;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start > PAGE_ALIGN(f->ring.size))
		return -EINVAL;
	vma->vm_flags &= ~VM_MAYWRITE;
	return remap_vmalloc_range(vma, f->ring.region, 0);
}

static __poll_t djp_dev_poll(struct file *file, poll_table *pt)
{
	struct djp_dev_file *f = file->private_data;

	poll_wait(file, &f->ring.wait, pt);
	return djp_kring_poll_ready(&f->ring) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations djp_dev_fops = {
	.owner = THIS_MODULE,
	.open = djp_dev_open,
	.release = djp_dev_release,
	.unlocked_ioctl = djp_dev_ioctl,
	.mmap = djp_dev_mmap,
	.poll = djp_dev_poll,
	.llseek = no_llseek,
};

static struct miscdevice djp_dev_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = DJP_KDEV_NAME,
	.fops = &djp_dev_fops,
	.mode = 0600,
};

int djp_dev_init(void)
{
	if (dev_ring_kb < 16 || !is_power_of_2(dev_ring_kb) || dev_ring_kb > 65536) {
		pr_err("djprobe: dev_ring_kb=%u: not a power of two from 16 to 65536\n", dev_ring_kb);
		return -EINVAL;
	}
	return misc_register(&djp_dev_misc);
}

void djp_dev_exit(void)
{
	misc_deregister(&djp_dev_misc);
}
