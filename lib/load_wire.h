/*
 * A load program on the wire (LOADS, lib/proto.h): written by the tool,
 * read and checked by the agent (lib/load_prog.c).
 */
#ifndef DJP_LIB_LOAD_WIRE_H
#define DJP_LIB_LOAD_WIRE_H

#include "lib/load_prog.h"
#include "lib/proto.h"

void djp_load_put(struct djp_pbuf *b, const struct djp_load_prog *p);
/* 0, -EPROTO when the payload ends early, -EINVAL for a program
 * djp_load_check refuses. */
int djp_load_get(struct djp_preader *r, struct djp_load_prog *p);

#endif
