"""A TVM RPC server that keeps serving after a session crashed.

    python -m fuzzharness.backends.rpc_server --port 9090            # 127.0.0.1 only
    python -m fuzzharness.backends.rpc_server --host 0.0.0.0 --port 9090   # reachable by others
    python -m fuzzharness.backends.rpc_server --tracker 10.0.0.5:9190 --key my-gpu

TVM's own server (``python -m tvm.exec.rpc_server``) serves each session in a child process;
when that child dies of a signal — exactly what a fuzzer provokes when generated code
segfaults — ``tvm.rpc.server._serving`` raises, the listening thread ends, and the server
never accepts another session, while its socket still takes connections into the backlog (so
clients hang rather than being refused).  Measured with TVM 0.27: one ``abort()`` in a kernel,
and every later ``rpc.connect`` blocks forever.

This module runs TVM's server unchanged except for that one function: a session whose process
died is logged (with its exit code) and cleaned up, and the server goes on listening — and
stays registered with its tracker.  The harness works with TVM's stock server too (it then
reports the device unreachable after the first remote crash; see
:mod:`fuzzharness.backends.rpc`).

Modules named in ``$FUZZHARNESS_PLUGINS`` are imported first, so a plugin can register
functions that generated code calls on the device (the tests use this).

It listens on 127.0.0.1 unless ``--host`` says otherwise: an RPC server loads and runs the
native code any client sends it, so exposing it to a network is the user's explicit choice
(TVM's own server defaults to 0.0.0.0).  Bad options and a port range where nothing can be
bound end in one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import sys

log = logging.getLogger("fuzzharness.rpc_server")


def _serving(sock, addr, opts, load_library):
    """``tvm.rpc.server._serving`` (TVM 0.27), but a session that dies does not end the server."""
    from tvm.rpc import _ffi_api, server
    from tvm.support import utils

    work_path = utils.tempdir()
    old_cwd = os.getcwd()
    os.chdir(work_path.path)  # as TVM: avoid file name clashes between sessions
    try:
        proc = multiprocessing.Process(target=server._serve_loop,
                                       args=(sock, load_library, work_path))
        proc.start()
        proc.join(opts.get("timeout", None))
        if proc.is_alive():  # the client's session_timeout: end a session that hangs
            log.info("session from %s over its %s s timeout: killed", addr, opts.get("timeout"))
            _ffi_api.ReturnException(
                sock.fileno(),
                f"RPCSessionTimeoutError: Your {opts['timeout']}s session has expired, "
                f'try to increase the "session_timeout" value.')
            proc.kill()
            proc.join()
        elif proc.exitcode != 0:
            log.warning("session from %s ended with exit code %s; still serving", addr,
                        proc.exitcode)
        else:
            log.info("session from %s finished", addr)
    finally:
        os.chdir(old_cwd)
        work_path.remove()
        sock.close()


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _fail(message: str) -> int:
    print(f"fuzzharness rpc server: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzzharness.backends.rpc_server",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only; an RPC "
                         "server runs any code a client sends — use 0.0.0.0 only on a trusted "
                         "network)")
    ap.add_argument("--port", type=int, default=9090, help="first port to try (default 9090)")
    ap.add_argument("--port-end", type=int, default=None,
                    help="last port to try (default --port + 109)")
    ap.add_argument("--tracker", metavar="HOST:PORT", help="register with this RPC tracker")
    ap.add_argument("--key", default="", help="device key (needed with --tracker)")
    ap.add_argument("--custom-addr", help="address to report to the tracker")
    ap.add_argument("--load-library", help="extra libraries to load (colon-separated)")
    args = ap.parse_args(argv)
    if args.tracker and not args.key:
        ap.error("--tracker needs --key")
    if args.port_end is None:
        args.port_end = args.port + 109
    if not 0 < args.port <= args.port_end <= 65535:
        return _fail(f"--port {args.port} --port-end {args.port_end}: need "
                     "0 < port <= port-end <= 65535")
    tracker = None
    if args.tracker:
        host, _, port = args.tracker.rpartition(":")
        if not host or not port.isdigit():
            return _fail(f"--tracker {args.tracker!r}: expected HOST:PORT")
        tracker = (host, int(port))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    import tvm  # noqa: F401  (imported once; sessions are forked from this process)
    from tvm.rpc import server

    from fuzzharness.core.plugins import load_plugins

    load_plugins()
    server._serving = _serving  # the one change to TVM's server (see the module docstring)
    try:
        state = server.PopenRPCServerState(args.host, args.port, args.port_end, False, tracker,
                                           args.key, args.load_library, args.custom_addr)
    except (OSError, RuntimeError, ValueError) as e:  # TVM raises RuntimeError for "cannot bind"
        return _fail(f"cannot listen on {args.host}, ports {args.port}-{args.port_end}: "
                     f"{str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}")
    print(f"fuzzharness rpc server: listening on {args.host}:{state.port}", flush=True)
    if not _loopback(args.host):
        print(f"fuzzharness rpc server: warning: {args.host} is reachable from other machines; "
              "anyone who can connect runs native code here", file=sys.stderr, flush=True)
    state.thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
