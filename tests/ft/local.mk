# SPDX-License-Identifier: BSD-3-Clause
# tests/ft/local.mk - fault-tolerance tests (included by Makefile.am inside
# `if BUILD_RUNTIME`).
#
# tests/job_end.bats checks `llmp job-end` against run records it writes
# itself (no cluster). tests/ft.bats runs examples/mlp_train through
# etc/examples/mlp-train.sbatch on the local three-node Slurm cluster and
# interrupts it: scontrol requeue, scancel --signal, one rank signalled, a
# node killed, a shrink, a hung rank, a crash loop, and the story of
# scripts/demo.sh. tests/demo_report.bats checks the demo's timeline and
# verdict (scripts/demo/report.py) on outputs it writes itself (no cluster).
# tests/preempt.bats preempts the same job for real (preempt/partition_prio,
# PreemptMode=REQUEUE, GraceTime) on a cluster with two more partitions.
if HAVE_BATS
TESTS += tests/job_end.bats tests/demo_report.bats
if BUILD_PLUGIN
TESTS += tests/ft.bats tests/preempt.bats
endif
endif
EXTRA_DIST += tests/job_end.bats tests/demo_report.bats tests/ft.bats tests/preempt.bats tests/ft/compare_traces.py tests/ft/mlp_log.py
