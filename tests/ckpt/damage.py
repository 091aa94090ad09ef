#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Damage every file of a good checkpoint, one way at a time, and check that
nothing crashes or hangs, that every damage is reported with the file's name,
and that a load falls back to the checkpoint before (tests/ckpt_damage.bats).

    damage.py ROOT LLMP CK_CHECK [--seed N] [--flips N] [--cuts N] [--blocks N]
              [--only CASE] [--timeout S] [--big K]

ROOT holds two complete checkpoints, step-100 and step-200, saved by
tests/ckpt/ck_check (--big K). Each file of step-200 (MANIFEST, index.h5,
meta.bin, every shard) is damaged in turn, in place, and restored after:

    flip    one byte XORed with a random non-zero value, at a random offset
    cut     the file truncated to a random shorter length (0 included)
    zero    one 512-byte block (512-aligned, the last one possibly short)
            overwritten with zeros

Offsets, lengths and blocks come from a random.Random(seed), so a case is
reproduced by its seed and number (--only). For each case, each under
`timeout`:

    llmp ckpt verify ROOT    exit 1, the file named on stderr (exit 0 when the
                             damage changed no byte: zeros over zeros)
    llmp ckpt inspect ROOT   exit 0; for a damaged MANIFEST exit 1, naming it
    llmp ckpt list ROOT      exit 0; a damaged MANIFEST shown as corrupt
    ck_check load            a PMIx singleton: loads step 100, every value
                             checked, naming the file on stderr (step 200
                             when no byte changed)

A crash is an exit by a signal or a sanitizer's report; a hang is a timeout.
The last line is the counts; the exit status is 1 if any expectation failed.
Plain Python, no h5py: the expectations depend on which bytes changed only.
"""
import argparse
import os
import random
import signal
import subprocess
import sys

BLOCK = 512
STEP_NEW, STEP_OLD = 200, 100


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root")
    p.add_argument("llmp")
    p.add_argument("ck_check")
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--flips", type=int, default=16, help="flipped bytes per file")
    p.add_argument("--cuts", type=int, default=6, help="truncations per file")
    p.add_argument("--blocks", type=int, default=10, help="zeroed blocks per file (at most its blocks)")
    p.add_argument("--only", type=int, default=None, help="run this case number alone")
    p.add_argument("--timeout", type=int, default=20, help="seconds per command")
    p.add_argument("--big", type=int, default=1, help="ck_check's --big of the saved model")
    return p.parse_args(argv)


def plan(stepdir, rng, a):
    """Every case, in a fixed order: (file, kind, where, value)."""
    names = ["MANIFEST", "index.h5", "meta.bin"] + sorted(
        f for f in os.listdir(stepdir) if f.startswith("shard-") and f.endswith(".h5"))
    cases = []
    for name in names:
        size = os.path.getsize(os.path.join(stepdir, name))
        for _ in range(a.flips):
            cases.append((name, "flip", rng.randrange(size), rng.randrange(1, 256)))
        for length in sorted(set(rng.randrange(size) for _ in range(a.cuts)) | {0}):
            cases.append((name, "cut", length, 0))
        nblocks = (size + BLOCK - 1) // BLOCK
        for block in sorted(rng.sample(range(nblocks), min(a.blocks, nblocks))):
            cases.append((name, "zero", block * BLOCK, 0))
    return cases


def damaged(data, kind, where, value):
    if kind == "flip":
        return data[:where] + bytes([data[where] ^ value]) + data[where + 1:]
    if kind == "cut":
        return data[:where]
    zeros = min(BLOCK, len(data) - where)
    return data[:where] + bytes(zeros) + data[where + zeros:]


class Run:
    """One command's result."""

    def __init__(self, argv, timeout, env):
        self.argv = argv
        try:
            p = subprocess.run(["timeout", "-k", "5", str(timeout)] + argv, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout + 30)
            self.rc, self.out, self.err = p.returncode, p.stdout.decode(errors="replace"), \
                p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:  # timeout itself did not end it
            self.rc, self.out, self.err = 124, "", ""
        # timeout(1) exits 124 when it stopped the command, 137 when it had to kill it,
        # and 128 + N when the command died of signal N.
        self.hung = self.rc in (124, 137)
        self.crashed = (not self.hung and (self.rc < 0 or self.rc >= 128)) or \
            "Sanitizer" in self.err or "runtime error:" in self.err

    def why(self):
        if self.hung:
            return "hung (timeout)"
        if self.crashed:
            sig = self.rc - 128 if self.rc >= 128 else -self.rc
            name = signal.Signals(sig).name if 0 < sig < 65 else "sanitizer"
            return "crashed (%s): %s" % (name, self.err.strip()[-300:])
        return "exit %d" % self.rc


def singleton_env():
    """No launcher's variables: ck_check runs as a PMIx singleton, rank 0 of 1."""
    env = dict(os.environ)
    for k in ("PMIX_RANK", "PMIX_NAMESPACE", "PMIX_SERVER_URI41", "SLURM_JOB_ID"):
        env.pop(k, None)
    return env


