/*
 * User backtraces as SystemTap writes them (ubacktrace.c has the essay):
 * the stack a hit recorded, and addresses in hex strings, named from the
 * objects the process had mapped (usym.c).
 */
#ifndef DJP_SCRIPT_UBACKTRACE_H
#define DJP_SCRIPT_UBACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/djp/script/run/run.h"

/* How one address is written: the styles of stap's _stp_snprint_addr
 * that its user-space functions use. */
enum ubt_style {
	UBT_HEX,    /* ubacktrace(): "0x4005d2 " */
	UBT_FULL,   /* print_ubacktrace(): " 0x4005d2 : main+0x1a/0x50 [/path/obj]\n" */
	UBT_SIMPLE, /* sprint_ubacktrace(): "main+0x1a [obj]\n" */
	UBT_BRIEF,  /* print_ubacktrace_brief(): "main+0x1a\n" */
	UBT_DATA,   /* usymdata(): "main+0x1a/0x50 [/path/obj]" */
};

/* Address addr of process pid, appended to b in `style`. */
void ubt_addr(struct strbuf *b, int32_t pid, uint64_t addr, enum ubt_style style);

/* The n pcs of a stack, one after the other in `style`. */
void ubt_stack(struct strbuf *b, int32_t pid, const uint64_t *pcs, unsigned n, enum ubt_style style);

/* ucallers(depth): pcs[0..depth] in hex, space-separated (depth -1: all),
 * no longer than max bytes (whole addresses only).  False when the stack
 * ends before depth (stap's error), b then as far as it went. */
bool ubt_callers(struct strbuf *b, const uint64_t *pcs, unsigned n, int64_t depth, size_t max);

/* print_usyms(callers), sprint_usyms(callers): for each address of the
 * space-separated hex string, " TOKEN : usymdata\n"; at most max bytes
 * (whole lines only; 0: no bound). */
void ubt_usyms(struct strbuf *b, int32_t pid, const char *callers, size_t max);

#endif
