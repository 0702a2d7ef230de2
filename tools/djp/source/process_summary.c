/*
 * The summary of `djp trace` of processes, on stderr at the end: a block
 * per process (the main one, then each child of fork or program followed
 * through exec, in the order they came), each with its events, losses and
 * misses, per marker and per thread.  A child released during the trace
 * (exited, drained to the end) left its block here as text.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "process.h"

/* The sites armed with the kernel's uprobe (no jump could be placed
 * there), by marker name. */
static void proc_summary_uprobes(FILE *f, struct session *s)
{
	if (!s->nup_ids)
		return;
	fprintf(f, "djp trace: %zu site%s armed with the kernel's uprobe, where no jump can be placed:", s->nup_ids,
		s->nup_ids == 1 ? "" : "s");
	for (size_t i = 0; i < s->nup_ids && i < 8; i++) {
		const struct session_marker *m = s->up_ids[i] < s->nmarkers ? &s->markers[s->up_ids[i]] : NULL;
		char name[1024];
		fprintf(f, "%s %s", i ? "," : "",
			m && m->known ? djp_escape_c(name, sizeof(name), m->name, false) : "?");
	}
	fprintf(f, "%s\n", s->nup_ids > 8 ? ", ..." : "");
}

void proc_summary_of(FILE *f, struct session *s)
{
	uint64_t lost = session_count_lost(s);
	char prog[4 * sizeof(s->program)];

	/* the program's path and the markers' names come from the target:
	 * escaped, as on the event lines */
	fprintf(f, "djp trace: process %d (%s): %" PRIu64 " events, %" PRIu64 " lost", (int)s->pid,
		djp_escape_c(prog, sizeof(prog), s->program[0] ? s->program : "?", false), s->events, lost);
	if (s->stats_ok)
		fprintf(f, ", %" PRIu64 " missed (hit inside a handler, or while its site changed trampolines)",
			s->misses);
	if (s->end_note)
		fprintf(f, "; %s", s->end_note);
	fputc('\n', f);
	if (s->lost_noslot)
		fprintf(f, "djp trace: %" PRIu64 " lost because no ring slot was free\n", s->lost_noslot);
	session_report_arm_errors(s, "djp trace");
	proc_summary_uprobes(f, s);
	/* the header says what the columns count */
	fprintf(f, "  %-32s %12s %12s  %s\n", "MARKER", "EVENTS", "LOST",
		"(EVENTS recorded and read; LOST dropped: a full ring, overwritten, or a probe in a probe)");
	for (uint32_t id = 0; id < s->nmarkers; id++) {
		const struct session_marker *m = &s->markers[id];
		char name[2048];
		if (!m->events && !m->lost)
			continue;
		if (!m->known)
			snprintf(name, sizeof(name), "marker#%u", id);
		else
			djp_escape_c(name, sizeof(name), m->name, false);
		fprintf(f, "  %-32s %12" PRIu64 " %12" PRIu64 "\n", name, m->events, m->lost);
	}
	if (s->lost_unattributed)
		fprintf(f, "  %-32s %12s %12" PRIu64 "\n", "(other)", "-", s->lost_unattributed);
	fprintf(f, "  %-32s %12s %12s  %s\n", "THREAD", "EVENTS", "LOST", "(the same, by thread id)");
	for (size_t i = 0; i < s->nthreads; i++)
		fprintf(f, "  %-32u %12" PRIu64 " %12" PRIu64 "\n", s->threads[i].tid, s->threads[i].events,
			s->threads[i].lost);
	if (!s->stats_ok && !s->tables && lost)
		fprintf(f, "djp trace: lost events per marker unknown (the agent was gone before the end)\n");
}

/* A child's block.  One whose process was gone before the tool's last
 * request to it noticed (killed between a poll and the end's counts) lost
 * that request, not its end: it ended during the trace all the same. */
void proc_kid_summary(FILE *f, struct session *k)
{
	if (!k->end_note && !k->alive && session_process_exited(k->pid))
		k->end_note = "ended during the trace";
	proc_summary_of(f, k);
}

void proc_report(struct djp_source *src, FILE *f)
{
	struct proc *p = (struct proc *)src;
	uint64_t uprobe_lost = session_uprobes_lost();
	/* the kernel's uprobes write every process's events into one ring */
	if (uprobe_lost)
		fprintf(f, "djp trace: %" PRIu64 " lost at sites armed with the kernel's uprobe: its ring buffer was full\n",
			uprobe_lost);
	if (!p->all)
		proc_summary_of(f, &p->s);
	else if (!p->released_len && !p->kids.n)
		fprintf(f, "djp trace: -a: no process was traced\n");
	if (p->released_len)
		fwrite(p->released_text, 1, p->released_len, f);
	for (size_t i = 0; i < p->kids.n; i++)
		proc_kid_summary(f, p->kids.v[i]);
}

/* s's losses by thread, as its summary counted them, to fn (or to
 * p->released_lost when fn is NULL): false when memory is short. */
static bool lost_of(struct proc *p, struct session *s, djp_src_lost_thread_fn fn, void *ctx)
{
	for (size_t i = 0; i <= s->nthreads; i++) {
		int32_t tid = i < s->nthreads ? (int32_t)s->threads[i].tid : -1;
		uint64_t n = i < s->nthreads ? s->threads[i].lost : s->lost_noslot;
		if (!n)
			continue;
		if (fn) {
			fn(ctx, s->pid, tid, n);
			continue;
		}
		if (p->nreleased_lost == p->cap_released_lost) {
			size_t cap = p->cap_released_lost ? 2 * p->cap_released_lost : 16;
			struct proc_lost *v = realloc(p->released_lost, cap * sizeof(*v));
			if (!v)
				return false;
			p->released_lost = v;
			p->cap_released_lost = cap;
		}
		p->released_lost[p->nreleased_lost++] = (struct proc_lost){ s->pid, tid, n };
	}
	return true;
}

void proc_lost_threads(struct djp_source *src, djp_src_lost_thread_fn fn, void *ctx)
{
	struct proc *p = (struct proc *)src;

	lost_of(p, &p->s, fn, ctx);
	for (size_t i = 0; i < p->nreleased_lost; i++)
		fn(ctx, p->released_lost[i].pid, p->released_lost[i].tid, p->released_lost[i].n);
	for (size_t i = 0; i < p->kids.n; i++)
		lost_of(p, p->kids.v[i], fn, ctx);
}

/* A child that has exited and whose rings are read to the end: its
 * summary as text, and everything else (socket, ring and marker log
 * memfds and mappings, tables) let go, so that a fork storm costs the tool
 * a line of summary per child, not two descriptors and 100 KB.  false
 * (kept as it is) when there is no memory for the text. */
bool proc_release_kid(struct proc *p, struct session *k)
{
	if (!p->released && !(p->released = open_memstream(&p->released_text, &p->released_len)))
		return false;
	proc_kid_summary(p->released, k);
	if (fflush(p->released) || !lost_of(p, k, NULL, NULL))
		return false;
	session_discard(k);
	return true;
}

