/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.h - the device path's place in llmp_init and llmp_finalize
 * (llmp_device.h is its API).
 *
 * rt_device_prepare runs before init's one PMIx fence: it decides whether
 * the context uses NCCL (LLMP_DEVICE), loads it, and puts the unique id of
 * every group this rank is the lowest member of. rt_device_collect runs
 * after the fence and reads the ids of this rank's other groups from their
 * roots, values already local: no message.
 */
#ifndef LLMP_RT_DEVICE_H
#define LLMP_RT_DEVICE_H

#include "runtime/comm/rt.h"

llmp_status rt_device_prepare(llmp_ctx *ctx);
llmp_status rt_device_collect(llmp_ctx *ctx);
void rt_device_fini(llmp_ctx *ctx);

#endif /* LLMP_RT_DEVICE_H */
