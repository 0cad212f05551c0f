"""The Case: one fuzz test, as plain JSON-able data.

A case says everything needed to reproduce one run bit for bit, and nothing else:

``workload``   ``{"name": <registered workload>, "params": {shapes, dtypes, options}}``
``inputs``     ``{"distribution": <registered distribution>, "seed": int}``
``schedule``   ``{"source": "random"|"none"|..., "trace": <s_tir Trace JSON> | None}``
``target``     a TVM target as a dict, e.g. ``{"kind": "llvm"}`` (dicts, because target strings
               with flags do not parse in TVM 0.27)
``pass_config`` PassContext config used for lowering (e.g. ``{"tirx.disable_vectorize": true}``)
``oracle``     oracle settings, e.g. ``{"mode": "bound"}`` or ``{"mode": "exact"}``
``origin``     provenance only — campaign seed, index, the generator's choice sequence,
               harness version.  It is *not* part of the id: two campaigns that generate the
               same content generate the same case.

Invariants:

* ``Case.from_json(c.to_json()) == c`` and the id survives the round trip;
* the id is the SHA-256 of the canonical JSON (sorted keys, no whitespace) of every field but
  ``origin``; it changes when anything that can change the output changes;
* everything is plain data — no TVM objects; the trace is TVM's own ``Trace.as_json()`` with
  IntImm/FloatImm turned into Python numbers, and replays with ``Trace.apply_json_to_schedule``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

FORMAT = 1
_CONTENT_FIELDS = ("workload", "inputs", "schedule", "target", "pass_config", "oracle")


class CaseFormatError(ValueError):
    """A case JSON that cannot be read (user-facing)."""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclasses.dataclass(frozen=True)
class Case:
    workload: dict[str, Any]
    inputs: dict[str, Any]
    schedule: dict[str, Any] = dataclasses.field(
        default_factory=lambda: {"source": "none", "trace": None}
    )
    target: dict[str, Any] = dataclasses.field(default_factory=lambda: {"kind": "llvm"})
    pass_config: dict[str, Any] = dataclasses.field(default_factory=dict)
    oracle: dict[str, Any] = dataclasses.field(default_factory=lambda: {"mode": "bound"})
    origin: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)

    # -- identity ---------------------------------------------------------------------------
    @property
    def id(self) -> str:
        content = {k: getattr(self, k) for k in _CONTENT_FIELDS}
        return hashlib.sha256(canonical_json(content).encode()).hexdigest()[:16]

    @property
    def workload_name(self) -> str:
        return self.workload["name"]

    @property
    def params(self) -> dict[str, Any]:
        return self.workload.get("params", {})

    @property
    def trace(self) -> Any:
        return self.schedule.get("trace")

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = {"format": FORMAT, "id": self.id}
        d.update({k: getattr(self, k) for k in _CONTENT_FIELDS})
        d["origin"] = self.origin
        return d

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        if not isinstance(d, dict):
            raise CaseFormatError("a case must be a JSON object")
        fmt = d.get("format", FORMAT)
        if fmt != FORMAT:
            raise CaseFormatError(f"unsupported case format {fmt!r} (this harness reads {FORMAT})")
        missing = [k for k in ("workload", "inputs") if k not in d]
        if missing:
            raise CaseFormatError(f"case JSON lacks {', '.join(missing)}")
        if not isinstance(d["workload"], dict) or "name" not in d["workload"]:
            raise CaseFormatError("case JSON: 'workload' must be an object with a 'name'")
        kwargs = {k: d[k] for k in _CONTENT_FIELDS if k in d}
        case = cls(origin=d.get("origin", {}) or {}, **kwargs)
        if "id" in d and d["id"] != case.id:
            raise CaseFormatError(
                f"case id {d['id']} does not match its content (computed {case.id}); "
                "the file was edited or written by another harness version"
            )
        return case

    @classmethod
    def from_json(cls, text: str) -> Case:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise CaseFormatError(f"not valid JSON: {e}") from None
        return cls.from_dict(d)

    def replace(self, **changes: Any) -> Case:
        return dataclasses.replace(self, **changes)
