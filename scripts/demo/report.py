#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The end of the demo's story (scripts/demo/story.sh): a timeline of the
fault-tolerant job and the verdict against the uninterrupted reference.

    report.py --reference REF.out --job JOB.out --events EVENTS
              [--slurmctld-log LOG --node NODE]

REF.out, JOB.out: outputs of etc/examples/mlp-train.sbatch (tests/ft/mlp_log.py).
EVENTS: what story.sh did, one `EPOCH_SECONDS TEXT` a line; the first line is
the submission, time zero of the timeline. LOG, NODE: slurmctld's log and the
node that was killed; Slurm's own lines about that node and the job's
requeue go into the timeline.

Exits 1, naming the reason on stderr, unless the job was requeued, every
run after the first resumed from a checkpoint, and its step losses and final
checksum are identical to the reference's.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ft"))
from compare_traces import compare  # noqa: E402
from mlp_log import EVENT, RUN, STEP, read_trace, when  # noqa: E402

RESUME = re.compile(r"^run \d+ \(.*\): resuming at step (\d+) from checkpoint (step-(\d+)), loaded in (\S+) s$")
FRESH = re.compile(r"^run \d+ \(.*\): no checkpoint yet, starting at step (\d+)$")
COMMITTED = re.compile(r"^checkpoint step (\d+) committed: (\S+ \S+) on this rank, \S+ s(?: \((\S+) s stalled\))?$")
FAILURE = re.compile(r"^failure after step (\d+): (.*)$")
CTLD = re.compile(r"^\[(\S+)\] (.*)$")


class Run:
    def __init__(self, number, job, nodes):
        self.number, self.job, self.nodes = number, job, nodes
        self.start_step = None     # the step it started at
        self.resumed_from = None   # "step-N", or None
        self.last_step = None      # the last step rank 0 printed
        self.failure = None        # (time, rank) of the first failure seen


class Timeline:
    """Rows (seconds since submission, kind, text), and the runs of the job."""

    def __init__(self, t0):
        self.t0 = t0
        self.rows = []
        self.runs = []
        self.exits = {}            # (run, message) -> [time, ranks]
        self.committed = {}        # "step-N" -> time committed

    def add(self, t, text, kind="event", **more):
        self.rows.append(dict(t=t - self.t0, kind=kind, text=text, **more))

    def read_job(self, path):
        for line in open(path, errors="replace").read().splitlines():
            m = RUN.match(line)
            if m:
                run = Run(int(m.group(1)), m.group(2), m.group(4))
                self.runs.append(run)
                again = " (Slurm runs the batch script again)" if run.number else ""
                self.add(when(m.group(3)), f"run {run.number} starts on {run.nodes}{again}")
                continue
            if not self.runs:
                continue
            run = self.runs[-1]
            m = STEP.match(line)
            if m:
                run.last_step = int(m.group(1))
                continue
            m = EVENT.match(line)
            if m:
                self.event(run, when(m.group(1)), int(m.group(2)), m.group(3))
        checksum = read_trace(path)[1].get("checksum")
        for (run, message), (t, ranks) in self.exits.items():
            who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, sorted(ranks)))
            if message.startswith("exit: done") and checksum:
                message += f"; final checksum {checksum}"
            self.add(t, f"{who} {message}", run=run)

    def event(self, run, t, rank, what):
        """One line of the job layer; rank 0 speaks for all but failures and exits."""
        if rank == 0 and (m := RESUME.match(what)):
            run.start_step, run.resumed_from = int(m.group(1)), m.group(2)
            self.add(t, f"rank 0 resumes at step {m.group(1)} from checkpoint {m.group(2)} "
                        f"(loaded in {m.group(4)} s)")
        elif rank == 0 and (m := FRESH.match(what)):
            run.start_step = int(m.group(1))
            self.add(t, f"rank 0 starts at step {m.group(1)}: no checkpoint yet")
        elif rank == 0 and (m := COMMITTED.match(what)):
            step = int(m.group(1))
            first = self.first_step_since_checkpoint(run)
            stall = f", {m.group(3)} s stall" if m.group(3) else ""
            self.committed[f"step-{step}"] = t - self.t0
            self.add(t, f"checkpoint step-{step} committed ({m.group(2)} per rank{stall})",
                     kind="checkpoint", run=run.number, first=first, step=step)
        elif (m := FAILURE.match(what)) and run.failure is None:
            run.failure = (t, rank)
            self.add(t, f"rank {rank} sees the failure after step {m.group(1)}: {m.group(2)}")
        elif what.startswith("exit: "):
            seen = self.exits.setdefault((run.number, what), [t, []])
            seen[0] = min(seen[0], t)
            seen[1].append(rank)

    def first_step_since_checkpoint(self, run):
        for row in reversed(self.rows):
            if row["kind"] == "checkpoint" and row["run"] == run.number:
                return row["step"] + 1
        return run.start_step or 0

    def read_events(self, path):
        for line in open(path).read().splitlines():
            epoch, _, text = line.partition(" ")
            self.add(float(epoch), text)

    def read_slurmctld(self, path, node):
        """Slurm's word on the lost node and the requeue, during the job."""
        job = self.runs[0].job if self.runs else "?"
        wanted = [re.compile(p) for p in (rf"^requeue job JobId={job}\b",
                                          rf"\b{node}\b.* not responding",
                                          rf"^node {node} returned to service")]
        for line in open(path, errors="replace").read().splitlines():
            m = CTLD.match(line)
            if m and any(w.search(m.group(2)) for w in wanted) and when(m.group(1)) >= self.t0:
                self.add(when(m.group(1)), f"slurmctld: {m.group(2)}")

    def print(self):
        """Rows in time order; three checkpoints or more in a row are one row."""
        rows = sorted(self.rows, key=lambda r: r["t"])
        i = 0
        while i < len(rows):
            j = i
            while j + 1 < len(rows) and rows[i]["kind"] == rows[j + 1]["kind"] == "checkpoint":
                j += 1
            if rows[i]["kind"] == "checkpoint" and j - i >= 2:
                steps = ", ".join(f"step-{r['step']}" for r in rows[i:j + 1])
                text = f"steps {rows[i]['first']}-{rows[j]['step']} done; checkpoints {steps} committed"
            elif rows[i]["kind"] == "checkpoint":
                text = f"steps {rows[i]['first']}-{rows[i]['step']} done; {rows[i]['text']}"
                j = i
            else:
                text = rows[i]["text"]
            print(f"  {rows[j]['t']:+7.1f} s  {text}")
            i = j + 1


