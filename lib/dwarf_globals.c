/*
 * Global and file-static variables, found in an object's DWARF by name
 * and the unit they are defined in, as SystemTap's @var("name@file.c")
 * names them.
 *
 * A variable defined at a unit's top level with a fixed address has a
 * location of one DW_OP_addr (its link-time address; the loader adds the
 * object's bias).  A definition may say only where it is and refer to its
 * declaration for the rest (DW_AT_specification: a global declared in a
 * header), so its name and type are read through that; a declaration
 * alone (an extern) has no location and is passed over, as is a variable
 * in thread-local storage (DW_OP_form_tls_address), which has no one
 * address.  The unit is chosen by the ending of its name, path component
 * by component ("t.c" is "src/t.c" but not "at.c"); without one, the
 * first unit that defines the name.  The types read are those a word
 * holds: integers, bools, enums and pointers, through typedefs and
 * qualifiers (lib/dwarf_types.c).
 */
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/dwarf_globals.h"
#include "lib/dwarf_types.h"
#include "lib/errline.h"
#include "lib/func_params.h"
#include "lib/func_params_int.h"

/* Does unit name `cu` end with `file`, component by component? */
static bool unit_is(const char *cu, const char *file)
{
	size_t n = strlen(cu), k = strlen(file);
	if (!file[0])
		return true;
	if (k > n || strcmp(cu + n - k, file))
		return false;
	return k == n || cu[n - k - 1] == '/';
}

/* A fixed address: one DW_OP_addr. */
static bool fixed_addr(Dwarf_Die *var, uint64_t *addr)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr(var, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) || n != 1 ||
	    ops[0].atom != DW_OP_addr)
		return false;
	*addr = ops[0].number;
	return true;
}

/* The word's reading of the variable's type: 0, or -ENOTSUP with its
 * spelling in out->type. */
static int word_type(Dwarf_Die *var, struct djp_global *out)
{
	Dwarf_Die t, p;
	Dwarf_Word size = 0, enc = 0;

	if (!djp_dwarf_ref_attr(var, DW_AT_type, &t)) {
		snprintf(out->type, sizeof(out->type), "void");
		return -ENOTSUP;
	}
	djp_type_spell(&t, out->type, sizeof(out->type));
	if (!djp_dwarf_peel(&t, &p))
		return -ENOTSUP;
	switch (dwarf_tag(&p)) {
	case DW_TAG_pointer_type:
		out->size = 8;
		out->is_signed = false;
		return 0;
	case DW_TAG_base_type:
		if (!djp_dwarf_udata_attr(&p, DW_AT_encoding, &enc) ||
		    (enc != DW_ATE_signed && enc != DW_ATE_signed_char && enc != DW_ATE_unsigned &&
		     enc != DW_ATE_unsigned_char && enc != DW_ATE_boolean))
			return -ENOTSUP;
		out->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
		break;
	case DW_TAG_enumeration_type: {
		Dwarf_Die u, up;
		/* signed unless its underlying type says otherwise */
		out->is_signed = true;
		if (djp_dwarf_ref_attr(&p, DW_AT_type, &u) && djp_dwarf_peel(&u, &up) &&
		    djp_dwarf_udata_attr(&up, DW_AT_encoding, &enc))
			out->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
		break;
	}
	default:
		return -ENOTSUP;
	}
	if (!djp_dwarf_udata_attr(&p, DW_AT_byte_size, &size) || (size != 1 && size != 2 && size != 4 && size != 8))
		return -ENOTSUP;
	out->size = (unsigned)size;
	return 0;
}

bool djp_global_die(struct Dwarf *dw, const char *name, const char *file, void *die_out, uint64_t *addr)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dw && !dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu, d;
		const char *cuname;
		if (dwarf_offdie(dw, off + hsize, &cu) && (cuname = dwarf_diename(&cu)) &&
		    unit_is(cuname, file ? file : "") && dwarf_child(&cu, &d) == 0) {
			do {
				Dwarf_Attribute na;
				const char *n;
				if (dwarf_tag(&d) != DW_TAG_variable ||
				    !(n = dwarf_formstring(dwarf_attr_integrate(&d, DW_AT_name, &na))) || strcmp(n, name) ||
				    !fixed_addr(&d, addr))
					continue;
				*(Dwarf_Die *)die_out = d;
				return true;
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
	return false;
}

/* The variable in one DWARF: 0, -ENOENT, or -ENOTSUP (found, not read). */
static int find_in(Dwarf *dw, const char *name, const char *file, struct djp_global *out)
{
	Dwarf_Die d;

	if (!djp_global_die(dw, name, file, &d, &out->addr))
		return -ENOENT;
	return word_type(&d, out);
}

int djp_global_find(const char *path, const char *name, const char *file, struct djp_global *out, char *err,
		    size_t errsz)
{
	struct djp_params_file *pf;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = djp_params_open(path, &pf, err, errsz)))
		return ret;
	ret = find_in(pf->own.dw, name, file ? file : "", out);
	if (ret == -ENOENT && pf->dbg.dw)
		ret = find_in(pf->dbg.dw, name, file ? file : "", out);
	djp_params_close(pf);
	if (ret == -ENOENT && file && file[0])
		return djp_errline(err, errsz, ret, path, "no variable '%s' at the top of a unit named %s", name, file);
	if (ret == -ENOENT)
		return djp_errline(err, errsz, ret, path, "no variable '%s' at the top of any unit", name);
	if (ret == -ENOTSUP)
		return djp_errline(err, errsz, ret, path, "'%s' is a %s: @var reads integers, enums and pointers", name,
				   out->type);
	return 0;
}
