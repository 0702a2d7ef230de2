/*
 * libFuzzer target for the parsers of untrusted marker data: the `.markers`
 * record parser, the SDT note parser and the argument-location parser.  The
 * first byte picks the parser, the rest is the input.  Beyond "no crash, no
 * sanitizer report" it checks the contracts: an error leaves no list and one
 * line of message naming the object; a success gives markers whose fields
 * are in range; and a parsed location, formatted and parsed again, is the
 * same location (the round trip).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/markers.h"

#define MUST(c) ((c) ? (void)0 : abort())

static void check_result(int ret, struct djp_marker_list *l, const char *err)
{
	if (ret) {
		MUST(ret < 0 && l == NULL);
		MUST(!strncmp(err, "fuzz: ", 6) && !strchr(err, '\n'));
		return;
	}
	MUST(l != NULL);
	for (size_t i = 0; i < l->count; i++) {
		const struct djp_marker_info *m = &l->v[i];
		MUST(m->name && m->args && m->format && m->nargs <= DJP_MARKER_MAX_ARGS);
		MUST(m->site_len == (m->from_sdt ? 1 : 6));
		for (unsigned k = 0; k < m->nargs; k++)
			MUST(m->arg[k].size == 1 || m->arg[k].size == 2 || m->arg[k].size == 4 || m->arg[k].size == 8);
		(void)strlen(m->name);
		(void)strlen(m->args);
		(void)strlen(m->format);
	}
	djp_marker_list_free(l);
}

static void round_trip(const char *s)
{
	struct djp_argloc loc[DJP_MARKER_MAX_ARGS], again;
	const char *why;
	int n = djp_argloc_parse_all(s, loc, DJP_MARKER_MAX_ARGS, NULL, NULL, &why);
	/* A symbol is printed whole, so the text can be as long as the input. */
	size_t sz = strlen(s) + 64;
	char *buf = malloc(sz);
	MUST(buf);
	for (int i = 0; i < n; i++) {
		int len = djp_argloc_format(&loc[i], buf, sz);
		MUST(len > 0 && (size_t)len < sz);
		MUST(djp_argloc_parse(buf, (size_t)len, &again, NULL, NULL, &why) == 0);
		MUST(again.kind == loc[i].kind && again.size == loc[i].size && again.is_signed == loc[i].is_signed);
		MUST(again.disp == loc[i].disp);
		if (loc[i].kind == DJP_LOC_REG)
			MUST(again.reg == loc[i].reg && again.reg_shift == loc[i].reg_shift);
		if (loc[i].kind == DJP_LOC_MEM)
			MUST(again.reg == loc[i].reg && again.index == loc[i].index && again.scale == loc[i].scale);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct djp_marker_list *l = (void *)1;
	char err[256] = "";
	int ret;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		ret = djp_markers_parse_section(data + 1, size - 1, 0x1000, "fuzz", &l, err, sizeof(err));
		check_result(ret, l, err);
		break;
	case 1:
		ret = djp_markers_parse_sdt_notes(data + 1, size - 1, "fuzz", &l, err, sizeof(err));
		check_result(ret, l, err);
		break;
	default: {
		char *s = malloc(size);
		MUST(s);
		memcpy(s, data + 1, size - 1);
		s[size - 1] = 0;
		round_trip(s);
		free(s);
		break;
	}
	}
	return 0;
}