def verdict(timeline, reference, job_out):
    """Lines saying what held, or raise SystemExit naming what did not."""
    problems = []
    ref = Timeline(0)
    ref.read_job(reference)
    ref_final = read_trace(reference)[1]
    if len(ref.runs) != 1 or "checksum" not in ref_final:
        problems.append(f"the reference {reference} is not one complete run "
                        f"({len(ref.runs)} runs, final checksum {ref_final.get('checksum', 'missing')})")
    runs = timeline.runs
    if len(runs) < 2:
        problems.append(f"the job was not requeued: {len(runs)} run(s) in {job_out}")
    for run in runs[1:]:
        if run.resumed_from is None:
            problems.append(f"run {run.number} did not resume from a checkpoint "
                            f"(it started at step {run.start_step})")
    errors, summary = compare(reference, job_out)
    final = read_trace(job_out)[1]
    if errors:
        problems.append("the training differs from the uninterrupted run's: " + "; ".join(errors[:5]))
    if problems:
        for p in problems:
            print(f"demo: FAILED: {p}", file=sys.stderr)
        raise SystemExit(1)
    last, lost = runs[-1], runs[-2]
    committed = timeline.committed.get(last.resumed_from)
    at = f" (committed at {committed:+.1f} s)" if committed is not None else ""
    if lost.last_step is not None and lost.last_step >= last.start_step:
        again = f"steps {last.start_step}-{lost.last_step} computed twice"
    else:
        again = "no step computed twice"
    return [
        f"requeued: {len(runs)} runs of job {last.job}; run {last.number} on {last.nodes}",
        f"resumed:  run {last.number} at step {last.start_step} from checkpoint {last.resumed_from}{at}; "
        f"{again}",
        f"checksum: {final['checksum']}; the uninterrupted run (job {ref.runs[0].job}): "
        f"{ref_final['checksum']}: identical",
        f"          {summary}, bit for bit",
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--slurmctld-log")
    ap.add_argument("--node")
    args = ap.parse_args()
    t0 = float(open(args.events).readline().split()[0])
    timeline = Timeline(t0)
    timeline.read_job(args.job)
    timeline.read_events(args.events)
    if args.slurmctld_log and args.node:
        timeline.read_slurmctld(args.slurmctld_log, args.node)
    print(f"timeline of job {timeline.runs[0].job if timeline.runs else '?'} (seconds after submission):")
    timeline.print()
    lines = verdict(timeline, args.reference, args.job)
    print("result:")
    for line in lines:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
