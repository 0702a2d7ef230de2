# The marker ABI matrix: selftests/abi/abi_markers.c built as C and C++, by
# gcc and clang, as an executable, a PIE, a static executable and a shared
# library, at -O0 and -O2, plus the later C and C++ standards once each,
# into build/selftests/abi/COMPILER-STD-KIND-OPT.  test_markers_abi.c lists
# each one with djp and checks every site.  clang is a dependency of
# `make check` through this list.
DEB_PACKAGES_ABI := clang

ABI_DIR := $(O)/selftests/abi
ABI_SRC := selftests/abi/abi_markers.c
ABI_STAMP := $(ABI_DIR)/.deps-ok

abi_cc = $(if $(filter clang,$(1)),$(if $(filter c++%,$(2)),clang++,$(CLANG)),$(if $(filter c++%,$(2)),$(CXX),$(CC)))
abi_lang = $(if $(filter c++%,$(1)),-x c++,-x c)
abi_kind_exe := -fno-pie -no-pie
abi_kind_pie := -fPIE -pie
abi_kind_static := -static
abi_kind_shared := -fPIC -shared -DABI_SHARED

# abi_build(compiler, std, kind, opt)
define abi_build
ABI_BINS += $(ABI_DIR)/$(1)-$(2)-$(3)-$(4)
$(ABI_DIR)/$(1)-$(2)-$(3)-$(4): $(ABI_SRC) include/djprobe/marker.h | $(ABI_STAMP)
	$$(call msg,CC,$$@)
	$(Q)$(call abi_cc,$(1),$(2)) $(call abi_lang,$(2)) -std=$(2) -g -$(4) -Wall -Wextra -Werror -Iinclude $(abi_kind_$(3)) -o $$@ $$<
endef

ABI_BINS :=
$(foreach c,gcc clang,$(foreach s,gnu11 c++11,$(foreach k,exe pie static shared,$(foreach o,O0 O2,\
	$(eval $(call abi_build,$(c),$(s),$(k),$(o)))))))
$(foreach c,gcc clang,$(foreach s,gnu17 c11 c++17 c++20,$(eval $(call abi_build,$(c),$(s),pie,O2))))

$(ABI_STAMP): tools/check-deps.sh
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_ABI)
	$(Q)mkdir -p $(@D) && touch $@

# The test compiles snippets that must not compile, with the same compilers.
$(O)/selftests/test_markers_abi.o: CFLAGS += -DDJP_ABI_INCLUDE='"$(CURDIR)/include"' \
	-DDJP_ABI_CC='"$(CC)"' -DDJP_ABI_CXX='"$(CXX)"' -DDJP_ABI_CLANG='"$(CLANG)"'

CHECK_DEPS += $(ABI_BINS)
