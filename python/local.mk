# SPDX-License-Identifier: BSD-3-Clause
# python/local.mk - the Python package llmp
# (included by Makefile.am; paths are from the top of the tree).

# The Python package llmp (python/, pure Python, python/README.md). `make
# install` copies it into the site directory of configure's python3 under
# $(prefix) (scripts/python-sitedir.py), or into pythondir=DIR when given.
# Its tests run in tests/python.bats, with the venv of scripts/python-env.sh.
python_package = python/llmp/__init__.py python/llmp/layout.py python/llmp/torch.py \
	python/llmp/_libllmp.py python/llmp/checkpoint.py python/llmp/job.py python/llmp/fr.py python/llmp/dcp.py \
	python/llmp/export.py
EXTRA_DIST += $(python_package) python/pyproject.toml python/README.md python/llmp/README.md python/requirements-test.txt \
	python/requirements-deepspeed.txt python/requirements-ray.txt \
	python/tests/conftest.py python/tests/dist_worker.py python/tests/test_layout.py \
	python/tests/test_torch.py python/tests/test_checkpoint.py python/tests/test_job.py python/tests/test_fr.py \
	python/tests/test_megatron.py python/tests/test_dcp.py \
	python/tests/test_export.py python/tests/llama_tp.py python/tests/README.md tests/distfs.bats tests/ckpt/common.bash \
	python/bench_checkpoint.py python/bench_groups.py python/bench_export.py \
	tests/python.bats tests/python_cluster.bats
pythondir =
python_sitedir = d='$(pythondir)'; test -n "$$d" || \
	d=`'$(PYTHON3)' '$(srcdir)/scripts/python-sitedir.py' '$(prefix)'` && test -n "$$d"

install-data-local:
	@if test -z '$(pythondir)' && test -z '$(PYTHON3)'; then \
	  echo "make install: configure found no python3, so the Python package llmp is not installed"; \
	else \
	  $(python_sitedir) || { echo "make install: no site directory for the Python package llmp"; exit 1; }; \
	  echo " $(MKDIR_P) '$(DESTDIR)'$$d/llmp"; \
	  $(MKDIR_P) "$(DESTDIR)$$d/llmp" || exit 1; \
	  for f in $(python_package); do \
	    echo " $(INSTALL_DATA) $(srcdir)/$$f '$(DESTDIR)'$$d/llmp"; \
	    $(INSTALL_DATA) "$(srcdir)/$$f" "$(DESTDIR)$$d/llmp" || exit 1; \
	  done; \
	fi

uninstall-local:
	@if test -n '$(pythondir)$(PYTHON3)'; then \
	  $(python_sitedir) || exit 1; \
	  for f in $(python_package); do \
	    rm -f "$(DESTDIR)$$d/llmp/`basename $$f`"; \
	  done; \
	  rmdir "$(DESTDIR)$$d/llmp" 2>/dev/null || :; \
	fi

