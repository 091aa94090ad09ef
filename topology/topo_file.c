/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_file.c - a topology file read and checked (doc/topology-json.md).
 *
 * Every message names the file, the line and the key: a site that writes
 * its cluster by hand must find its mistake without reading this code.
 * Nothing is taken on trust that a later step would trip on: names are
 * bounded and printable, bus ids well formed and unique in their node,
 * NUMA nodes in range, NVLink peers GPUs of the same node, every host
 * once, every switch once with one parent at most and no cycle.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"
#include "common/hostlist.h"
#include "common/json_read.h"
#include "common/open_regular.h"
#include "topology/gpu_desc.h"

struct checker {
	const char *name; /* the file, for messages */
	char *msg;
	size_t len;
	llmp_status status;
};

static bool bad(struct checker *c, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool bad(struct checker *c, unsigned line, const char *fmt, ...)
{
	char what[400];
	va_list ap;
	if (c->status != LLMP_OK)
		return false;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	c->status = llmp_fail(LLMP_ERR_ARG, c->msg, c->len, "%s:%u: %s", c->name, line, what);
	return false;
}

static bool no_memory(struct checker *c)
{
	if (c->status == LLMP_OK)
		c->status = llmp_fail(LLMP_ERR_NOMEM, c->msg, c->len, "%s: out of memory", c->name);
	return false;
}

/* Every key of object v is one of allowed (NULL-terminated); where names v in messages. */
static bool known_keys(struct checker *c, const struct json_value *v, const char *where,
		       const char *const *allowed)
{
	char shown[LLMP_SHOW_MAX];
	for (size_t i = 0; i < v->n; i++) {
		const char *key = v->members[i].key;
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(key, *a) == 0;
		if (!ok)
			return bad(c, v->members[i].value.line, "%s: unknown key \"%s\"", where,
				   llmp_show(shown, key, strlen(key)));
	}
	return true;
}

static bool is_kind(struct checker *c, const struct json_value *v, enum json_kind kind, const char *where,
		    const char *key)
{
	if (v->kind == kind)
		return true;
	return bad(c, v->line, "%s: \"%s\" must be %s, not %s", where, key, json_kind_name(kind),
		   json_kind_name(v->kind));
}

/* Key of object obj as an integer in [min, max]; absent: *out untouched, false if required. */
static bool get_int(struct checker *c, const struct json_value *obj, const char *key, const char *where,
		    bool required, long long min, long long max, long long *out)
{
	const struct json_value *v = json_get(obj, key);
	if (!v)
		return required ? bad(c, obj->line, "%s: \"%s\" is missing", where, key) : true;
	if (!is_kind(c, v, JSON_NUMBER, where, key))
		return false;
	if (!v->integer || v->int64 < min || v->int64 > max)
		return bad(c, v->line, "%s: \"%s\" must be an integer from %lld to %lld", where, key, min,
			   max);
	*out = v->int64;
	return true;
}

/*
 * Key of obj as a string of 1..max bytes, pointed to in *out (absent: *out
 * untouched, false if required); with charset, only those characters
 * (NULL: any printable ASCII).
 */
static bool get_text(struct checker *c, const struct json_value *obj, const char *key, const char *where,
		     bool required, const char *charset, size_t max, const char **out)
{
	char shown[LLMP_SHOW_MAX];
	const struct json_value *v = json_get(obj, key);
	if (!v)
		return required ? bad(c, obj->line, "%s: \"%s\" is missing", where, key) : true;
	if (!is_kind(c, v, JSON_STRING, where, key))
		return false;
	size_t n = strlen(v->string);
	if (n == 0 || n > max)
		return bad(c, v->line, "%s: \"%s\" must have 1 to %zu bytes", where, key, max);
	for (size_t i = 0; i < n; i++) {
		char ch = v->string[i];
		bool ok = charset ? strchr(charset, ch) != NULL : ch >= 0x20 && ch < 0x7f;
		if (!ok || ch == '\0')
			return bad(c, v->line, "%s: \"%s\" = \"%s\": '%c' is not allowed there", where, key,
				   llmp_show(shown, v->string, n), ch >= 0x20 && ch < 0x7f ? ch : '?');
	}
	*out = v->string;
	return true;
}

/* get_text copied into out[cap]. */
static bool get_string(struct checker *c, const struct json_value *obj, const char *key, const char *where,
		       bool required, const char *charset, char *out, size_t cap)
{
	const char *s = NULL;
	if (!get_text(c, obj, key, where, required, charset, cap - 1, &s))
		return false;
	if (s)
		memcpy(out, s, strlen(s) + 1);
	return true;
}

#define NAME_CHARS TOPO_NAME_CHARS

/*
 * A host list is bounded by the file alone: what topo_write_json writes for
 * a cluster whose names do not count (login1,gw,...) grows with its hosts.
 */
#define LIST_CHARS NAME_CHARS "[],"
#define LIST_MAX TOPO_FILE_MAX

bool topo_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n < TOPO_NAME_MAX && strspn(s, NAME_CHARS) == n;
}

