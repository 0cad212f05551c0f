"""Ctrl-C that stops: an interrupt Python would swallow is delivered again.

A signal handler's ``KeyboardInterrupt`` is raised wherever the main thread is.  Inside a
weakref callback (importlib runs one for every module lock: ``fuzzharness report`` hit it
while importing pandas) Python prints "Exception ignored" and goes on, and the command ended
with exit 0 instead of 3.  Real processes, both sides: with the harness's handlers the
interrupt lands after the callback; with Python's own it is lost.
"""

import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = """
import os, signal, sys, time, weakref
from fuzzharness.core import interrupt
if sys.argv[1].startswith("harness"):
    interrupt.install()
if sys.argv[1] == "harness-loaded":  # a loaded machine: starting a thread returns late
    import threading
    started = threading.Thread.start

    def late_start(self):
        started(self)
        time.sleep(0.1)  # the redelivery timer (10 ms) fires before start() returns

    threading.Thread.start = late_start

class Thing:
    pass

def callback(_ref):
    os.kill(os.getpid(), signal.SIGINT)  # its handler runs inside this callback
    for _ in range(1000):
        pass

thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    time.sleep(0.5)
    print("ran on")
    sys.exit(0)
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(3)
"""


def run(handlers: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, handlers], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)


def test_an_interrupt_raised_inside_a_weakref_callback_still_stops_the_command():
    r = run("harness")
    assert (r.returncode, r.stdout.strip()) == (3, "interrupted"), r.stderr
    assert "Exception ignored" not in r.stderr


def test_a_redelivered_interrupt_that_lands_while_its_timer_starts_is_delivered_again():
    """CI on a loaded machine: the redelivery timer fired while ``Timer.start`` still waited
    for its thread, inside the hook — swallowed once more, and the command ran on."""
    r = run("harness-loaded")
    assert (r.returncode, r.stdout.strip()) == (3, "interrupted"), r.stderr
    assert "Exception ignored" not in r.stderr


def test_without_the_harness_handlers_python_swallows_it():
    r = run("python")
    assert (r.returncode, r.stdout.strip()) == (0, "ran on")
    assert "Exception ignored" in r.stderr and "KeyboardInterrupt" in r.stderr
