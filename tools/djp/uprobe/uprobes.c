/*
 * The kernel's uprobes as a recording backend: the tool's side.
 *
 * A site that cannot take a jump is an int3 probe in the engine, each hit
 * a SIGTRAP handled in the target.  Armed here instead, the int3 is the
 * kernel's: its uprobe runs a BPF program (record.bpf.c) that reads the
 * site's arguments and writes the event, in the rings' layout, into one
 * BPF ring buffer that the tool drains.  No signal, no handler in the
 * process, nothing its signal masks can block.
 *
 * One object for the whole run: one program, compiled into djp
 * (prog_blob.c), serves every site.  Arming a site takes a slot in the
 * program's map of specs, writes there how each argument is read, and
 * attaches the program with a uprobe whose cookie is the slot: the program
 * finds its site with bpf_get_attach_cookie.  The spec is written before
 * the uprobe exists, so that no hit finds it half done; a slot is reused
 * only after its uprobe has gone, and after every other free slot.
 *
 * What the spec holds is what the tool can work out once: a register
 * becomes the word of the kernel's struct pt_regs that holds it (found by
 * its assembler name, which is also the field's name in <asm/ptrace.h>),
 * a global's link-time address becomes its address in the process, an
 * unknown location and the address of a global become constants.
 *
 * The process.  Each uprobe is opened for the site's process (the perf
 * event's task), so the kernel sets its breakpoint in that process alone
 * and raises the SDT semaphore, when the site has one, there alone, while
 * armed.  Older kernels run every consumer of a uprobe at a hit, whichever
 * process it was for, so the program also checks the process against the
 * spec's.  That check, and the ids each record carries, are the initial
 * PID namespace's (bpf_get_current_pid_tgid): djp must run there.
 *
 * The ring.  8 MiB, read by polling (ring_buffer__consume) when the tool
 * drains: the program asks for no wakeup, the cheapest way to write.  A
 * hit that finds no room is counted, per CPU, and djp_uprobes_lost sums.
 *
 * Privileges.  The program needs CAP_BPF and CAP_PERFMON, the uprobes
 * CAP_SYS_ADMIN on some kernels (below); djp_uprobes_open asks the kernel for
 * both before it loads anything, so that a tool without them is told
 * once, and keeps its int3 probes, rather than refused at every site.
 *
 * Failures.  libbpf prints nothing of its own here; the first line it
 * would have printed is kept, and each failure is said in one line.  The
 * kernel accounts BPF memory to the cgroup since 5.11, and libbpf leaves
 * RLIMIT_MEMLOCK as it is on such a kernel (on an older one it raises it:
 * libbpf 1.1 does not export the call that would say not to).
 */
#include <asm/ptrace.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/markers.h"
#include "tools/djp/uprobe/record_wire.h"
#include "tools/djp/uprobe/uprobes.h"

_Static_assert(DJP_UW_MAX_ARGS == DJP_MARKER_MAX_ARGS, "a spec holds every argument a marker has");
_Static_assert(DJP_UW_STR_MAX == DJP_RING_STR_BOUND_MAX, "strings are bounded as the rings bound them");
_Static_assert(sizeof(struct pt_regs) == 8 * DJP_UW_NREGS, "the program copies every word of pt_regs");
_Static_assert(DJP_UW_EV_MAX <= DJP_EV_MAX_SIZE, "the largest event is one the rings can hold");

/* The compiled program (prog_blob.c). */
extern const char djp_uprobe_prog_start[], djp_uprobe_prog_end[];

struct armed {
	int32_t pid;
	uint32_t slot;
	struct bpf_link *link;
};

struct djp_uprobes {
	struct bpf_object *obj;
	struct bpf_program *prog;
	int specs_fd, lost_fd;
	struct ring_buffer *rb;
	struct armed *v;
	size_t n, cap;
	uint8_t slot_used[DJP_UW_MAX_SITES];
	unsigned next_slot;
	uint8_t word_of[DJP_REG_COUNT]; /* enum djp_reg to pt_regs word */
	/* the consume in progress */
	djp_uprobe_ev_fn fn;
	void *fn_ctx;
	long handed;
	bool stopped;
};

