"""Run a fuzz campaign: generate cases from a seed, build and run them with TVM in worker
processes, judge them against float64 references, and store every case and verdict in
DIR/results.sqlite.  Failures are grouped into buckets and matched against a known-bugs file.

  fuzzharness run [DIR] [options]       a new campaign in DIR (default fuzz-runs/<time>-seed<seed>)
  fuzzharness run DIR --resume          continue the campaign stored in DIR

Settings come from the embedded defaults, then --config FILE (TOML), then flags
(`fuzzharness config ...` with the same flags prints the result as TOML).  A resumed
campaign keeps its stored settings; only the stopping rule, workers, timeout, memory,
executor (and Ray address), remote device and known-bugs file may be changed then, and a
campaign recorded by another harness or TVM version is refused (its remaining cases would
come from another generator) unless --force.

Everything that can be wrong with the request is checked before the first case runs: flags
and settings, the campaign directory (writable, not a file), the database (ours, not newer,
not corrupt).  Ctrl-C (or SIGTERM) stops within seconds: every finished case is stored, the
workers are ended, and one line says how to resume.

Exit status: 0 no new failures (every TVM finding is a known bug), 1 new failures,
2 usage/configuration/environment error, 3 interrupted or harness errors (see below).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
from pathlib import Path

from fuzzharness.commands.common import (
    add_output_flags,
    count,
    deprecated,
    fraction,
    name_list,
    positive,
    seconds,
    seconds_or_zero,
)
from fuzzharness.commands.target_option import (
    default_mix,
    describe_targets,
    target_mix_option,
    target_option,
)
from fuzzharness.core.errors import UsageError

HELP = "run a fuzz campaign"

#: seconds, for all new buckets together: the default 2-minute campaign stays a few minutes.
#: $FUZZHARNESS_MINIMIZE_BUDGET changes the default (the test suite sets it to 0).
MINIMIZE_BUDGET = 120.0
MINIMIZE_BUDGET_ENV = "FUZZHARNESS_MINIMIZE_BUDGET"
_GENERATION_FLAGS = ("workloads", "dtypes", "primitives", "max_steps", "target", "seed",
                     "config", "graph_fraction", "feedback")  # --tvm-python may change: see settings.py


def add_arguments(p) -> None:
    p.add_argument("dir", metavar="DIR", type=Path, nargs="?",
                   help="the campaign directory (default for a new one: "
                        "fuzz-runs/<timestamp>-seed<seed>)")
    p.add_argument("--resume", nargs="?", const=True, metavar="DIR",
                   help="continue the campaign stored in DIR with its stored settings "
                        "(`run DIR --resume`; `--resume DIR` also works)")
    p.add_argument("--force", action="store_true",
                   help="with --resume: continue a campaign recorded by another harness or "
                        "TVM version (its remaining cases may differ from what it would have "
                        "generated)")
    p.add_argument("--out", type=Path, metavar="DIR", help="the same as DIR")
    p.add_argument("--seed", type=count, help="campaign seed (default: random, printed)")
    p.add_argument("--time-budget", type=seconds_or_zero, metavar="SECONDS",
                   help="stop handing out cases after this long (default 120; 0 = no limit)")
    p.add_argument("--max-cases", type=count, metavar="N", help="stop after N cases (0 = no limit)")
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes (default: CPU count)")
    p.add_argument("--timeout", type=seconds, metavar="SECONDS", help="per-case timeout (default 30)")
    p.add_argument("--memory-mb", type=count, metavar="MB",
                   help="data-memory limit per worker (default 4096; 0 = none)")
    p.add_argument("--executor", metavar="NAME",
                   help="where cases run: local (default; worker processes here) or ray "
                        "(actors on a Ray cluster: pip install 'tvm-fuzzharness[distributed]')")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="with --executor ray: the cluster, e.g. HOST:6379 from `ray start --head` "
                        "(default: $RAY_ADDRESS, else a private Ray instance on this machine)")
    p.add_argument("--rpc-server", metavar="HOST:PORT",
                   help="run kernels on the device of this TVM RPC server (built here, judged here)")
    p.add_argument("--rpc-tracker", metavar="HOST:PORT",
                   help="run kernels on a device of this TVM RPC tracker (with --rpc-key)")
    p.add_argument("--rpc-key", metavar="KEY", help="device key on the RPC tracker (or server)")
    p.add_argument("--known-bugs", type=Path, metavar="FILE",
                   help="known-bugs TOML file (default: the packaged fuzzharness/known_bugs.toml)")
    p.add_argument("--strict-order", action="store_true", default=None,
                   help="order_preserving_divergence notes (an order-preserving schedule's output "
                        "differs bitwise from the declared arithmetic in the declared order or "
                        "from TVM's unscheduled build, while the bound and the exact-input run "
                        "accept it: a legal summation order or wider accumulator may explain it) "
                        "fail the campaign like findings (exit status 1)")
    p.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")
    p.add_argument("--workloads", help="comma-separated workload names (default: all; "
                                       "`fuzzharness list workloads`)")
    p.add_argument("--dtypes", help="comma-separated dtype labels (default: all)")
    p.add_argument("--primitives", help="comma-separated schedule primitives (default: all)")
    p.add_argument("--max-steps", type=count, metavar="N", help="max schedule steps per case")
    p.add_argument("--feedback", type=fraction, metavar="P",
                   help="share of cases that mutate earlier cases which built a new program "
                        "class (default 0; docs/usage.md)")
    p.add_argument("--graph-fraction", type=fraction, metavar="P",
                   help="share of whole-graph (Relax) cases when the workloads are not named "
                        "(default 0.2; 0 = single-PrimFunc cases only; --workloads graph: "
                        "graphs only)")
    p.add_argument("--target", metavar="NAME[,NAME...]|JSON",
                   help="target preset: llvm, cuda (nvcc compile; runs on a GPU host), "
                        "opencl or adreno (run by pyopencl on an OpenCL CPU runtime); "
                        "or a JSON target dict; several names (llvm,opencl,adreno) mix them "
                        "in one campaign, in equal shares.  Default: llvm, plus OpenCL and "
                        "Adreno texture cases when an OpenCL runtime is found (the header "
                        "says which targets run and why)")
    p.add_argument("--tvm-python", metavar="PATH",
                   help="run the workers under this Python interpreter and the TVM it imports "
                        "(a source build, a nightly, an older release; it needs numpy, "
                        "ml_dtypes and hypothesis; the harness comes from this checkout)")
    p.add_argument("--baseline", metavar="SPEC",
                   help="after the campaign, re-run each new bucket's case under a baseline TVM "
                        "(a release such as 0.26 — its environment is made with pip once — or "
                        "a Python interpreter's path): passing there → regression (listed "
                        "first), failing there → pre-existing, refused there → not comparable")
    p.add_argument("--no-confirm", dest="confirm", action="store_false", default=None,
                   help="count failures as findings without re-running them alone in a fresh "
                        "worker first (faster; a failure caused by an earlier case then counts)")
    p.add_argument("--no-hygiene", dest="hygiene", action="store_false", default=None,
                   help="run workers without glibc's malloc checks and llvm guard zones")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument("--coverage", action="store_true",
                   help="print the coverage tables in the summary (default: one line)")
    p.add_argument("--no-minimize", action="store_true",
                   help="do not minimize new failure buckets into repros at the end")
    p.add_argument("--minimize-budget", type=seconds_or_zero, metavar="SECONDS",
                   help="time cap for minimizing new buckets at the end, all together "
                        f"(default {MINIMIZE_BUDGET:g}, or ${MINIMIZE_BUDGET_ENV}; 0 = do not)")
    add_output_flags(p, json_help="print the summary as JSON on stdout (counts, new findings "
                                  "with their repro paths, exit status)")


def interrupted_hint(args) -> str:
    where = getattr(args, "_campaign_dir", None)
    if where is None:
        return "nothing was stored"
    return f"the finished cases are stored; continue with: fuzzharness run {where} --resume"


def _run_overrides(args) -> dict:
    """Flags about how long and how the campaign runs (allowed on resume)."""
    over = {"time_budget": args.time_budget, "max_cases": args.max_cases,
            "workers": args.workers, "timeout": args.timeout, "memory_mb": args.memory_mb,
            "executor": args.executor, "ray_address": args.ray_address,
            "known_bugs": str(args.known_bugs.resolve()) if args.known_bugs else None,
            "rpc": _rpc(args), "confirm": args.confirm, "hygiene": args.hygiene,
            "strict_order": args.strict_order, "tvm_python": args.tvm_python}
    return {k: v for k, v in over.items() if v is not None}


def _rpc(args) -> dict | None:
    """The remote device named by --rpc-* flags (None: none named; the settings decide)."""
    rpc = {k: v for k, v in {"server": args.rpc_server, "tracker": args.rpc_tracker,
                             "key": args.rpc_key}.items() if v is not None}
    return rpc or None


def settings_from_args(args):
    """The settings of a new campaign: defaults < --config FILE < flags (not validated)."""
    from fuzzharness.campaign.settings import CampaignSettings, read_toml

    s, toml_keys, toml_gen = CampaignSettings(), set(), {}
    if args.config:
        camp, gen = read_toml(args.config)
        toml_keys, toml_gen = set(camp), gen
        s = dataclasses.replace(s, **camp)
        s = dataclasses.replace(s, generation=dataclasses.replace(s.generation, **gen))
    over = _run_overrides(args)
    if args.seed is not None:
        over["seed"] = args.seed
    if args.max_cases and args.time_budget is None and "time_budget" not in toml_keys:
        over["time_budget"] = 0.0  # --max-cases alone means "run exactly N"
    s = dataclasses.replace(s, **over)
    mix = target_mix_option(args.target)
    gen = {k: v for k, v in {
        "workloads": name_list("--workloads", args.workloads),
        "dtypes": name_list("--dtypes", args.dtypes),
        "primitives": name_list("--primitives", args.primitives), "max_steps": args.max_steps,
        "target": mix[0] if mix else target_option(args.target), "graph_fraction": args.graph_fraction,
        "feedback": args.feedback,
        "targets": tuple(mix) if mix else None,
    }.items() if v is not None}
    s = dataclasses.replace(s, generation=dataclasses.replace(s.generation, **gen))
    named = args.target is not None or ({"target", "targets"} & set(toml_gen))
    return s if named else default_mix(s)


def resume_overrides(args) -> dict:
    """The settings a resume may change, from the flags; a usage error for the others."""
    given = [f"--{k.replace('_', '-')}" for k in _GENERATION_FLAGS
             if getattr(args, k, None) is not None]
    if given:
        raise UsageError(f"{', '.join(given)} cannot change a stored campaign "
                         "(it would generate different cases); start a new one")
    over = _run_overrides(args)
    if args.max_cases and args.time_budget is None:
        over["time_budget"] = 0.0
    return over


def campaign_directory(args) -> tuple[Path | None, bool]:
    """(the campaign directory or None for a new default one, resume?) from DIR, --out and
    --resume [DIR]; a usage error when they disagree."""
    named = [d for d in (args.dir, args.out) if d is not None]
    if isinstance(args.resume, str):  # the old spelling `--resume DIR`
        deprecated("--resume DIR", "fuzzharness run DIR --resume")
        named.append(Path(args.resume))
    if len({str(Path(d)) for d in named}) > 1:
        raise UsageError(f"two campaign directories given ({', '.join(map(str, named))}); "
                         "give one DIR")
    directory = named[0] if named else None
    resume = args.resume is not None
    if resume and directory is None:
        raise UsageError("--resume: which campaign? `fuzzharness run DIR --resume`")
    if args.force and not resume:
        raise UsageError("--force only applies to --resume")
    return directory, resume


def session_argv(args, argv: list[str]) -> list[str]:
    """The command line stored with the session; a minimization budget that came from
    $FUZZHARNESS_MINIMIZE_BUDGET is written out, so the record says what was in effect."""
    import os

    if args.minimize_budget is None and not args.no_minimize and os.environ.get(MINIMIZE_BUDGET_ENV, "").strip():
        return ["run", *argv, f"--minimize-budget={minimize_budget(args):g}"]
    return ["run", *argv]


def minimize_budget(args) -> float:
    import math
    import os

    budget = args.minimize_budget
    if budget is None:
        text = os.environ.get(MINIMIZE_BUDGET_ENV, "")
        try:
            budget = float(text) if text.strip() else MINIMIZE_BUDGET
        except ValueError:
            budget = -1.0
        if not math.isfinite(budget) or budget < 0:
            raise UsageError(f"${MINIMIZE_BUDGET_ENV}={text!r} is not a number of seconds ≥ 0")
    return 0.0 if args.no_minimize else budget


def main(args, argv) -> int:
    from fuzzharness.campaign import status
    from fuzzharness.campaign.driver import Campaign
    from fuzzharness.campaign.summary import format_summary, summary_json, summary_quiet
    from fuzzharness.core.storage import check_writable_dir

    directory, resume = campaign_directory(args)
    quiet = args.quiet or args.json
    baseline = _baseline(args, quiet)
    progress = not (args.no_progress or quiet)
    if resume:
        over = resume_overrides(args)
        status.check_resumable(directory, force=args.force)
        args._campaign_dir = directory
        campaign = Campaign(directory, resume=True, overrides=over, argv=session_argv(args, argv),
                            progress=progress, minimize_budget=minimize_budget(args))
    else:
        settings = settings_from_args(args).validate()
        if settings.seed is None:
            import random

            settings.seed = random.randrange(2**31)
        out = directory or Path("fuzz-runs") / (
            datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + f"-seed{settings.seed}")
        check_writable_dir(out, "the campaign directory")
        budget = minimize_budget(args)
        campaign = Campaign(out, settings, argv=session_argv(args, argv), progress=progress,
                            minimize_budget=budget)
        args._campaign_dir = out
    if not quiet:
        print(header(campaign), file=sys.stderr, flush=True)
    status.mark_running(campaign.out)
    try:
        summary = campaign.run()
        if baseline is not None and not summary.interrupted and summary.new_buckets:
            from fuzzharness.commands.baseline_step import against_baseline

            against_baseline(summary, baseline, timeout=campaign.settings.timeout,
                             progress=not quiet)
    finally:
        status.mark_stopped(campaign.out)
    if args.json:
        print(json.dumps(summary_json(summary), indent=1))
    elif args.quiet:
        print(summary_quiet(summary))
    else:
        print(format_summary(summary, coverage_table=args.coverage))
    sys.stdout.flush()
    if summary.interrupted == "minimizing":
        print(f"fuzzharness: interrupted while minimizing new buckets (every case ran and is "
              f"stored); the verified repros are stored; continue with: fuzzharness minimize "
              f"{campaign.out}", file=sys.stderr, flush=True)
    elif summary.interrupted:
        print(f"fuzzharness: interrupted while running cases; {interrupted_hint(args)}",
              file=sys.stderr, flush=True)
    return summary.exit_code


def _baseline(args, quiet: bool):
    """--baseline SPEC resolved before any work (a usage error otherwise)."""
    if not getattr(args, "baseline", None):
        return None
    from fuzzharness.releases.baseline import BaselineError, resolve

    say = (lambda m: None) if quiet else (lambda m: print(f"fuzzharness: {m}", file=sys.stderr, flush=True))
    try:
        return resolve(args.baseline, say=say)
    except BaselineError as e:
        raise UsageError(f"--baseline: {e}") from None


def header(campaign) -> str:
    s = campaign.settings
    limit = []
    if s.time_budget:
        limit.append(f"{s.time_budget:g} s")
    if s.max_cases:
        limit.append(f"{s.max_cases} cases")
    mini = (f"then ≤ {campaign.minimize_budget:g} s minimizing new buckets"
            if campaign.minimize_budget else "no minimization")
    device = s.remote_device()
    where = f" on {device.describe()}" if device is not None else ""
    executor = s.executor + (f" at {s.ray_address}" if s.executor == "ray" and s.ray_address else "")
    workers = f"{s.workers} worker{'s' if s.workers != 1 else ''}"
    lines = [f"fuzzharness: seed {campaign.seed}, {workers} ({executor}), "
             f"{' or '.join(limit)}, {describe_targets(s)}{where}, "
             f"{len(campaign.known)} known bugs, {mini}, out {campaign.out}"]
    if s.target_note:
        lines.append(f"fuzzharness: targets: {s.target_note}")
    if s.tvm_python:
        v = campaign.versions
        lines.append(f"fuzzharness: workers run {s.tvm_python}: TVM {v.get('tvm')}, tvm-ffi "
                     f"{v.get('tvm_ffi')}, LLVM {v.get('llvm')}")
    return "\n".join(lines)

