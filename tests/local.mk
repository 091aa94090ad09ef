# SPDX-License-Identifier: BSD-3-Clause
# tests/local.mk - the bats suites at the top of tests/ and their test doubles
# (included by Makefile.am; paths are from the top of the tree). The unit
# tests are in tests/unit/local.mk, the runtime's suites in tests/*/local.mk.


if HAVE_BATS
TESTS += tests/cli.bats tests/topo.bats tests/python.bats
# `llmp serve` alone, no Slurm, with the stand-in engine.
TESTS += tests/serve_local.bats
# The runtime's layers (scripts/check-layers.sh), and that the check fails when broken.
TESTS += tests/layers.bats
# The tree explains itself (scripts/check-docs.sh): no outside notes or issue
# numbers cited, no dangling doc pointers, every unit test in tests/README.md.
TESTS += tests/docs.bats
# `llmp info --settings`, and the table of settings held to the code and the man pages
# (scripts/check-settings.sh), and that the check fails when the table lacks a read.
TESTS += tests/info.bats
# The plugin against the headers of every Slurm release from 21.08 to 26.05,
# and `configure --with-slurm=DIR` with Slurm outside /usr.
TESTS += tests/slurm_releases.bats
if BUILD_RUNTIME
# llmp.pc under a prefix other than /usr.
TESTS += tests/pkgconfig.bats
endif
# A stand-in for libnvidia-ml.so.1, which tests/topo.bats has `llmp topo`
# load through LLMP_NVML_LIBRARY (tests/topology/fake_nvml.c).
check_LTLIBRARIES += tests/topology/fake_nvml.la
tests_topology_fake_nvml_la_SOURCES = tests/topology/fake_nvml.c
tests_topology_fake_nvml_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
# And one for libibverbs.so.1: the dma-buf probe of `llmp topo --gdr` (LLMP_IBVERBS_LIBRARY).
check_LTLIBRARIES += tests/topology/fake_ibverbs.la
tests_topology_fake_ibverbs_la_SOURCES = tests/topology/fake_ibverbs.c
tests_topology_fake_ibverbs_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
if BUILD_PLUGIN
# Starts a real three-node Slurm cluster; skipped (and counted so) without root.
TESTS += tests/cluster.bats
# The plugin against two plain users it makes (the attacks of plugin/README.md's rules).
TESTS += tests/security.bats
# MASTER_ADDR and the node's rank under cyclic and arbitrary distributions.
TESTS += tests/slurm_layouts.bats
# sbatch --export=NONE and --export=VAR,... with --llm-* options (Slurm 22.05).
TESTS += tests/slurm_export.bats
# The layout file under job_container/tmpfs (each job's own /tmp).
TESTS += tests/slurm_tmpfs.bats
# Serving jobs (--llm-serve, llmp serve) with a stand-in engine (tests/cluster/serve_engine.py).
TESTS += tests/serve.bats
if BUILD_RUNTIME
# llmp.checkpoint (Python, over libllmp) on the same cluster.
TESTS += tests/python_cluster.bats
# Checkpoints and requeues on the same cluster with a GlusterFS volume of its own.
TESTS += tests/distfs.bats
endif
endif
endif
check_PROGRAMS += tests/slurm/plugin_version
tests_slurm_plugin_version_SOURCES = tests/slurm/plugin_version.c
tests_slurm_plugin_version_LDADD = -ldl
EXTRA_DIST += tests/slurm_releases.bats tests/pkgconfig.bats tests/slurm/headers tests/slurm/README.md tests/slurm/add-release.sh
EXTRA_DIST += tests/cli.bats tests/lib/helpers.bash tests/cluster.bats tests/security.bats tests/README.md \
	tests/slurm_layouts.bats tests/slurm_export.bats tests/slurm_tmpfs.bats \
	tests/unit/README.md tests/lib/README.md bench/README.md
EXTRA_DIST += tests/layers.bats tests/docs.bats tests/serve.bats tests/serve_local.bats tests/info.bats

# What the plugin's task check reads through NVML, printed (scripts/gpu-run.sh runs it on a GPU).
check_PROGRAMS += tests/gpu/nvml_probe
tests_gpu_nvml_probe_SOURCES = tests/gpu/nvml_probe.c
tests_gpu_nvml_probe_LDADD = topology/discover/libdiscover.la $(LLMP_PLANNER_LIBS)
