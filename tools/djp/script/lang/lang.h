/*
 * The probe-script language, shared by its passes (this folder) and by
 * what runs the checked program (run/):
 *
 *   lexer.c   text -> tokens            preproc.c  %( %) conditionals, @define
 *   parser.c  tokens -> AST (its top level; parse_stmt.c statements and
 *             expressions, parse.h what the two share)
 *   check.c   names and types           format.c   printf formats
 *   bind.c    probe points -> markers   diag.c     error messages, the
 *                                                  program's strings
 *
 * A call of a built-in function is resolved by the table of
 * run/builtins/builtins.def, which the interpreter calls through.
 *
 * The AST is also the executable form: check.c resolves every name to a
 * slot (a local's frame index, a global, a function, a context field index)
 * and every expression to a static type, so the interpreter never looks a
 * name up or tests a type at run time.
 */
#ifndef DJP_SCRIPT_LANG_H
#define DJP_SCRIPT_LANG_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/djp/script/source.h"

/* stap's limits, with stap's defaults; -D NAME=VALUE sets them (cli.c). */
struct script_limits {
	int64_t maxstringlen;  /* strings hold at most this - 1 bytes (512) */
	int64_t maxmapentries; /* default size limit of an array (2048) */
	int64_t maxnesting;    /* user function call depth (10) */
	int64_t maxaction;     /* statements per probe hit (1000) */
	int64_t maxaction_interruptible; /* in begin, end, error (0: 10 x maxaction) */
	int64_t maxerrors;     /* run-time errors before the script ends (0) */
	int64_t hist_elision;  /* empty histogram rows kept next to data (2) */
};
extern struct script_limits script_limits;
extern bool script_no_warnings; /* -w: no WARNING lines, of any pass or of the run */
#define MAXSTRINGLEN ((size_t)script_limits.maxstringlen)
#define MAXMAPENTRIES ((uint32_t)script_limits.maxmapentries)
#define MAXNESTING ((int)script_limits.maxnesting)
#define MAXACTION ((uint64_t)script_limits.maxaction)
#define MAXACTION_INTERRUPTIBLE                                                                 \
	((uint64_t)(script_limits.maxaction_interruptible ? script_limits.maxaction_interruptible        \
							  : 10 * script_limits.maxaction))
#define MAXERRORS ((int)script_limits.maxerrors)
#define HIST_ELISION ((int)script_limits.hist_elision)
#define MAXKEYS 9	   /* indexes of an associative array, as stap */
#define HIST_LOG_BUCKETS 128
#define HIST_LOG_BUCKET0 64
#define HIST_MAX_LINEAR 128

enum ty { TY_UNK, TY_LONG, TY_STR, TY_STAT };

/* ---- lexer -------------------------------------------------------------- */

enum tok_kind {
	T_EOF,
	T_IDENT,   /* name, keyword */
	T_NUM,
	T_STR,
	T_DOLLAR,  /* $name, text without '$' */
	T_DOLLAR2, /* $$name */
	T_AT,	   /* @name */
	T_OP,	   /* operator or punctuation, text in `op` */
};

struct tok {
	enum tok_kind kind;
	int line, col;
	const char *text; /* identifier / string (unescaped) / op text */
	size_t len;
	int64_t num;
};

struct src_file {
	const char *name; /* "<input>" for -e */
	const char *text;
};

struct lexer {
	const struct src_file *file;
	const char *p;
	int line, col;
	struct script *sc; /* for string storage */
};

void lex_init(struct lexer *lx, const struct src_file *f, struct script *sc);
/* Next token; a lexical error is reported and returns false. */
bool lex_next(struct lexer *lx, struct tok *t);

/* ---- AST ---------------------------------------------------------------- */