bool topo_bus_id(const char *s)
{
	static const char form[] = "xxxx:xx:xx.f";
	if (strlen(s) != sizeof form - 1)
		return false;
	for (size_t i = 0; form[i]; i++) {
		char ch = s[i];
		if (form[i] == 'x' && !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
		if (form[i] == 'f' && !(ch >= '0' && ch <= '7'))
			return false;
		if ((form[i] == ':' || form[i] == '.') && ch != form[i])
			return false;
	}
	return true;
}

static bool get_bus(struct checker *c, const struct json_value *obj, const char *key, const char *where,
		    bool required, char out[TOPO_BUS_MAX])
{
	if (!get_string(c, obj, key, where, required, "0123456789abcdef:.", out, TOPO_BUS_MAX))
		return false;
	if (out[0] && !topo_bus_id(out))
		return bad(c, json_get(obj, key)->line,
			   "%s: \"%s\" = \"%s\" is not a PCI address dddd:bb:dd.f", where, key, out);
	return true;
}

/* bus, numa and pcie of a GPU or an HCA. */
static bool read_pci(struct checker *c, const struct json_value *obj, const char *where, unsigned numa_nodes,
		     bool bus_required, struct topo_pci *pci)
{
	long long numa = -1;
	pci->numa = -1;
	if (!get_bus(c, obj, "bus", where, bus_required, pci->bus) ||
	    !get_int(c, obj, "numa", where, false, -1, (long long)numa_nodes - 1, &numa))
		return false;
	pci->numa = (int)numa;
	const struct json_value *chain = json_get(obj, "pcie");
	if (!chain)
		return true;
	if (!is_kind(c, chain, JSON_ARRAY, where, "pcie"))
		return false;
	if (chain->n > TOPO_PCIE_MAX)
		return bad(c, chain->line, "%s: \"pcie\" lists more than %d bridges", where, TOPO_PCIE_MAX);
	for (size_t i = 0; i < chain->n; i++) {
		const struct json_value *b = &chain->items[i];
		if (b->kind != JSON_STRING || !topo_bus_id(b->string))
			return bad(c, b->line, "%s: \"pcie\" item %zu is not a PCI address dddd:bb:dd.f",
				   where, i);
		snprintf(pci->pcie[i], TOPO_BUS_MAX, "%s", b->string);
	}
	pci->npcie = (unsigned)chain->n;
	return true;
}

static int by_bus(const void *a, const void *b)
{
	return strcmp(((const struct topo_gpu *)a)->pci.bus, ((const struct topo_gpu *)b)->pci.bus);
}

static bool read_gpu(struct checker *c, const struct json_value *v, const char *type, unsigned i,
		     unsigned numa_nodes, struct topo_gpu *g)
{
	static const char *const keys[] = { "bus",    "numa",    "pcie",   "model", "uuid",
					    "nvlink", "nvlinks", "domain", NULL };
	char where[TOPO_NAME_MAX + 64];
	snprintf(where, sizeof where, "node type %s: gpu %u", type, i);
	if (v->kind != JSON_OBJECT)
		return bad(c, v->line, "%s must be an object", where);
	long long links = 0;
	if (!known_keys(c, v, where, keys) || !read_pci(c, v, where, numa_nodes, true, &g->pci) ||
	    !get_string(c, v, "model", where, false, NULL, g->model, sizeof g->model) ||
	    !get_string(c, v, "uuid", where, false, NAME_CHARS, g->uuid, sizeof g->uuid) ||
	    !get_int(c, v, "nvlinks", where, false, 0, 64, &links) ||
	    !get_string(c, v, "domain", where, false, NAME_CHARS, g->domain, sizeof g->domain))
		return false;
	g->nvlinks = (unsigned)links;
	const struct json_value *nv = json_get(v, "nvlink");
	if (!nv) {
		g->nvlink = TOPO_NVLINK_UNKNOWN;
	} else if (nv->kind == JSON_STRING && strcmp(nv->string, "none") == 0) {
		g->nvlink = TOPO_NVLINK_NONE;
	} else if (nv->kind == JSON_STRING && strcmp(nv->string, "nvswitch") == 0) {
		g->nvlink = TOPO_NVLINK_SWITCH;
	} else if (nv->kind == JSON_ARRAY) {
		g->nvlink = TOPO_NVLINK_PEERS;
		if (nv->n && !(g->peers = calloc(nv->n, sizeof *g->peers)))
			return no_memory(c);
		for (size_t k = 0; k < nv->n; k++) {
			const struct json_value *p = &nv->items[k];
			if (p->kind != JSON_STRING || !topo_bus_id(p->string))
				return bad(c, p->line, "%s: \"nvlink\" item %zu is not a PCI address", where,
					   k);
			snprintf(g->peers[k], TOPO_BUS_MAX, "%s", p->string);
		}
		g->npeers = (unsigned)nv->n;
	} else {
		return bad(c, nv->line,
			   "%s: \"nvlink\" must be \"none\", \"nvswitch\" or an array of bus ids", where);
	}
	return true;
}

static bool read_port(struct checker *c, const struct json_value *v, const char *where, struct topo_port *p)
{
	static const char *const keys[] = { "port", "state", "gbps", "link", "netdev", "subnet", NULL };
	long long port = 0, gbps = 0;
	if (v->kind != JSON_OBJECT)
		return bad(c, v->line, "%s: a port must be an object", where);
	if (!known_keys(c, v, where, keys) || !get_int(c, v, "port", where, true, 1, 255, &port) ||
	    !get_string(c, v, "state", where, true, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_", p->state,
			sizeof p->state) ||
	    !get_int(c, v, "gbps", where, false, 0, 100000, &gbps) ||
	    !get_string(c, v, "link", where, false, NAME_CHARS, p->link, sizeof p->link) ||
	    !get_string(c, v, "netdev", where, false, NAME_CHARS, p->netdev, sizeof p->netdev) ||
	    !get_string(c, v, "subnet", where, false, "0123456789abcdef:", p->subnet, sizeof p->subnet))
		return false;
	if (p->subnet[0] && !topo_subnet_valid(p->subnet))
		return bad(c, json_get(v, "subnet")->line,
			   "%s: \"subnet\" must be a GID prefix such as \"fe80:0000:0000:0000\"", where);
	if (p->link[0] && strcmp(p->link, "InfiniBand") && strcmp(p->link, "Ethernet"))
		return bad(c, json_get(v, "link")->line,
			   "%s: \"link\" must be \"InfiniBand\" or \"Ethernet\"", where);
	p->port = (unsigned)port;
	p->gbps = (unsigned)gbps;
	return true;
}

static bool read_hca(struct checker *c, const struct json_value *v, const char *type, unsigned i,
		     unsigned numa_nodes, struct topo_hca *h)
{
	static const char *const keys[] = { "name", "bus", "numa", "pcie", "ports", NULL };
	char where[TOPO_NAME_MAX * 2 + 64];
	snprintf(where, sizeof where, "node type %s: hca %u", type, i);
	if (v->kind != JSON_OBJECT)
		return bad(c, v->line, "%s must be an object", where);
	if (!known_keys(c, v, where, keys) ||
	    !get_string(c, v, "name", where, true, NAME_CHARS, h->name, sizeof h->name))
		return false;
	snprintf(where, sizeof where, "node type %s: hca %s", type, h->name);
	if (!read_pci(c, v, where, numa_nodes, false, &h->pci))
		return false;
	const struct json_value *ports = json_get(v, "ports");
	if (!ports)
		return bad(c, v->line, "%s: \"ports\" is missing", where);
	if (!is_kind(c, ports, JSON_ARRAY, where, "ports"))
		return false;
	if (ports->n > 64)
		return bad(c, ports->line, "%s: more than 64 ports", where);
	if (ports->n && !(h->ports = calloc(ports->n, sizeof *h->ports)))
		return no_memory(c);
	for (size_t k = 0; k < ports->n; k++) {
		if (!read_port(c, &ports->items[k], where, &h->ports[k]))
			return false;
		h->nports++;
		for (size_t j = 0; j < k; j++)
			if (h->ports[j].port == h->ports[k].port)
				return bad(c, ports->items[k].line, "%s: port %u listed twice", where,
					   h->ports[k].port);
	}
	return true;
}

/* No two devices of one node type share a bus id; NVLink peers are GPUs of the node, not the GPU itself. */
static bool check_type_devices(struct checker *c, const struct json_value *v, struct topo_type *t)
{
	const struct json_value *gv = json_get(v, "gpus"), *hv = json_get(v, "hcas");
	for (unsigned i = 0; i < t->ngpus; i++)
		for (unsigned j = 0; j < i; j++)
			if (strcmp(t->gpus[i].pci.bus, t->gpus[j].pci.bus) == 0)
				return bad(c, gv->line, "node type %s: two GPUs at %s", t->name,
					   t->gpus[i].pci.bus);
	for (unsigned i = 0; i < t->nhcas; i++) {
		for (unsigned j = 0; j < i; j++)
			if (strcmp(t->hcas[i].name, t->hcas[j].name) == 0 ||
			    (t->hcas[i].pci.bus[0] && strcmp(t->hcas[i].pci.bus, t->hcas[j].pci.bus) == 0))
				return bad(c, hv->items[i].line,
					   "node type %s: hca %s has the name or bus of hca %s", t->name,
					   t->hcas[i].name, t->hcas[j].name);
		for (unsigned j = 0; j < t->ngpus; j++)
			if (t->hcas[i].pci.bus[0] && strcmp(t->hcas[i].pci.bus, t->gpus[j].pci.bus) == 0)
				return bad(c, hv->items[i].line,
					   "node type %s: hca %s is at the bus of a GPU (%s)", t->name,
					   t->hcas[i].name, t->gpus[j].pci.bus);
	}
	for (unsigned i = 0; i < t->ngpus; i++) {
		const struct topo_gpu *g = &t->gpus[i];
		for (unsigned k = 0; k < g->npeers; k++) {
			bool found = false;
			for (unsigned j = 0; j < t->ngpus && !found; j++)
				found = j != i && strcmp(t->gpus[j].pci.bus, g->peers[k]) == 0;
			if (!found)
				return bad(
					c, gv->line,
					"node type %s: GPU %s: NVLink peer %s is not another GPU of the node",
					t->name, g->pci.bus, g->peers[k]);
		}
	}
	return true;
}

/* "gpu": what the step model takes for this type's GPUs, a --gpu text checked by its own parser. */
static bool read_type_gpu(struct checker *c, const struct json_value *v, const char *where,
			  struct topo_type *t)
{
	if (!get_string(c, v, "gpu", where, false, NULL, t->gpu, sizeof t->gpu))
		return false;
	struct gpu_desc g;
	char why[LLMP_MSG_MAX];
	if (t->gpu[0] && gpu_desc_parse(t->gpu, &g, why, sizeof why) != LLMP_OK)
		return bad(c, json_get(v, "gpu")->line, "%s: \"gpu\": %s", where, why);
	return true;
}

static bool read_type(struct checker *c, const struct json_member *m, struct topo_type *t)
{
	static const char *const keys[] = { "numa_nodes", "gpus", "hcas", "gpu", NULL };
	const struct json_value *v = &m->value;
	char where[TOPO_NAME_MAX + 16], shown[LLMP_SHOW_MAX];
	size_t n = strlen(m->key);
	if (!topo_name_ok(m->key))
		return bad(c, v->line,
			   "node type \"%s\": a name is 1 to %d bytes of letters, digits, '.', '_', '-'",
			   llmp_show(shown, m->key, n), TOPO_NAME_MAX - 1);
	snprintf(t->name, sizeof t->name, "%s", m->key);
	snprintf(where, sizeof where, "node type %s", t->name);
	if (v->kind != JSON_OBJECT)
		return bad(c, v->line, "%s must be an object", where);
	long long numa = 0;
	if (!known_keys(c, v, where, keys) || !get_int(c, v, "numa_nodes", where, true, 1, 1024, &numa))
		return false;
	t->numa_nodes = (unsigned)numa;
	if (!read_type_gpu(c, v, where, t))
		return false;
	const struct json_value *gv = json_get(v, "gpus"), *hv = json_get(v, "hcas");
	if (gv && !is_kind(c, gv, JSON_ARRAY, where, "gpus"))
		return false;
	if (hv && !is_kind(c, hv, JSON_ARRAY, where, "hcas"))
		return false;
	if ((gv && gv->n > 1024) || (hv && hv->n > 1024))
		return bad(c, v->line, "%s: more than 1024 GPUs or HCAs", where);
	if (gv && gv->n && !(t->gpus = calloc(gv->n, sizeof *t->gpus)))
		return no_memory(c);
	if (hv && hv->n && !(t->hcas = calloc(hv->n, sizeof *t->hcas)))
		return no_memory(c);
	/* Counted before they are read, so topo_free frees what a failure left half read. */
	for (size_t i = 0; gv && i < gv->n; i++)
		if (t->ngpus++, !read_gpu(c, &gv->items[i], t->name, (unsigned)i, t->numa_nodes, &t->gpus[i]))
			return false;
	for (size_t i = 0; hv && i < hv->n; i++)
		if (t->nhcas++, !read_hca(c, &hv->items[i], t->name, (unsigned)i, t->numa_nodes, &t->hcas[i]))
			return false;
	if (!check_type_devices(c, v, t))
		return false;
	/* The order CUDA numbers them in with CUDA_DEVICE_ORDER=PCI_BUS_ID. */
	if (t->ngpus)
		qsort(t->gpus, t->ngpus, sizeof *t->gpus, by_bus);
	return true;
}

/* ------------------------------------------------------ hosts by name */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct topo_name_index *)a)->name, ((const struct topo_name_index *)b)->name);
}

