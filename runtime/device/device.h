/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.h - the device path's place in llmp_init and llmp_finalize
 * (llmp_device.h is its API).
 *
 * rt_device_prepare runs before init's one PMIx fence: it decides whether
 * the context uses NCCL (LLMP_DEVICE), loads it, and puts the unique id of
 * every group this rank is the lowest member of. rt_device_collect runs
 * after the fence and reads the ids of this rank's other groups from their
 * roots, values already local: no message. rt_device_leave makes
 * llmp_finalize collective while the device path's watchdog runs.
 */
#ifndef LLMP_RT_DEVICE_H
#define LLMP_RT_DEVICE_H

#include "runtime/comm/rt.h"

llmp_status rt_device_prepare(llmp_ctx *ctx);
llmp_status rt_device_collect(llmp_ctx *ctx);
/* Before rt_device_fini: with the watchdog on, wait for every rank to be leaving too (device.c). */
void rt_device_leave(llmp_ctx *ctx);
void rt_device_fini(llmp_ctx *ctx);

#endif /* LLMP_RT_DEVICE_H */
