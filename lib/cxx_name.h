/*
 * C++ functions by the names a probe gives them (lib/cxx_name.c).
 */
#ifndef DJP_LIB_CXX_NAME_H
#define DJP_LIB_CXX_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* The qualified name of the function an Itanium mangled symbol names
 * ("shop::Cart::total" of _ZN4shop4Cart5totalEv, "checkout" of
 * _Z8checkoutRN4shop4CartEi), into buf, and in *base (when not NULL) its
 * own name, the last component; false for a symbol that is not mangled
 * or whose name this does not read. */
bool djp_cxx_name(const char *sym, char *buf, size_t sz, const char **base);

/* Does glob (not itself a mangled name) name the C++ function sym: with
 * "::", its qualified name, else its own name, matched by match (0: a
 * match, as fnmatch returns). */
bool djp_cxx_glob_match(const char *glob, const char *sym, int (*match)(const char *glob, const char *name));

#endif
