"""Subcommands of the ``fuzzharness`` CLI; each module has HELP, add_arguments() and main()."""

from __future__ import annotations

from fuzzharness.commands import corpus, minimize, releases, replay, report, repro, run
from fuzzharness.registry import Registry

commands: Registry = Registry("command")
commands.add("run", run)
commands.add("replay", replay)
commands.add("minimize", minimize)
commands.add("repro", repro)
commands.add("corpus", corpus)
commands.add("report", report)
commands.add("releases", releases)
