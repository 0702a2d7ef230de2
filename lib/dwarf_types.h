/*
 * Types from DWARF (lib/dwarf_types.c), for the parameter reader
 * (lib/func_params.c, lib/param_locs.c) and the arch's calling convention
 * (arch/x86/call_conv.c), with the reasons they give for a value that is
 * unavailable.
 */
#ifndef DJP_LIB_DWARF_TYPES_H
#define DJP_LIB_DWARF_TYPES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reasons for an unavailable value (struct djp_param's why). */
#define DJP_WHY_OPTIMIZED "optimized out"
#define DJP_WHY_NOLOC "no location at this address"
#define DJP_WHY_COMPLEX "location too complex"
#define DJP_WHY_VECTOR "passed in a vector register"
#define DJP_WHY_FLOAT "floating-point value"
#define DJP_WHY_WIDE "wider than 8 bytes"
#define DJP_WHY_STRUCT "struct passed by value"
#define DJP_WHY_AFTER_STRUCT "after a struct passed by value"
#define DJP_WHY_AFTER_MEM "after a parameter passed by value in memory"
#define DJP_WHY_TYPE "type not supported"
#define DJP_WHY_AFTER_TYPE "after a parameter of an unsupported type"
#define DJP_WHY_RET "return type of unknown convention"
#define DJP_WHY_NOTYPE "no type information"
#define DJP_WHY_AFTER_INT128 "after a 128-bit integer the compiler passes against the ABI"

#define DJP_TYPE_MAX 256	/* longest type spelling kept; longer ones are cut */
#define DJP_DWARF_DEPTH_MAX 16	/* nesting of types and scopes followed */

/* The DIE an attribute refers to (DW_AT_type, say), through abstract
 * origins and specifications. */
bool djp_dwarf_ref_attr(Dwarf_Die *die, unsigned name, Dwarf_Die *out);
/* An unsigned constant attribute (sizes, encodings, bounds), through
 * abstract origins. */
bool djp_dwarf_udata_attr(Dwarf_Die *die, unsigned name, Dwarf_Word *v);
/* The type under typedefs and qualifiers, which change neither how a
 * value is passed nor how it reads; false for a qualified void. */
bool djp_dwarf_peel(Dwarf_Die *type, Dwarf_Die *out);
/* The element count of an array type, over all its dimensions; false
 * when a dimension has no bound (a flexible array member). */
bool djp_dwarf_array_count(Dwarf_Die *arr, uint64_t *count);
/* The spelling of type t (NULL: void) as SystemTap's -L spells it, cut at
 * sz bytes. */
void djp_type_spell(Dwarf_Die *t, char *out, size_t sz);

#endif