enum node_kind {
	/* expressions */
	N_NUM,	   /* num */
	N_STR,	   /* str */
	N_VAR,	   /* sym: a local or a scalar global */
	N_INDEX,   /* sym[args]: an array element */
	N_CTX,	   /* $name/$argN: slot = context reference of the probe */
	N_CTXNAME, /* $$name */
	N_CTXPARMS,/* $$parms, $$vars, $$locals, $$return (str says which) */
	N_CTXFORMAT,/* $$format: the marker's format string */
	N_CALL,	   /* fn(args) */
	N_BUILTIN, /* op = enum builtin (run/builtins/builtins.h), args */
	N_BINOP,   /* op: + - * / % << >> & | ^ */
	N_CONCAT,  /* a . b */
	N_CMP,	   /* op: < > <= >= == != ; on longs or strings */
	N_LOGAND,
	N_LOGOR,
	N_NOT,
	N_NEG,
	N_BITNOT,
	N_TERNARY, /* a ? b : c */
	N_ASSIGN,  /* a op= b; op 0 for '=', '.' for '.=' */
	N_INCDEC,  /* op '+'/'-', post flag */
	N_IN,	   /* [args] in sym */
	N_AGG,	   /* op = enum agg, a = stat lvalue (N_VAR/N_INDEX) */
	N_HIST,	   /* @hist_log(a) / @hist_linear(a, lo, hi, step) */
	N_STATADD, /* a <<< b */
	N_PRINT,   /* op = enum print_kind, args (args[0] the format for *printf) */
	N_WILD,	   /* `*` as an index: a slice, in foreach, in and delete */
	N_DEFINED, /* @defined(a) (op 0), @choose_defined(a, b) (op 1): folded by check.c */
	N_TYPED,   /* $var->m[i]..., &..., $return->m: tr (typed.h), read in the target */
	/* statements */
	S_BLOCK,   /* args = statements */
	S_EXPR,	   /* a */
	S_IF,	   /* a cond, b then, c else */
	S_WHILE,   /* a cond, b body */
	S_FOR,	   /* a init, b cond, c step, d body */
	S_FOREACH,
	S_BREAK,
	S_CONTINUE,
	S_NEXT,
	S_RETURN,  /* a or NULL */
	S_DELETE,  /* a: N_VAR or N_INDEX */
	S_TRY,	   /* a try block, b catch block, sym the message's local or NULL */
	S_NOP,
};

enum agg { A_COUNT, A_SUM, A_MIN, A_MAX, A_AVG, A_VARIANCE };
enum print_kind {
	P_PRINTF, P_SPRINTF, P_PRINT, P_PRINTLN, P_SPRINT, P_SPRINTLN, P_PRINTD, P_PRINTDLN, P_SPRINTD,
	P_FOLDED, /* print_folded(ARRAY): run/folded.c */
};

struct sym;
struct typed_ref;
struct script_typed;
struct func;

struct node {
	uint8_t kind;
	uint8_t ty;   /* enum ty of an expression */
	uint8_t post; /* N_INCDEC: postfix */
	int op;
	int line, col;
	struct node *a, *b, *c, *d;
	struct node **args;
	int nargs;
	int64_t num;
	const char *str; /* N_STR value, N_CTX name, N_VAR name before resolution */
	int slot;	 /* N_CTX: context ref index; N_BUILTIN etc. */
	struct sym *sym; /* N_VAR, N_INDEX, N_IN, S_FOREACH array */
	struct func *fn; /* N_CALL */
	/* S_FOREACH */
	struct sym *fe_keys[MAXKEYS]; /* key variables */
	struct sym *fe_val;	      /* value variable or NULL */
	int fe_nkeys;
	int fe_sort_col;  /* 0: value, 1..: key k, -1 none */
	int fe_sort_dir;  /* +1 ascending, -1 descending */
	int fe_sort_agg;  /* a statistics array's value sort: enum agg */
	struct node *fe_limit;
	struct node *fe_slice; /* foreach (k in a[*, 5]): the N_INDEX slice */
	struct print_fmt *pf; /* N_PRINT with a constant format */
	void *re;	      /* N_CMP =~ / !~: the compiled regex_t */
	struct typed_ref *tr; /* N_TYPED (script/typed.c) */
};

