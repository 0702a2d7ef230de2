/*
 * `djp list`: the markers of ELF files and of running processes.
 *
 * A FILE is read with the marker reader (lib/markers_elf.c) and listed at
 * link-time addresses.  A PID is listed object by object: every distinct
 * file-backed executable mapping in /proc/PID/maps is read from its file,
 * and the load bias computed from that mapping (start address, file offset)
 * and the file's PT_LOAD segments turns each link-time address into the
 * address the process runs it at.
 *
 * The listing is all or nothing.  Everything goes into a memory buffer first
 * and is written only once every argument has been read, so a bad argument
 * gives exactly one line on stderr, exit status 1, and nothing on stdout that
 * a script could mistake for a complete answer.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tools/djp/session/session.h"
#include "tools/djp/session/site_arming.h"
#include "lib/escape.h"
#include "json.h"
#include "lib/mapped_file.h"
#include "lib/markers.h"

#define ERRSZ 512

void djp_usage_list(FILE *out)
{
	fprintf(out,
		"usage: djp list [--json] [--no-header] FILE|PID...\n"
		"       djp list -k [--json] [PATTERN...]\n"
		"\n"
		"List the markers of ELF files (link-time addresses) and of running\n"
		"processes (every mapped executable object, at run-time addresses).\n"
		"An argument of digits only is a PID; write ./123 for a file named 123.\n"
		"Objects without .markers are listed from their SDT notes (.note.stapsdt).\n"
		"\n"
		"A header line naming the columns (--no-header: none), then one line per\n"
		"marker, columns separated by spaces, '-' when unknown:\n"
		"  NAME ADDRESS LEN SEMAPHORE FUNCTION FILE:LINE OBJECT \"FORMAT\" ARGS...\n"
		"  NAME      marker name; PROVIDER:NAME for an SDT probe\n"
		"  ADDRESS   address of the site (hex), LEN its length in bytes (6, or 1 for SDT)\n"
		"  SEMAPHORE address of the SDT probe's semaphore (the program tests it\n"
		"            before it prepares the probe's arguments; arming raises it)\n"
		"  FUNCTION  enclosing function; FILE:LINE source position (needs DWARF)\n"
		"  OBJECT    the ELF file the marker is in\n"
		"  FORMAT    the printf-like format, C-quoted; ARGS the argument locations,\n"
		"            SDT syntax: [-]SIZE@LOCATION, '-' meaning signed\n"
		"A file without markers prints \"FILE: no markers\" instead.  A relocatable\n"
		"object (a .o, a kernel module .ko) is listed with each ADDRESS the site's\n"
		"offset in its section, as objdump -d prints it.\n"
		"\n"
		"-k: the markers of loaded kernel modules, through /dev/djprobe (djprobe.ko,\n"
		"root only), those the PATTERNs (NAMEGLOB or MODGLOB:NAMEGLOB) match:\n"
		"  MODULE:NAME ADDRESS ARMING PROBES \"FORMAT\" ARGS\n"
		"  ARMING    off, jump, int3 (being armed) or kprobe; PROBES connected now\n"
		"\n"
		"--json: one JSON object per marker per line with the fields name, format,\n"
		"args (array of {size, signed, kind, and reg | base, index, scale, disp |\n"
		"value | symbol, address}), address, length, function, file, line, object\n"
		"and, for SDT probes, provider and semaphore (null when none); arming:\n"
		"\"jump\" when the engine arms the site with a jump (a marker's NOP; an SDT\n"
		"probe's nop with the instructions after it, where the rules allow); else\n"
		"\"uprobe\" with uprobe_why saying why no jump, when the tool may arm the\n"
		"kernel's uprobe (root), or \"int3\" with\n"
		"int3_why, and uprobe_not saying why no uprobe; a jump whose run of\n"
		"instructions starts before the nop (the function ends, or a branch lands,\n"
		"too soon after it) adds run_before, how many bytes, and jump_note (\"run\n"
		"starts N bytes before the site\").\n"
		"\n"
		"Exit status 0, or 1 with one line \"djp: WHAT: problem\" on stderr and\n"
		"nothing on stdout, or 2 for a usage error.\n");
}

struct row {
	const struct djp_marker_info *m;
	const char *object;
	uint64_t bias;
	size_t seq; /* objects keep the order they were read in */
};

