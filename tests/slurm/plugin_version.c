/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_version.c - print what Slurm's plugin loader checks in a SPANK
 * plugin: its type and plugin_version (SLURM_VERSION_NUMBER of the headers
 * it was built with; Slurm compares it to its own under the mask 0xffff00).
 *
 *     plugin_version PLUGIN.so    ->  "spank 0x160508 22.05.8"
 *
 * The plugin's Slurm functions stay unresolved (RTLD_LAZY): none is called.
 * Exit 1, naming the culprit, if the file does not load or lacks a symbol.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	const unsigned int *version;
	const char *type;
	void *h;

	if (argc != 2) {
		fputs("usage: plugin_version PLUGIN.so\n", stderr);
		return 2;
	}
	h = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "plugin_version: %s\n", dlerror());
		return 1;
	}
	type = dlsym(h, "plugin_type");
	version = dlsym(h, "plugin_version");
	if (type == NULL || version == NULL) {
		fprintf(stderr, "plugin_version: %s: no plugin_type or plugin_version symbol\n", argv[1]);
		dlclose(h);
		return 1;
	}
	printf("%s 0x%06x %u.%02u.%u\n", type, *version, *version >> 16 & 0xffu, *version >> 8 & 0xffu,
	       *version & 0xffu);
	dlclose(h);
	return 0;
}