def check_case(a, root, name, changed, env):
    """Run the four commands on the damaged root; the list of what went wrong, and the runs."""
    stepdir = os.path.join(root, "step-%d" % STEP_NEW)
    named = os.path.join(stepdir, name)  # every message names the file by its path
    problems = []
    runs = {
        "verify": Run([a.llmp, "ckpt", "verify", root], a.timeout, env),
        "inspect": Run([a.llmp, "ckpt", "inspect", root], a.timeout, env),
        "list": Run([a.llmp, "ckpt", "list", root], a.timeout, env),
        "load": Run([a.ck_check, "load", "--root", root, "--big", str(a.big), "--expect-step",
                     str(STEP_OLD if changed else STEP_NEW)], a.timeout, env),
    }
    for what, r in runs.items():
        if r.hung or r.crashed:
            problems.append("%s %s" % (what, r.why()))
    if problems:
        return problems, runs
    v, i, l, ld = runs["verify"], runs["inspect"], runs["list"], runs["load"]
    manifest = name == "MANIFEST"
    if changed:
        if v.rc != 1 or named not in v.err:
            problems.append("verify: exit %d, expected 1 naming %s; stderr: %s" % (v.rc, named, v.err[-400:]))
        if "step-%d: OK" % STEP_OLD not in v.out:
            problems.append("verify: step-%d not intact: %s" % (STEP_OLD, v.out[-400:]))
        if ld.rc != 0 or "rank 0: loaded step %d" % STEP_OLD not in ld.out or named not in ld.err:
            problems.append("load: exit %d, expected step %d loaded and %s named; stdout: %s stderr: %s" % (
                ld.rc, STEP_OLD, named, ld.out[-300:], ld.err[-400:]))
    else:
        if v.rc != 0:
            problems.append("verify: exit %d on an unchanged file: %s" % (v.rc, v.err[-400:]))
        if ld.rc != 0 or "rank 0: loaded step %d" % STEP_NEW not in ld.out:
            problems.append("load: exit %d, expected step %d: %s" % (ld.rc, STEP_NEW, ld.err[-400:]))
    if changed and manifest:
        if i.rc != 1 or named not in i.err:
            problems.append("inspect: exit %d, expected 1 naming %s: %s" % (i.rc, named, i.err[-400:]))
        if l.rc != 0 or named not in l.out or "corrupt-manifest" not in l.out:
            problems.append("list: exit %d, expected step-%d corrupt naming %s: %s" % (
                l.rc, STEP_NEW, named, l.out[-400:]))
    else:
        if i.rc != 0:
            problems.append("inspect: exit %d with an intact MANIFEST: %s" % (i.rc, i.err[-400:]))
        if l.rc != 0 or "corrupt-manifest" in l.out:
            problems.append("list: exit %d: %s" % (l.rc, l.out[-400:]))
    return problems, runs


def main(argv):
    a = parse_args(argv)
    root = a.root
    stepdir = os.path.join(root, "step-%d" % STEP_NEW)
    env = singleton_env()
    cases = plan(stepdir, random.Random(a.seed), a)
    counts = dict(cases=0, changed=0, crashes=0, hangs=0, reported=0, fell_back=0, failed=0)
    print("damage: seed %d, %d cases over %d files of %s" % (
        a.seed, len(cases), len({c[0] for c in cases}), stepdir))
    for number, (name, kind, where, value) in enumerate(cases):
        if a.only is not None and number != a.only:
            continue
        path = os.path.join(stepdir, name)
        with open(path, "rb") as f:
            good = f.read()
        bad = damaged(good, kind, where, value)
        changed = bad != good
        try:
            with open(path, "wb") as f:
                f.write(bad)
            problems, runs = check_case(a, root, name, changed, env)
        finally:
            with open(path, "wb") as f:
                f.write(good)
        counts["cases"] += 1
        counts["changed"] += changed
        counts["crashes"] += sum(r.crashed for r in runs.values())
        counts["hangs"] += sum(r.hung for r in runs.values())
        if changed and runs["verify"].rc == 1 and path in runs["verify"].err:
            counts["reported"] += 1
        if changed and "rank 0: loaded step %d" % STEP_OLD in runs["load"].out:
            counts["fell_back"] += 1
        if problems:
            counts["failed"] += 1
            print("FAILED case %d (--seed %d --only %d): %s %s at %d: %s" % (
                number, a.seed, number, name, kind, where, "; ".join(problems)))
    print("damage: %(cases)d cases (%(changed)d changed a byte): %(crashes)d crashes, %(hangs)d hangs, "
          "%(reported)d of %(changed)d reported by verify with the file's name, %(fell_back)d loads "
          "fell back to the step before; %(failed)d cases failed" % counts)
    return 1 if counts["failed"] or counts["crashes"] or counts["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
