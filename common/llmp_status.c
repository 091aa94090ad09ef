/* SPDX-License-Identifier: BSD-3-Clause */
/* llmp_status.c - text for each llmp_status, failure messages and the user text in them. */
#include <llmp/llmp_status.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fail.h"

const char *llmp_strerror(llmp_status status)
{
	switch (status) {
	case LLMP_OK: return "success";
	case LLMP_ERR_SPEC: return "invalid layout specification";
	case LLMP_ERR_LAYOUT: return "layout does not fit the job";
	case LLMP_ERR_RANGE: return "value out of range";
	case LLMP_ERR_ARG: return "invalid argument";
	case LLMP_ERR_NOMEM: return "out of memory";
	case LLMP_ERR_IO: return "input/output error";
	case LLMP_ERR_WIREUP: return "process wire-up (PMIx) failed";
	case LLMP_ERR_MISMATCH: return "ranks disagree";
	case LLMP_ERR_TRANSPORT: return "transport (UCX) error";
	case LLMP_ERR_TIMEOUT: return "operation timed out";
	case LLMP_ERR_PEER: return "peer failed";
	case LLMP_ERR_UNSUPPORTED: return "not supported by this build";
	case LLMP_ERR_STATE: return "handle unusable after an earlier failure";
	case LLMP_ERR_DEVICE: return "CUDA or NCCL failed";
	}
	return "unknown status";
}

llmp_status llmp_fail(llmp_status status, char *msg, size_t msglen, const char *fmt, ...)
{
	if (msg && msglen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, msglen, fmt, ap);
		va_end(ap);
		llmp_show_line(msg);
	}
	return status;
}

const char *llmp_show(char out[LLMP_SHOW_MAX], const char *s, size_t n)
{
	return llmp_show_in(out, LLMP_SHOW_MAX, s, n);
}

const char *llmp_show_in(char *out, size_t outlen, const char *s, size_t n)
{
	size_t i, k = n > outlen - 4 ? outlen - 4 : n;

	for (i = 0; i < k; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (k < n) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
	return out;
}

char *llmp_show_line(char *msg)
{
	for (unsigned char *p = (unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	return msg;
}
