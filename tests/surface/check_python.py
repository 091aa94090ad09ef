# SPDX-License-Identifier: BSD-3-Clause
"""check_python.py - python/llmp/_libllmp.py against the C headers, as the compiler reads them.

    python3 check_python.py DUMP_PROGRAM INCLUDE_DIR [MODULE.py]

DUMP_PROGRAM is tests/surface/surface_dump (sizes, offsets, enum and constant values, from
the headers); INCLUDE_DIR holds llmp/*.h, whose prototypes gcc -aux-info writes out; MODULE
is the mirror to check (default: the package's _libllmp.py). Every disagreement is printed,
one a line, naming both sides; the exit status is then 1. Only the standard library is used.

The dump's lists are kept by hand, so they are held against the headers too: every
enumerator, every LLMP_* constant and every struct (and each of its fields) of a header of
the package's surface must be dumped, or named in UNMIRRORED with the reason the package
does without it. A status, value, constant or field added to a header alone fails here.
"""

import ctypes
import glob
import importlib.util
import os
import re
import subprocess
import sys
import tempfile


def load_module(path):
    spec = importlib.util.spec_from_file_location("llmp_surface_mirror", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_dump(program):
    sizes, fields, values = {}, {}, {}
    for line in subprocess.run([program], check=True, capture_output=True, text=True).stdout.splitlines():
        kind, *rest = line.split()
        if kind == "sizeof":
            sizes[rest[0]] = int(rest[1])
        elif kind == "field":
            fields.setdefault(rest[0], {})[rest[1]] = (int(rest[2]), int(rest[3]))
        elif kind == "value":
            values[rest[0]] = int(rest[1])
    return sizes, fields, values


#: Headers whose names the package never takes: each with the reason.
UNMIRRORED_HEADERS = {
    "llmp_spec.h": "the planner's grammar: the package passes layouts as text",
    "llmp_plan.h": "the planner's grid: the package calls none of its functions",
    "llmp_json.h": "the planner's JSON writer: the package reads the layout file (layout.py)",
    "llmp_ckpt_spec.h": "the --llm-checkpoint grammar: the plugin's and the job layer's, passed as text",
    "llmp_env.h": "environment names, kept in one place by surface.bats' own check",
    "llmp_device.h": "the device path: the package calls none of its functions",
}

#: Names of the other headers the package does without: each with the reason.
UNMIRRORED = {
    "LLMP_MSG_MAX": "the planner's message buffer; the package reads messages through llmp_errmsg",
    "LLMP_VERSION_MAJOR": "LLMP_VERSION carries it",
    "LLMP_VERSION_MINOR": "LLMP_VERSION carries it",
    "LLMP_VERSION_PATCH": "LLMP_VERSION carries it",
    "llmp_stats": "llmp_get_stats is not called from Python",
    "llmp_comm_stats": "llmp_comm_get_stats is not called from Python",
    "llmp_job_opts": "llmp_job_open gets NULL: the checkpoint spec comes from the environment",
    "llmp_job_info": "llmp_job_get_info is not called from Python",
    "llmp_run_record": "llmp_run_record_read is llmp job-end's, not the package's",
    "LLMP_RUN_RUNNING": "llmp_run_outcome: the run record's, not the package's",
    "LLMP_RUN_DONE": "llmp_run_outcome: the run record's",
    "LLMP_RUN_STOPPED": "llmp_run_outcome: the run record's",
    "LLMP_RUN_FAILED": "llmp_run_outcome: the run record's",
    "LLMP_RUN_GAVE_UP": "llmp_run_outcome: the run record's",
    "LLMP_NO_STEP": "the run record's and llmp_job_info's 'no step'",
}


def header_names(include_dir):
    """Per public header: its enumerators and LLMP_* constants, and its structs with their fields.

    Read as gcc preprocesses them (-dD keeps the #defines, the line markers say whose
    each line is), so comments and conditionals are the compiler's business, not ours.
    """
    headers = sorted(glob.glob(os.path.join(include_dir, "llmp", "*.h")))
    src = "".join('#include "%s"\n' % os.path.abspath(h) for h in headers)
    out = subprocess.run(["gcc", "-std=c11", "-I" + include_dir, "-E", "-dD", "-x", "c", "-"], input=src,
                         check=True, capture_output=True, text=True).stdout
    mine = {os.path.basename(h): os.path.abspath(h) for h in headers}
    text = {name: [] for name in mine}
    owner = None
    for line in out.splitlines():
        m = re.match(r'# \d+ "([^"]*)"', line)
        if m:
            path = os.path.abspath(m.group(1))
            owner = next((n for n, p in mine.items() if p == path), None)
        elif owner:
            text[owner].append(line)
    names = {}
    for header, lines in text.items():
        consts, code = set(), []
        for line in lines:
            m = re.match(r"#define (LLMP_[A-Z0-9_]+) +(\S.*)$", line)
            if m:
                consts.add(m.group(1))
            elif not line.startswith("#"):
                code.append(line)
        code = "\n".join(code)
        for body in re.findall(r"\benum\s*\w*\s*\{(.*?)\}", code, re.S):
            consts.update(re.match(r"\s*(\w+)", item).group(1) for item in body.split(",") if item.strip())
        structs = {}
        for tag, body, typedef in re.findall(r"\bstruct\s*(\w*)\s*\{(.*?)\}\s*(\w*)", code, re.S):
            tag = tag or typedef
            fields = []
            for decl in body.split(";"):
                for part in split_args(decl) if decl.strip() else []:
                    m = re.search(r"\(\s*\*\s*(\w+)\s*\)|(\w+)\s*(?:\[[^\]]*\]\s*)*$", part)
                    if m:
                        fields.append(m.group(1) or m.group(2))
            structs[tag] = fields
        names[header] = (consts, structs)
    return names


def check_complete(include_dir, sizes, fields, values, bad):
    for header, (consts, structs) in sorted(header_names(include_dir).items()):
        if header in UNMIRRORED_HEADERS:
            continue
        for name in sorted(consts - set(values) - set(UNMIRRORED)):
            bad.append("%s: in %s, not in surface_dump.c: dump it and mirror it in _libllmp.py, or say in "
                       "check_python.py's UNMIRRORED why the package does without it" % (name, header))
        for tag, names in sorted(structs.items()):
            if tag in UNMIRRORED:
                continue
            if tag not in sizes:
                bad.append("%s: a struct of %s, not in surface_dump.c: dump and mirror it, or say in "
                           "UNMIRRORED why the package does without it" % (tag, header))
                continue
            for name in names:
                if name not in fields.get(tag, {}):
                    bad.append("%s.%s: in %s, not in surface_dump.c (nor then in Python)" % (tag, name, header))
    for name in sorted(set(UNMIRRORED) & (set(values) | set(sizes))):
        bad.append("%s: dumped by surface_dump.c, but UNMIRRORED says the package does without it" % name)


def check_structs(mod, sizes, fields, bad):
    for cname, py in mod.STRUCTS.items():
        if cname not in sizes:
            bad.append("%s: mirrored in Python but unknown to surface_dump.c" % cname)
            continue
        if ctypes.sizeof(py) != sizes[cname]:
            bad.append("%s: sizeof is %d in C, %d in Python (%s)" % (cname, sizes[cname], ctypes.sizeof(py),
                                                                      py.__name__))
        pyfields = {name: (getattr(py, name).offset, getattr(py, name).size) for name, _ in py._fields_}
        for name in sorted(set(fields[cname]) | set(pyfields)):
            c, p = fields[cname].get(name), pyfields.get(name)
            if c is None:
                bad.append("%s.%s: in Python, not in C" % (cname, name))
            elif p is None:
                bad.append("%s.%s: in C, not in Python" % (cname, name))
            elif c != p:
                bad.append("%s.%s: offset %d size %d in C, offset %d size %d in Python"
                           % (cname, name, c[0], c[1], p[0], p[1]))
    for cname in sizes:
        if cname not in mod.STRUCTS:
            bad.append("%s: in surface_dump.c, not mirrored in _libllmp.STRUCTS" % cname)


def check_values(mod, values, bad):
    statuses = sorted((v, n) for n, v in values.items() if n == "LLMP_OK" or n.startswith("LLMP_ERR_"))
    c_names = tuple(n for _, n in statuses)
    if [v for v, _ in statuses] != list(range(len(statuses))):
        bad.append("llmp_status: C values are not 0..%d in order: %s" % (len(statuses) - 1, statuses))
    if c_names != tuple(mod.STATUS_NAMES):
        bad.append("llmp_status: C has %s, Python's STATUS_NAMES %s" % (c_names, tuple(mod.STATUS_NAMES)))
    for table, count in ((mod.DTYPE, "LLMP_NDTYPES"), (mod.OP, "LLMP_NOPS")):
        for name, v in sorted(table.items()):
            if values.get(name) != v:
                bad.append("%s: %s in C, %s in Python" % (name, values.get(name, "absent"), v))
        if values.get(count) != len(table):
            bad.append("%s is %s in C, but Python mirrors %d values" % (count, values.get(count), len(table)))
    for name, v in sorted(mod.CONSTANTS.items()):
        if values.get(name) != v:
            bad.append("%s: %s in C, %s in Python" % (name, values.get(name, "absent"), v))
    if values.get("LLMP_VERSION") != mod.VERSION:
        bad.append("LLMP_VERSION: %s in C, %s in Python's VERSION" % (values.get("LLMP_VERSION"), mod.VERSION))


# C types of the prototypes -> (kind, bytes); pointers are ("ptr", 8).
_C_SCALARS = {
    "void": ("void", 0), "int": ("int", 4), "unsigned int": ("int", 4), "unsigned": ("int", 4),
    "uint32_t": ("int", 4), "int32_t": ("int", 4), "uint64_t": ("int", 8), "int64_t": ("int", 8),
    "size_t": ("int", 8), "double": ("float", 8), "_Bool": ("int", 1),
    "llmp_status": ("int", 4), "llmp_dtype": ("int", 4), "llmp_op": ("int", 4),
    "llmp_job_action": ("int", 4), "llmp_run_outcome": ("int", 4), "llmp_axis": ("int", 4),
    "llmp_group": ("int", 4),
}


def c_kind(text):
    t = re.sub(r"\bconst\b", "", text).strip()
    if "*" in t or "[" in t:
        return ("ptr", 8)
    t = " ".join(t.split())
    return _C_SCALARS.get(t, ("unknown C type '%s'" % t, 0))


def py_kind(t):
    if t is None:
        return ("void", 0)
    if t in (ctypes.c_void_p, ctypes.c_char_p) or hasattr(t, "_type_") and isinstance(t._type_, type):
        return ("ptr", 8)
    if t in (ctypes.c_double, ctypes.c_float):
        return ("float", ctypes.sizeof(t))
    return ("int", ctypes.sizeof(t))


def split_args(args):
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    out.append(cur)
    out = [a.strip() for a in out]
    return [] if out == ["void"] else out


def prototypes(include_dir):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "all.c")
        with open(src, "w") as f:
            for h in sorted(glob.glob(os.path.join(include_dir, "llmp", "*.h"))):
                f.write('#include "%s"\n' % os.path.abspath(h))
        aux = os.path.join(tmp, "aux")
        subprocess.run(["gcc", "-std=c11", "-I" + include_dir, "-aux-info", aux, "-fsyntax-only", src],
                       check=True)
        protos = {}
        with open(aux) as f:
            for line in f:
                m = re.match(r"/\* (\S+):\d+:\w+ \*/ extern (.*?)\b(llmp_\w+) \((.*)\);$", line.strip())
                if m and os.path.dirname(m.group(1)).endswith("llmp"):
                    protos[m.group(3)] = (m.group(2).strip(), split_args(m.group(4)))
        return protos


