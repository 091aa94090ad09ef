/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report_fr.c - PyTorch's flight recorder dumps in `llmp report`'s page.
 *
 * The dumps are pickles (torch's DebugInfoWriter writes nothing else to a
 * file), which C has no business reading, so the Python package reads them:
 * `$LLMP_PYTHON -m llmp.fr DIR/fr --layout FILE --format html` (python3
 * when LLMP_PYTHON is unset; the package llmp must be importable, as `make
 * install` puts it). The layout file is the planner's JSON for the layout
 * the metrics records name, so the groups are the ones the job ran with.
 * Its output, a fragment of HTML it escapes itself, goes into the page.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llmp/llmp_json.h>
#include <llmp/llmp_plan.h>
#include <llmp/llmp_spec.h>

#include "llmp_cli.h"
#include "report_fr.h"
#include <llmp/llmp_env.h>

#define PROG "llmp report"

/* Whether dir holds a file named rank_<digits>, as torch names a dump. */
static bool has_dumps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d)) != NULL)
		found = strncmp(e->d_name, "rank_", 5) == 0 && e->d_name[5] &&
			strspn(e->d_name + 5, "0123456789") == strlen(e->d_name + 5);
	if (d)
		closedir(d);
	return found;
}

/* The record's canonical layout as the grammar takes it: without world= (not a key) and vpp=0 (unset). */
static void spec_text(const char *layout, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (const char *p = layout; *p;) {
		size_t item = strcspn(p, ",");
		bool skip = strncmp(p, "world=", 6) == 0 || (item == 5 && strncmp(p, "vpp=0", 5) == 0);
		if (!skip && n + item + 2 < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? "," : "", (int)item, p);
		p += item + (p[item] == ',');
	}
}

/* The planner's JSON of the layout (every group of every kind) into path. */
static int write_layout(const char *path, const char *layout, uint32_t world)
{
	char text[LLMP_SPEC_MAX_LEN + 64], msg[256];
	llmp_spec spec;
	llmp_plan *plan = NULL;
	spec_text(layout, text, sizeof text);
	if (llmp_spec_parse(text, &spec, msg, sizeof msg) != LLMP_OK ||
	    llmp_plan_create(&spec, world, 0, &plan, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": the records' layout '%s' on %u ranks: %s\n", cli_printable(layout),
			world, msg);
		return -1;
	}
	FILE *f = fopen(path, "w");
	int rc = f && llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, f) == LLMP_OK ? 0 : -1;
	if (f && fclose(f) != 0)
		rc = -1;
	llmp_plan_destroy(plan);
	if (rc)
		fprintf(stderr, PROG ": cannot write %s\n", cli_printable(path));
	return rc;
}

/* python -m llmp.fr FRDIR --layout LAYOUT --format html > out_path; its exit status, or -1. */
static int run_annotator(const char *python, const char *frdir, const char *layout, const char *out_path)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		execlp(python, python, "-m", "llmp.fr", frdir, "--layout", layout, "--format", "html",
		       (char *)NULL);
		fprintf(stderr, PROG ": cannot run %s: %s\n", cli_printable(python), strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int copy_into(FILE *out, const char *path)
{
	FILE *in = fopen(path, "r");
	char buf[8192];
	size_t n;
	if (!in)
		return -1;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	int rc = ferror(in) ? -1 : 0;
	fclose(in);
	return rc;
}

int cli_report_flight_recorder(FILE *out, const char *dir, const char *layout, uint32_t world,
			       const char *tmp_base)
{
	char frdir[4096], lay[4200], frag[4200];
	snprintf(frdir, sizeof frdir, "%s/fr", dir);
	if (!has_dumps(frdir))
		return 0;
	const char *python = getenv(LLMP_ENV_PYTHON);
	python = python && *python ? python : "python3";
	snprintf(lay, sizeof lay, "%s.layout", tmp_base);
	snprintf(frag, sizeof frag, "%s.fr", tmp_base);
	int rc = write_layout(lay, layout, world);
	int status = rc == 0 ? run_annotator(python, frdir, lay, frag) : -1;
	if (status == 0 && copy_into(out, frag) == 0) {
		rc = 0;
	} else {
		if (rc == 0) { /* two calls: cli_printable has one buffer */
			fprintf(stderr,
				PROG ": %s: the flight recorder dumps were not read: ", cli_printable(frdir));
			fprintf(stderr, "%s -m llmp.fr ended with %d\n", cli_printable(python), status);
		}
		fprintf(out, "<h2>Flight recorder</h2>\n<p>The dumps in <code>fr/</code> could not be read "
			     "(<code>llmp report</code> said why on its standard error).</p>\n");
		rc = -1;
	}
	unlink(lay);
	unlink(frag);
	return rc;
}
