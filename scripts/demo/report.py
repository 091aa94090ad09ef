#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The end of the demo's story (scripts/demo/story.sh): a timeline of the
fault-tolerant job and the verdict against the uninterrupted reference.

    report.py [--story allocation|requeue] --reference REF.out --job JOB.out
              --events EVENTS [--slurmctld-log LOG] [--node NODE]

REF.out, JOB.out: outputs of etc/examples/mlp-train.sbatch (tests/ft/mlp_log.py),
with the lines of `llmp job run` (cli/cmd_job_run.c) when it ran the job.
EVENTS: what story.sh did, one `EPOCH_SECONDS TEXT` a line; the first line is
the submission, time zero of the timeline; the line that starts `NODE killed`
is time zero of the recovery's phases. LOG, NODE: slurmctld's log and the
node that was killed; Slurm's own lines about that node and the job's
requeue go into the timeline.

--story allocation (the default): a node lost, recovered inside the
allocation by `llmp job run`. The recovery's phases are timed from the
kill: detect (until the ranks' verdict is in and srun is killed), check
(Slurm's view of the nodes and the node check), launch (the relaunch until
the new run's ranks start loading) and load (the checkpoint), and the total
until training resumed. Exits 1, naming the reason on stderr, unless the
batch script ran once, a recovery happened in the allocation, the run after
it resumed from a checkpoint, no run after the loss used a lost node, and
the step losses and final checksum are identical to the reference's.

--story requeue: a node lost and the job requeued by Slurm. Exits 1 unless
the job was requeued, every run after the first resumed from a checkpoint,
and its losses and checksum are identical to the reference's.
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
# `llmp job run`'s lines (cli/cmd_job_run.c, say()): TIME: TEXT.
DRIVER = re.compile(r"^llmp job run: (\S+): (.*)$")
LAUNCH = re.compile(r"^run (\d+) on (\S+) \((\d+) nodes?[,)].*; spares: (\S+)$")
SRUN_KILLED = re.compile(r"^the ranks' verdict is written, .*: srun killed$")
ENDED = re.compile(r"^run (\d+) ended after (\S+) s, srun's code (\d+)$")
OUT = re.compile(r"^(\S+) is out for the rest of the job: (.*)$")
RECOVERY = re.compile(r"^recovery (\d+): (.*); Slurm's view (\S+) s, check (\S+) s$")


def hostnames(hostlist):
    """A Slurm host list ("node[1,3-4]", "a1,b[01-02]") as names, in order."""
    names = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?", hostlist):
        prefix, ranges = m.group(1), m.group(2)
        if ranges is None:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            first, _, last = part.partition("-")
            width = len(first)
            for i in range(int(first), int(last or first) + 1):
                names.append(f"{prefix}{i:0{width}d}")
    return names


class Run:
    """A run of the program: one batch script's srun, or one launch of `llmp job run`."""

    def __init__(self, number, job, nodes, t):
        self.number, self.job, self.nodes, self.t = number, job, nodes, t
        self.start_step = None     # the step it started at
        self.resumed_from = None   # "step-N", or None
        self.resumed_at = None     # (time, seconds loading) of rank 0's resume line
        self.last_step = None      # the last step rank 0 printed
        self.failure = None        # (time, rank) of the first failure seen
        self.srun_killed = None    # time `llmp job run` killed its srun
        self.ended = None          # time `llmp job run` saw it end
        self.recovery = None       # after it failed: (time, number, Slurm's view s, check s)


class Timeline:
    """Rows (seconds since submission, kind, text), the batch runs of the job
    and the launches of `llmp job run` inside it."""

    def __init__(self, t0):
        self.t0 = t0
        self.rows = []
        self.runs = []             # batch runs (mlp-train.sbatch's line)
        self.launches = []         # runs of llmp job run
        self.segments = []         # both, in the order they started
        self.lost = []             # (time, node, why): out for the rest of the job
        self.exits = {}            # (segment, message) -> [time, ranks]
        self.committed = {}        # "step-N" -> time committed

    def add(self, t, text, kind="event", **more):
        self.rows.append(dict(t=t - self.t0, kind=kind, text=text, **more))

    def read_job(self, path):
        for line in open(path, errors="replace").read().splitlines():
            m = RUN.match(line)
            if m:
                run = Run(int(m.group(1)), m.group(2), m.group(4), when(m.group(3)))
                self.runs.append(run)
                self.segments.append(run)
                again = " (Slurm runs the batch script again)" if run.number else ""
                self.add(run.t, f"run {run.number} starts on {run.nodes}{again}")
                continue
            m = DRIVER.match(line)
            if m and when(m.group(1)) is not None:
                self.driver(when(m.group(1)), m.group(2))
                continue
            if not self.segments:
                continue
            run = self.segments[-1]
            m = STEP.match(line)
            if m:
                run.last_step = int(m.group(1))
                continue
            m = EVENT.match(line)
            if m and when(m.group(1)) is not None:
                self.event(run, when(m.group(1)), int(m.group(2)), m.group(3))
        checksum = read_trace(path)[1].get("checksum")
        for (segment, message), (t, ranks) in self.exits.items():
            who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, sorted(ranks)))
            if message.startswith("exit: done") and checksum:
                message += f"; final checksum {checksum}"
            self.add(t, f"{who} {message}")

    def driver(self, t, text):
        """One line of `llmp job run`: a row of the timeline as it is, and the facts in it."""
        self.add(t, f"llmp job run: {text}")
        job = self.runs[-1].job if self.runs else "?"
        if m := LAUNCH.match(text):
            run = Run(int(m.group(1)), job, m.group(2), t)
            self.launches.append(run)
            self.segments.append(run)
            return
        run = self.launches[-1] if self.launches else None
        if run is None:
            return
        if SRUN_KILLED.match(text):
            run.srun_killed = t
        elif ENDED.match(text):
            run.ended = t
        elif m := OUT.match(text):
            self.lost.append((t, m.group(1), m.group(2)))
        elif m := RECOVERY.match(text):
            run.recovery = (t, int(m.group(1)), float(m.group(3)), float(m.group(4)))

    def event(self, run, t, rank, what):
        """One line of the job layer; rank 0 speaks for all but failures and exits."""
        if rank == 0 and (m := RESUME.match(what)):
            run.start_step, run.resumed_from = int(m.group(1)), m.group(2)
            run.resumed_at = (t, float(m.group(4)))
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
                     kind="checkpoint", segment=self.segments.index(run), first=first, step=step)
        elif (m := FAILURE.match(what)) and run.failure is None:
            run.failure = (t, rank)
            self.add(t, f"rank {rank} sees the failure after step {m.group(1)}: {m.group(2)}")
        elif what.startswith("exit: "):
            seen = self.exits.setdefault((self.segments.index(run), what), [t, []])
            seen[0] = min(seen[0], t)
            seen[1].append(rank)

    def first_step_since_checkpoint(self, run):
        segment = self.segments.index(run)
        for row in reversed(self.rows):
            if row["kind"] == "checkpoint" and row["segment"] == segment:
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


