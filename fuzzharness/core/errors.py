"""User-facing errors and the exit codes every ``fuzzharness`` verb shares.

The exit status is the contract a CI job acts on:

====  =====================================================================================
0     done, nothing new: every TVM finding matches a known bug (or there was none)
1     new TVM findings: a new failure bucket, a case that fails, a repro that reproduces
2     usage, configuration or environment error, found *before* any long work starts: a bad
      flag or settings file, an unwritable output path, a corrupt or foreign database, a
      case file that is not a valid case; one line on stderr, nothing stored is touched
3     the harness itself failed: interrupted (Ctrl-C, SIGTERM), cases that ended in
      ``harness_error`` (and no new TVM finding), an internal error; one line on stderr
====  =====================================================================================

Precedence when several apply: 2 (nothing ran) > 3 for an interrupted or crashed run
(its answer is incomplete) > 1 new findings > 3 harness errors among the cases > 0.
"""

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_HARNESS = 0, 1, 2, 3

#: the table above, as `fuzzharness --help` and every verb's --help print it
EXIT_CODES_HELP = """\
exit status (every command):
  0  nothing new: every TVM finding matches a known bug (or there was none)
  1  new TVM findings (a new bucket, a failing case, a repro that reproduces)
  2  usage, configuration or environment error, found before any work starts
     (one line on stderr; nothing stored is touched)
  3  the harness itself failed: interrupted (Ctrl-C/SIGTERM; results so far are
     stored), harness errors in the cases, or an internal error"""


class UsageError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class HarnessFailure(Exception):
    """The harness could not finish its job (not the user's fault, not TVM's): exit code 3."""
