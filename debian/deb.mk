# make deb: the Debian packages djprobe, libdjprobe-dev and djprobe-dkms,
# built by dpkg-buildpackage from debian/ in a copy of the tree under
# $(O)/deb/src (the worktree stays clean; the copy leaves $(O) and .git
# out), written to $(O)/deb/, and checked by lintian, which must report no
# error.  make check builds them when a packaged file changed (about a
# minute on two cores: the copy builds the library and djp again) and its
# deb_* tests unpack and use them (selftests/test_deb.c).
DEB_PACKAGES_DEB := dpkg-dev debhelper dh-dkms dkms lintian
DEB_DIR := $(O)/deb
DEB_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
DEB_CHANGES := $(DEB_DIR)/djprobe_$(DEB_VERSION)_amd64.changes
DEB_INPUTS := $(shell find debian include lib kernel arch kmod tools docs/man selftests/kcheck/host \
	-type f 2>/dev/null) Makefile djprobe.map djprobe.pc.in

$(DEB_CHANGES): $(DEB_INPUTS)
	$(Q)tools/check-deps.sh $(DEB_PACKAGES) $(DEB_PACKAGES_DEB)
	$(call msg,DEB,$(DEB_DIR))
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	$(Q)tar -c --exclude=./$(O) --exclude=./.git . | tar -x -C $(DEB_DIR)/src
	$(Q)cd $(DEB_DIR)/src && DEB_BUILD_OPTIONS="parallel=2 nocheck" \
		dpkg-buildpackage -us -uc -b >../build.log 2>&1 \
		|| { tail -n 30 ../build.log; echo "deb: dpkg-buildpackage failed; its log is $(DEB_DIR)/build.log"; exit 1; }

deb: $(DEB_CHANGES)
	$(call msg,LINTIAN,$(DEB_CHANGES))
	$(Q)lintian --fail-on error $(DEB_CHANGES)

.PHONY: deb

# make check installs what the deb_* tests use (dkms and modinfo; kernel.sh
# installs Debian's kernel headers), and builds the packages first.
CHECK_DEPS += $(DEB_CHANGES)
DEB_PACKAGES_CHECK += $(DEB_PACKAGES_DEB)
$(O)/selftests/test_deb.o: CFLAGS += -DDJP_SRC_DIR='"$(CURDIR)"' \
	-DDJP_DEB_CHANGES='"../deb/djprobe_$(DEB_VERSION)_amd64.changes"'
