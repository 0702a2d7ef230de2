/*
 * Built-in functions of strings, stap's string.stp and conversions.stp:
 * lengths, searches, slices, escapes.  A string they make comes from the
 * probe's arena, cut at MAXSTRINGLEN - 1 bytes as stap's would be; one
 * they only look at is not copied.  matched() and ngroups() read the
 * groups the last =~ that matched left (interp.c's regex_match).
 */
#include <ctype.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tapset.h"
#include "tools/djp/script/run/interp.h"

int64_t bi_strlen(struct run *r, struct node *n)
{
	return (int64_t)strlen(eval_s(r, n->args[0]));
}

const char *bi_substr(struct run *r, struct node *n)
{
	const char *s = eval_s(r, n->args[0]);
	int64_t start = eval_n(r, n->args[1]), len = eval_n(r, n->args[2]);
	size_t sl = strlen(s);
	if (start < 0 || len < 0 || (size_t)start >= sl)
		return "";
	if ((uint64_t)len > sl - (size_t)start)
		len = (int64_t)(sl - (size_t)start);
	return arena_strn(r, s + start, (size_t)len);
}

int64_t bi_isinstr(struct run *r, struct node *n)
{
	const char *a = eval_s(r, n->args[0]);
	return strstr(a, eval_s(r, n->args[1])) != NULL;
}

int64_t bi_strtol(struct run *r, struct node *n)
{
	const char *s = eval_s(r, n->args[0]);
	int64_t base = eval_n(r, n->args[1]);
	if (base < 2 || base > 36)
		rt_error(r, n, "strtol: base %lld out of range", (long long)base);
	return strtoll(s, NULL, (int)base);
}

int64_t bi_stringat(struct run *r, struct node *n)
{
	const char *s = eval_s(r, n->args[0]);
	int64_t i = eval_n(r, n->args[1]);
	if (i < 0 || (size_t)i >= strlen(s))
		rt_error(r, n, "Position %lld out of range", (long long)i);
	return (unsigned char)s[i];
}

int64_t bi_strpos(struct run *r, struct node *n)
{
	return tapset_strpos(eval_s(r, n->args[0]), eval_s(r, n->args[1]));
}

int64_t bi_isdigit(struct run *r, struct node *n)
{
	return isdigit((unsigned char)eval_s(r, n->args[0])[0]) != 0;
}

const char *bi_str_replace(struct run *r, struct node *n)
{
	char *buf = arena_alloc(r, MAXSTRINGLEN);
	const char *a = eval_s(r, n->args[0]), *b = eval_s(r, n->args[1]);
	tapset_str_replace(a, b, eval_s(r, n->args[2]), buf, MAXSTRINGLEN);
	return buf;
}

/* tokenize(s, delim) starts on s; tokenize("", delim) goes on with it */
const char *bi_tokenize(struct run *r, struct node *n)
{
	char *buf = arena_alloc(r, MAXSTRINGLEN);
	const char *in = eval_s(r, n->args[0]);
	tapset_tokenize(&r->tokens, in, eval_s(r, n->args[1]), buf, MAXSTRINGLEN);
	return buf;
}

/* stap's escapes of at most len bytes of s (all when len <= 0), in
 * double quotes when quoted */
static const char *escaped(struct run *r, const char *s, int64_t len, bool quoted)
{
	char *buf = arena_alloc(r, MAXSTRINGLEN);
	tapset_text_str(s, len > 0 ? (size_t)len : MAXSTRINGLEN, quoted, false, buf, MAXSTRINGLEN);
	return buf;
}

const char *bi_text_str(struct run *r, struct node *n)
{
	return escaped(r, eval_s(r, n->args[0]), 0, false);
}

const char *bi_string_quoted(struct run *r, struct node *n)
{
	return escaped(r, eval_s(r, n->args[0]), 0, true);
}

const char *bi_text_strn(struct run *r, struct node *n)
{
	const char *in = eval_s(r, n->args[0]);
	int64_t len = eval_n(r, n->args[1]);
	return escaped(r, in, len, eval_n(r, n->args[2]) != 0);
}

const char *bi_errno_str(struct run *r, struct node *n)
{
	return tapset_errno_str(eval_n(r, n->args[0]));
}

/* return_str(format, ret): stap's (tapset/errno.stp): "-2 (ENOENT)" for
 * an error number, else the value in decimal (1), hex (2) or octal (3). */
const char *bi_return_str(struct run *r, struct node *n)
{
	int64_t format = eval_n(r, n->args[0]), ret = eval_n(r, n->args[1]);
	char *buf = arena_alloc(r, 64);

	tapset_return_str(format, ret, buf, 64);
	return buf;
}

/* errno_p(err): 1 when err is a negated error number that has a name
 * (tapset/errno.stp), as a system call's return gives one */
int64_t bi_errno_p(struct run *r, struct node *n)
{
	return tapset_errno_p(eval_n(r, n->args[0]));
}

/* signal_str(num): "HUP" for 1, as tapset/signal.stp names them (the
 * kernel's numbers: 32 is "RTMIN", 33 "RTMIN+1" .. 64), "" for none */
const char *bi_signal_str(struct run *r, struct node *n)
{
	int64_t num = eval_n(r, n->args[0]);
	const char *abbrev = num > 0 && num < 32 ? sigabbrev_np((int)num) : NULL;
	char *buf;

	if (num == 32)
		return "RTMIN";
	if (num > 32 && num <= 64) {
		buf = arena_alloc(r, 16);
		snprintf(buf, 16, "RTMIN+%d", (int)(num - 32));
		return buf;
	}
	return abbrev ? abbrev : "";
}

/* bytes_to_string(bytes): five characters, "  512", "1.50K", "12.5M",
 * " 100G", as tapset/proc_mem.stp writes them. */
const char *bi_bytes_to_string(struct run *r, struct node *n)
{
	char *buf = arena_alloc(r, 32);

	tapset_bytes_string(eval_n(r, n->args[0]), buf, 32);
	return buf;
}

const char *bi_pages_to_string(struct run *r, struct node *n)
{
	char *buf = arena_alloc(r, 32);

	tapset_bytes_string(eval_n(r, n->args[0]) * sysconf(_SC_PAGESIZE), buf, 32);
	return buf;
}

/* ip_ntop(addr): an IPv4 address as the kernel holds it (network order
 * in memory, so 127.0.0.1 is 0x0100007f here) in dotted decimal. */
const char *bi_ip_ntop(struct run *r, struct node *n)
{
	uint32_t a = (uint32_t)eval_n(r, n->args[0]);
	char *buf = arena_alloc(r, 16);

	snprintf(buf, 16, "%u.%u.%u.%u", a & 0xff, a >> 8 & 0xff, a >> 16 & 0xff, a >> 24);
	return buf;
}

/* matched(k): group k of the last =~ that matched (0 the whole match) */
const char *bi_matched(struct run *r, struct node *n)
{
	int64_t k = eval_n(r, n->args[0]);
	if (!r->nmatch)
		rt_error(r, n, "matched(%lld): no regular expression has matched", (long long)k);
	if (k < 0 || k >= r->nmatch)
		rt_error(r, n, "matched(%lld): no such group (the last match has %d)", (long long)k, r->nmatch);
	if (r->match[k].rm_so < 0 || (size_t)r->match[k].rm_eo > strlen(r->match_text))
		return "";
	return arena_strn(r, r->match_text + r->match[k].rm_so, (size_t)(r->match[k].rm_eo - r->match[k].rm_so));
}

int64_t bi_ngroups(struct run *r, struct node *n)
{
	return r->nmatch;
}
