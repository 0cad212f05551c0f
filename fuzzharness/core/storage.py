"""Files and SQLite databases the harness writes or reads, opened so that nothing is damaged.

* :func:`connect_readonly` — read a campaign database without writing a byte, also in a
  read-only directory or file system.  A WAL database normally needs its ``-shm`` file, which
  a read-only directory cannot get: then the database is opened ``immutable`` when it has no
  pending write-ahead log, else a private copy of the database and its log is read (the
  result is the same data a writer would see).
* :func:`integrity_problem` — SQLite's own ``PRAGMA quick_check`` (every page and index
  readable and consistent), run read-only before anything writes into an existing database,
  so that a corrupt page is reported instead of written over.
* :func:`check_writable_dir` / :func:`check_writable_file` — the output paths of a command,
  tested *before* any long work starts (a probe file is created and removed), with the
  reason in one line: a path under a file, a read-only file system, no permission.
* :func:`write_text_atomic` — a report or summary is either the old file or the whole new
  one, never half of it (a temporary file in the same directory, then ``os.replace``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
import urllib.parse
from pathlib import Path

from fuzzharness.core.errors import UsageError

SQLITE_MAGIC = b"SQLite format 3\x00"


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{urllib.parse.quote(str(path.resolve()))}?{query}"


def connect_readonly(db: str | Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    """A read-only connection to ``db`` (see the module docstring); sqlite3 errors pass."""
    db = Path(db)
    try:
        conn = sqlite3.connect(_uri(db, mode="ro"), uri=True, timeout=timeout)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the WAL index
        return conn
    except sqlite3.OperationalError as e:
        if "unable to open" not in str(e) and "readonly" not in str(e).lower():
            raise
        first = e
    wal = db.with_name(db.name + "-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        return sqlite3.connect(_uri(db, mode="ro", immutable="1"), uri=True, timeout=timeout)
    # a pending log in a directory we cannot write: read a private copy of both files
    tmp = Path(tempfile.mkdtemp(prefix="fuzzharness-ro-"))
    atexit.register(shutil.rmtree, tmp, True)
    try:
        shutil.copyfile(db, tmp / db.name)
        shutil.copyfile(wal, tmp / wal.name)
    except OSError:
        raise first from None
    return sqlite3.connect(_uri(tmp / db.name, mode="ro"), uri=True, timeout=timeout)


def integrity_problem(db: str | Path) -> str | None:
    """None when SQLite finds ``db`` consistent, else its first complaint (one line)."""
    try:
        conn = connect_readonly(db)
    except sqlite3.DatabaseError as e:
        return str(e)
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as e:
        return str(e)
    finally:
        conn.close()
    first = str(rows[0][0]) if rows else "no answer from quick_check"
    return None if first == "ok" else first.splitlines()[0]


def _probe(directory: Path) -> str | None:
    """Why files cannot be created in the existing directory ``directory`` (None: they can)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".fuzzharness-probe-", dir=directory)
    except OSError as e:
        return e.strerror or str(e)
    os.close(fd)
    os.unlink(name)
    return None


def check_writable_dir(path: str | Path, what: str) -> Path:
    """``path`` is (or can be made) a directory this process can create files in; else a
    one-line :class:`UsageError` naming ``what`` (e.g. ``"--out"``).  Creates nothing
    that is not needed: a missing directory is checked at its nearest existing ancestor."""
    p = Path(path)
    probe = p
    while not probe.exists():
        if probe.is_symlink():
            raise UsageError(f"{what} {p}: {probe} is a dangling symbolic link")
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        where = "is a file" if probe == p else f"lies under the file {probe}"
        raise UsageError(f"{what} {p}: {where}, not a directory")
    why = _probe(probe)
    if why is not None:
        raise UsageError(f"{what} {p}: cannot write in {probe} ({why})")
    return p


def check_writable_file(path: str | Path, what: str) -> Path:
    """``path`` can be written as a file (its directory is writable, it is not a directory)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{what} {p}: is a directory, not a file")
    check_writable_dir(p.parent if str(p.parent) else Path("."), what)
    return p


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (temporary file + ``os.replace``)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
