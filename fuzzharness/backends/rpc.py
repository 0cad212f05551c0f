"""Remote devices through TVM's RPC: build here, run there, judge here.

A campaign (or a replay) can run its cases' kernels on a device that is not on this machine —
a GPU host, an Android phone running TVM's RPC app (Adreno), a board — the way TVM itself
reaches them: a TVM RPC *server* on the device (``python -m tvm.exec.rpc_server``, or this
harness's :mod:`fuzzharness.backends.rpc_server`), optionally registered with an RPC *tracker*
under a device key.  Every stage up to ``build`` runs in the worker as usual; ``build`` then
exports the compiled module (``export_library``: an ``.so``, linked by the host compiler or a
cross compiler ``cc``); ``run`` uploads it, loads it on the device, copies the inputs over,
calls it, and copies the outputs back; ``verify`` runs the same oracles here.

Where the device is named — not in the case.  A case's id hashes its target, and the device
that runs it is not part of what the case *is*: the same case run on the phone and on this
machine must have the same id so that their verdicts can be compared and a finding replayed
anywhere.  The device is a campaign setting (``[campaign] rpc = {...}``, ``--rpc-server`` /
``--rpc-tracker`` + ``--rpc-key``) like the executor, which reaches the worker processes as
``$FUZZHARNESS_RPC`` (JSON, as :meth:`RemoteDevice.to_dict`); setting that variable by hand
makes ``fuzzharness replay`` run remotely too.  The target (``mtriple``, ``mcpu``,
``{"kind": "opencl", "device": "adreno"}``) stays what it is: it says what code to generate.

Classification (the same statuses as locally, plus what only a remote device can do):

* the device cannot be reached (refused, no answer within ``connect_timeout``, no free
  server for the key): the case was compiled and not run → ``inconclusive`` at ``run`` with
  ``details["not_run"]`` (like CUDA code on a host without a GPU).  The wait for a device is
  not charged to the case's timeout (:func:`fuzzharness.core.warmup.paused`): a server serves one
  session at a time, and other workers' cases may hold it;
* the remote call raised and the session still answers: the generated code raised → ``crash``
  of kind ``exception``, as locally;
* the session ended during the run (the remote process died, or the connection dropped):
  the run is repeated once on a fresh session.  Dying again → ``crash`` of kind
  ``remote_died`` (reproducible: a TVM finding); the repeat succeeding → its outputs are
  judged (a dropped connection costs nothing); the device unreachable afterwards →
  ``inconclusive`` (a network fault must not be reported as a TVM bug);
* a kernel that never returns: the worker's per-case timeout ends it (``timeout``) and the
  server ends the session after ``timeout`` seconds (TVM's ``session_timeout``), so the
  server is free again for the next case.

Each case gets its own session: a session is one process on the server, so a case that
corrupts it cannot affect the next one, and TVM's ``session_timeout`` applies per case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from fuzzharness.backends.base import Backend, DryRun, backends
from fuzzharness.core import warmup

ENV = "FUZZHARNESS_RPC"
DEFAULT_CONNECT_TIMEOUT = 60.0
RETRY_CONNECT_TIMEOUT = 10.0  # after the device was found unreachable once in this process
PROBE_TIMEOUT = 10.0
#: devices found unreachable by this process (its next attempts wait less, until one answers)
_DOWN: set = set()
KEYS = ("server", "tracker", "key", "cc", "connect_timeout", "timeout")
#: target kind → the device type TVM's runtime names it by
DEVICE_TYPES = {"llvm": "cpu", "c": "cpu", "opencl": "opencl", "cuda": "cuda", "vulkan": "vulkan",
                "metal": "metal", "rocm": "rocm"}


class DeviceUnreachable(Exception):
    """The remote device could not be reached: the case's program was not run."""

    def __init__(self, message: str):
        super().__init__(message)
        self.not_run = message
        self.fuzz_details = {"kind": "device_unreachable"}


class RemoteSessionDied(Exception):
    """The remote session ended during the run, twice: the kernel kills the remote process."""

    blame_tvm = True

    def __init__(self, message: str, errors: list[str]):
        super().__init__(message)
        self.fuzz_details = {"kind": "remote_died", "remote_errors": errors}


def _host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"rpc {what} must be HOST:PORT, got {text!r}")
    return host, int(port)