/* ---- one-line failures ------------------------------------------------ */

/* The first line libbpf would have printed since libbpf_quiet_reset. */
static char libbpf_said[256];

static int libbpf_keep_first(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[sizeof(libbpf_said)];
	const char *s = line;

	if (level != LIBBPF_WARN || libbpf_said[0])
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (!strncmp(s, "libbpf: ", 8))
		s += 8;
	snprintf(libbpf_said, sizeof(libbpf_said), "%.*s", (int)strcspn(s, "\n"), s);
	return 0;
}

static void libbpf_quiet_reset(void)
{
	libbpf_set_print(libbpf_keep_first);
	libbpf_said[0] = 0;
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errsz, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	errno = -code;
	return code;
}

/* What libbpf said, as a tail for a line: " (...)" or nothing. */
static const char *libbpf_tail(char *buf, size_t sz)
{
	if (!libbpf_said[0])
		return "";
	snprintf(buf, sz, " (%s)", libbpf_said);
	return buf;
}

/* ---- opening ------------------------------------------------------------ */

/* CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, which kernels before 5.8
 * asked for instead: for the program. */
static bool may_use_bpf(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint64_t eff;

	if (syscall(SYS_capget, &h, d))
		return false;
	eff = d[0].effective | (uint64_t)d[1].effective << 32;
	return (eff & (1ull << CAP_SYS_ADMIN)) || ((eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON)));
}

/* May this process open a uprobe?  Some kernels ask for CAP_SYS_ADMIN
 * where CAP_PERFMON did before (6.18 here refuses a uprobe to CAP_BPF and
 * CAP_PERFMON alone, EACCES), and check it first: a uprobe event with no
 * file answers EACCES, or, allowed, that the file is not there. */
