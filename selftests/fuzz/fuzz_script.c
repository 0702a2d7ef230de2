/*
 * libFuzzer target: arbitrary bytes as a probe script, through the lexer,
 * the parser, probe point resolution against a fixed set of markers and the
 * semantic checker.  Nothing runs; every error path must return cleanly and
 * release what it allocated.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/djp/script/run/run.h"

static struct djp_ev_desc descs[3];
static struct djp_source src;
static FILE *devnull;

static void setup(void)
{
	static const char *const names[3] = { "net_rx", "tick", "free" };
	static const char *const fmts[3] = { "len=%d skb=%p name=%s", "%d", "" };
	for (unsigned i = 0; i < 3; i++) {
		descs[i].id = i;
		descs[i].name = names[i];
		descs[i].format = fmts[i];
		descs[i].object = "/usr/bin/myprog";
		djp_format_parse(fmts[i], &descs[i].fmt, NULL);
		descs[i].nargs = i == 2 ? 2 : descs[i].fmt.nfields;
	}
	src.descs = descs;
	src.ndescs = 3;
	devnull = fopen("/dev/null", "w");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script sc;
	char *text;

	if (!devnull)
		setup();
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	memset(&sc, 0, sizeof(sc));
	sc.file.name = "<fuzz>";
	sc.file.text = text;
	sc.err = devnull;
	if (!parse_script(&sc) && !resolve_probes(&sc, &src) && !check_script(&sc))
		bind_fields(&sc);
	script_release(&sc);
	free(text);
	return 0;
}
