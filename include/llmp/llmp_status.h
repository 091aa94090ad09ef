/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_status.h - the status every fallible llmp call returns.
 *
 * A status says what kind of failure happened; the text that names the
 * culprit (which key, which numbers) goes to the caller's message buffer,
 * because only the failing call knows it.
 */
#ifndef LLMP_STATUS_H
#define LLMP_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum llmp_status {
	LLMP_OK = 0,
	LLMP_ERR_SPEC,   /* the layout text does not follow the grammar */
	LLMP_ERR_LAYOUT, /* a well-formed layout that does not fit the world */
	LLMP_ERR_RANGE,  /* a rank, index or count outside what exists */
	LLMP_ERR_ARG,    /* a NULL pointer or a buffer too small */
	LLMP_ERR_NOMEM,
	LLMP_ERR_IO,
	/* Runtime (libllmp) failures. */
	LLMP_ERR_WIREUP,      /* PMIx: no launcher data, or a put/get/fence failed */
	LLMP_ERR_MISMATCH,    /* ranks disagree (layout, world size, collective arguments) */
	LLMP_ERR_TRANSPORT,   /* UCX reported an error */
	LLMP_ERR_TIMEOUT,     /* a peer did not answer within the operation timeout */
	LLMP_ERR_PEER,        /* a peer failed or was reported failed by another rank */
	LLMP_ERR_UNSUPPORTED, /* valid, but not done by this build (e.g. device memory) */
	LLMP_ERR_STATE,       /* the handle cannot be used any more (after a failure) */
	LLMP_ERR_DEVICE       /* CUDA or NCCL failed (no GPU, no driver, an NCCL error) */
} llmp_status;

/* A short, static description of a status; never NULL. */
const char *llmp_strerror(llmp_status status);

/* Room for any message the planner writes; buffers of this size never truncate. */
#define LLMP_MSG_MAX 512

#ifdef __cplusplus
}
#endif

#endif /* LLMP_STATUS_H */
