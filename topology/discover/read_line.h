/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read_line.h - the one way discovery reads a sysfs or procfs attribute:
 * its first line, newline dropped (sysfs.c, gdr_read.c). Not installed.
 */
#ifndef LLMP_DISCOVER_READ_LINE_H
#define LLMP_DISCOVER_READ_LINE_H

#include <stdbool.h>
#include <stddef.h>

/* The first line of the file at path into buf (len bytes, cut to fit); false when it cannot be read. */
bool discover_read_line(const char *path, char *buf, size_t len);

#endif /* LLMP_DISCOVER_READ_LINE_H */
