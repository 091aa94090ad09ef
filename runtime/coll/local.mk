# SPDX-License-Identifier: BSD-3-Clause
# runtime/coll/local.mk - the operations on a communicator (included by
# runtime/local.mk).
runtime_sources += \
	runtime/coll/coll.h runtime/coll/coll.c runtime/coll/allreduce.c \
	runtime/coll/reduce_scatter.c runtime/coll/allgather.c runtime/coll/broadcast.c \
	runtime/coll/barrier.c runtime/coll/agree.c runtime/coll/p2p.c \
	runtime/coll/shm.h runtime/coll/shm.c
