/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_topo_check.c - an NCCL_TOPO_FILE checked against the grammar NCCL
 * 2.28's hand-written parser accepts (NVIDIA/nccl src/graph/xml.cc, its
 * limits in xml.h; each refusal below was tried on NCCL 2.28.9's parser),
 * and parsed into a flat tree:
 *
 *   between tags: spaces and newlines; comments <!-- ... -->
 *   <name key="value" ...> | <name .../> | </name>, each tag on one line
 *   refused: a declaration <?xml ...?> ("expected >, got '?'"), a tab,
 *   a tag continued on the next line, <system> without version="1";
 *   NCCL's limits: 256 nodes, 128 children, 16 attributes, 255 characters.
 *
 * Written from those rules, not from NCCL's code. Stricter than NCCL where
 * NCCL would silently drop something (a 17th attribute).
 */
#define _POSIX_C_SOURCE 200809L
#include "nccl_topo.h"

#include <stdlib.h>
#include <string.h>

#include "common/fail.h"

struct parse {
	const char *s;
	size_t n, at;
	unsigned line;
	char *msg;
	size_t len;
};

static llmp_status bad(struct parse *p, const char *what, const char *detail)
{
	return llmp_fail(LLMP_ERR_ARG, p->msg, p->len, "NCCL topology file, line %u: %s%s", p->line, what,
			 detail);
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

/* A name into out (at most 255 characters). */
static llmp_status read_name(struct parse *p, char *out, const char *what)
{
	size_t k = 0;
	while (p->at < p->n && name_char(p->s[p->at])) {
		if (k == NCCL_XML_MAX_STR)
			return bad(p, what, " longer than 255 characters");
		out[k++] = p->s[p->at++];
	}
	out[k] = '\0';
	return k ? LLMP_OK : bad(p, "expected a name for ", what);
}

static const char *const detected[] = { "gdr", "dev", "rank", "sm" };

/* The attributes and the end of an opening tag; *closed when it ends in "/>". */
static llmp_status read_attrs(struct parse *p, struct nccl_xml_node *node, bool generated, bool *closed)
{
	for (;;) {
		while (p->at < p->n && p->s[p->at] == ' ')
			p->at++;
		if (p->at >= p->n)
			return bad(p, "the file ends inside a tag", "");
		char c = p->s[p->at];
		if (c == '\n')
			return bad(p, "a tag continued on the next line (NCCL expects '>')", "");
		if (c == '\t')
			return bad(p, "a tab (NCCL reads only spaces)", "");
		if (c == '>' || (c == '/' && p->at + 1 < p->n && p->s[p->at + 1] == '>')) {
			*closed = c == '/';
			p->at += *closed ? 2 : 1;
			return LLMP_OK;
		}
		if (node->nattrs == NCCL_XML_MAX_ATTRS)
			return bad(p, "more than NCCL's 16 attributes in <", node->name);
		char(*a)[NCCL_XML_MAX_STR + 1] = node->attr[node->nattrs];
		llmp_status st = read_name(p, a[0], "an attribute");
		if (st != LLMP_OK)
			return st;
		if (p->at + 1 >= p->n || p->s[p->at] != '=' || p->s[p->at + 1] != '"')
			return bad(p, "expected =\" after attribute ", a[0]);
		p->at += 2;
		size_t k = 0;
		while (p->at < p->n && p->s[p->at] != '"') {
			char v = p->s[p->at];
			if (v == '\n' || v == '<' || v == '\t')
				return bad(p, "an unterminated value of ", a[0]);
			if (k == NCCL_XML_MAX_STR)
				return bad(p, "a value longer than 255 characters in ", a[0]);
			a[1][k++] = p->s[p->at++];
		}
		if (p->at >= p->n)
			return bad(p, "an unterminated value of ", a[0]);
		a[1][k] = '\0';
		p->at++;
		for (unsigned i = 0; generated && i < sizeof detected / sizeof detected[0]; i++)
			if (strcmp(a[0], detected[i]) == 0)
				return bad(p, "an attribute NCCL must detect itself: ", a[0]);
		node->nattrs++;
	}
}

static llmp_status add_node(struct parse *p, struct nccl_xml *x, int parent)
{
	if (x->n == NCCL_XML_MAX_NODES)
		return bad(p, "more than NCCL's 256 nodes", "");
	unsigned children = 0;
	for (unsigned i = 0; parent >= 0 && i < x->n; i++)
		children += x->nodes[i].parent == parent;
	if (children == NCCL_XML_MAX_CHILDREN)
		return bad(p, "more than NCCL's 128 children under <", x->nodes[parent].name);
	struct nccl_xml_node *node = &x->nodes[x->n++];
	memset(node, 0, sizeof *node);
	node->parent = parent;
	return LLMP_OK;
}

static llmp_status parse_all(struct parse *p, struct nccl_xml *x, bool generated)
{
	int open = -1; /* the innermost open element */
	bool root_done = false;
	for (;;) {
		while (p->at < p->n && (p->s[p->at] == ' ' || p->s[p->at] == '\n'))
			p->line += p->s[p->at++] == '\n';
		if (p->at >= p->n)
			break;
		const char *here = p->s + p->at;
		if (*here == '\t')
			return bad(p, "a tab (NCCL reads only spaces)", "");
		if (*here != '<')
			return bad(p, "expected '<'", "");
		if (p->n - p->at >= 4 && strncmp(here, "<!--", 4) == 0) {
			const char *end = NULL;
			for (size_t i = p->at + 4; i + 3 <= p->n && !end; i++)
				if (strncmp(p->s + i, "-->", 3) == 0)
					end = p->s + i;
			if (!end)
				return bad(p, "an unterminated comment", "");
			for (; p->s + p->at < end + 3; p->at++)
				p->line += p->s[p->at] == '\n';
			continue;
		}
		if (p->n - p->at >= 2 && here[1] == '?')
			return bad(p, "an XML declaration (NCCL's parser fails on '?')", "");
		if (root_done)
			return bad(p, "an element after the closing </system>", "");
		p->at++;
		if (p->at < p->n && p->s[p->at] == '/') {
			char name[NCCL_XML_MAX_STR + 1];
			p->at++;
			llmp_status st = read_name(p, name, "a closing tag");
			if (st != LLMP_OK)
				return st;
			if (open < 0 || strcmp(name, x->nodes[open].name) != 0)
				return bad(p, "a closing tag that closes nothing open: ", name);
			if (p->at >= p->n || p->s[p->at] != '>')
				return bad(p, "expected '>' after </", name);
			p->at++;
			open = x->nodes[open].parent;
			root_done = open < 0;
			continue;
		}
		llmp_status st = add_node(p, x, open);
		if (st == LLMP_OK)
			st = read_name(p, x->nodes[x->n - 1].name, "an element");
		bool closed = false;
		if (st == LLMP_OK)
			st = read_attrs(p, &x->nodes[x->n - 1], generated, &closed);
		if (st != LLMP_OK)
			return st;
		if (x->n == 1) {
			const char *v = nccl_xml_attr(x, 0, "version");
			if (strcmp(x->nodes[0].name, "system") != 0)
				return bad(p, "the root is not <system>: ", x->nodes[0].name);
			if (!v || strcmp(v, "1") != 0)
				return bad(p, "<system> without version=\"1\" (NCCL needs version 1)", "");
		}
		if (closed)
			root_done = open < 0;
		else
			open = (int)x->n - 1;
	}
	if (open >= 0)
		return bad(p, "the file ends with this element open: ", x->nodes[open].name);
	if (!x->n)
		return bad(p, "no <system> element", "");
	return LLMP_OK;
}

llmp_status nccl_topo_check(const char *text, size_t n, bool generated, struct nccl_xml *x, char *msg,
			    size_t len)
{
	x->n = 0;
	if (!(x->nodes = malloc(NCCL_XML_MAX_NODES * sizeof *x->nodes)))
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "NCCL topology file: out of memory");
	if (memchr(text, '\0', n))
		return nccl_xml_free(x), llmp_fail(LLMP_ERR_ARG, msg, len, "NCCL topology file: a NUL byte");
	struct parse p = { .s = text, .n = n, .line = 1, .msg = msg, .len = len };
	llmp_status st = parse_all(&p, x, generated);
	if (st != LLMP_OK)
		nccl_xml_free(x);
	return st;
}

void nccl_xml_free(struct nccl_xml *x)
{
	free(x->nodes);
	x->nodes = NULL;
	x->n = 0;
}

const char *nccl_xml_attr(const struct nccl_xml *x, unsigned i, const char *key)
{
	for (unsigned a = 0; a < x->nodes[i].nattrs; a++)
		if (strcmp(x->nodes[i].attr[a][0], key) == 0)
			return x->nodes[i].attr[a][1];
	return NULL;
}
