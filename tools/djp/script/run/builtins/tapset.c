/*
 * The everyday tapset functions that are more than a line in the
 * interpreter: what /proc says of a traced process, stap's time formats,
 * and stap's string functions.  Each is written after its stap namesake's
 * documented behaviour (tapset/linux/context.stp, ctime.stp, string.stp);
 * the built-in functions (process.c, time.c, strings.c) call them with the
 * event's pid and their own buffers.
 *
 * /proc of a process that has exited is gone, while its events are still
 * being processed: the fields of a pid are read once and kept (a small
 * cache, most recent first), so a late event still gets its process's
 * uid, command line or environment; one that was never read in time gets stap's value
 * for an unreadable task, 0 or "".
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/djp/script/run/run.h"
#include "tapset.h"

#define CACHE 64

struct proc_info {
	int32_t pid;
	int64_t ppid, uid, euid, gid, egid;
	char comm[64];
	char cmdline[512]; /* arguments separated by NULs */
	size_t cmdline_len;
	char environ[4096]; /* NAME=VALUE strings separated by NULs */
	size_t environ_len;
};

static struct proc_info cache[CACHE];
static unsigned ncache;

static void read_status(struct proc_info *pi)
{
	char path[64], line[256];
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pi->pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		long long a, b;
		if (sscanf(line, "PPid: %lld", &a) == 1)
			pi->ppid = a;
		else if (sscanf(line, "Uid: %lld %lld", &a, &b) == 2)
			pi->uid = a, pi->euid = b;
		else if (sscanf(line, "Gid: %lld %lld", &a, &b) == 2)
			pi->gid = a, pi->egid = b;
		else if (!strncmp(line, "Name:", 5)) {
			char *s = line + 5;
			while (*s == ' ' || *s == '\t')
				s++;
			s[strcspn(s, "\n")] = 0;
			snprintf(pi->comm, sizeof(pi->comm), "%.63s", s);
		}
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pi->pid);
	if ((f = fopen(path, "re"))) {
		pi->cmdline_len = fread(pi->cmdline, 1, sizeof(pi->cmdline) - 1, f);
		pi->cmdline[pi->cmdline_len] = 0;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pi->pid);
	if ((f = fopen(path, "re"))) {
		pi->environ_len = fread(pi->environ, 1, sizeof(pi->environ) - 1, f);
		pi->environ[pi->environ_len] = 0;
		fclose(f);
	}
}

static const struct proc_info *proc(int32_t pid)
{
	struct proc_info pi = { .pid = pid };
	for (unsigned i = 0; i < ncache; i++)
		if (cache[i].pid == pid) {
			if (i) { /* most recent first */
				pi = cache[i];
				memmove(&cache[1], &cache[0], i * sizeof(cache[0]));
				cache[0] = pi;
			}
			return &cache[0];
		}
	read_status(&pi);
	if (ncache < CACHE)
		ncache++;
	memmove(&cache[1], &cache[0], (ncache - 1) * sizeof(cache[0]));
	cache[0] = pi;
	return &cache[0];
}

void tapset_remember(int32_t pid)
{
	(void)proc(pid);
}

int64_t tapset_proc_field(int32_t pid, enum tapset_field f)
{
	const struct proc_info *pi = proc(pid);
	switch (f) {
	case TF_PPID: return pi->ppid;
	case TF_UID: return pi->uid;
	case TF_EUID: return pi->euid;
	case TF_GID: return pi->gid;
	case TF_EGID: return pi->egid;
	}
	return 0;
}

const char *tapset_env(int32_t pid, const char *name)
{
	const struct proc_info *pi = proc(pid);
	size_t n = strlen(name);
	for (size_t i = 0; i < pi->environ_len; i += strlen(pi->environ + i) + 1)
		if (!strncmp(pi->environ + i, name, n) && pi->environ[i + n] == '=')
			return pi->environ + i + n + 1;
	return "";
}

const char *tapset_comm(int32_t pid)
{
	return proc(pid)->comm;
}

void tapset_cmdline(int32_t pid, long arg, char *out, size_t sz)
{
	const struct proc_info *pi = proc(pid);
	size_t o = 0;
	long k = 0;
	out[0] = 0;
	for (size_t i = 0; i < pi->cmdline_len; k++) {
		const char *a = pi->cmdline + i;
		size_t n = strlen(a);
		if (arg < 0 || k == arg) {
			int w = snprintf(out + o, sz - o, "%s%s", o ? " " : "", a);
			if (w < 0 || (size_t)w >= sz - o)
				break;
			o += (size_t)w;
		}
		i += n + 1;
	}
}

/* ---- time --------------------------------------------------------------- */