struct hist_cfg {
	int kind; /* 0 none, 1 log, 2 linear */
	int64_t start, stop, interval;
	int buckets;
};

struct sym {
	const char *name;
	int line, col;
	bool global;
	uint8_t ty;		/* element type for arrays; TY_STAT for statistics */
	int nkeys;		/* -1 unknown, 0 scalar, 1..5 array */
	uint8_t kty[MAXKEYS];
	int slot;		/* frame index (locals) or global index */
	bool read, written;
	int64_t maxentries;
	bool wrap;		/* global a%[N]: a full array drops its oldest entry */
	struct node *init;	/* global initialiser (literal) or NULL */
	struct hist_cfg hist;
	/* aggregated in the target (agg.c); deleted somewhere; its @min or
	 * @max read */
	bool agg, agg_other, agg_minmax;
	struct sym *next;	/* in its scope's list */
	/* run time, globals only */
	union cell *cell;
	struct map *map;
	struct script_stat *stat;
	char *strbuf;		/* scalar string global */
};

struct func {
	const char *name;
	int line, col;
	uint8_t ret;
	int nparams;
	struct sym *params[16];
	struct sym *locals; /* params first, then other locals */
	int nslots;
	struct node *body;
	bool checking;
	bool uses_ustack; /* it, or a function it calls, reads the hit's user stack */
	struct func *next;
};

struct probe_point {
	char *text;	   /* as written, e.g. process("/bin/x").mark("a*") */
	int line, col;
	int kind;	   /* PP_BEGIN, PP_END, PP_TIMER, PP_MARK */
	bool optional;
	bool sufficient;   /* `!`: when it matches, the probe's later points are dropped */
	const char *path;  /* process("PATH"), or NULL */
	/* kernel.mark("GLOB") and module("MODGLOB").mark("GLOB"): markers of
	 * loaded kernel modules (script/klive.c); module is NULL for the
	 * first, and connect the device's pattern, "MODGLOB:GLOB" */
	bool kernel;
	const char *module;
	int32_t pid;	   /* process(PID): only that process's hits; 0 any */
	const char *glob;  /* mark("GLOB"); function("GLOB") as "func:GLOB" */
	/* function and statement points: their sites are made when they are
	 * connected, so they match nothing before; `connect` is what the
	 * agent is asked for (the glob, and the object when a path is given) */
	bool point;
	bool ret;	   /* function("GLOB").return: the sites "NAME%return" */
	const char *connect;
	/* statement points: the names of the sites their line resolved to
	 * (source's resolve_line), matched instead of the glob */
	char **names;
	unsigned nnames;
	int64_t period_ns; /* timers */
	int64_t random_ns; /* timer....randomize(M): up to this much either way */
	int64_t priority;  /* begin(N), end(N): lower first */
	bool oneshot;	   /* `oneshot`: a begin probe that ends the script */
	const char *alias; /* PP_ALIAS: the alias's name */
	/* PP_LIFE: process.begin, process.end (DJP_LIFE_* of source.h), of
	 * the process `path` runs (PATH) or `pid` (PID), or any traced */
	int life;
	/* process.thread.begin, .thread.end: a PP_MARK on the library's
	 * marker of that name (glob), in any object; `path` is the program
	 * the thread's process runs, compared at each event as PP_LIFE's */
	bool thread;
	struct probe_point *next;
};

enum { PP_BEGIN, PP_END, PP_TIMER, PP_MARK, PP_NEVER, PP_ALIAS /* resolved after the parse */, PP_ERROR, PP_LIFE };

/* probe NAME = POINTS { prologue }, probe NAME += POINTS { epilogue } */
struct alias {
	const char *name;
	struct probe_point *points;
	struct node *body;
	bool epilogue;
	struct alias *next;
};

