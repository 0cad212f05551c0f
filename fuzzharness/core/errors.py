"""User-facing errors and exit codes shared by the CLI and its commands."""

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A user-facing error: printed as one line, exit code 2."""
