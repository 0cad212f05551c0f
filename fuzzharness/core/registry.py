"""Name → implementation registries, filled by decorators at import time.

Every extensible part of the harness (workloads, schedule primitives, input distributions,
backends, oracles) is a :class:`Registry`.  Adding one means adding one module that decorates
its implementation; the package ``__init__`` imports its modules so that the registry is full
once the package is imported.

Invariants:

* names are unique within a registry (registering a name twice is a programming error);
* ``names()`` is sorted, so anything drawn from a registry does not depend on import order —
  generation from a seed must not change when a module is imported earlier or later;
* an unknown name raises :class:`UnknownName`, a ``KeyError`` whose message lists what exists,
  so that a CLI can turn it into a one-line error;
* an entry may be registered by dotted name (:meth:`Registry.add_lazy`, ``"module:attr"``):
  it is listed at once and imported on first use — so a registry low in the layers can name
  implementations that live above it (executors, case kinds) without importing them, and an
  optional dependency (Ray) is imported only when its entry is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A name that is not in a registry (a user-facing configuration error)."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want a readable line
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Decorator: register ``obj`` under ``name`` (default: its ``name`` attribute)."""

        def deco(obj: T) -> T:
            key = name or getattr(obj, "name", None) or obj.__name__
            if key in self._items:
                raise ValueError(f"{self.kind} {key!r} registered twice")
            self._items[key] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> T:
        return self.register(name)(obj)

    def add_lazy(self, name: str, path: str) -> None:
        """Register ``name`` as ``"package.module:attr.attr"``, imported on first use."""
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = _Lazy(path)

    def remove(self, name: str) -> None:
        """Unregister ``name`` (a plugin unloaded, a test's own entry); unknown: no-op."""
        self._items.pop(name, None)

    def __getitem__(self, name: str) -> T:
        try:
            obj = self._items[name]
        except KeyError:
            raise UnknownName(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or '(none)'}"
            ) from None
        if isinstance(obj, _Lazy):
            obj = self._items[name] = obj.load()
        return obj

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return [(n, self[n]) for n in self.names()]

    def check(self, names: list[str] | tuple[str, ...]) -> list[str]:
        """Validate user-given names; raise UnknownName for the first unknown one."""
        for n in names:
            if n not in self._items:
                self[n]  # raises UnknownName, listing the known names
        return list(names)


class _Lazy:
    """A registry entry named by ``"module:attr"``; :meth:`load` imports it."""

    def __init__(self, path: str):
        self.path = path

    def load(self):
        module, _, attrs = self.path.partition(":")
        obj = importlib.import_module(module)
        for attr in attrs.split(".") if attrs else ():
            obj = getattr(obj, attr)
        return obj