def read_reference(reference, problems):
    """The reference's timeline; a problem when it is not one complete run."""
    ref = Timeline(0)
    ref.read_job(reference)
    ref_final = read_trace(reference)[1]
    if len(ref.runs) != 1 or "checksum" not in ref_final:
        problems.append(f"the reference {reference} is not one complete run "
                        f"({len(ref.runs)} runs, final checksum {ref_final.get('checksum', 'missing')})")
    return ref, ref_final


def fail(problems):
    if problems:
        for p in problems:
            print(f"demo: FAILED: {p}", file=sys.stderr)
        raise SystemExit(1)


def resumed_line(last, lost):
    """What the run that resumed did, and which steps were computed twice."""
    if lost.last_step is not None and lost.last_step >= last.start_step:
        return f"steps {last.start_step}-{lost.last_step} computed twice"
    return "no step computed twice"


def checksum_lines(final, ref, ref_final, summary):
    return [
        f"checksum: {final['checksum']}; the uninterrupted run (job {ref.runs[0].job}): "
        f"{ref_final['checksum']}: identical",
        f"          {summary}, bit for bit",
    ]


def verdict_requeue(timeline, reference, job_out):
    """Lines saying what held, or raise SystemExit naming what did not."""
    problems = []
    ref, ref_final = read_reference(reference, problems)
    runs = timeline.runs
    if len(runs) < 2:
        problems.append(f"the job was not requeued: {len(runs)} run(s) in {job_out}")
    for run in runs[1:]:
        if run.resumed_from is None:
            problems.append(f"run {run.number} did not resume from a checkpoint "
                            f"(it started at step {run.start_step})")
    errors, summary = compare(reference, job_out)
    if errors:
        problems.append("the training differs from the uninterrupted run's: " + "; ".join(errors[:5]))
    fail(problems)
    last, lost = runs[-1], runs[-2]
    committed = timeline.committed.get(last.resumed_from)
    at = f" (committed at {committed:+.1f} s)" if committed is not None else ""
    return [
        f"requeued: {len(runs)} runs of job {last.job}; run {last.number} on {last.nodes}",
        f"resumed:  run {last.number} at step {last.start_step} from checkpoint {last.resumed_from}{at}; "
        f"{resumed_line(last, lost)}",
    ] + checksum_lines(read_trace(job_out)[1], ref, ref_final, summary)


def phases(timeline, killed):
    """The phases of the first recovery, seconds each, from the kill at epoch
    `killed` (None: unknown) until the next run resumed; None when there was none."""
    for i, lost in enumerate(timeline.launches[:-1]):
        nxt = timeline.launches[i + 1]
        if lost.recovery is None or nxt.resumed_at is None:
            continue
        ended = lost.srun_killed or lost.ended
        resumed, load = nxt.resumed_at
        started = resumed - load  # the new run's ranks start loading
        return dict(
            lost=lost, next=nxt, killed=killed,
            verdict=lost.failure[0] if lost.failure else None,
            ended=ended, recovered=lost.recovery[0], view=lost.recovery[2], check=lost.recovery[3],
            launched=nxt.t, started=started, load=load, resumed=resumed)
    return None