struct listing {
	bool json, header;
	struct row *rows;
	size_t nrows, cap;
	struct djp_marker_list **lists; /* kept alive until printed */
	size_t nlists;
	char **notes; /* "FILE: no markers" lines, in argument order */
	size_t nnotes;
	char **owned; /* object names read from /proc/PID/maps */
	size_t nowned;
	char err[ERRSZ];
};

static int add_list(struct listing *ls, struct djp_marker_list *l, const char *object, uint64_t bias)
{
	struct djp_marker_list **v = realloc(ls->lists, (ls->nlists + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	ls->lists = v;
	ls->lists[ls->nlists++] = l;
	for (size_t i = 0; i < l->count; i++) {
		if (ls->nrows == ls->cap) {
			size_t cap = ls->cap ? 2 * ls->cap : 64;
			struct row *r = realloc(ls->rows, cap * sizeof(*r));
			if (!r)
				return -ENOMEM;
			ls->rows = r;
			ls->cap = cap;
		}
		ls->rows[ls->nrows++] = (struct row){ &l->v[i], object, bias, ls->nlists };
	}
	return 0;
}

/* Append a copy of s to a string vector; returns the copy or NULL. */
static char *keep_string(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return NULL;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return NULL;
	return nv[(*n)++];
}

static int add_note(struct listing *ls, const char *what)
{
	char line[4200];
	snprintf(line, sizeof(line), "%s: no markers", what);
	return keep_string(&ls->notes, &ls->nnotes, line) ? 0 : -ENOMEM;
}

static int list_file(struct listing *ls, const char *path)
{
	struct djp_marker_list *l;
	int ret = djp_markers_read_file(path, 0, &l, ls->err, sizeof(ls->err));
	if (ret)
		return ret;
	if (l->count == 0) {
		djp_marker_list_free(l);
		return add_note(ls, path);
	}
	return add_list(ls, l, path, 0);
}

/* Every distinct file-backed executable mapping of the process. */
static int list_pid(struct listing *ls, const char *pid)
{
	char path[64], line[4096 + 256];
	size_t before = ls->nrows, nseen = 0;
	char **seen = NULL;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(ls->err, sizeof(ls->err), "%s: %s", pid,
			 e == ENOENT ? "no such process" : strerror(e));
		return -(e == ENOENT ? ESRCH : e);
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		static struct djp_mapping m;
		char file[4096 + 16], open_as[4096];
		unsigned long long start, offset;

		if (!djp_mapping_parse(line, &m) || !m.exec || m.path[0] != '/')
			continue;
		start = m.lo;
		offset = m.offset;
		/* A file replaced or removed since it was mapped is read through
		 * the mapping (lib/mapped_file.c) and named as the kernel does. */
		snprintf(file, sizeof(file), "%s%s", m.path, m.deleted ? " (deleted)" : "");
		if (djp_mapping_file((pid_t)atoi(pid), &m, open_as, sizeof(open_as)))
			continue; /* the mapped file is out of reach */
		bool dup = false;
		for (size_t i = 0; i < nseen && !dup; i++)
			dup = !strcmp(seen[i], file);
		if (dup)
			continue;
		if (!keep_string(&seen, &nseen, file)) {
			snprintf(ls->err, sizeof(ls->err), "%s: out of memory", pid);
			ret = -ENOMEM;
			break;
		}

		struct djp_marker_list *l;
		uint64_t bias;
		ret = djp_markers_read_file(open_as, 0, &l, ls->err, sizeof(ls->err));
		if (ret) {
			/* the error names the file as the process maps it */
			if (strcmp(open_as, file)) {
				char why[ERRSZ];
				const char *colon = strstr(ls->err, ": ");
				snprintf(why, sizeof(why), "%s", colon ? colon + 2 : ls->err);
				snprintf(ls->err, sizeof(ls->err), "%.300s: %.200s", file, why);
			}
			break;
		}
		if (djp_marker_list_bias(l, start, offset, &bias)) {
			snprintf(ls->err, sizeof(ls->err), "%.300s: mapping at 0x%llx (offset 0x%llx) of process %s is in no "
							   "loadable segment", file, start, offset, pid);
			djp_marker_list_free(l);
			ret = -EINVAL;
			break;
		}
		char *object = l->count ? keep_string(&ls->owned, &ls->nowned, file) : NULL;
		if (l->count && (!object || add_list(ls, l, object, bias))) {
			snprintf(ls->err, sizeof(ls->err), "%s: out of memory", pid);
			ret = -ENOMEM;
		} else if (!l->count) {
			djp_marker_list_free(l);
		}
	}
	fclose(f);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	if (!ret && ls->nrows == before) {
		char what[64];
		snprintf(what, sizeof(what), "process %s", pid);
		ret = add_note(ls, what);
	}
	return ret;
}

static bool is_pid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* ---- output ------------------------------------------------------------- */

static void put_c_string(FILE *out, const char *s)
{
	char buf[4 * 1024];
	fprintf(out, "\"%s\"", djp_escape_c(buf, sizeof(buf), s, true));
}

/* The symbol of an argument, up to where the operand's syntax takes over. */
static void put_json_symbol(FILE *out, const char *sym)
{
	size_t n = strcspn(sym, "+-( ");
	char *s = strndup(sym, n);
	djp_json_string(out, s ? s : "");
	free(s);
}

static void put_json_arg(FILE *out, const struct djp_argloc *a, uint64_t bias)
{
	fprintf(out, "{\"size\":%u,\"signed\":%s,\"kind\":\"%s\"", a->size, a->is_signed ? "true" : "false",
		djp_loc_kind_name(a->kind));
	switch (a->kind) {
	case DJP_LOC_REG:
		fprintf(out, ",\"reg\":\"%s\"", djp_reg_name(a->reg));
		if (a->reg_shift)
			fprintf(out, ",\"shift\":%u", a->reg_shift);
		break;
	case DJP_LOC_MEM:
		fputs(",\"base\":", out);
		djp_json_string(out, djp_reg_name(a->reg));
		fputs(",\"index\":", out);
		djp_json_string(out, djp_reg_name(a->index));
		fprintf(out, ",\"scale\":%u,\"disp\":%" PRId64, a->scale ? a->scale : 1, a->disp);
		break;
	case DJP_LOC_IMM:
		fprintf(out, ",\"value\":%" PRId64, a->disp);
		break;
	case DJP_LOC_ABS:
		if (a->sym) {
			fputs(",\"symbol\":", out);
			put_json_symbol(out, a->sym);
		}
		fprintf(out, ",\"address\":\"0x%" PRIx64 "\"", (uint64_t)a->disp + bias);
		break;
	default:
		if (a->sym) {
			fputs(",\"symbol\":", out);
			put_json_symbol(out, a->sym);
		}
		break;
	}
	fputc('}', out);
}

/* Where the semaphore is: its link-time address moved as the site was. */
static uint64_t semaphore_address(const struct row *r)
{
	return r->m->semaphore + r->bias;
}

/* "arming": "jump"; else "uprobe" and "uprobe_why" (why no jump) when
 * this tool may arm the kernel's uprobe (session_uprobes.c), or "int3",
 * "int3_why" and "uprobe_not" (why not the uprobe either): how a trace
 * arms the site (site_arming.c).  A file is read from its path; a
 * process's object from the path its maps name. */
static void put_json_arming(FILE *out, const struct row *r)
{
	const char *why, *not;
	unsigned pre;
	if (djp_site_arming(r->object, r->m, &why, &pre)) {
		fputs(",\"arming\":\"jump\"", out);
		if (pre)
			fprintf(out, ",\"run_before\":%u,\"jump_note\":\"run starts %u bytes before the site\"", pre, pre);
	} else if (session_uprobes_usable(&not)) {
		fputs(",\"arming\":\"uprobe\",\"uprobe_why\":", out);
		djp_json_string(out, why);
	} else {
		fputs(",\"arming\":\"int3\",\"int3_why\":", out);
		djp_json_string(out, why);
		fputs(",\"uprobe_not\":", out);
		djp_json_string(out, not);
	}
}

static void put_json_row(FILE *out, const struct row *r)
{
	const struct djp_marker_info *m = r->m;

	fputs("{\"name\":", out);
	djp_json_string(out, m->name);
	if (m->from_sdt) {
		fputs(",\"provider\":", out);
		djp_json_string(out, m->provider);
		if (m->semaphore)
			fprintf(out, ",\"semaphore\":\"0x%" PRIx64 "\"", semaphore_address(r));
		else
			fputs(",\"semaphore\":null", out);
	}
	fputs(",\"format\":", out);
	djp_json_string(out, m->format);
	fputs(",\"args\":[", out);
	for (unsigned i = 0; i < m->nargs; i++) {
		if (i)
			fputc(',', out);
		put_json_arg(out, &m->arg[i], r->bias);
	}
	fprintf(out, "],\"address\":\"0x%" PRIx64 "\",\"length\":%u,\"function\":", m->site + r->bias, m->site_len);
	djp_json_string(out, m->function);
	fputs(",\"file\":", out);
	djp_json_string(out, m->file);
	if (m->line)
		fprintf(out, ",\"line\":%u", m->line);
	else
		fputs(",\"line\":null", out);
	fputs(",\"object\":", out);
	djp_json_string(out, r->object);
	put_json_arming(out, r);
	fputs("}\n", out);
}

enum { COL_NAME, COL_ADDR, COL_LEN, COL_SEM, COL_FUNC, COL_POS, COL_OBJ, NCOLS };

/* Every column C-escaped: names, functions and paths come from files
 * anyone can write, and the listing is one line per marker. */
static void text_columns(const struct row *r, char cols[NCOLS][512])
{
	const struct djp_marker_info *m = r->m;
	char raw[1024];
	if (m->from_sdt)
		snprintf(raw, sizeof(raw), "%s:%s", m->provider, m->name);
	else
		snprintf(raw, sizeof(raw), "%s", m->name);
	djp_escape_c(cols[COL_NAME], 512, raw, false);
	snprintf(cols[COL_ADDR], 512, "0x%" PRIx64, m->site + r->bias);
	snprintf(cols[COL_LEN], 512, "%u", m->site_len);
	if (m->semaphore)
		snprintf(cols[COL_SEM], 512, "0x%" PRIx64, semaphore_address(r));
	else
		snprintf(cols[COL_SEM], 512, "-");
	djp_escape_c(cols[COL_FUNC], 512, m->function ? m->function : "-", false);
	if (m->file)
		snprintf(raw, sizeof(raw), "%s:%u", m->file, m->line);
	else
		snprintf(raw, sizeof(raw), "-");
	djp_escape_c(cols[COL_POS], 512, raw, false);
	djp_escape_c(cols[COL_OBJ], 512, r->object, false);
}

static int by_object_then_address(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	uint64_t p = x->m->site + x->bias, q = y->m->site + y->bias;
	return p < q ? -1 : p > q;
}

/* The header line names the columns, as ps and lsof do; --no-header
 * leaves out that line and nothing else (the widths count the names). */
static const char *const col_names[NCOLS] = { "NAME",	  "ADDRESS",   "LEN",	"SEMAPHORE",
					      "FUNCTION", "FILE:LINE", "OBJECT" };

static void print_listing(struct listing *ls, FILE *out)
{
	static char cols[NCOLS][512];
	size_t width[NCOLS] = { 0 };

	qsort(ls->rows, ls->nrows, sizeof(*ls->rows), by_object_then_address);
	for (int c = 0; c < NCOLS; c++)
		width[c] = strlen(col_names[c]);
	for (size_t i = 0; i < ls->nrows && !ls->json; i++) {
		text_columns(&ls->rows[i], cols);
		for (int c = 0; c < NCOLS; c++)
			if (strlen(cols[c]) > width[c])
				width[c] = strlen(cols[c]);
	}
	if (ls->header && ls->nrows && !ls->json) {
		for (int c = 0; c < NCOLS; c++)
			fprintf(out, c == COL_LEN ? "%*s  " : "%-*s  ", (int)width[c], col_names[c]);
		fputs("FORMAT  ARGS\n", out);
	}
	for (size_t i = 0; i < ls->nrows; i++) {
		const struct djp_marker_info *m = ls->rows[i].m;
		if (ls->json) {
			put_json_row(out, &ls->rows[i]);
			continue;
		}
		text_columns(&ls->rows[i], cols);
		for (int c = 0; c < NCOLS; c++)
			fprintf(out, c == COL_LEN ? "%*s  " : "%-*s  ", (int)width[c], cols[c]);
		put_c_string(out, m->format);
		fprintf(out, "%s%s\n", *m->args ? "  " : "", m->args);
	}
}

int djp_cmd_list(int argc, char **argv)
{
	struct listing ls = { .header = true };
	int first = 1, status = 0;
	bool kernel = false;

	for (; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "--json"))
			ls.json = true;
		else if (!strcmp(argv[first], "--no-header"))
			ls.header = false;
		else if (!strcmp(argv[first], "-k"))
			kernel = true; /* the markers of loaded modules: klist.c */
		else if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
			djp_usage_list(stdout);
			return 0;
		} else if (!strcmp(argv[first], "--")) {
			first++;
			break;
		} else {
			fprintf(stderr, "djp: list: unknown option '%s'; usage: djp list [--json] [--no-header] FILE|PID...\n",
				argv[first]);
			return 2;
		}
	}
	if (kernel)
		return djp_cmd_klist(argc - first, argv + first, ls.json);
	if (first == argc) {
		fprintf(stderr, "djp: list: usage: djp list [--json] [--no-header] FILE|PID...\n");
		return 2;
	}

	for (int i = first; i < argc && !status; i++) {
		char pid[24];
		int ret;
		if (is_pid(argv[i])) {
			/* A number, leading zeros and all: /proc names it
			 * without them. */
			errno = 0;
			unsigned long long v = strtoull(argv[i], NULL, 10);
			if (errno || v == 0 || v > 0x7fffffff) {
				snprintf(ls.err, sizeof(ls.err), "%s: not a process id (out of range)", argv[i]);
				status = 1;
				break;
			}
			snprintf(pid, sizeof(pid), "%llu", v);
			ret = list_pid(&ls, pid);
		} else {
			ret = list_file(&ls, argv[i]);
		}
		if (ret) {
			if (!ls.err[0])
				snprintf(ls.err, sizeof(ls.err), "%s: %s", argv[i], strerror(-ret));
			status = 1;
		}
	}

	char *buf = NULL;
	size_t len = 0;
	FILE *mem = status ? NULL : open_memstream(&buf, &len);
	if (!status && !mem) {
		snprintf(ls.err, sizeof(ls.err), "list: out of memory");
		status = 1;
	}
	if (!status) {
		print_listing(&ls, mem);
		for (size_t i = 0; i < ls.nnotes && !ls.json; i++)
			fprintf(mem, "%s\n", ls.notes[i]);
		if (fclose(mem)) {
			snprintf(ls.err, sizeof(ls.err), "list: out of memory");
			status = 1;
		}
	}
	if (status) {
		fprintf(stderr, "djp: %s\n", ls.err);
	} else {
		for (size_t i = 0; i < ls.nnotes && ls.json; i++)
			fprintf(stderr, "djp: %s\n", ls.notes[i]);
		if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
			fprintf(stderr, "djp: stdout: %s\n", strerror(errno));
			status = 1;
		}
	}

	free(buf);
	for (size_t i = 0; i < ls.nlists; i++)
		djp_marker_list_free(ls.lists[i]);
	for (size_t i = 0; i < ls.nnotes; i++)
		free(ls.notes[i]);
	free(ls.notes);
	for (size_t i = 0; i < ls.nowned; i++)
		free(ls.owned[i]);
	free(ls.owned);
	free(ls.lists);
	free(ls.rows);
	return status;
}