def check_signatures(mod, include_dir, bad):
    protos = prototypes(include_dir)
    for name, (res, args) in sorted(mod.SIGNATURES.items()):
        if name not in protos:
            bad.append("%s: declared in Python's SIGNATURES, in no header" % name)
            continue
        cres, cargs = protos[name]
        if c_kind(cres) != py_kind(res):
            bad.append("%s: returns %s in C, %s in Python" % (name, cres, getattr(res, "__name__", res)))
        if len(cargs) != len(args):
            bad.append("%s: %d arguments in C, %d in Python" % (name, len(cargs), len(args)))
            continue
        for i, (ca, pa) in enumerate(zip(cargs, args)):
            if c_kind(ca) != py_kind(pa):
                bad.append("%s: argument %d is %s in C, %s in Python" % (name, i + 1, ca, pa.__name__))


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    path = argv[3] if len(argv) == 4 else os.path.join(here, "..", "..", "python", "llmp", "_libllmp.py")
    mod = load_module(path)
    sizes, fields, values = read_dump(argv[1])
    bad = []
    check_structs(mod, sizes, fields, bad)
    check_values(mod, values, bad)
    check_signatures(mod, argv[2], bad)
    check_complete(argv[2], sizes, fields, values, bad)
    for line in bad:
        print("surface: " + line)
    if bad:
        return 1
    print("surface: %s agrees with the headers: %d structs, %d statuses, %d dtypes, %d ops, %d constants, "
          "%d functions" % (os.path.basename(path), len(mod.STRUCTS), len(mod.STATUS_NAMES), len(mod.DTYPE),
                            len(mod.OP), len(mod.CONSTANTS), len(mod.SIGNATURES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
