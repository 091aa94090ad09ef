# SPDX-License-Identifier: BSD-3-Clause
# runtime/comm/local.mk - the context and the way to the other ranks
# (included by runtime/local.mk).
runtime_sources += \
	runtime/comm/rt.h runtime/comm/rt.c runtime/comm/log.h runtime/comm/log.c runtime/comm/log_conf.c runtime/comm/abi.h runtime/comm/abi.c runtime/comm/memtype.h runtime/comm/memtype.c \
	runtime/comm/wireup.h runtime/comm/wireup.c \
	runtime/comm/node_topo.h runtime/comm/node_topo.c \
	runtime/comm/node_gdr.h runtime/comm/node_gdr.c \
	runtime/comm/transport.h runtime/comm/transport.c \
	runtime/comm/failure.h runtime/comm/failure.c \
	runtime/comm/liveness.h runtime/comm/liveness.c \
	runtime/comm/comm.c \
	runtime/comm/metrics.h runtime/comm/metrics.c \
	runtime/comm/idle.h
