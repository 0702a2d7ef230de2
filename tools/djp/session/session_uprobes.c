/*
 * Sites armed with the kernel's uprobe, for the sessions of one run of the
 * tool.
 *
 * Where no jump can be placed (a branch lands in every run the site could
 * take, the function ends, no trampoline in reach), the engine in the
 * target would make the site an int3 probe: a SIGTRAP per hit, delivered
 * to the thread, handled in the process.  When this tool may use the
 * kernel's uprobes and BPF (root: CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON), it asks
 * the agent instead to leave such sites as they are (CONNECT with
 * DJP_CONNECT_KERNEL_TRAP), and arms each site CONNECTED lists with a
 * uprobe whose BPF program (tools/djp/uprobe/) reads the site's arguments
 * where its SDT note or marker record says and writes the event, in the
 * rings' own format, into one BPF ring buffer for the whole run.  The hit
 * then costs a trap handled in the kernel, with no signal, no user-space
 * handler, nothing the program's own signal masks or handlers can change:
 * a thread that blocks SIGTRAP is traced as any other.
 *
 * The arguments are read at the probed instruction itself, with the
 * program's registers as they are there, so %rsp-relative SDT arguments
 * read the slots the note names.  An SDT semaphore is raised by the kernel
 * while the uprobe is there (its reference counter), as the engine raises
 * it for its own probes.
 *
 * Each drain of a session takes everything the BPF ring holds: the events
 * of its own sites go into its batch, with their CLOCK_MONOTONIC time
 * turned into the rings' raw clock, so that sorting puts them among the
 * agent's; those of other sessions wait in their stash for their own
 * drain.  An event names its site's slot, and a slot its session: a pid
 * would not do, since a process that exec'd is two sessions' in turn.  A
 * session's uprobes go before its BYE (session_uprobes_detach), its own
 * alone, so that nothing fires after the agent has said all it had; and
 * before the agent is injected into a program the process exec'd (-x,
 * session_kids_exec): the kernel puts them in the new text too when it
 * maps the same file, where the engine would find a breakpoint not its
 * own.
 *
 * What stays an int3 probe: sites whose hits need what only the engine in
 * the process does (aggregation in the target, the user stack, registers
 * for a script, typed loads: the connect does not ask), sites of objects
 * loaded after the connect, and every site when the tool may not use the
 * kernel's uprobes (said once, with why).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/format.h"
#include "lib/markers.h"
#include "tools/djp/grow.h"
#include "tools/djp/session/session.h"
#include "tools/djp/uprobe/record_wire.h"
#include "tools/djp/uprobe/uprobes.h"

static struct {
	struct djp_uprobes *u;
	bool tried, off;
	char why[256];
	/* the session whose site each slot was armed for last: its events
	 * go there, until the session is freed (some may be read after its
	 * uprobe is gone) */
	struct session *owner[DJP_UW_MAX_SITES];
	/* the object whose markers were read last: sites come object by object */
	char *path;
	struct djp_marker_list *markers;
} up;

void session_uprobes_disable(void)
{
	up.off = true;
}

bool session_uprobes_usable(const char **why)
{
	*why = NULL;
	if (up.off) {
		*why = "not asked for";
		return false;
	}
	if (!up.tried) {
		up.tried = true;
		if (djp_uprobes_open(&up.u, up.why, sizeof(up.why)) < 0)
			up.u = NULL;
	}
	if (!up.u)
		*why = up.why;
	return up.u != NULL;
}

/* The mapping of pid that holds addr: its start, file offset and a path
 * the kernel can open for it (map_files names the very file mapped, in
 * whatever mount namespace the process is). */
static int mapping_of(pid_t pid, uint64_t addr, uint64_t *file_off, char *mapped, size_t sz)
{
	char path[64], line[4608];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &off) != 3 || addr < start || addr >= end)
			continue;
		*file_off = addr - start + off;
		snprintf(mapped, sz, "/proc/%d/map_files/%llx-%llx", (int)pid, start, end);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static const struct djp_marker_list *markers_of(const char *object, char *err, size_t errsz)
{
	if (up.path && !strcmp(up.path, object))
		return up.markers;
	free(up.path);
	djp_marker_list_free(up.markers);
	up.markers = NULL;
	if (!(up.path = strdup(object)))
		return NULL;
	if (djp_markers_read_file(object, DJP_READ_NO_DWARF, &up.markers, err, errsz) < 0)
		up.markers = NULL;
	return up.markers;
}

/* What a user can do when a site left to the kernel cannot be armed so. */
#define NO_UPROBE_HINT " (--no-uprobe arms an int3 probe there instead)"

/* Arm site (marker id, at run-time address addr) of s; 0 or -errno with
 * the reason in s->errmsg. */
