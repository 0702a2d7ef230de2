/*
 * The BPF program the kernel runs at a hit of a site djp armed with a
 * uprobe (tools/djp/uprobe/uprobes.c has the tool's side).
 *
 * One program serves every site.  Each uprobe carries a cookie, the index
 * of its site's spec in the `specs` map (record_wire.h): which marker,
 * where each argument is, which arguments are strings.  At a hit the
 * program copies the registers of the thread as they were at the probed
 * instruction (the uprobe's struct pt_regs: %rip is the site, %rsp the
 * program's own there), reads each argument as the spec says, and builds
 * the event in the rings' own layout (lib/ring.h) in a per-CPU scratch
 * buffer, since an event with strings is larger than the BPF stack, then
 * hands it to the ring buffer in one copy.  The tool polls the ring every
 * few milliseconds, so no hit pays for a wakeup (BPF_RB_NO_WAKEUP).  An
 * event the ring has no room for is counted, per CPU, and dropped.
 *
 * An argument means what it means to the engine in the process
 * (kernel/hit_args.h): a register's value shifted by its byte offset, the
 * low `size` bytes of a memory operand, sign- or zero-extended, or a
 * constant.  A memory operand that cannot be read reads as 0, as
 * djprobe.ko's does: the engine in the process reads it with a plain load.
 *
 * A string is copied as the recorder copies it (lib/ring.c: copy_string):
 * at most bound - 1 bytes and a NUL, "(null)" for NULL, and, when the
 * copy faults, the readable part of the string's first page, or "<bad>"
 * when there is none.  bpf_probe_read_user_str fails whole on a fault
 * (and reads one byte more than it keeps), so after a fault the first
 * page is read again alone: what the recorder's process_vm_readv gives
 * back before the fault.
 *
 * The verifier.  Each string is copied by a function of its own
 * (put_string), verified once for any offset it is given: unrolled in the
 * argument loop, the branches of twelve copies would multiply.  Every
 * offset into the scratch buffer is bounded where it is used.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "lib/ring_write.h"
#include "tools/djp/uprobe/record_wire.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DJP_UW_MAX_SITES);
	__type(key, __u32);
	__type(value, struct djp_uw_spec);
} specs SEC(".maps");

/* The record being built, and the registers it is built from. */
struct scratch {
	__u64 regs[DJP_UW_NREGS];
	uint64_t rec[DJP_UW_REC_MAX / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DJP_UW_RING_BYTES);
} ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* "(null)" and "<bad>" with their NUL, as one little-endian store each. */
#define NULL_TEXT_WORD 0x0000296c6c756e28ull
#define BAD_TEXT_WORD 0x0000003e6461623cull
_Static_assert(sizeof(DJP_STR_NULL_TEXT) == 7 && sizeof(DJP_STR_BAD_TEXT) == 6, "the texts fit in one word");

static __always_inline __u64 reg_word(const __u64 *regs, __u32 w)
{
	return w < DJP_UW_NREGS ? regs[w] : 0;
}

static __always_inline __u64 fetch(const __u64 *regs, const struct djp_uw_arg *a)
{
	unsigned sh = (64 - 8 * (a->size & 15)) & 63;
	__u64 v = 0, addr;
	__u32 n;

	if (a->kind == DJP_UW_CONST)
		return (__u64)a->disp;
	if (a->kind == DJP_UW_REG) {
		v = reg_word(regs, a->reg) >> (a->shift & 63);
	} else {
		addr = (__u64)a->disp + reg_word(regs, a->index) * a->scale + reg_word(regs, a->reg);
		n = a->size;
		if (n > 8)
			n = 8;
		/* a fault leaves v zeroed */
		bpf_probe_read_user(&v, n, (const void *)addr);
	}
	if (a->is_signed)
		return (__u64)((__s64)(v << sh) >> sh);
	return (v << sh) >> sh;
}

/* The text of a string at ptr into text (bound bytes at most, the NUL
 * included): its length and DJP_STR_* bits, as djp_ring_str_put takes
 * them. */