void topo_names_sort(struct topo_name_index *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof *v, by_name);
}

long topo_names_find(const struct topo_name_index *v, size_t n, const char *name)
{
	struct topo_name_index key = { .name = name };
	const struct topo_name_index *hit = n ? bsearch(&key, v, n, sizeof *v, by_name) : NULL;
	return hit ? (long)hit->index : -1;
}

static bool read_nodes(struct checker *c, const struct json_value *nodes, struct topo *t,
		       struct topo_name_index **sorted)
{
	static const char *const keys[] = { "hosts", "type", "domain", NULL };
	size_t cap = 0;
	for (size_t i = 0; i < nodes->n; i++) {
		const struct json_value *v = &nodes->items[i];
		char where[48], type[TOPO_NAME_MAX], domain[TOPO_NAME_MAX] = "";
		const char *hosts = NULL;
		snprintf(where, sizeof where, "nodes item %zu", i);
		if (v->kind != JSON_OBJECT)
			return bad(c, v->line, "%s must be an object", where);
		if (!known_keys(c, v, where, keys) ||
		    !get_text(c, v, "hosts", where, true, LIST_CHARS, LIST_MAX, &hosts) ||
		    !get_string(c, v, "type", where, true, NAME_CHARS, type, sizeof type) ||
		    !get_string(c, v, "domain", where, false, NAME_CHARS, domain, sizeof domain))
			return false;
		unsigned k = 0;
		while (k < t->ntypes && strcmp(t->types[k].name, type))
			k++;
		if (k == t->ntypes)
			return bad(c, json_get(v, "type")->line, "%s: no node type \"%s\" in node_types",
				   where, type);
		char **names, why[LLMP_MSG_MAX];
		size_t n;
		llmp_status st = hostlist_expand(hosts, TOPO_HOSTS_MAX - t->nnodes, &names, &n, why,
						 sizeof why);
		if (st != LLMP_OK) {
			if (st == LLMP_ERR_NOMEM)
				return no_memory(c);
			return bad(c, json_get(v, "hosts")->line, "%s: %s", where, why);
		}
		if (t->nnodes + n > cap) {
			size_t more = (t->nnodes + n) * 2;
			struct topo_node *grown = realloc(t->nodes, more * sizeof *grown);
			if (!grown) {
				hostlist_free(names, n);
				return no_memory(c);
			}
			t->nodes = grown;
			cap = more;
		}
		for (size_t h = 0; h < n; h++) {
			struct topo_node *node = &t->nodes[t->nnodes++];
			memset(node, 0, sizeof *node);
			snprintf(node->host, sizeof node->host, "%s", names[h]);
			snprintf(node->domain, sizeof node->domain, "%s", domain);
			node->type = k;
			node->leaf = -1;
		}
		hostlist_free(names, n);
	}
	if (!(*sorted = malloc((t->nnodes ? t->nnodes : 1) * sizeof **sorted)))
		return no_memory(c);
	for (size_t i = 0; i < t->nnodes; i++)
		(*sorted)[i] = (struct topo_name_index){ .name = t->nodes[i].host, .index = i };
	topo_names_sort(*sorted, t->nnodes);
	for (size_t i = 1; i < t->nnodes; i++)
		if (strcmp((*sorted)[i].name, (*sorted)[i - 1].name) == 0)
			return bad(c, nodes->line, "nodes: host %s is listed twice", (*sorted)[i].name);
	return true;
}