struct probe {
	struct probe_point *points;
	struct node *cond;
	struct node *body;
	struct sym *locals;
	int nslots;
	int line, col;
	/* context references of the body: $name / $argN, each resolved per
	 * matched marker into a field index (struct binding) */
	int nrefs;
	const char *refs[32];
	uint8_t ref_ty[32];
	/* a reference read as a string (user_string($arg2)): the bytes it
	 * wants copied at the hit, NUL included; 0 when none */
	uint16_t ref_strbound[32];
	struct binding **binds; /* the markers this probe is attached to */
	int nbinds;
	bool has_nonmark;	/* begin, end or timer among its points */
	bool waits_exec;	/* a point matched nothing in a -c wrapper: bound in the program it execs */
	/* its body reads the hit's user stack (ubacktrace() and the like,
	 * here or in a function it calls): its hits record it */
	bool uses_ustack;
	struct probe *next;
	int index;
	bool synthetic; /* generated display of unread globals */
	int agg;	/* run in the target: its plan + 1 (agg.c); 0 not */
	bool reads_agg; /* reads a global the target aggregates */
};

/* A probe attached to one marker: where each context reference lives. */
struct binding {
	struct probe *probe;
	const struct djp_ev_desc *desc;
	const char *name, *format; /* desc's, C-escaped (they come from the target's files): $$name, $$format */
	uint64_t name_hash; /* hash of name, for c[$$name] */
	const char *pp;	    /* process("OBJECT").mark("NAME"), for pp() and errors */
	const char *pn;	    /* the probe point as written that matched, for pn() */
	int32_t pid;	    /* process(PID) points: the process whose hits run it; 0 any */
	const char *path;   /* process("PATH").begin and .end: the program; NULL any */
	int8_t field[32];   /* ref index -> argument index */
};

struct timer {
	struct probe *probe;
	int64_t period_ns, random_ns;
	uint64_t due;
};

/* A variable @var("name@file.c"[, "PATH"]) reads: its object's real
 * path, where it is (link-time) and how it reads.  With an empty object,
 * a register whose string user_string() reads (pointer_arg(1)): addr is
 * its DWARF number. */
struct script_var {
	const char *spec;   /* "name@file.c", for messages */
	char *object;
	uint64_t addr;
	unsigned size;
	bool is_signed;
	/* user_string(@var(...)): the bytes of its string copied at the hit,
	 * NUL included (0: none) */
	unsigned str_bound;
};

struct script {
	struct src_file file;
	const char *const *args; /* the script's arguments: $1.. and @1.. */
	int nargs;
	struct sym *globals;
	int nglobals;
	struct func *funcs;
	struct probe *probes;
	int nprobes;
	int nerrors;
	FILE *err;
	/* resolution against a source */
	const struct djp_source *src;
	struct binding ***by_desc; /* per desc id: its bindings */
	int *nby_desc;
	unsigned nby;		  /* entries of by_desc */
	struct probe **begins, **ends, **errs; /* errs: `probe error`, run instead of the ends after an error */
	int nbegins, nends, nerrs;
	struct timer *timers;
	int ntimers;
	struct alias *aliases;
	/* the regexes =~ compiled (regex_t), freed by script_release */
	void **regexes;
	int nregexes;
	bool uses_cpu; /* cpu() is called: the events must carry their CPU */
	/* register(), int_arg(n)... are called: the events carry the hit's
	 * registers (1), and the stack words of arguments past the sixth
	 * (2); a callee-saved register is read (or any, by a computed name),
	 * which only an int3's view holds (run/builtins/dwarfless.c) */
	unsigned uses_regs;
	bool regs_callee;
	/* @var's variables, each read at every hit with the registers
	 * (run/builtins/dwarfless.c); an @var call's node->slot is its index */
	struct script_var *vars;
	unsigned nvars;
	struct script_agg *agg; /* the probes run in the target (agg.c), or NULL */
	struct script_typed *typed; /* typed accesses and their programs (typed.c), or NULL */
	/* the tokens the parser read, kept for -p1 */
	struct tok *toks;
	size_t ntoks;
	/* string storage for the program text (never freed until the end) */
	struct strpool *pool;
};

