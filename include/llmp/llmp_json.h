/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_json.h - the JSON layout document (format: doc/layout-json.md).
 *
 * One writer serves `llmp plan --format json` and the layout file the SPANK
 * plugin leaves for every task, so frameworks read one format.
 */
#ifndef LLMP_JSON_H
#define LLMP_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "llmp_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LLMP_JSON_VERSION 1
#define LLMP_JSON_ALL_RANKS UINT32_MAX

/*
 * Write the layout as one JSON object followed by a newline. With rank ==
 * LLMP_JSON_ALL_RANKS, "groups" holds every group of every kind (streamed,
 * O(world) per kind); otherwise it holds only the groups of that rank and the
 * document adds "rank" and "coords" (O(size of the rank's groups)).
 * Returns LLMP_ERR_IO if the stream reports an error.
 */
llmp_status llmp_plan_write_json(const llmp_plan *plan, uint32_t rank, FILE *out);

/*
 * The same document with "stage_layers": the decoder layers of each of the
 * plan's pp stages (stage_layers[0..pp)), when they are not Megatron's even
 * split: a pipeline over GPUs of different kinds (doc/step-model.md).
 * stage_layers NULL: exactly llmp_plan_write_json's document.
 */
llmp_status llmp_plan_write_json_stages(const llmp_plan *plan, uint32_t rank, const uint32_t *stage_layers,
					FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_JSON_H */
