# SPDX-License-Identifier: BSD-3-Clause
# packaging/local.mk - `make deb` and `make rpm` (included by Makefile.am;
# packaging/README.md). Both build from `make dist`'s tarball, or from
# DIST_TARBALL=FILE when given (scripts/test.sh passes distcheck's), and
# are built for the Slurm release configure found: it is in the packages'
# version, and the plugin package depends on that release.
EXTRA_DIST += packaging/README.md packaging/llmp.spec.in packaging/debian packaging/llmp.rpmlintrc \
	packaging/lintian.suppress tests/packages.bats

DIST_TARBALL =
DEB_DIR = packages/deb
RPM_DIR = packages/rpm
# extra configure flags inside the package builds (packaging/README.md)
LLMP_CONFIGURE_FLAGS = --without-cuda --without-nccl

# The tarball to package: DIST_TARBALL, or a fresh `make dist-gzip`.
package_tarball = t='$(DIST_TARBALL)'; \
	if test -z "$$t"; then $(MAKE) $(AM_MAKEFLAGS) dist-gzip && t=$(distdir).tar.gz; fi; \
	test -f "$$t" || { echo "make $@: no tarball $$t" >&2; exit 1; }; \
	t=`cd "\`dirname $$t\`" && pwd`/`basename $$t`

package_needs_slurm = @test -n '$(SLURM_RELEASE)' || { \
	echo "make $@: configure found no Slurm headers (slurm/spank.h): the packages need the plugin" >&2; exit 1; }

# Debian's version: the Slurm release in the upstream part (0.1.0+slurm22.05-1),
# since a dot in the Debian revision is reserved for non-maintainer uploads
deb_upstream = $(VERSION)+slurm$(SLURM_RELEASE)
deb_srcdir = $(PACKAGE)-$(deb_upstream)

deb:
	$(package_needs_slurm)
	@command -v dpkg-buildpackage >/dev/null || { echo "make deb: dpkg-buildpackage not found (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
	@$(package_tarball); set -e; \
	rm -rf $(DEB_DIR); $(MKDIR_P) $(DEB_DIR); \
	cp "$$t" $(DEB_DIR)/$(PACKAGE)_$(deb_upstream).orig.tar.gz; \
	tar -C $(DEB_DIR) -xzf "$$t"; \
	mv $(DEB_DIR)/$(distdir) $(DEB_DIR)/$(deb_srcdir); \
	cp -R $(DEB_DIR)/$(deb_srcdir)/packaging/debian $(DEB_DIR)/$(deb_srcdir)/debian; \
	{ echo "$(PACKAGE) ($(deb_upstream)-1) unstable; urgency=medium"; echo; \
	  echo "  * Built by make deb for Slurm $(SLURM_VERSION)."; echo; \
	  echo " -- llmp developers <llmp-devel@lists.llmp.dev>  `LC_ALL=C date -R`"; \
	} > $(DEB_DIR)/$(deb_srcdir)/debian/changelog; \
	echo "make deb: building in $(DEB_DIR)/$(deb_srcdir) for Slurm $(SLURM_VERSION)"; \
	cd $(DEB_DIR)/$(deb_srcdir) && LLMP_CONFIGURE_FLAGS='$(LLMP_CONFIGURE_FLAGS)' \
	  DEB_BUILD_OPTIONS="parallel=`nproc` $$DEB_BUILD_OPTIONS" dpkg-buildpackage -us -uc; \
	cd ..; ls -1 *.deb

rpm:
	$(package_needs_slurm)
	@command -v rpmbuild >/dev/null || { echo "make rpm: rpmbuild not found (apt-get install rpm)" >&2; exit 1; }
	@$(package_tarball); set -e; \
	rm -rf $(RPM_DIR); $(MKDIR_P) $(RPM_DIR)/SOURCES $(RPM_DIR)/SPECS; \
	cp "$$t" $(RPM_DIR)/SOURCES/; \
	sed -e 's|@VERSION[@]|$(VERSION)|g' -e 's|@SLURM_RELEASE[@]|$(SLURM_RELEASE)|g' \
	    -e 's|@SLURM_RELEASE_END[@]|$(SLURM_RELEASE_END)|g' -e 's|@SLURM_VERSION[@]|$(SLURM_VERSION)|g' \
	    -e "s|@SLURM_TAG[@]|`echo $(SLURM_RELEASE) | tr -d .`|g" -e "s|@RPM_DATE[@]|`LC_ALL=C date '+%a %b %d %Y'`|g" \
	    $(srcdir)/packaging/llmp.spec.in > $(RPM_DIR)/SPECS/llmp.spec; \
	echo "make rpm: building in $(RPM_DIR) for Slurm $(SLURM_VERSION) $(RPMBUILD_FLAGS)"; \
	rpmbuild -bb --define "_topdir `cd $(RPM_DIR) && pwd`" \
	  --define "llmp_configure_flags $(LLMP_CONFIGURE_FLAGS)" $(RPMBUILD_FLAGS) $(RPM_DIR)/SPECS/llmp.spec; \
	find $(RPM_DIR)/RPMS -name '*.rpm' | sort

.PHONY: deb rpm
