"""Plugins: modules from outside the package that register workloads, primitives, backends,
executors or case kinds when imported.

Two ways to name them, as Hypothesis registers its providers:

* the entry-point group ``fuzzharness.plugins`` of installed distributions
  (``[project.entry-points."fuzzharness.plugins"] myplugin = "mypackage.fuzz"``);
* ``$FUZZHARNESS_PLUGINS``, comma-separated module names (the test suite uses it to add
  backends that really segfault, abort or hang).

Every process that generates or runs cases loads them (workers, the CLI, the pytest plugin),
so a registered name means the same everywhere.  Loading is idempotent.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points

from fuzzharness.core.errors import UsageError

PLUGINS_ENV = "FUZZHARNESS_PLUGINS"
ENTRY_POINT_GROUP = "fuzzharness.plugins"


def load_plugins() -> list[str]:
    """Import every plugin module; return their names.  A missing one is a usage error."""
    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as e:  # noqa: BLE001 - a broken third-party plugin, named in one line
            raise UsageError(f"cannot load plugin {ep.name!r} ({ep.value}) of entry-point group "
                             f"{ENTRY_POINT_GROUP}: {type(e).__name__}: {e}") from None
        loaded.append(ep.value)
    for name in (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",")):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise UsageError(f"cannot import plugin {name!r} named in ${PLUGINS_ENV}: {e}") from None
        loaded.append(name)
    return loaded