def print_phases(p, node):
    """The recovery's phases, seconds each, and when each ended after the kill."""
    k = p["killed"]

    def took(a, b):
        return f"{b - a:6.3f} s" if a is not None and b is not None else "     ? s"

    def since(t):
        return f" (+{t - k:.2f} s)" if k is not None and t is not None else ""

    verdict = f"; the ranks' verdict at +{p['verdict'] - k:.2f} s" if p["verdict"] and k else ""
    print(f"recovery {p['lost'].recovery[1]} in the allocation, after {node} was killed:")
    until = "srun was killed" if p["lost"].srun_killed else f"run {p['lost'].number} ended"
    print(f"  detect  {took(k, p['ended'])}  until {until}{since(p['ended'])}{verdict}")
    print(f"  check   {took(p['ended'], p['recovered'])}  Slurm's view {p['view']:.1f} s, "
          f"check {p['check']:.1f} s{since(p['recovered'])}")
    print(f"  launch  {took(p['launched'], p['started'])}  run {p['next'].number} on {p['next'].nodes} "
          f"until its ranks start loading{since(p['started'])}")
    print(f"  load    {took(0, p['load'])}  checkpoint {p['next'].resumed_from}{since(p['resumed'])}")
    print(f"  total   {took(k, p['resumed'])}  {node} killed -> training resumed at step {p['next'].start_step}")


def verdict_allocation(timeline, reference, job_out, node, p):
    """Lines saying what held, or raise SystemExit naming what did not."""
    problems = []
    ref, ref_final = read_reference(reference, problems)
    runs, launches = timeline.runs, timeline.launches
    if len(runs) != 1:
        problems.append(f"the batch script ran {len(runs)} times in {job_out}, not once "
                        f"(requeued by Slurm, or never started): not recovered in the allocation")
    recovered = [r for r in launches if r.recovery is not None]
    later = launches[launches.index(recovered[0]) + 1:] if recovered else []
    if not recovered or not later:
        problems.append(f"no recovery in the allocation: {len(launches)} run(s) of llmp job run "
                        f"and no `recovery N:` line followed by another run in {job_out}")
    elif later[0].resumed_from is None:
        problems.append(f"run {later[0].number} of llmp job run did not resume from a checkpoint "
                        f"(it started at step {later[0].start_step})")
    lost = {name for _, name, _ in timeline.lost} | ({node} if node else set())
    for run in later:
        again = sorted(lost & set(hostnames(run.nodes)))
        if again:
            problems.append(f"run {run.number} of llmp job run used {', '.join(again)} "
                            f"after it was lost: {run.nodes}")
    if node and recovered and node not in {name for _, name, _ in timeline.lost}:
        problems.append(f"llmp job run never took {node} out (no `{node} is out for the rest of the job`)")
    errors, summary = compare(reference, job_out)
    if errors:
        problems.append("the training differs from the uninterrupted run's: " + "; ".join(errors[:5]))
    fail(problems)
    gone, nxt = recovered[0], later[0]
    why = "; ".join(f"{name} out: {reason}" for _, name, reason in timeline.lost)
    committed = timeline.committed.get(nxt.resumed_from)
    at = f" (committed at {committed:+.1f} s)" if committed is not None else ""
    took = (f"; training resumed {p['resumed'] - p['killed']:.1f} s after the kill"
            if p is not None and p["killed"] is not None else "")
    return [
        f"in place: job {runs[0].job}, one batch run, {len(launches)} runs of llmp job run; "
        f"run {gone.number} on {gone.nodes}, run {nxt.number} on {nxt.nodes}",
        f"lost:     {why}; never used again",
        f"resumed:  run {nxt.number} at step {nxt.start_step} from checkpoint {nxt.resumed_from}{at}; "
        f"{resumed_line(nxt, gone)}{took}",
    ] + checksum_lines(read_trace(job_out)[1], ref, ref_final, summary)


def killed_at(path, node):
    """Epoch of the events line `NODE killed...`, or None."""
    for line in open(path).read().splitlines():
        epoch, _, text = line.partition(" ")
        if node and text.startswith(f"{node} killed"):
            return float(epoch)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--story", choices=("allocation", "requeue"), default="allocation")
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
    if args.story == "requeue":
        lines = verdict_requeue(timeline, args.reference, args.job)
    else:
        p = phases(timeline, killed_at(args.events, args.node))
        if p is not None:
            print_phases(p, args.node or "the node")
        lines = verdict_allocation(timeline, args.reference, args.job, args.node, p)
    print("result:")
    for line in lines:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
