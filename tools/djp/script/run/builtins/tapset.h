/*
 * The tapset functions that need more than a line of the interpreter
 * (tapset.c has the essay).
 */
#ifndef DJP_SCRIPT_TAPSET_H
#define DJP_SCRIPT_TAPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tapset_field { TF_PPID, TF_UID, TF_EUID, TF_GID, TF_EGID };

/* Read what /proc says of pid now, while it lives (the live source calls
 * this when a process joins the trace: by the time its events are
 * processed it may be gone, or a zombie without a command line). */
void tapset_remember(int32_t pid);
/* From /proc/PID/status, read once per pid: 0 when it could not be. */
int64_t tapset_proc_field(int32_t pid, enum tapset_field f);
/* The value of its environment variable name, as it was at its exec ("" when
 * none or unknown). */
const char *tapset_env(int32_t pid, const char *name);
/* Its command name ("" when unknown). */
const char *tapset_comm(int32_t pid);
/* Its command line, the arguments joined by spaces (arg < 0), or argument
 * arg alone; "" when there is none. */
void tapset_cmdline(int32_t pid, long arg, char *out, size_t sz);

/* stap's ctime (UTC) and tz_ctime (local, with the zone's name). */
void tapset_ctime(int64_t secs, bool local, char *out, size_t sz);

int64_t tapset_strpos(const char *hay, const char *needle);
void tapset_str_replace(const char *s, const char *find, const char *repl, char *out, size_t sz);

struct tapset_tokens {
	char buf[512];
	size_t pos;
};
void tapset_tokenize(struct tapset_tokens *t, const char *input, const char *delim, char *out, size_t sz);

/* stap's escapes of at most len bytes of s; quoted: in double quotes,
 * "..." after them when s goes on (more: it went on past what s holds). */
void tapset_text_str(const char *s, size_t len, bool quoted, bool more, char *out, size_t sz);

/* "EPERM" for 1 or -1; "" when unknown. */
const char *tapset_errno_str(int64_t e);
/* errno_p(e): a negated error number that has a name (tapset/errno.stp) */
bool tapset_errno_p(int64_t e);
/* return_str(format, ret) and returnstr(format)'s text (tapset/errno.stp) */
void tapset_return_str(int64_t format, int64_t ret, char *buf, size_t sz);
/* bytes_to_string(bytes)'s text (tapset/proc_mem.stp) */
void tapset_bytes_string(int64_t bytes, char *buf, size_t sz);

#endif
