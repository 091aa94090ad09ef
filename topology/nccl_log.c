/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_log.c - NCCL's GPUDirect RDMA lines against llmp's prediction
 * (nccl_log.h). A line is found by its words, wherever NCCL's prefix
 * ("host:pid:tid [dev] NCCL INFO ") leaves it, so a log with or without
 * the prefix reads the same. Only the HCA side is compared: NCCL's line
 * says whether the HCA can register GPU memory (gdr_nic_capable), not
 * whether the path level allows it.
 */
#define _POSIX_C_SOURCE 200809L
#include "nccl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pci_path.h"

#define MARK " : GPU Direct RDMA "

/* Parse one line at s (up to end) into h; false when it is not an HCA line. */
static bool parse_line(const char *s, const char *end, struct nccl_log_hca *h)
{
	char line[512];
	size_t n = (size_t)(end - s);
	if (n >= sizeof line)
		return false;
	memcpy(line, s, n);
	line[n] = '\0';
	char *mark = strstr(line, MARK);
	if (!mark)
		return false;
	/* "NET/IB" just before the mark; NCCL's network name has no spaces. */
	char *net = mark;
	while (net > line && net[-1] != ' ')
		net--;
	if (strncmp(net, "NET/", 4) != 0 || (size_t)(mark - net - 4) >= sizeof h->net || mark == net + 4)
		return false;
	memset(h, 0, sizeof *h);
	memcpy(h->net, net + 4, (size_t)(mark - net - 4));
	char *p = mark + strlen(MARK);
	if (strncmp(p, "Enabled", 7) == 0) {
		h->enabled = true;
		p += 7;
	} else if (strncmp(p, "Disabled", 8) == 0) {
		p += 8;
	} else {
		return false;
	}
	if (strncmp(p, " for HCA ", 9) != 0)
		return false; /* "... for GPU r / HCA x": the per-connection line */
	p += 9;
	char *after;
	long idx = strtol(p, &after, 10);
	if (after == p || idx < 0 || idx > 1 << 20 || strncmp(after, " '", 2) != 0)
		return false;
	p = after + 2;
	char *q = strchr(p, '\'');
	if (!q || q == p || (size_t)(q - p) >= sizeof h->name)
		return false;
	memcpy(h->name, p, (size_t)(q - p));
	h->index = (int)idx;
	return true;
}

unsigned nccl_log_gdr_hcas(const char *text, size_t len, struct nccl_log_hca *out, unsigned max)
{
	unsigned n = 0;
	const char *end = text + len;
	for (const char *s = text; s < end;) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		struct nccl_log_hca h;
		if (parse_line(s, e, &h)) {
			unsigned i = 0;
			while (i < n && strcmp(out[i].name, h.name) != 0)
				i++;
			if (i < n)
				out[i] = h;
			else if (n < max)
				out[n++] = h;
		}
		s = e + 1;
	}
	return n;
}

/*
 * Only NCCL's IB network (InfiniBand and RoCE) names HCAs: with no IB
 * device NCCL 2.28 prints the same line for its socket network's
 * interfaces ("NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'",
 * seen on an H200 VM without an HCA).
 */
static bool is_ib(const struct nccl_log_hca *h)
{
	return strcmp(h->net, "IB") == 0;
}

static const struct nccl_log_hca *find(const struct nccl_log_hca *hcas, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (is_ib(&hcas[i]) && strcmp(hcas[i].name, name) == 0)
			return &hcas[i];
	return NULL;
}

/* NCCL's first non-IB interface when it named no IB one (it fell back to it), else NULL. */
static const struct nccl_log_hca *fallback(const struct nccl_log_hca *hcas, unsigned n)
{
	const struct nccl_log_hca *other = NULL;
	for (unsigned i = 0; i < n; i++) {
		if (is_ib(&hcas[i]))
			return NULL;
		if (!other)
			other = &hcas[i];
	}
	return other;
}

/* The comparison of one pair: "(agree)" or "(mismatch: why)". */
static const char *judge(const struct nccl_log_hca *line, const struct nccl_log_hca *socket,
			 const struct gdr_verdict *v, bool capable, bool *differs)
{
	*differs = true;
	if (!line) {
		if (v->reasons & GDR_R_NO_IBDEV) {
			*differs = false;
			return "(agree: no uverbs device, NCCL used sockets)";
		}
		if (socket)
			return "(mismatch: NCCL found no IB device and used its socket network; llmp saw uverbs)";
		return "(mismatch: NCCL named no such HCA: excluded by NCCL_IB_HCA, or not opened)";
	}
	if (line->enabled == capable) {
		*differs = false;
		return "(agree)";
	}
	return capable ? "(mismatch: llmp found a peer-memory module or dma-buf NCCL did not use)"
		       : "(mismatch: NCCL registers GPU memory by a means llmp did not find)";
}