/* Switches: names first (they may be named before they are defined), then the links. */
/*
 * No switch is its own ancestor. Each chain of parents is walked once: a
 * switch is marked while its chain is walked and settled after, so a walk
 * stops at the first settled switch (linear, where walking every chain to
 * its root is quadratic in a long chain) and meeting a marked one is a cycle.
 */
static bool no_cycle(struct checker *c, unsigned line, const struct topo *t)
{
	enum { UNSEEN, WALKING, SETTLED };
	unsigned char *state = calloc(t->nswitches ? t->nswitches : 1, 1);
	bool ok = state != NULL;
	if (!ok)
		return bad(c, line, "switches: out of memory");
	for (size_t i = 0; ok && i < t->nswitches; i++) {
		long at = (long)i;
		while (at >= 0 && state[at] == UNSEEN) {
			state[at] = WALKING;
			at = t->switches[at].parent;
		}
		if (at >= 0 && state[at] == WALKING)
			ok = bad(c, line, "switches: switch %s is in a cycle", t->switches[at].name);
		for (at = (long)i; at >= 0 && state[at] == WALKING; at = t->switches[at].parent)
			state[at] = SETTLED;
	}
	free(state);
	return ok;
}

static bool read_switches(struct checker *c, const struct json_value *sw, struct topo *t,
			  const struct topo_name_index *hosts)
{
	static const char *const keys[] = { "name", "nodes", "switches", NULL };
	struct topo_name_index *names = NULL;
	bool ok = true;
	if (sw->n && !(t->switches = calloc(sw->n, sizeof *t->switches)))
		return no_memory(c);
	for (size_t i = 0; ok && i < sw->n; i++) {
		const struct json_value *v = &sw->items[i];
		char where[48];
		snprintf(where, sizeof where, "switches item %zu", i);
		if (v->kind != JSON_OBJECT)
			return bad(c, v->line, "%s must be an object", where);
		struct topo_switch *s = &t->switches[i];
		ok = known_keys(c, v, where, keys) &&
		     get_string(c, v, "name", where, true, NAME_CHARS, s->name, sizeof s->name);
		if (ok && !json_get(v, "nodes") == !json_get(v, "switches"))
			ok = bad(c, v->line, "switch %s: give either \"nodes\" or \"switches\"", s->name);
		s->parent = -1;
		s->leaf = json_get(v, "nodes") != NULL;
		t->nswitches++;
	}
	if (ok && !(names = malloc((sw->n ? sw->n : 1) * sizeof *names)))
		return no_memory(c);
	for (size_t i = 0; ok && i < sw->n; i++)
		names[i] = (struct topo_name_index){ .name = t->switches[i].name, .index = i };
	if (ok)
		topo_names_sort(names, sw->n);
	for (size_t i = 1; ok && i < sw->n; i++)
		if (strcmp(names[i].name, names[i - 1].name) == 0)
			ok = bad(c, sw->line, "switches: switch %s is defined twice", names[i].name);
	for (size_t i = 0; ok && i < sw->n; i++) {
		const struct json_value *v = &sw->items[i];
		struct topo_switch *s = &t->switches[i];
		const char *key = s->leaf ? "nodes" : "switches";
		char where[TOPO_NAME_MAX + 16], **members, why[LLMP_MSG_MAX];
		const char *list = NULL;
		size_t n;
		snprintf(where, sizeof where, "switch %s", s->name);
		if (!get_text(c, v, key, where, true, LIST_CHARS, LIST_MAX, &list)) {
			ok = false;
			break;
		}
		unsigned line = json_get(v, key)->line;
		llmp_status st = hostlist_expand(list, TOPO_HOSTS_MAX, &members, &n, why, sizeof why);
		if (st != LLMP_OK) {
			ok = st == LLMP_ERR_NOMEM ? no_memory(c) : bad(c, line, "%s: %s", where, why);
			break;
		}
		for (size_t k = 0; ok && k < n; k++) {
			long at = topo_names_find(s->leaf ? hosts : names, s->leaf ? t->nnodes : sw->n,
						  members[k]);
			if (at < 0)
				ok = bad(c, line, "%s: %s %s is not in %s", where,
					 s->leaf ? "host" : "switch", members[k],
					 s->leaf ? "nodes" : "switches");
			else if (s->leaf && t->nodes[at].leaf >= 0)
				ok = bad(c, line, "%s: host %s is under switch %s already", where, members[k],
					 t->switches[t->nodes[at].leaf].name);
			else if (s->leaf)
				t->nodes[at].leaf = (long)i;
			else if (t->switches[at].parent >= 0)
				ok = bad(c, line, "%s: switch %s is under switch %s already", where,
					 members[k], t->switches[t->switches[at].parent].name);
			else if ((size_t)at == i)
				ok = bad(c, line, "%s: a switch cannot hold itself", where);
			else
				t->switches[at].parent = (long)i;
		}
		hostlist_free(members, n);
	}
	free(names);
	return ok && no_cycle(c, sw->line, t);
}