@dataclasses.dataclass(frozen=True)
class RemoteDevice:
    """Where cases run: one TVM RPC server, or a device key on a tracker."""

    server: str = ""  # "host:port" of a TVM RPC server
    tracker: str = ""  # "host:port" of a TVM RPC tracker (then ``key`` names the device)
    key: str = ""
    cc: str = ""  # compiler that links the exported module for the device ("" = host g++)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    timeout: float = 30.0  # per case: TVM's session_timeout

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RemoteDevice:
        """Checked: ValueError with a one-line message for anything wrong."""
        if not isinstance(d, dict):
            raise ValueError("rpc must be a table, e.g. { server = \"127.0.0.1:9090\" }")
        unknown = sorted(set(d) - set(KEYS))
        if unknown:
            raise ValueError(f"rpc: unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
        dev = cls(**{k: d[k] for k in KEYS if k in d})
        if bool(dev.server) == bool(dev.tracker):
            raise ValueError("rpc needs exactly one of server = \"HOST:PORT\" or "
                             "tracker = \"HOST:PORT\" (with key)")
        if dev.server:
            _host_port(dev.server, "server")
        if dev.tracker:
            _host_port(dev.tracker, "tracker")
            if not dev.key:
                raise ValueError("rpc: a tracker needs the device key (rpc key = \"...\")")
        if not (isinstance(dev.connect_timeout, int | float) and dev.connect_timeout > 0):
            raise ValueError("rpc connect_timeout must be > 0 seconds")
        return dev

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        if self.server:
            return f"RPC server {self.server}" + (f" (key {self.key})" if self.key else "")
        return f"RPC tracker {self.tracker}, key {self.key}"

    # -- sessions -------------------------------------------------------------------------
    def connect(self, timeout: float):
        """A new session (one process on the server); DeviceUnreachable when there is none."""
        from tvm import rpc

        def open_session():
            if self.server:
                host, port = _host_port(self.server, "server")
                return rpc.connect(host, port, key=self.key, session_timeout=self.timeout)
            host, port = _host_port(self.tracker, "tracker")
            return rpc.connect_tracker(host, port).request(
                self.key, session_timeout=self.timeout, max_retry=1)

        try:
            return _with_timeout(open_session, timeout)
        except TimeoutError:
            raise DeviceUnreachable(
                f"{self.describe()}: no session within {timeout:g} s (busy, or a TVM RPC server "
                "that stopped serving after a session crashed: restart it, or use "
                "python -m fuzzharness.backends.rpc_server)") from None
        except Exception as e:  # noqa: BLE001 - refused, no such key, handshake error
            raise DeviceUnreachable(f"{self.describe()}: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {(lines[-1] if lines else '').strip()[:300]}"


def _with_timeout(fn: Callable[[], Any], timeout: float) -> Any:
    """``fn()`` in a daemon thread; TimeoutError when it has not returned after ``timeout``.

    TVM's RPC calls block without a timeout of their own (a listener that stopped accepting
    leaves the client waiting forever); tvm_ffi releases the GIL in calls, so a thread can
    wait for one.  A call that never returns leaves its thread behind, blocked on a socket.
    """
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=target, name="fuzzharness-rpc", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError
    if "error" in box:
        raise box["error"]
    return box.get("value")


@functools.cache
def device_from_env() -> RemoteDevice | None:
    """The remote device named by ``$FUZZHARNESS_RPC`` in this process (None: run locally)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    return RemoteDevice.from_dict(json.loads(text))


def unsupported(target: dict[str, Any]) -> str | None:
    """Why cases of ``target`` cannot run on a remote device (None: they can)."""
    if target.get("kind") not in DEVICE_TYPES:
        return (f"target kind {target.get('kind')!r} has no TVM runtime device to run on "
                f"remotely (known: {', '.join(DEVICE_TYPES)})")
    return None


@dataclasses.dataclass
class RemoteProgram:
    path: str  # the exported library, on this machine
    device_type: str
    tmp: Any  # TemporaryDirectory keeping ``path`` alive


class RemoteBackend(Backend):
    """``local``'s lowering and code generation; build = export, run = on the remote device."""

    def __init__(self, local: Backend, device: RemoteDevice):
        self.local = local
        self.device = device
        self.name = local.name
        self._target: dict[str, Any] = {}

    def lower(self, mod, target, pass_config):
        return self.local.lower(mod, target, pass_config)

    def codegen(self, lowered, target):
        self._target = target
        return self.local.codegen(lowered, target)

    def build(self, runtime_module):
        # DeviceCode (GPU backends) and LLVMCode keep TVM's module as ``runtime_module``
        module = getattr(runtime_module, "runtime_module", runtime_module)
        if module is None:
            raise RuntimeError(f"the {self.name} backend keeps no TVM runtime module to export")
        tmp = tempfile.TemporaryDirectory(prefix="fuzzharness-rpc-")
        path = os.path.join(tmp.name, "case.so")
        if self.device.cc:
            from tvm.support import cc

            module.export_library(path, fcompile=cc.cross_compiler(self.device.cc))
        else:
            module.export_library(path)
        kind = self._target.get("kind", self.name)
        return RemoteProgram(path, DEVICE_TYPES.get(kind, "cpu"), tmp)

    def run(self, program: RemoteProgram, args, n_outputs):
        # a program runs more than once (the second input set, execution/second_run.py): its
        # exported file goes with the program object (TemporaryDirectory's finalizer, when the
        # case is done with it), not at exit — workers end by SIGKILL
        return self._run(program, args, n_outputs)

    def _run(self, program: RemoteProgram, args, n_outputs):
        errors: list[str] = []
        for attempt in range(2):
            sess = self._session(errors)
            try:
                return self._run_once(sess, program, args, n_outputs)
            except Exception as e:  # noqa: BLE001 - sorted out below
                if _alive(sess):
                    raise  # the generated code raised; the session is fine: as locally
                errors.append(_first_line(e))
                print(f"rpc: the remote session ended during the run (attempt {attempt + 1}): "
                      f"{errors[-1]}", file=sys.stderr, flush=True)
        raise RemoteSessionDied(
            f"the remote session ended during the run, twice ({self.device.describe()}): "
            f"{errors[-1]}", errors)

    def _session(self, errors: list[str]):

        timeout = self.device.connect_timeout
        if self.device in _DOWN:
            timeout = min(timeout, RETRY_CONNECT_TIMEOUT)
        with warmup.paused("rpc-device"):
            try:
                sess = self.device.connect(timeout)
            except DeviceUnreachable as e:
                _DOWN.add(self.device)
                if errors:  # it was reachable at first: say what happened before
                    e.not_run = (f"the remote session ended during the run ({errors[-1]}) and "
                                 f"the device could not be reached again: {e.not_run}")
                    e.args = (e.not_run,)
                raise
        _DOWN.discard(self.device)
        return sess

    @staticmethod
    def _run_once(sess, program: RemoteProgram, args, n_outputs):
        import tvm

        try:
            sess.upload(program.path)
            mod = sess.load_module(os.path.basename(program.path))
            dev = sess.device(program.device_type, 0)
            tensors = [tvm.runtime.tensor(a, dev) for a in args]
        except Exception as e:
            if not _alive(sess):
                raise
            # The device refuses the library or the buffers (wrong cc/mtriple for it, device
            # type missing from its runtime): a set-up problem, not a finding about the case.
            raise RuntimeError(f"the remote device cannot load the exported module: "
                               f"{_first_line(e)}") from None
        mod["main"](*tensors)
        return [t.numpy() for t in tensors[len(tensors) - n_outputs:]]


def _alive(sess) -> bool:
    """Does the session still answer (a remote exception) or is it gone (process, link)?"""
    try:
        _with_timeout(lambda: sess.get_function("tvm.rpc.server.workpath")("probe"),
                      PROBE_TIMEOUT)
        return True
    except BaseException:  # noqa: BLE001 - any failure to answer means gone
        return False


#: set by :func:`dry_runs`: backends compile and run nothing
_dry = False


@contextlib.contextmanager
def dry_runs():
    """Within: every backend :func:`backend_for` gives is a :class:`DryRun` (compiles, runs
    no kernel) — for a warm-up that must leave no trace of generated code in the process."""
    global _dry
    saved, _dry = _dry, True
    try:
        yield
    finally:
        _dry = saved


def backend_for(target: dict[str, Any]) -> Backend:
    """The backend that runs ``target`` in this process: remote when ``$FUZZHARNESS_RPC``
    names a device, else the registered local one (within :func:`dry_runs`: its compiler
    alone)."""

    local = backends[target["kind"]]
    if _dry:
        return DryRun(local)
    device = device_from_env()
    if device is None:
        return local
    return RemoteBackend(local, device)
