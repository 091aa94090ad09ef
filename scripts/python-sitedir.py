#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""python-sitedir.py - where `make install` puts the Python package llmp:
the pure-Python site directory of the Python running this, under PREFIX.

    python3 scripts/python-sitedir.py PREFIX

As automake's AM_PATH_PYTHON computes it, except that Debian's posix_local
scheme (which puts /usr/local/lib/pythonX.Y/dist-packages on the path) is
kept for a PREFIX of /usr/local and its likes, so that `import llmp` works
there after `make install`."""
import sys
import sysconfig

if len(sys.argv) != 2 or not sys.argv[1].startswith("/"):
    sys.exit("usage: python-sitedir.py PREFIX (an absolute path)")
prefix = sys.argv[1].rstrip("/") or "/"
get_scheme = getattr(sysconfig, "get_default_scheme", None) or sysconfig._get_default_scheme
scheme = get_scheme()
base = prefix
if scheme == "posix_local":
    # '{base}/local/lib/python3.N/dist-packages': base /usr for prefix /usr/local
    if prefix.endswith("/local"):
        base = prefix[: -len("/local")] or "/"
    else:
        scheme = "posix_prefix"
print(sysconfig.get_path("purelib", scheme, vars={"base": base, "platbase": base}))