void nccl_log_compare(const struct nccl_log_hca *hcas, unsigned nhcas, const struct topo_type *ty,
		      const struct gdr_node *facts, enum topo_path level, char *report, size_t len,
		      unsigned *pairs, unsigned *differ)
{
	size_t at = 0;
	if (len)
		report[0] = '\0';
	*pairs = *differ = 0;
	bool capable = gdr_nic_capable(facts);
	const struct nccl_log_hca *socket = fallback(hcas, nhcas);
	if (socket && at + 1 < len) {
		int k = snprintf(report + at, len - at,
				 "gdr NCCL: no IB device; NET/%s on %s (HCA %d): no GPUDirect RDMA\n",
				 socket->net, socket->name, socket->index);
		at = k < 0 || (size_t)k >= len - at ? len : at + (size_t)k;
	}
	for (unsigned g = 0; g < ty->ngpus; g++) {
		int h = topo_nccl_nearest_hca(ty, g, true);
		if (h < 0)
			continue;
		const struct topo_hca *hca = &ty->hcas[h];
		struct gdr_verdict v;
		char predicted[512], ncclsaid[TOPO_NAME_MAX + 48];
		gdr_pair_verdict(facts, &ty->gpus[g].pci, &hca->pci, level, &v);
		gdr_verdict_text(facts, &v, level, predicted, sizeof predicted);
		const struct nccl_log_hca *line = find(hcas, nhcas, hca->name);
		if (line)
			snprintf(ncclsaid, sizeof ncclsaid, "%s for %s (HCA %d)",
				 line->enabled ? "Enabled" : "Disabled", hca->name, line->index);
		else
			snprintf(ncclsaid, sizeof ncclsaid, "no IB line for %s", hca->name);
		bool differs;
		const char *verdict = judge(line, socket, &v, capable, &differs);
		(*pairs)++;
		*differ += differs;
		if (at + 1 >= len)
			continue;
		int k = snprintf(report + at, len - at, "gdr GPU %s / %s: predicted %s, NCCL: %s %s\n",
				 ty->gpus[g].pci.bus, hca->name, predicted, ncclsaid, verdict);
		at = k < 0 || (size_t)k >= len - at ? len : at + (size_t)k;
	}
	/* An HCA NCCL opened that llmp's discovery did not find: a hidden PCIe tree (a VM), a missed device. */
	for (unsigned i = 0; i < nhcas; i++) {
		if (!is_ib(&hcas[i]))
			continue;
		bool known = false;
		for (unsigned h = 0; h < ty->nhcas && !known; h++)
			known = strcmp(ty->hcas[h].name, hcas[i].name) == 0;
		if (known)
			continue;
		(*differ)++;
		if (at + 1 >= len)
			continue;
		int k = snprintf(
			report + at, len - at,
			"gdr NCCL: %s for %s (HCA %d), not an HCA of this node as llmp discovered it "
			"(mismatch)\n",
			hcas[i].enabled ? "Enabled" : "Disabled", hcas[i].name, hcas[i].index);
		at = k < 0 || (size_t)k >= len - at ? len : at + (size_t)k;
	}
}

bool nccl_log_file_name(const char *pattern, const char *host, long pid, char *out, size_t len)
{
	size_t at = 0, hlen = strcspn(host, ".");
	for (const char *c = pattern; *c; c++) {
		char piece[32];
		const char *add = piece;
		size_t n;
		if (c[0] != '%' || !c[1]) {
			piece[0] = *c;
			n = 1;
		} else if (c[1] == '%') {
			piece[0] = '%';
			n = 1;
			c++;
		} else if (c[1] == 'h') {
			add = host;
			n = hlen;
			c++;
		} else if (c[1] == 'p') {
			n = (size_t)snprintf(piece, sizeof piece, "%ld", pid);
			c++;
		} else {
			piece[0] = '%';
			piece[1] = c[1];
			n = 2;
			c++;
		}
		if (at + n >= len)
			return false;
		memcpy(out + at, add, n);
		at += n;
	}
	if (at >= len)
		return false;
	out[at] = '\0';
	return true;
}
