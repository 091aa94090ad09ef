/* SPDX-License-Identifier: BSD-3-Clause */
/* copy.c - large copies with non-temporal stores (copy.h). */
#include "copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h> /* SSE2: every x86-64 CPU has it */

void kern_copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (n < KERN_STREAM_MIN) {
		memcpy(d, s, n);
		return;
	}
	/* Up to the first 16-byte boundary of dst by memcpy; then 64 bytes (a cache line) a step. */
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s),
			b = _mm_loadu_si128((const __m128i *)(s + 16)),
			c = _mm_loadu_si128((const __m128i *)(s + 32)),
			e = _mm_loadu_si128((const __m128i *)(s + 48));
		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, n);
	_mm_sfence(); /* streaming stores are weakly ordered */
}

#else

void kern_copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
	memcpy(dst, src, n);
}

#endif