/* diag.c: "file:line:col: KIND: message", the source line and a caret */
void diag(struct script *sc, int line, int col, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
char *pool_strndup(struct script *sc, const char *s, size_t n);
void *pool_alloc(struct script *sc, size_t n);
void pool_free_all(struct script *sc);

/* preproc.c: script arguments, %( %? %: %) conditionals and @define
 * macros, over the lexed tokens (ending in T_EOF); 0 or the errors */
int preprocess(struct script *sc, struct tok **toks, size_t *ntoks);
/* parser.c: parse sc->file; returns 0 or the number of errors */
int parse_script(struct script *sc);
/* check.c: resolve names and types */
int check_script(struct script *sc);
/* bind.c: resolve probe points against src's markers */
int resolve_probes(struct script *sc, const struct djp_source *src);
/* dwarfless_refs.c, after check_script: a function point's context
 * variable where none of its functions has DWARF, said with what to use
 * instead (int_arg(n)); the errors said */
int check_dwarfless_refs(struct script *sc, const struct djp_source *src);
/* kernel_refs.c, after check_script: a kernel function point's context
 * variable by name, found among its parameters in the kernel's DWARF or
 * said why not; the errors said */
int check_kernel_refs(struct script *sc);
/* after check_script: each binding's field index per context reference */
void bind_fields(struct script *sc);
/* Bind a descriptor the source made after resolve_probes (a marker loaded
 * later) to the probes whose points match it and whose context variables it
 * has with the checked types; a probe it does not fit is skipped with a
 * warning.  Once per descriptor. */
void bind_late(struct script *sc, const struct djp_ev_desc *d);
/* After the run: the mark points that waited for the program a -c wrapper
 * execs and never bound, and the function and statement points whose
 * sites came in no program of the run, one line each on stderr; true when
 * there was one (a point that matches nothing is an error). */
bool report_never_bound(const struct script *sc, const struct djp_source *src);
/* free everything the passes allocated (the pool included) */
void script_release(struct script *sc);
int ctx_field(const struct djp_ev_desc *d, const char *name);
/* TY_STR or TY_LONG: argument f of d as a context variable */
uint8_t ctx_type(const struct djp_ev_desc *d, int f);
bool pp_matches(const struct probe_point *pp, const struct djp_ev_desc *d);
/* Is object (a path the target gave) the file PATH names: the same path,
 * the same file after realpath, or for a bare name the same basename? */
bool same_object(const char *path, const char *object);
void add_global_display(struct script *sc);
const char *ty_name(int ty);

/* format.c: a printf format, parsed once at check time into literal runs
 * and conversions that run/print.c walks */
/* print_spec.flags and print_number's: lib/format.h's flags, two more for
 * the number layout */
enum {
	PRINT_LEFT = DJP_FMT_LEFT,
	PRINT_PLUS = DJP_FMT_PLUS,
	PRINT_SPACE = DJP_FMT_SPACE,
	PRINT_ALT = DJP_FMT_ALT,
	PRINT_ZERO = DJP_FMT_ZERO,
	PRINT_SIGN = 1u << 5,  /* a signed conversion */
	PRINT_LARGE = 1u << 6, /* %X */
};
struct print_spec {
	char conv; /* d i u x X o c s p b m M, or 0 for literal text */
	uint8_t flags;
	int width, prec;
	bool star_width, star_prec; /* '*': taken from the argument before */
	const char *lit;
	size_t litlen;
};
struct print_fmt {
	int nspecs, nargs;
	struct print_spec *spec;
};
/* parse a printf format at check time; NULL + *why on error */
struct print_fmt *print_fmt_parse(struct script *sc, const char *fmt, const char **why);

/* -p1: the script as the parser read it (after preproc.c) */
void print_script_tokens(const struct script *sc, FILE *out);
/* -p2: the globals, functions and the probe points each probe resolved to */
void print_elaborated(const struct script *sc, FILE *out);

#endif
