/*
 * The functions a function point names in one object: its glob, and the
 * source qualifier of function("GLOB@FILE:LINE") (func_points.c).
 */
#ifndef DJP_SCRIPT_FUNC_POINTS_H
#define DJP_SCRIPT_FUNC_POINTS_H

#include "lib/func_params.h"
#include "lib/func_symbols.h"

/* fn gets each function, its source (NULL where the object has no DWARF
 * for it) and the object's open DWARF (NULL without); a non-zero return
 * stops the walk. */
typedef int (*func_point_fn)(void *ctx, const struct djp_func *f, const struct djp_func_source *src,
			     struct djp_params_file *pf);

/* Every function of the object at `path` that `spec` ("GLOB" or
 * "GLOB@FILE:LINE") names, in address order: how many, or -errno with
 * one line in err. */
int func_points_each(const char *path, const char *spec, func_point_fn fn, void *ctx, char *err, size_t errsz);

struct probe_point;
/* A function point's object: its PATH, else the program of process pid,
 * with symbolic links resolved (malloc'd), or NULL with errno.  And its
 * spec for func_points_each: the glob after "func:", without "%return". */
char *func_point_object(const struct probe_point *pp, int32_t pid);
void func_point_spec(const struct probe_point *pp, char *buf, size_t sz);
/* The glob of site i of a statement point (pp->names[i]): "func:NAME+0xOFF",
 * with the object when the point names one; malloc'd. */
char *func_point_line_glob(const struct probe_point *pp, unsigned i);

#endif
