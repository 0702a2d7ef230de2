/*
 * Built-in functions of output and control: log() and warn(), stap's
 * ansi.stp terminal sequences, system(), and the ends of a probe or of the
 * run (exit(), error(), abort()).
 *
 * exit() lets the probe finish and then the end probes run; error() is a
 * run-time error, with the message given; abort() leaves the probe at
 * once, with no end probes.  system()'s command runs after the probe's
 * handler (run.c), as stap runs it.
 */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "tools/djp/line_out.h"
#include "tools/djp/script/run/interp.h"

int64_t bi_exit(struct run *r, struct node *n)
{
	r->exiting = true;
	return 0;
}

int64_t bi_error(struct run *r, struct node *n)
{
	rt_error(r, n, "%s", eval_s(r, n->args[0]));
}

int64_t bi_abort(struct run *r, struct node *n)
{
	r->exiting = r->aborting = true;
	longjmp(*r->jb, 3);
}

int64_t bi_log(struct run *r, struct node *n)
{
	const char *m = eval_s(r, n->args[0]);
	fprintf(r->out, "%s\n", m);
	r->dirty = true;
	return 0;
}

int64_t bi_warn(struct run *r, struct node *n)
{
	rt_warn(r, "%s", eval_s(r, n->args[0]));
	return 0;
}

int64_t bi_system(struct run *r, struct node *n)
{
	const char *cmd = eval_s(r, n->args[0]);
	char **v = realloc(r->commands, sizeof(*v) * (size_t)(r->ncommands + 1));
	if (!v || !(v[r->ncommands] = strdup(cmd)))
		abort();
	r->commands = v;
	r->ncommands++;
	return 0;
}

static int64_t ansi(struct run *r, const char *seq)
{
	emit(r, seq, strlen(seq));
	return 0;
}

/* The ansi_* built-ins that write one fixed sequence */
#define ANSI_BUILTIN(name, seq)                              \
	int64_t bi_##name(struct run *r, struct node *n)     \
	{                                                    \
		return ansi(r, seq);                         \
	}
ANSI_BUILTIN(ansi_clear_screen, "\033[1;1H\033[J")
ANSI_BUILTIN(ansi_reset_color, "\033[0;0m")
ANSI_BUILTIN(ansi_new_line, "\n")
ANSI_BUILTIN(ansi_cursor_hide, "\033[>5I")
ANSI_BUILTIN(ansi_cursor_show, "\033[>5h")
ANSI_BUILTIN(ansi_cursor_save, "\033[s")
ANSI_BUILTIN(ansi_cursor_restore, "\033[u")

/* ansi_set_color(fg[, bg[, attr]]): stap's order, bg first */
int64_t bi_ansi_set_color(struct run *r, struct node *n)
{
	int64_t a[3];
	for (int i = 0; i < n->nargs; i++)
		a[i] = eval_n(r, n->args[i]);
	if (n->nargs == 1)
		emitf(r, "\033[%lldm", (long long)a[0]);
	else if (n->nargs == 2 || !a[2])
		emitf(r, "\033[%lld;%lldm", (long long)a[1], (long long)a[0]);
	else
		emitf(r, "\033[%lld;%lld;%lldm", (long long)a[1], (long long)a[0], (long long)a[2]);
	return 0;
}

int64_t bi_ansi_cursor_move(struct run *r, struct node *n)
{
	int64_t x = eval_n(r, n->args[0]), y = eval_n(r, n->args[1]);
	emitf(r, "\033[%lld;%lldH", (long long)y, (long long)x);
	return 0;
}
