/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ck_check.h - the checkpoint test program (tests/ckpt.bats): a synthetic
 * model saved and loaded through llmp_ckpt, whose every value is a function
 * of its global index and of the step, so each rank computes what it must
 * read back by itself (tests/ckpt/check_view.py uses the same formulas).
 * Its names start with cc_: ck_ is the runtime's internal prefix, and this
 * program sees only libllmp's public API.
 */
#ifndef CK_CHECK_H
#define CK_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp.h>
#include <llmp/llmp_ckpt.h>
#include "tests/lib/report.h"

#define CC_MAX_STEPS 1024
#define CC_MAX_MSGS 4

typedef struct cc_args {
	const char *root;
	const char *spec; /* --parallel, else $LLMP_TEST_SPEC, else the plugin's */
	uint64_t steps[CC_MAX_STEPS];
	size_t nsteps;
	unsigned keep;
	unsigned files;                      /* llmp_ckpt_opts.files: --files rank|node */
	uint64_t step;                       /* load: LLMP_CKPT_NEWEST unless --step */
	uint64_t expect_step;                /* load: UINT64_MAX unless --expect-step */
	int expect_fail;                     /* load: -1, or the status the load must fail with */
	const char *expect_msg[CC_MAX_MSGS]; /* ... and words its message must hold */
	size_t nmsgs;
	unsigned big; /* adds big/w, 48*big rows of 1024 float32 */
	double timeout_s;
	bool sync_exit; /* --sync-exit 1: a world barrier before llmp_finalize */
	bool async;     /* --async 1: save with llmp_ckpt_save_async */
} cc_args;

/* Reporting: report.h. */
const char *cc_status_name(llmp_status st);
int cc_status_from_name(const char *name);

/* A call that must fail with `want` and a message holding every word of msgs. */
bool cc_expect_fail(llmp_ctx *ctx, llmp_status got, llmp_status want, const char *what,
		    const char *const *msgs, size_t nmsgs);

llmp_status cc_init(const cc_args *args, llmp_ctx **ctx);
/* llmp_finalize, after a world barrier with --sync-exit 1 (the barrier's failure is a check). */
void cc_finalize(const cc_args *args, llmp_ctx *ctx);

/* Element values: exact in their type, the same formulas as check_view.py. */
enum cc_tensor_id { CC_W_ROW, CC_W_COL, CC_W_COL_BF16, CC_BIAS, CC_EMB_U8, CC_NORM_F16, CC_BIG, CC_NTENSORS };
void cc_value(int id, llmp_dtype dtype, uint64_t g, uint64_t step, void *out);
uint16_t cc_float_to_half(float f);

int cc_cmd_save(const cc_args *args);
int cc_cmd_load(const cc_args *args);
int cc_cmd_badargs(const cc_args *args);
int cc_cmd_mismatch(const cc_args *args);

#endif /* CK_CHECK_H */