static int uprobe_pmu_check(char *err, size_t errsz)
{
	struct perf_event_attr a = { .size = sizeof(a), .config1 = (uint64_t)(uintptr_t)"" };
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int type = -1, fd;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	if (type < 0)
		return fail(err, errsz, -EOPNOTSUPP, "the kernel has no uprobe events (CONFIG_UPROBE_EVENTS)");
	a.type = (uint32_t)type;
	fd = (int)syscall(SYS_perf_event_open, &a, getpid(), -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	else if (errno == EACCES || errno == EPERM)
		return fail(err, errsz, -EACCES, "the kernel's uprobes need CAP_SYS_ADMIN on this kernel");
	return 0;
}

/* A register's pt_regs word, by its name: pt_regs names its fields as the
 * assembler names the registers. */
#define PT_WORD(r) { #r, offsetof(struct pt_regs, r) / 8 }
static const struct {
	const char *name;
	uint8_t word;
} pt_words[] = {
	PT_WORD(rax), PT_WORD(rbx), PT_WORD(rcx), PT_WORD(rdx), PT_WORD(rsi), PT_WORD(rdi),
	PT_WORD(rbp), PT_WORD(rsp), PT_WORD(r8),  PT_WORD(r9),	PT_WORD(r10), PT_WORD(r11),
	PT_WORD(r12), PT_WORD(r13), PT_WORD(r14), PT_WORD(r15), PT_WORD(rip),
};

static void map_registers(struct djp_uprobes *u)
{
	for (int r = 0; r < DJP_REG_COUNT; r++) {
		const char *name = djp_reg_name(r);
		u->word_of[r] = DJP_UW_NOREG;
		for (size_t k = 0; name && k < sizeof(pt_words) / sizeof(pt_words[0]); k++)
			if (!strcmp(name, pt_words[k].name))
				u->word_of[r] = pt_words[k].word;
	}
}

static int on_record(void *ctx, void *data, size_t size);

int djp_uprobes_open(struct djp_uprobes **out, char *err, size_t errsz)
{
	struct djp_uprobes *u;
	char tail[sizeof(libbpf_said) + 4];
	int ring_fd, ret;

	*out = NULL;
	if (!may_use_bpf())
		return fail(err, errsz, -EPERM, "the kernel's uprobes need CAP_BPF and CAP_PERFMON");
	if ((ret = uprobe_pmu_check(err, errsz)) < 0)
		return ret;
	if (!(u = calloc(1, sizeof(*u))))
		return fail(err, errsz, -ENOMEM, "BPF: out of memory");
	map_registers(u);
	libbpf_quiet_reset();
	u->obj = bpf_object__open_mem(djp_uprobe_prog_start, (size_t)(djp_uprobe_prog_end - djp_uprobe_prog_start),
				      NULL);
	if (!u->obj) {
		ret = -errno;
		u->obj = NULL;
		djp_uprobes_close(u);
		return fail(err, errsz, ret, "BPF: cannot read the uprobe program: %s%s", strerror(-ret),
			    libbpf_tail(tail, sizeof(tail)));
	}
	if ((ret = bpf_object__load(u->obj)) < 0) {
		djp_uprobes_close(u);
		return fail(err, errsz, ret, "BPF: cannot load the uprobe program: %s%s", strerror(-ret),
			    libbpf_tail(tail, sizeof(tail)));
	}
	u->prog = bpf_object__find_program_by_name(u->obj, "djp_uprobe_record");
	u->specs_fd = bpf_object__find_map_fd_by_name(u->obj, "specs");
	u->lost_fd = bpf_object__find_map_fd_by_name(u->obj, "lost");
	ring_fd = bpf_object__find_map_fd_by_name(u->obj, "ring");
	if (!u->prog || u->specs_fd < 0 || u->lost_fd < 0 || ring_fd < 0) {
		djp_uprobes_close(u);
		return fail(err, errsz, -ENOENT, "BPF: the uprobe program lacks a part of its own");
	}
	if (!(u->rb = ring_buffer__new(ring_fd, on_record, u, NULL))) {
		ret = -errno;
		djp_uprobes_close(u);
		return fail(err, errsz, ret, "BPF: cannot map the ring buffer: %s%s", strerror(-ret),
			    libbpf_tail(tail, sizeof(tail)));
	}
	*out = u;
	return 0;
}

/* ---- arming ------------------------------------------------------------- */

static bool valid_size(unsigned size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

/* The word of register reg (DJP_REG_NONE: none), or -1 when it has none. */
static int word_of(const struct djp_uprobes *u, int reg, bool may_be_none)
{
	if (reg == DJP_REG_NONE)
		return may_be_none ? DJP_UW_NOREG : -1;
	if (reg < 0 || reg >= DJP_REG_COUNT || u->word_of[reg] == DJP_UW_NOREG)
		return -1;
	return u->word_of[reg];
}

/* Argument location a as the program reads it; false when it cannot. */
static bool spec_arg(const struct djp_uprobes *u, const struct djp_argloc *a, uint64_t bias,
		     struct djp_uw_arg *o)
{
	int base, index;

	*o = (struct djp_uw_arg){ .size = a->size, .is_signed = a->is_signed, .reg = DJP_UW_NOREG,
				  .index = DJP_UW_NOREG, .scale = 1 };
	switch (a->kind) {
	case DJP_LOC_NONE:
		o->kind = DJP_UW_CONST;
		return true;
	case DJP_LOC_IMM:
		o->kind = DJP_UW_CONST;
		o->disp = a->disp;
		return true;
	case DJP_LOC_ADDR:
		o->kind = DJP_UW_CONST;
		o->disp = (int64_t)(bias + (uint64_t)a->disp);
		return true;
	case DJP_LOC_REG:
		if ((base = word_of(u, a->reg, false)) < 0 || a->reg_shift > 56 || !valid_size(a->size))
			return false;
		o->kind = DJP_UW_REG;
		o->reg = (uint8_t)base;
		o->shift = a->reg_shift;
		return true;
	case DJP_LOC_ABS:
		if (!valid_size(a->size))
			return false;
		o->kind = DJP_UW_MEM;
		o->disp = (int64_t)(bias + (uint64_t)a->disp);
		return true;
	case DJP_LOC_MEM:
		if ((base = word_of(u, a->reg, true)) < 0 || (index = word_of(u, a->index, true)) < 0 ||
		    !valid_size(a->size) || !valid_size(a->scale))
			return false;
		o->kind = DJP_UW_MEM;
		o->disp = a->disp;
		o->reg = (uint8_t)base;
		o->index = (uint8_t)index;
		o->scale = a->scale;
		return true;
	default: /* a return probe's saved value, a load program's start */
		return false;
	}
}

/* The bound of a string as the rings take it (djp_ring_record_loads). */
static uint32_t string_bound(unsigned bound)
{
	if (!bound)
		bound = DJP_RING_STR_BOUND;
	if (bound > DJP_RING_STR_BOUND_MAX)
		bound = DJP_RING_STR_BOUND_MAX;
	if (bound < 8)
		bound = 8;
	return (bound + 7) & ~7u;
}

static int make_spec(const struct djp_uprobes *u, const struct djp_uprobe_site *s, struct djp_uw_spec *sp,
		     char *err, size_t errsz)
{
	if (s->pid <= 0 || !s->path)
		return fail(err, errsz, -EINVAL, "uprobe: a site needs a process and a file");
	if (s->nargs > DJP_UW_MAX_ARGS || (s->nargs && !s->arg))
		return fail(err, errsz, -EINVAL, "%s+0x%llx: %u arguments, at most %d", s->path,
			    (unsigned long long)s->file_off, s->nargs, DJP_UW_MAX_ARGS);
	*sp = (struct djp_uw_spec){ .marker_id = s->marker_id, .nargs = s->nargs, .tgid = (uint32_t)s->pid,
				    .ip_word = offsetof(struct pt_regs, rip) / 8, .addr = s->addr,
				    .str_bound = string_bound(s->str_bound) };
	sp->str_mask = s->str_mask & ((1u << s->nargs) - 1);
	for (unsigned i = 0; i < s->nargs; i++)
		if (!spec_arg(u, &s->arg[i], s->bias, &sp->arg[i]))
			return fail(err, errsz, -EINVAL, "%s+0x%llx: argument %u cannot be read by a uprobe",
				    s->path, (unsigned long long)s->file_off, i + 1);
	return 0;
}

/* The next free slot after the last one taken: a slot freed comes back
 * last, long after a hit that began before its uprobe went has ended. */
static int take_slot(struct djp_uprobes *u)
{
	for (int k = 0; k < DJP_UW_MAX_SITES; k++) {
		int i = (int)((u->next_slot + (unsigned)k) % DJP_UW_MAX_SITES);
		if (!u->slot_used[i]) {
			u->slot_used[i] = 1;
			u->next_slot = (unsigned)i + 1;
			return i;
		}
	}
	return -1;
}

int djp_uprobes_attach(struct djp_uprobes *u, const struct djp_uprobe_site *s, char *err, size_t errsz)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = s->ref_ctr_off);
	struct djp_uw_spec spec;
	struct bpf_link *link;
	char tail[sizeof(libbpf_said) + 4];
	int slot, ret;

	if ((ret = make_spec(u, s, &spec, err, errsz)) < 0)
		return ret;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 16;
		struct armed *v = realloc(u->v, cap * sizeof(*v));
		if (!v)
			return fail(err, errsz, -ENOMEM, "uprobe: out of memory");
		u->v = v;
		u->cap = cap;
	}
	if ((slot = take_slot(u)) < 0)
		return fail(err, errsz, -ENOSPC, "%s+0x%llx: %d sites are armed with uprobes already", s->path,
			    (unsigned long long)s->file_off, DJP_UW_MAX_SITES);
	libbpf_quiet_reset();
	if (bpf_map_update_elem(u->specs_fd, &(uint32_t){ (uint32_t)slot }, &spec, BPF_ANY)) {
		ret = -errno;
		u->slot_used[slot] = 0;
		return fail(err, errsz, ret, "BPF: cannot write a site's spec: %s", strerror(-ret));
	}
	opts.bpf_cookie = (uint64_t)slot;
	if (!(link = bpf_program__attach_uprobe_opts(u->prog, s->pid, s->path, s->file_off, &opts))) {
		ret = -errno;
		u->slot_used[slot] = 0;
		return fail(err, errsz, ret, "%s+0x%llx: the kernel refused a uprobe for process %d: %s%s", s->path,
			    (unsigned long long)s->file_off, (int)s->pid, strerror(-ret), libbpf_tail(tail, sizeof(tail)));
	}
	u->v[u->n++] = (struct armed){ s->pid, (uint32_t)slot, link };
	return slot;
}