static bool read_root(struct checker *c, const struct json_value *root, struct topo *t)
{
	static const char *const keys[] = {
		"llmp_topology", "source", "node_types", "nodes", "switches", NULL
	};
	const char *where = "the document";
	struct topo_name_index *hosts = NULL;
	if (root->kind != JSON_OBJECT)
		return bad(c, root->line, "a topology is a JSON object, not %s", json_kind_name(root->kind));
	long long version = 0;
	if (!known_keys(c, root, where, keys) ||
	    !get_int(c, root, "llmp_topology", where, true, 0, 1000000, &version))
		return false;
	if (version != TOPO_VERSION)
		return bad(c, json_get(root, "llmp_topology")->line,
			   "\"llmp_topology\": version %lld; this llmp reads version %d", version,
			   TOPO_VERSION);
	t->version = (unsigned)version;
	const struct json_value *source = json_get(root, "source");
	if (source) {
		if (!is_kind(c, source, JSON_STRING, where, "source"))
			return false;
		if (!(t->source = strdup(source->string)))
			return no_memory(c);
	}
	const struct json_value *types = json_get(root, "node_types"), *nodes = json_get(root, "nodes"),
				*sw = json_get(root, "switches");
	if (!types)
		return bad(c, root->line, "\"node_types\" is missing");
	if (!nodes)
		return bad(c, root->line, "\"nodes\" is missing");
	if (!is_kind(c, types, JSON_OBJECT, where, "node_types") ||
	    !is_kind(c, nodes, JSON_ARRAY, where, "nodes") ||
	    (sw && !is_kind(c, sw, JSON_ARRAY, where, "switches")))
		return false;
	if (types->n > 4096)
		return bad(c, types->line, "more than 4096 node types");
	if (types->n && !(t->types = calloc(types->n, sizeof *t->types)))
		return no_memory(c);
	for (size_t i = 0; i < types->n; i++)
		if (t->ntypes++, !read_type(c, &types->members[i], &t->types[i]))
			return false;
	bool ok = read_nodes(c, nodes, t, &hosts) && (!sw || read_switches(c, sw, t, hosts));
	free(hosts);
	return ok;
}

