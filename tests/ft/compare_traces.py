#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare the output of an interrupted mlp_train job with an uninterrupted one.

    compare_traces.py REFERENCE OUTPUT [--rtol X] [--no-redo]

Both files hold the lines rank 0 prints: `step N loss X` for every step it
ran (a run that resumed from an older checkpoint prints the steps it redid
again) and `final checksum 0x...` / `final params sum X` at the end.

Checks: OUTPUT covers every step of REFERENCE; every loss it printed for a
step equals the reference's for that step (as text, i.e. bit for bit, or
within --rtol); the final lines agree the same way (the checksum only when
exact). --no-redo: each step was run exactly once (the stop checkpoint was
of the last step done). Prints what differs and exits 1 on any difference.
scripts/demo/report.py calls compare() for its verdict.
"""
import argparse
import sys

from mlp_log import read_trace


def same(a, b, rtol):
    if rtol is None:
        return a == b
    x, y = float(a), float(b)
    return abs(x - y) <= rtol * max(abs(x), abs(y), 1e-30)


def compare(reference, output, rtol=None, no_redo=False):
    """The differences (a list of lines, empty when the traces agree) and a
    one-line summary of what agreed."""
    ref_steps, ref_final = read_trace(reference)
    out_steps, out_final = read_trace(output)
    errors = []
    if not ref_steps:
        errors.append("the reference has no step lines")
    for step, (expected, *again) in sorted(ref_steps.items()):
        if again:
            errors.append(f"step {step}: {1 + len(again)} times in the reference")
        got = out_steps.get(step)
        if not got:
            errors.append(f"step {step}: missing")
            continue
        if no_redo and len(got) > 1:
            errors.append(f"step {step}: run {len(got)} times")
        for loss in got:
            if not same(loss, expected, rtol):
                errors.append(f"step {step}: loss {loss}, reference {expected}")
    for step in sorted(set(out_steps) - set(ref_steps)):
        errors.append(f"step {step}: not in the reference")
    keys = ["params sum"] if rtol is not None else ["checksum", "params sum"]
    for key in keys:
        if key not in ref_final or key not in out_final:
            errors.append(f"final {key}: missing ({ref_final.get(key)} vs {out_final.get(key)})")
        elif not same(out_final[key], ref_final[key], rtol):
            errors.append(f"final {key}: {out_final[key]}, reference {ref_final[key]}")
    redone = sum(len(v) - 1 for v in out_steps.values())
    summary = f"{len(ref_steps)} steps agree ({redone} redone); final {', '.join(keys)} agree"
    return errors, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("output")
    ap.add_argument("--rtol", type=float)
    ap.add_argument("--no-redo", action="store_true")
    args = ap.parse_args()
    errors, summary = compare(args.reference, args.output, args.rtol, args.no_redo)
    for e in errors[:20]:
        print(e)
    if errors:
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
