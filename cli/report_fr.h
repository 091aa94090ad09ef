/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report_fr.h - the flight recorder section of `llmp report`'s page:
 * PyTorch's dumps in DIR/fr (rank_N, as the plugin names them) named with
 * llmp's groups and coordinates by `python3 -m llmp.fr` (python/llmp/fr.py).
 */
#ifndef LLMP_CLI_REPORT_FR_H
#define LLMP_CLI_REPORT_FR_H

#include <stdint.h>
#include <stdio.h>

/*
 * Append the section to out when DIR/fr holds dumps; nothing when it holds
 * none. layout is a metrics record's canonical layout, world the job's
 * size. tmp_base names the temporary files (the page's own temporary
 * name). 0 when there were no dumps or they were annotated; -1 when they
 * could not be (the page then says so, and stderr why).
 */
int cli_report_flight_recorder(FILE *out, const char *dir, const char *layout, uint32_t world,
			       const char *tmp_base);

#endif /* LLMP_CLI_REPORT_FR_H */