/* stap's ctime: asctime's layout without its newline, in UTC; tz_ctime in
 * the local zone with its abbreviation. */
void tapset_ctime(int64_t secs, bool local, char *out, size_t sz)
{
	time_t t = (time_t)secs;
	struct tm tm;
	if (!(local ? localtime_r(&t, &tm) : gmtime_r(&t, &tm))) {
		snprintf(out, sz, "<invalid time>");
		return;
	}
	strftime(out, sz, local ? "%a %b %e %H:%M:%S %Y %Z" : "%a %b %e %H:%M:%S %Y", &tm);
}

/* ---- strings ---------------------------------------------------------- */

int64_t tapset_strpos(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);
	return p ? (int64_t)(p - hay) : -1;
}

void tapset_str_replace(const char *s, const char *find, const char *repl, char *out, size_t sz)
{
	size_t o = 0, fl = strlen(find), rl = strlen(repl);
	while (*s && o + 1 < sz) {
		if (fl && !strncmp(s, find, fl)) {
			size_t n = rl < sz - 1 - o ? rl : sz - 1 - o;
			memcpy(out + o, repl, n);
			o += n;
			s += fl;
		} else {
			out[o++] = *s++;
		}
	}
	out[o] = 0;
}

/* stap's tokenize: the next token of `input` split at any byte of `delim`,
 * empty tokens skipped; an empty input goes on with the previous string. */
void tapset_tokenize(struct tapset_tokens *t, const char *input, const char *delim, char *out, size_t sz)
{
	const char *p;
	size_t n;
	if (*input) {
		snprintf(t->buf, sizeof(t->buf), "%s", input);
		t->pos = 0;
	}
	p = t->buf + t->pos;
	p += strspn(p, delim);
	n = strcspn(p, delim);
	snprintf(out, sz, "%.*s", (int)n, p);
	t->pos = (size_t)(p + n - t->buf);
}

/* stap's text_str: each byte escaped as %#s does (print.c's char_escaped:
 * C escapes for the usual controls and quotes, octal for other bytes that
 * are not printable ASCII); with quoted, in double quotes, and "..." after
 * them when cut at len. */
void tapset_text_str(const char *s, size_t len, bool quoted, bool more, char *out, size_t sz)
{
	size_t o = 0, i;
	bool cut = more;
	if (sz < 8) {
		if (sz)
			out[0] = 0;
		return;
	}
	if (quoted)
		out[o++] = '"';
	for (i = 0; s[i] && i < len; i++) {
		if (o + 8 > sz) {
			cut = true;
			break;
		}
		o += char_escaped(s[i], out + o); /* the escapes of %#s */
	}
	if (quoted)
		out[o++] = '"';
	if (quoted && (cut || s[i]))
		o += (size_t)snprintf(out + o, sz - o, "...");
	out[o] = 0;
}

const char *tapset_errno_str(int64_t e)
{
	const char *name;
	if (e < 0)
		e = -e;
	name = e > 0 && e < 4096 ? strerrorname_np((int)e) : NULL;
	return name ? name : "";
}

bool tapset_errno_p(int64_t e)
{
	return e < 0 && e > -4096 && *tapset_errno_str(e);
}

void tapset_return_str(int64_t format, int64_t ret, char *buf, size_t sz)
{
	if (tapset_errno_p(ret))
		snprintf(buf, sz, "%lld (%s)", (long long)ret, tapset_errno_str(ret));
	else if (format == 2)
		snprintf(buf, sz, "0x%llx", (unsigned long long)ret);
	else if (format == 3)
		snprintf(buf, sz, "%#llo", (unsigned long long)ret);
	else
		snprintf(buf, sz, "%lld", (long long)ret);
}

/* _stp_number_to_string_postfix: x units and y 1024ths of one */
static void postfix(int64_t x, int64_t y, char p, char *buf, size_t sz)
{
	if (x < 10)
		snprintf(buf, sz, "%lld.%.2lld%c", (long long)x, (long long)(y * 100 / 1024), p);
	else if (x < 100)
		snprintf(buf, sz, "%2lld.%lld%c", (long long)x, (long long)(y * 10 / 1024), p);
	else
		snprintf(buf, sz, "%4lld%c", (long long)x, p);
}

void tapset_bytes_string(int64_t bytes, char *buf, size_t sz)
{
	static const char units[] = "KMG";
	int64_t remain = 0;

	if (bytes < 1024) {
		snprintf(buf, sz, "%5lld", (long long)bytes);
		return;
	}
	for (int u = 0;; u++) {
		remain = bytes % 1024;
		bytes /= 1024;
		if (bytes < 1024 || u == 2) {
			postfix(bytes, remain, units[u], buf, sz);
			return;
		}
	}
}