static __always_inline __u64 copy_string(char *text, __u64 ptr, __u64 bound)
{
	__u64 first, n;
	long got;

	if (!ptr) {
		*(__u64 *)text = NULL_TEXT_WORD;
		return (sizeof(DJP_STR_NULL_TEXT) - 1) | DJP_STR_NULL;
	}
	/* reads bound bytes at most, and keeps bound - 1 and a NUL */
	got = bpf_probe_read_user_str(text, bound, (const void *)ptr);
	if (got > 0)
		return (got - 1) | (got == bound ? DJP_STR_TRUNCATED : 0);
	/* A fault before any NUL: at the end of the string's first page
	 * when that page is readable, which the recorder would have read
	 * up to the bound, or up to the fault. */
	first = 4096 - (ptr & 4095);
	n = first < bound - 1 ? first : bound - 1;
	if (first < bound && n < DJP_UW_STR_MAX && !bpf_probe_read_user(text, n, (const void *)ptr)) {
		text[n] = 0;
		return n | (first < bound - 1 ? DJP_STR_FAULT : DJP_STR_TRUNCATED);
	}
	*(__u64 *)text = BAD_TEXT_WORD;
	return (sizeof(DJP_STR_BAD_TEXT) - 1) | DJP_STR_FAULT;
}

/* Argument i of the event in s, a string, laid out at byte off of the
 * event: where the next one goes, 0 when it does not fit. */
__noinline int put_string(struct scratch *s, __u64 off, __u64 i, __u64 bound)
{
	uint64_t *ev, ptr, copied;

	if (!s || i >= DJP_UW_MAX_ARGS || (off & 7) || off > DJP_UW_EV_MAX - 8 - DJP_UW_STR_MAX ||
	    bound > DJP_UW_STR_MAX || bound < 8)
		return 0;
	ev = &s->rec[sizeof(struct djp_uw_rec) / 8];
	ptr = ev[2 + i];
	copied = copy_string((char *)djp_ring_str_text(ev, off, ptr), ptr, bound);
	return (int)djp_ring_str_put(ev, i, off, copied);
}

SEC("uprobe")
int djp_uprobe_record(void *ctx)
{
	__u64 ts = bpf_ktime_get_ns(), pid_tgid = bpf_get_current_pid_tgid(), *cnt;
	uint64_t *ev;
	__u32 key = (__u32)bpf_get_attach_cookie(ctx), zero = 0, nargs, mask, size, flags = 0;
	const struct djp_uw_spec *sp = bpf_map_lookup_elem(&specs, &key);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct djp_uw_rec *rec;

	/* A process the site is not armed for: a kernel that runs every
	 * consumer of a uprobe at each hit, whichever process it was for. */
	if (!sp || !s || sp->tgid != (__u32)(pid_tgid >> 32))
		return 0;
#pragma clang loop unroll(full)
	for (int w = 0; w < DJP_UW_NREGS; w++)
		s->regs[w] = ((const __u64 *)ctx)[w];

	/* (the uprobe's %rip is the probed instruction's address) */
	if (reg_word(s->regs, sp->ip_word) != sp->addr)
		return 0;
	rec = (struct djp_uw_rec *)s->rec;
	rec->tgid = (__u32)(pid_tgid >> 32);
	rec->tid = (__u32)pid_tgid;
	rec->slot = key;
	rec->pad = 0;
	ev = &s->rec[sizeof(*rec) / 8];
	nargs = sp->nargs < DJP_UW_MAX_ARGS ? sp->nargs : DJP_UW_MAX_ARGS;
	for (__u32 i = 0; i < DJP_UW_MAX_ARGS && i < nargs; i++)
		ev[2 + i] = fetch(s->regs, &sp->arg[i]);
	size = DJP_EV_HDR_SIZE + 8 * nargs;
	mask = sp->str_mask & ((1u << nargs) - 1);
	if (mask) {
		flags = DJP_EVF_STRINGS;
		for (__u32 i = 0; i < DJP_UW_MAX_ARGS && size; i++)
			if (mask & (1u << i))
				size = put_string(s, size, i, sp->str_bound);
		if (!size)
			return 0; /* cannot be: the scratch holds every string */
	}
	ev[0] = ts;
	ev[1] = djp_ev_word(sp->marker_id, size, nargs, flags);
	if (size > DJP_UW_EV_MAX)
		return 0;
	if (bpf_ringbuf_output(&ring, s->rec, sizeof(*rec) + size, BPF_RB_NO_WAKEUP) &&
	    (cnt = bpf_map_lookup_elem(&lost, &zero)))
		*cnt += 1;
	return 0;
}
