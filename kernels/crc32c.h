/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of llmp's checkpoints.
 *
 * The polynomial of iSCSI, ext4 and Btrfs (0x1EDC6F41, reflected
 * 0x82F63B78), with the usual initial value and final XOR of 0xFFFFFFFF.
 * Incremental: crc = kern_crc32c(0, a, na); crc = kern_crc32c(crc, b, nb)
 * equals kern_crc32c(0, ab, na + nb). kern_crc32c(0, "123456789", 9) is
 * 0xE3069283.
 */
#ifndef LLMP_KERNELS_CRC32C_H
#define LLMP_KERNELS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue crc (0 to start) over len bytes of buf; buf may be NULL when len is 0. Thread-safe. */
uint32_t kern_crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * The CRC of A followed by B from crc_a = kern_crc32c(0, A, |A|),
 * crc_b = kern_crc32c(0, B, |B|) and len_b = |B|, without B's bytes
 * (crc32c_combine.c). O(log len_b).
 */
uint32_t kern_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif /* LLMP_KERNELS_CRC32C_H */
