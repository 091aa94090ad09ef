# SPDX-License-Identifier: BSD-3-Clause
"""check_private.py - each module of a Python package keeps its private names to itself.

    python3 check_private.py [PACKAGE_DIR]

PACKAGE_DIR defaults to the package python/llmp. A name with one leading underscore
(_x, not __x__ nor ctypes' _x_) is its module's own: another module of the package may
not import it (from .mod import _x), reach it through the module (mod._x), nor use it as
an attribute (obj._x) when no code of its own defines that name, which is how a private
method or attribute of another module's class shows. A module whose own name is private
(_libllmp) is the package's, not a user's: importing it is allowed, its public names too.
Names of other packages (torch's) are not this check's business. Every use is printed as
FILE:LINE: what; the exit status is then 1. Only the standard library is used.
"""

import ast
import glob
import os
import sys


def private(name):
    return name.startswith("_") and not name.startswith("__") and not (len(name) > 2 and name.endswith("_"))


def own_names(tree):
    """The private names a module defines: functions, classes, and names or attributes it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if private(n)}


def sibling_aliases(tree, modules):
    """The names under which this module holds the package's other modules."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            for a in node.names:
                if a.name in modules:
                    aliases[a.asname or a.name] = a.name
    return aliases


def check(package_dir):
    paths = sorted(glob.glob(os.path.join(package_dir, "*.py")))
    trees = {os.path.basename(p)[:-3]: (p, ast.parse(open(p).read(), p)) for p in paths}
    own = {m: own_names(t) for m, (_, t) in trees.items()}
    bad = []
    for m, (path, tree) in sorted(trees.items()):
        aliases = sibling_aliases(tree, trees)
        shown = os.path.relpath(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in trees:
                for a in node.names:
                    if private(a.name):
                        bad.append((shown, node.lineno, "imports %s from %s, a private name of that module"
                                    % (a.name, node.module)))
            elif isinstance(node, ast.Attribute) and private(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id in aliases:
                    bad.append((shown, node.lineno, "uses %s.%s, a private name of %s.py"
                                % (base.id, node.attr, aliases[base.id])))
                elif node.attr not in own[m]:
                    owners = sorted(o for o, names in own.items() if o != m and node.attr in names)
                    if owners:
                        bad.append((shown, node.lineno, "uses %s.%s, private to %s"
                                    % (ast.unparse(base), node.attr, ", ".join(o + ".py" for o in owners))))
    return len(trees), ["%s:%d: %s" % b for b in sorted(set(bad))]


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    package_dir = argv[1] if len(argv) > 1 else os.path.join(here, "..", "..", "python", "llmp")
    n, bad = check(package_dir)
    for line in bad:
        print(line)
    if bad:
        return 1
    print("check_private.py: %d modules of %s use one another's public names only"
          % (n, os.path.basename(os.path.normpath(package_dir))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