llmp_status topo_read_text(const char *text, size_t n, const char *name, struct topo *t, char *msg,
			   size_t len)
{
	struct checker c = { .name = name, .msg = msg, .len = len };
	struct json_value root;
	char why[LLMP_MSG_MAX];
	memset(t, 0, sizeof *t);
	llmp_status st = json_parse(text, n, &root, why, sizeof why);
	if (st != LLMP_OK)
		return llmp_fail(st, msg, len, "%s:%s", name, why + (strncmp(why, "line ", 5) == 0 ? 5 : 0));
	read_root(&c, &root, t);
	json_free(&root);
	if (c.status != LLMP_OK)
		topo_free(t);
	return c.status;
}

llmp_status topo_read_file(const char *path, struct topo *t, char *msg, size_t len)
{
	struct stat sb;
	memset(t, 0, sizeof *t);
	int fd = llmp_open_regular(path, &sb);
	if (fd == LLMP_NOT_REGULAR)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "%s: not a regular file", path);
	if (fd < 0)
		return llmp_fail(LLMP_ERR_IO, msg, len, "%s: %s", path, strerror(errno));
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "%s: out of memory", path);
	}
	if ((size_t)sb.st_size > TOPO_FILE_MAX) {
		fclose(f);
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "%s: %lld bytes, more than a topology file may have (%zu)", path,
				 (long long)sb.st_size, TOPO_FILE_MAX);
	}
	size_t n = (size_t)sb.st_size;
	char *text = malloc(n ? n : 1);
	if (!text) {
		fclose(f);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "%s: out of memory", path);
	}
	size_t got = fread(text, 1, n, f);
	int err = ferror(f);
	fclose(f);
	if (err || got != n) {
		free(text);
		return llmp_fail(LLMP_ERR_IO, msg, len, "%s: read failed", path);
	}
	llmp_status st = topo_read_text(text, n, path, t, msg, len);
	free(text);
	return st;
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->ntypes; i++) {
		for (unsigned g = 0; g < t->types[i].ngpus; g++)
			free(t->types[i].gpus[g].peers);
		for (unsigned h = 0; h < t->types[i].nhcas; h++)
			free(t->types[i].hcas[h].ports);
		free(t->types[i].gpus);
		free(t->types[i].hcas);
	}
	free(t->types);
	free(t->nodes);
	free(t->switches);
	free(t->source);
	memset(t, 0, sizeof *t);
}