/* Disarm the sites armed for pid (slot < 0) or the one of slot. */
static void detach(struct djp_uprobes *u, int32_t pid, int slot)
{
	size_t k = 0;

	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		if (slot >= 0 ? u->v[i].slot != (uint32_t)slot : u->v[i].pid != pid) {
			u->v[k++] = u->v[i];
			continue;
		}
		bpf_link__destroy(u->v[i].link);
		u->slot_used[u->v[i].slot] = 0;
	}
	u->n = k;
}

void djp_uprobes_detach_pid(struct djp_uprobes *u, int32_t pid)
{
	detach(u, pid, -1);
}

void djp_uprobes_detach(struct djp_uprobes *u, int slot)
{
	if (slot >= 0)
		detach(u, 0, slot);
}

unsigned djp_uprobes_armed(const struct djp_uprobes *u)
{
	return u ? (unsigned)u->n : 0;
}

/* ---- reading ------------------------------------------------------------ */

/* A record whose event is not whole is skipped: the program writes none. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct djp_uprobes *u = ctx;
	const struct djp_uw_rec *rec = data;
	const struct djp_event *ev = (const struct djp_event *)(rec + 1);

	if (size < sizeof(*rec) + sizeof(*ev) || ev->size != size - sizeof(*rec))
		return 0;
	u->handed++;
	if (u->fn(u->fn_ctx, (int)rec->slot, (int32_t)rec->tgid, (int32_t)rec->tid, ev)) {
		u->stopped = true;
		return -ECANCELED; /* libbpf stops; the record is consumed */
	}
	return 0;
}

long djp_uprobes_consume(struct djp_uprobes *u, djp_uprobe_ev_fn fn, void *ctx)
{
	int ret;

	u->fn = fn;
	u->fn_ctx = ctx;
	u->handed = 0;
	u->stopped = false;
	ret = ring_buffer__consume(u->rb);
	if (ret < 0 && !u->stopped)
		return ret;
	return u->handed;
}

uint64_t djp_uprobes_lost(const struct djp_uprobes *u)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *per_cpu, sum = 0;

	if (!u || ncpu <= 0 || !(per_cpu = calloc((size_t)ncpu, sizeof(*per_cpu))))
		return 0;
	if (!bpf_map_lookup_elem(u->lost_fd, &(uint32_t){ 0 }, per_cpu))
		for (int i = 0; i < ncpu; i++)
			sum += per_cpu[i];
	free(per_cpu);
	return sum;
}

void djp_uprobes_close(struct djp_uprobes *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++)
		bpf_link__destroy(u->v[i].link);
	ring_buffer__free(u->rb);
	bpf_object__close(u->obj);
	free(u->v);
	free(u);
}
