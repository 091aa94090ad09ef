/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_fault.h - faults injected for the fault-tolerance tests.
 */
#ifndef MLP_FAULT_H
#define MLP_FAULT_H

#include <stdint.h>

#include "mlp_options.h"

/*
 * At the start of `step`, on world rank `rank`: hang (block forever,
 * answering nobody and ignoring stop requests) or crash (abort()), if asked
 * for that rank and step, and if this is the first run (restart 0) or the
 * faults fire always. Returns only when no fault fires.
 */
void mlp_fault_maybe(const mlp_faults *f, uint32_t rank, uint64_t restart, uint64_t step);

#endif /* MLP_FAULT_H */
