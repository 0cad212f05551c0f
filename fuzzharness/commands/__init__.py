"""Subcommands of the ``fuzzharness`` CLI; each module has HELP, add_arguments() and main(),
and may have interrupted_hint(args): what the one line after a Ctrl-C says to do next."""

from __future__ import annotations

from fuzzharness.commands import (
    config,
    corpus,
    known,
    minimize,
    releases,
    replay,
    report,
    repro,
    run,
    status,
)
from fuzzharness.commands import list as list_
from fuzzharness.core.registry import Registry

commands: Registry = Registry("command")
commands.add("run", run)
commands.add("status", status)
commands.add("replay", replay)
commands.add("minimize", minimize)
commands.add("repro", repro)
commands.add("report", report)
commands.add("corpus", corpus)
commands.add("known", known)
commands.add("releases", releases)
commands.add("list", list_)
commands.add("config", config)