static int arm_one(struct session *s, uint32_t id, uint64_t addr, uint32_t str_args, unsigned str_bound)
{
	struct session_marker *sm = session_marker_of(s, id);
	const struct djp_marker_list *l;
	const struct djp_marker_info *m = NULL;
	char mapped[128], err[512];
	uint64_t file_off = 0, vaddr = 0, sem_off = 0;
	struct djp_uprobe_site site;
	uint32_t mask;
	int slot;

	if (!sm) {
		snprintf(s->errmsg, sizeof(s->errmsg), "marker #%" PRIu32 " left to a uprobe is not known" NO_UPROBE_HINT, id);
		return -EPROTO;
	}
	if (mapping_of(s->pid, addr, &file_off, mapped, sizeof(mapped)) ||
	    !(l = markers_of(sm->object, err, sizeof(err))) || djp_marker_list_vaddr_of(l, file_off, &vaddr)) {
		snprintf(s->errmsg, sizeof(s->errmsg),
			 "%s: the site of %s at 0x%" PRIx64 " cannot be found in its file" NO_UPROBE_HINT, sm->object,
			 sm->name, addr);
		return -ENOENT;
	}
	for (size_t i = 0; i < l->count && !m; i++)
		if (l->v[i].site == vaddr)
			m = &l->v[i];
	if (!m || (m->semaphore && djp_marker_list_file_offset(l, m->semaphore, &sem_off))) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%s: no marker of its file at 0x%" PRIx64 " (%s)" NO_UPROBE_HINT,
			 sm->object, vaddr, sm->name);
		return -ENOENT;
	}
	/* the strings the recorder would copy: the format's %s (a marker's
	 * own, not an SDT note's, which has none) and the connect's */
	mask = (m->from_sdt ? 0 : djp_format_str_mask(m->format, m->nargs)) | str_args;
	if (m->nargs < 32)
		mask &= (1u << m->nargs) - 1;
	site = (struct djp_uprobe_site){
		.pid = s->pid,
		.path = mapped,
		.file_off = file_off,
		.addr = addr,
		.ref_ctr_off = sem_off,
		.marker_id = id,
		.nargs = m->nargs,
		.arg = m->arg,
		.bias = addr - vaddr,
		.str_mask = mask,
		.str_bound = str_bound > s->str_bound ? str_bound : s->str_bound,
	};
	if ((slot = djp_uprobes_attach(up.u, &site, err, sizeof(err))) < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%s" NO_UPROBE_HINT, err);
		return -EIO;
	}
	if (!djp_grow((void **)&s->up_ids, &s->cap_up_ids, s->nup_ids + 1, 16, sizeof(*s->up_ids)) ||
	    !djp_grow((void **)&s->up_slots, &s->cap_up_slots, s->nup_ids + 1, 16, sizeof(*s->up_slots))) {
		djp_uprobes_detach(up.u, slot);
		return -ENOMEM;
	}
	up.owner[slot] = s;
	s->up_ids[s->nup_ids] = id;
	s->up_slots[s->nup_ids++] = slot;
	return 0;
}

int session_uprobes_arm(struct session *s, const uint32_t *ids, const uint64_t *addrs, unsigned n, uint32_t str_args,
			unsigned str_bound)
{
	int err = 0;
	for (unsigned i = 0; i < n && !err; i++) {
		bool dup = false;
		/* two patterns of the session that match one site: one uprobe,
		 * one event a hit, as the recorder's DJP__ONCE gives */
		for (size_t k = 0; k < s->nup_ids && !dup; k++)
			dup = s->up_ids[k] == ids[i];
		if (!dup)
			err = arm_one(s, ids[i], addrs[i], str_args, str_bound);
	}
	return err;
}

/* One event of s's sites into its batch, at its time in the rings' clock. */
static void add(struct session *s, const struct djp_event *ev, uint32_t tid)
{
	session_batch_add(s, ev, djp_clock_from_ns(djp_consumer_clock(s->cons), ev->timestamp), tid);
}

static int route(void *ctx, int slot, int32_t pid, int32_t tid, const struct djp_event *ev)
{
	struct session *s = ctx, *to = slot >= 0 && slot < DJP_UW_MAX_SITES ? up.owner[slot] : NULL;
	size_t need;

	(void)pid;
	if (!to || ev->size < sizeof(*ev))
		return 0; /* a site of a session freed since */
	if (to == s) {
		add(s, ev, (uint32_t)tid);
		return 0;
	}
	/* another session's: kept, with its thread, for its drain */
	need = 8 + ev->size;
	if (!djp_grow((void **)&to->up_stash, &to->cap_up_stash, to->len_up_stash + need, 4096, 1))
		return 0;
	memcpy(to->up_stash + to->len_up_stash, &tid, 4);
	memcpy(to->up_stash + to->len_up_stash + 8, ev, ev->size);
	to->len_up_stash += need;
	return 0;
}

void session_uprobes_drain(struct session *s)
{
	size_t off = 0;

	if (!up.u || (!s->nup_ids && !s->len_up_stash))
		return;
	while (off + 8 <= s->len_up_stash) {
		const struct djp_event *ev = (const struct djp_event *)(s->up_stash + off + 8);
		uint32_t tid;
		memcpy(&tid, s->up_stash + off, 4);
		add(s, ev, tid);
		off += 8 + ev->size;
	}
	s->len_up_stash = 0;
	djp_uprobes_consume(up.u, route, s);
}

/* Its sites' uprobes go, its own alone (a slot is -1 once disarmed). */
void session_uprobes_detach(struct session *s)
{
	for (size_t i = 0; up.u && i < s->nup_ids; i++) {
		djp_uprobes_detach(up.u, s->up_slots[i]);
		s->up_slots[i] = -1;
	}
}

void session_uprobes_forget(struct session *s)
{
	session_uprobes_detach(s);
	for (size_t i = 0; s->nup_ids && i < DJP_UW_MAX_SITES; i++)
		if (up.owner[i] == s)
			up.owner[i] = NULL;
	free(s->up_ids);
	free(s->up_slots);
	free(s->up_stash);
	s->up_ids = NULL;
	s->up_slots = NULL;
	s->up_stash = NULL;
	s->nup_ids = s->cap_up_ids = s->cap_up_slots = s->len_up_stash = s->cap_up_stash = 0;
}

uint64_t session_uprobes_lost(void)
{
	return up.u ? djp_uprobes_lost(up.u) : 0;
}
