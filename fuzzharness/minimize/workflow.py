"""From a campaign's buckets (or one case file) to verified repro directories.

For every selected bucket — by default the *new* findings, i.e. those that match no entry of
the campaign's known-bugs file — in order of frequency:

1. take the bucket's first case (or, when the failure happened while the schedule was being
   drawn and no case was stored, its choice sequence, regenerated from the campaign seed);
2. minimize it (:func:`fuzzharness.minimize.minimize`, per-bucket budget);
3. write ``DIR/repros/<bucket>/{case.json, repro.py}``, run the script in a fresh process,
   and write ``issue.md`` only if it reproduced (:mod:`fuzzharness.repro.package`);
4. record the outcome in the campaign database (``repros`` table).

``total_budget`` caps the time of the whole run (minimization, verification and triage);
buckets left when it is spent are reported as not minimized.  Each bucket gets an equal
share of what is left, at least :data:`MIN_SHARE` seconds, at most ``per_bucket``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzharness.buckets import KnownBugs, Signature, signature
from fuzzharness.case import Case
from fuzzharness.minimize.minimizer import DEFAULT_BUDGET, MinimizeResult, minimize
from fuzzharness.verdict import Status, Verdict

MIN_SHARE = 30.0  # seconds: below this a minimization rarely gets anywhere
REPRO_OVERHEAD = 25.0  # seconds set aside per bucket for writing, verifying and triage
REPROS_DIR = "repros"


@dataclasses.dataclass
class BucketRepro:
    key: str
    title: str
    count: int
    status: str  # reproduced | not reproduced | did not reproduce at start | skipped (budget) | failed
    dir: Path | None = None
    original_length: int = -1
    length: int = -1
    seconds: float = 0.0
    runs: int = 0
    note: str = ""
    issue_title: str = ""
    unit: str = "trace instructions"  # what original_length / length count

    @property
    def reproduced(self) -> bool:
        return self.status == "reproduced"

    def line(self) -> str:
        label = "trace" if self.unit == "trace instructions" else f"size ({self.unit})"
        trace = (f"{label} {self.original_length} → {self.length}"
                 if self.original_length >= 0 and self.length >= 0 else "")
        where = f"  {self.dir}" if self.dir and self.reproduced else ""
        extra = ", ".join(x for x in (trace, f"{self.seconds:.0f} s" if self.seconds else "",
                                      self.note) if x)
        return f"  {self.status:<22} {self.key}  {self.title[:90]}" + (
            f"\n        {extra}" if extra else "") + where


def _say(enabled: bool) -> Callable[[str], None]:
    def say(msg: str) -> None:
        if enabled:
            print(f"  minimize: {msg}", file=sys.stderr, flush=True)
    return say


def select_buckets(db, known: KnownBugs, tvm_version: str | None, which: str,
                   keys: list[str] | None = None) -> list[dict[str, Any]]:
    """The buckets to minimize: ``new`` findings, ``all`` findings, or the given ``keys``."""
    out = []
    for b in db.buckets():
        sig: Signature = b["signature"]
        if not sig.is_finding:
            continue
        if keys:
            if not any(b["key"].startswith(k) for k in keys):
                continue
        elif which == "new" and known.match(sig, tvm_version) is not None:
            continue
        out.append(b)
    return out


def minimize_campaign(out: str | Path, *, which: str = "new", keys: list[str] | None = None,
                      total_budget: float | None = None, per_bucket: float = DEFAULT_BUDGET,
                      workers: int | None = None, verify_times: int = 1, triage: bool = True,
                      progress: bool = True, force: bool = False) -> list[BucketRepro]:
    """Minimize the selected buckets of the campaign in ``out`` (see the module docstring).

    Each bucket is handled by a child process (:func:`bucket_job`): minimizing draws
    candidates and replays traces with TVM in-process, and a TVM bug that corrupts memory
    there must not reach the campaign database — only this process writes it, and it runs
    no TVM code.
    """
    from fuzzharness.engine.db import ResultsDB
    from fuzzharness.settings import CampaignSettings

    start = time.monotonic()
    out = Path(out)
    db = ResultsDB(out)
    try:
        stored = db.campaign()
        settings = CampaignSettings.from_dict(stored["settings"])
        versions = stored["versions"]
        known = KnownBugs.load(settings.known_bugs or None)
        buckets = select_buckets(db, known, versions.get("tvm"), which, keys)
        done = {r["bucket"]: r for r in db.repros() if r["reproduced"]}
        examples = {b["key"]: db.find_case(str(b["example_idx"])) for b in buckets}
    finally:
        db.close()
    results: list[BucketRepro] = []
    todo = []
    for b in buckets:
        if b["key"] in done and not force:
            r = done[b["key"]]
            results.append(BucketRepro(b["key"], b["title"], b["count"], "reproduced",
                                       Path(r["path"]), r["original_length"] or -1,
                                       r["length"] or -1, note="(earlier run)",
                                       issue_title=r["title"] or ""))
        else:
            todo.append(b)
    for n, b in enumerate(todo):
        left = None if total_budget is None else total_budget - (time.monotonic() - start)
        share = per_bucket
        if left is not None:
            if left < MIN_SHARE:
                results.append(BucketRepro(b["key"], b["title"], b["count"], "skipped (budget)"))
                continue
            fair = left / (len(todo) - n) - REPRO_OVERHEAD
            share = min(per_bucket, max(MIN_SHARE, fair), max(5.0, left - REPRO_OVERHEAD))
        _say(progress)(f"bucket {b['key']} ({n + 1}/{len(todo)}, {share:.0f} s): {b['title'][:80]}")
        job = {
            "out": str(out), "key": b["key"], "title": b["title"], "count": b["count"],
            "target": b["signature"].to_dict(), "example": examples[b["key"]],
            "seed": stored["seed"], "settings": settings.to_dict(), "versions": versions,
            "budget": share, "workers": workers or settings.workers,
            "verify_times": verify_times, "triage": triage, "progress": progress,
        }
        res, record = _run_job(job, share)
        if record is not None:
            db = ResultsDB(out)
            try:
                db.add_repro(record)
            finally:
                db.close()
        results.append(res)
    return results


JOB_SLACK = 300.0  # seconds beyond the bucket's budget before its process is given up on


def _run_job(job: dict[str, Any], budget: float) -> tuple[BucketRepro, dict[str, Any] | None]:
    """Run :func:`bucket_job` in a child process; a death there is one failed bucket."""
    import json
    import subprocess
    import tempfile

    from fuzzharness import interpreter

    res = BucketRepro(job["key"], job["title"], job["count"], "failed")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps(job))
        # under the campaign's --tvm-python, if any: its workers, repro checks and triage
        # run against the TVM the failure was found with (fuzzharness/interpreter.py)
        python, env = interpreter.command_env(interpreter.campaign_env(job["settings"]))
        cmd = [python, "-m", "fuzzharness.minimize.workflow", str(path)]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env,
                               timeout=budget + JOB_SLACK)
        except subprocess.TimeoutExpired:
            res.note = f"the minimizing process ran past {budget + JOB_SLACK:.0f} s"
            return res, None
        reply = Path(tmp) / "result.json"
        if p.returncode != 0 or not reply.exists():
            from fuzzharness.engine.outcomes import signal_name

            why = signal_name(p.returncode) or f"exit {p.returncode}"
            res.note = f"the minimizing process died ({why})"
            return res, None
        data = json.loads(reply.read_text())
    r = data["result"]
    res = BucketRepro(**{**r, "dir": Path(r["dir"]) if r.get("dir") else None})
    return res, data.get("record")


def bucket_job(job: dict[str, Any]) -> tuple[BucketRepro, dict[str, Any] | None]:
    """Minimize one bucket and write its repro (in a child process; see above)."""
    from fuzzharness.settings import CampaignSettings

    settings = CampaignSettings.from_dict(job["settings"])
    # the example's own target when the campaign mixes targets (generators/targets.py)
    settings.generation = settings.generation.at(job["seed"], job["example"]["idx"])
    target = Signature.from_dict(job["target"])
    say = _say(job["progress"])
    res = BucketRepro(job["key"], job["title"], job["count"], "failed")
    try:
        case, verdict, choices = _example(job["example"], job["seed"], settings)
        timeout = settings.timeout if target.symptom == Status.TIMEOUT.value else min(settings.timeout, 20.0)
        m = minimize(case, verdict, target, choices=choices, gen_settings=settings.generation,
                     budget=job["budget"], workers=job["workers"], timeout=timeout,
                     memory_mb=settings.memory_mb, progress=say)
        res.seconds, res.original_length, res.length = m.seconds, m.original_length, m.length
        res.unit = m.unit
        if not m.reproduced:
            res.status, res.note = "did not reproduce at start", m.note
            return res, None
        return _write(Path(job["out"]), job["key"], m, settings, job["versions"],
                      job["verify_times"], job["triage"], res, timeout)
    except Exception as e:  # noqa: BLE001 - reported as this bucket's failure
        import traceback

        res.note = f"{type(e).__name__}: {e}"[:300]
        say("failed: " + traceback.format_exc(limit=-3).strip().splitlines()[-1])
        return res, None


def _example(row: dict[str, Any], seed: int, settings) -> tuple[Case | None, Verdict, list | None]:
    verdict = Verdict.from_dict(row["verdict"])
    if row["case"] is not None:
        return Case.from_dict(row["case"]), verdict, None
    # no case stored: the failure happened while the schedule was drawn; draw it again
    from generators import draw as draws
    from generators.cases import draw_case

    data = draws.for_case(seed, row["idx"])
    try:
        draw_case(data, settings.generation)
    except Exception:  # noqa: BLE001 - expected: this is the failure
        pass
    return None, verdict, draws.recorded_choices(data)


def _write(out: Path, key: str, m: MinimizeResult, settings, versions, verify_times: int,
           triage: bool, res: BucketRepro, timeout: float) -> tuple[BucketRepro, dict[str, Any] | None]:
    from fuzzharness.repro.package import write_repro

    d = out / REPROS_DIR / key
    failing_call = None
    case, verdict = m.case, m.verdict
    if case is None and m.choices is not None:  # a failure while drawing the schedule
        from fuzzharness.repro.generation_failure import as_case, capture
        from fuzzharness.repro.script import NotReproducible

        try:
            call = capture(m.choices, settings.generation)
        except NotReproducible as e:
            res.status, res.note = "not reproduced", f"no standalone script: {e}"
            return res, None
        case = as_case(call, settings.generation, {"minimized_from": f"choices of bucket {key}"},
                       verdict)
        failing_call = call.line
        res.length = len(case.trace[0]) + 1 if case.trace else 1
    sig = signature(case.to_dict(), verdict) if verdict is not None else None
    if failing_call is not None:
        sig = m.signature
    outcome = write_repro(d, case, verdict, bucket=key, signature=sig, versions=versions,
                          minimized=m.to_dict() | {"length": res.length}, verify_times=verify_times,
                          triage=triage, timeout=timeout, failing_call=failing_call,
                          first_seen=m.target.title())
    res.dir, res.runs = d, len(outcome.runs)
    res.issue_title = outcome.title
    res.status = "reproduced" if outcome.reproduced else "not reproduced"
    if not outcome.reproduced:
        res.note = outcome.problem
    return res, outcome.record


def format_report(results: list[BucketRepro], *, total_budget: float | None = None,
                  seconds: float | None = None) -> str:
    if not results:
        return "minimize: no new failure buckets"
    ok = sum(r.reproduced for r in results)
    tried = sum(r.status != "skipped (budget)" for r in results)
    head = (f"minimize: {len(results)} bucket{'s' if len(results) != 1 else ''}, {tried} "
            f"minimized, {ok} verified repro{'s' if ok != 1 else ''}")
    if seconds is not None:
        head += f" in {seconds:.0f} s"
    if total_budget is not None:
        head += f" (time cap {total_budget:g} s; --minimize-budget)"
    lines = [head]
    lines += [r.line() for r in results]
    skipped = [r for r in results if r.status == "skipped (budget)"]
    if skipped:
        lines.append(f"  {len(skipped)} bucket(s) not minimized within the time cap: "
                     "run `fuzzharness minimize DIR` to do them")
    return "\n".join(lines)


def after_campaign(out: str | Path, total_budget: float, *, progress: bool = True) -> str:
    """Minimize a finished campaign's new buckets in a child process; return its report.

    A child process because drawing candidates runs TVM in the minimizing process: whatever
    happens there, the campaign's own process and its summary survive.
    """
    import subprocess

    cmd = [sys.executable, "-m", "fuzzharness.cli", "minimize", str(out),
           "--total-budget", f"{total_budget:g}"] + ([] if progress else ["--no-progress"])
    if progress:
        print(f"minimizing new buckets (at most {total_budget:g} s; --no-minimize to skip)",
              file=sys.stderr, flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True,
                           timeout=total_budget + 4 * REPRO_OVERHEAD + 120)
    except subprocess.TimeoutExpired:
        return f"minimize: stopped (took far longer than its time cap); run `fuzzharness minimize {out}`"
    except KeyboardInterrupt:
        return f"minimize: interrupted; what was verified is stored; run `fuzzharness minimize {out}`"
    if p.returncode not in (0, 1):
        return f"minimize: failed (exit {p.returncode}); run `fuzzharness minimize {out}`"
    return p.stdout.strip()


def _job_main(argv: list[str]) -> int:
    """``python -m fuzzharness.minimize.workflow JOB.json``: writes result.json beside it."""
    import json

    from fuzzharness.engine.tasks import load_plugins

    load_plugins()
    path = Path(argv[0])
    res, record = bucket_job(json.loads(path.read_text()))
    result = dataclasses.asdict(res)
    result["dir"] = str(res.dir) if res.dir else None
    (path.parent / "result.json").write_text(json.dumps({"result": result, "record": record}))
    return 0


if __name__ == "__main__":
    sys.exit(_job_main(sys.argv[1:]))
