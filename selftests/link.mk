# The source tree as test_shared_lib.c sees it: it reads djprobe.map,
# docs/ABI.md and the installed headers.
$(O)/selftests/test_shared_lib.o: CFLAGS += -DDJP_SRC_DIR='"$(CURDIR)"'
