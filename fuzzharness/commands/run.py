"""Run a fuzz campaign: generate cases from a seed, build and run them with TVM in worker
processes, judge them against float64 references, and store every case and verdict in
DIR/results.sqlite.  Failures are grouped into buckets and matched against a known-bugs file.

Settings come from the embedded defaults, then --config FILE (TOML), then flags.
--resume DIR continues a stored campaign with its stored settings; only the stopping rule,
workers, timeout, memory, executor (and Ray address), remote device and known-bugs file may
be changed then.

Exit status: 0 no new failures (every TVM finding is a known bug), 1 new failures,
2 usage/configuration error.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
from pathlib import Path

HELP = "run a fuzz campaign"

#: seconds, for all new buckets together: the default 2-minute campaign stays a few minutes.
#: $FUZZHARNESS_MINIMIZE_BUDGET changes the default (the test suite sets it to 0).
MINIMIZE_BUDGET = 120.0
MINIMIZE_BUDGET_ENV = "FUZZHARNESS_MINIMIZE_BUDGET"
_GENERATION_FLAGS = ("workloads", "dtypes", "primitives", "max_steps", "target", "seed",
                     "config", "graph_fraction")  # --tvm-python may change: see settings.py


def add_arguments(p) -> None:
    p.add_argument("--seed", type=int, help="campaign seed (default: random, printed)")
    p.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="stop handing out cases after this long (default 120; 0 = no limit)")
    p.add_argument("--max-cases", type=int, metavar="N", help="stop after N cases (0 = no limit)")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes (default: CPU count)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="per-case timeout (default 30)")
    p.add_argument("--memory-mb", type=int, metavar="MB",
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
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="campaign directory (default: fuzz-runs/<timestamp>-seed<seed>)")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="continue the campaign stored in DIR (its stored settings are used)")
    p.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")
    p.add_argument("--workloads", help="comma-separated workload names (default: all)")
    p.add_argument("--dtypes", help="comma-separated dtype labels (default: all)")
    p.add_argument("--primitives", help="comma-separated schedule primitives (default: all)")
    p.add_argument("--max-steps", type=int, metavar="N", help="max schedule steps per case")
    p.add_argument("--graph-fraction", type=float, metavar="P",
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
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument("--no-minimize", action="store_true",
                   help="do not minimize new failure buckets into repros at the end")
    p.add_argument("--minimize-budget", type=float, metavar="SECONDS",
                   help="time cap for minimizing new buckets at the end, all together "
                        f"(default {MINIMIZE_BUDGET:g}, or ${MINIMIZE_BUDGET_ENV}; 0 = do not)")


def _csv(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _target(text: str | None) -> dict | None:
    """A preset name (generators.cases.TARGET_PRESETS) or a JSON target dict."""
    from fuzzharness.errors import UsageError
    from generators.cases import TARGET_PRESETS

    if text is None:
        return None
    if text.lstrip().startswith("{"):
        try:
            target = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"--target: not valid JSON ({e})") from None
        if not isinstance(target, dict):
            raise UsageError("--target: a JSON target must be an object")
        return target
    from fuzzharness.backends import backends

    name = text.strip()
    if name in TARGET_PRESETS:
        return dict(TARGET_PRESETS[name])
    if name in backends:
        return {"kind": name}
    raise UsageError(f"unknown target {name!r}; known: {', '.join(TARGET_PRESETS)}, "
                     "another registered backend kind, or a JSON target dict")


def _targets(text: str | None) -> list[dict] | None:
    """``--target a,b,c`` → a target mix (None: one target or none named)."""
    from fuzzharness.errors import UsageError
    from generators import targets

    if text is None or text.lstrip().startswith("{") or "," not in text:
        return None
    try:
        return targets.parse(text)
    except ValueError as e:
        raise UsageError(f"--target: {e}") from None


def _run_overrides(args) -> dict:
    """Flags about how long and how the campaign runs (allowed on resume)."""
    over = {"time_budget": args.time_budget, "max_cases": args.max_cases,
            "workers": args.workers, "timeout": args.timeout, "memory_mb": args.memory_mb,
            "executor": args.executor, "ray_address": args.ray_address,
            "known_bugs": str(args.known_bugs.resolve()) if args.known_bugs else None,
            "rpc": _rpc(args), "tvm_python": args.tvm_python}
    return {k: v for k, v in over.items() if v is not None}


def _rpc(args) -> dict | None:
    """The remote device named by --rpc-* flags (None: none named; the settings decide)."""
    rpc = {k: v for k, v in {"server": args.rpc_server, "tracker": args.rpc_tracker,
                             "key": args.rpc_key}.items() if v is not None}
    return rpc or None


def settings_from_args(args):
    from fuzzharness.settings import CampaignSettings, read_toml

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
    mix = _targets(args.target)
    gen = {k: v for k, v in {
        "workloads": _csv(args.workloads), "dtypes": _csv(args.dtypes),
        "primitives": _csv(args.primitives), "max_steps": args.max_steps,
        "target": mix[0] if mix else _target(args.target), "graph_fraction": args.graph_fraction,
        "targets": tuple(mix) if mix else None,
    }.items() if v is not None}
    s = dataclasses.replace(s, generation=dataclasses.replace(s.generation, **gen))
    named = args.target is not None or ({"target", "targets"} & set(toml_gen))
    return s if named else default_mix(s)


def default_mix(s):
    """The default campaign's targets (generators/targets.py): llvm, plus OpenCL and Adreno
    when an OpenCL runtime can run them here; the reason goes to the campaign header."""
    from generators import targets

    if s.rpc:
        s.target_note = "llvm only: kernels run on a remote device (--rpc-*)"
        return s
    if s.tvm_python:
        s.target_note = "llvm only: workers run under --tvm-python (name --target to mix)"
        return s
    mix, shares, why = targets.default_targets()
    s.target_note = why
    if len(mix) == 1:
        return s
    return dataclasses.replace(s, generation=dataclasses.replace(
        s.generation, target=mix[0], targets=tuple(mix), target_shares=tuple(shares)),
        target_note=why)


def _minimize_budget(args) -> float:
    import os

    from fuzzharness.errors import UsageError

    budget = args.minimize_budget
    if budget is None:
        text = os.environ.get(MINIMIZE_BUDGET_ENV, "")
        try:
            budget = float(text) if text.strip() else MINIMIZE_BUDGET
        except ValueError:
            raise UsageError(f"${MINIMIZE_BUDGET_ENV}={text!r} is not a number of seconds") from None
    if budget < 0:
        raise UsageError("--minimize-budget must be ≥ 0")
    return 0.0 if args.no_minimize else budget


def describe_targets(s) -> str:
    """``target llvm`` or ``targets llvm 70 %, opencl 10 %, adreno 20 %``."""
    from generators.targets import label

    gen = s.generation
    if not gen.targets:
        return f"target {label(gen.target)}"
    shares = gen.target_shares or [1.0] * len(gen.targets)
    total = sum(shares)
    return "targets " + ", ".join(f"{label(t)} {round(100 * w / total)} %"
                                  for t, w in zip(gen.targets, shares, strict=True))


def main(args, argv) -> int:
    from fuzzharness.engine.campaign import Campaign, format_summary
    from fuzzharness.errors import UsageError

    if args.resume is not None:
        if args.out is not None and args.out != args.resume:
            raise UsageError("--resume DIR already names the campaign directory; drop --out")
        given = [f"--{k.replace('_', '-')}" for k in _GENERATION_FLAGS
                 if getattr(args, k, None) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} cannot change a stored campaign "
                             "(it would generate different cases); start a new one")
        over = _run_overrides(args)
        if args.max_cases and args.time_budget is None:
            over["time_budget"] = 0.0
        campaign = Campaign(args.resume, resume=True, overrides=over, argv=["run", *argv],
                            progress=not args.no_progress, minimize_budget=_minimize_budget(args))
    else:
        settings = settings_from_args(args).validate()
        if settings.seed is None:
            import random

            settings.seed = random.randrange(2**31)
        out = args.out or Path("fuzz-runs") / (
            datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + f"-seed{settings.seed}")
        campaign = Campaign(out, settings, argv=["run", *argv], progress=not args.no_progress,
                            minimize_budget=_minimize_budget(args))
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
    print(f"fuzzharness: seed {campaign.seed}, {s.workers} workers ({executor}), "
          f"{' or '.join(limit)}, {describe_targets(s)}{where}, "
          f"{len(campaign.known)} known bugs, {mini}, out {campaign.out}", file=sys.stderr)
    if s.target_note:
        print(f"fuzzharness: targets: {s.target_note}", file=sys.stderr)
    if s.tvm_python:
        v = campaign.versions
        print(f"fuzzharness: workers run {s.tvm_python}: TVM {v.get('tvm')}, tvm-ffi "
              f"{v.get('tvm_ffi')}, LLVM {v.get('llvm')}", file=sys.stderr)
    summary = campaign.run()
    print(format_summary(summary))
    return summary.exit_code
