"""The documentation opens the door: a short README, links that resolve, and command lines
that the real CLI accepts.

Checked for every markdown file a reader is sent to (README, CONTRIBUTING, ``docs/``,
``benchmarks/README.md``, ``corpus/``): each relative link names a file that exists (and, with
an ``#anchor`` into a markdown file, a heading of it); each ``fuzzharness COMMAND`` line in a
code block names a command (and sub-command) of :func:`fuzzharness.cli.build_parser` and only
long options that command accepts.  Both sides: a broken link and an unknown option in a
made-up page are reported.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from fuzzharness.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```")
COMMAND = re.compile(r"(?:^\s*(?:\$\s+)?(?:\w+=\S*\s+)*|\$\()(?:python -m )?fuzzharness\s+(.*)$")


def pages() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md"]
    found += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "corpus").glob("*.md"))
    return [p for p in found if p.exists()]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def anchors(page: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", page.read_text(), re.M)}


def broken_links(page: Path, text: str | None = None) -> list[str]:
    text = page.read_text() if text is None else text
    bad = []
    for m in LINK.finditer(text):
        url = m.group(1)
        if re.match(r"^[a-z]+:", url):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = url.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            bad.append(f"{page.name}: {url} (no such file)")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            bad.append(f"{page.name}: {url} (no such heading)")
    return bad


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:  # argparse keeps its sub-parsers only here
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


def bad_commands(text: str, parser: argparse.ArgumentParser) -> list[str]:
    """``fuzzharness ...`` lines in code blocks that the CLI would refuse by name."""
    bad, in_code = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            in_code = not in_code
            continue
        m = COMMAND.search(line) if in_code else None
        if m is None:
            continue
        rest = m.group(1).split("#", 1)[0].split("|", 1)[0].split("&&", 1)[0]
        rest = rest.replace("…", "x").replace('"$GITHUB_STEP_SUMMARY"', "x")
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        p = parser
        while words and (subs := _subparsers(p)):
            if words[0].startswith("-"):
                break
            if words[0] not in subs:
                bad.append(f"{line.strip()}: no command {words[0]!r}")
                p = None
                break
            p = subs[words.pop(0)]
        if p is None:
            continue
        known = _options(p)
        for w in words:
            flag = w.split("=", 1)[0]
            if flag.startswith("--") and flag not in known:
                bad.append(f"{line.strip()}: {p.prog} has no option {flag}")
    return bad


def test_the_readme_is_short():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; the details belong in docs/"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    assert broken_links(page) == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_command_lines_are_the_real_cli(page):
    assert bad_commands(page.read_text(), build_parser()) == []


def test_the_checks_see_a_broken_link_and_a_wrong_command(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading\n")
    page.write_text("[ok](there.md) [ok](there.md#a-heading) [gone](nowhere.md) "
                    "[bad anchor](there.md#no-heading) [web](https://example.org/x)\n")
    assert broken_links(page) == ["page.md: nowhere.md (no such file)",
                                  "page.md: there.md#no-heading (no such heading)"]
    text = ("```sh\npython -m fuzzharness run --seed 3 --time-budget 60\n"
            "python -m fuzzharness runn DIR\nfuzzharness status DIR --no-such-flag\n"
            "python -m fuzzharness known check --record\n```\n"
            "fuzzharness runn outside a code block is prose\n")
    assert bad_commands(text, build_parser()) == [
        "python -m fuzzharness runn DIR: no command 'runn'",
        "fuzzharness status DIR --no-such-flag: fuzzharness status has no option --no-such-flag"]


def test_the_campaign_format_lists_every_table_and_column(tmp_path):
    """docs/campaign-format.md is what small tools read: every table of a new database
    (and the coverage table) is a row of its table list, with every column."""
    import sqlite3

    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.store.readers import COVERAGE_TABLE

    ResultsDB(tmp_path, create=True).close()
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.execute(COVERAGE_TABLE)
    tables = {name: [r[1] for r in con.execute(f"PRAGMA table_info({name})")]
              for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if not name.startswith("sqlite_")}
    con.close()
    rows = {m.group(1): m.group(2) for m in re.finditer(
        r"^\| `(\w+)` \| (.*?) \|", (ROOT / "docs" / "campaign-format.md").read_text(), re.M)}
    missing = [f"{t}.{c}" if t in rows else t for t, cols in tables.items()
               for c in (cols if t in rows else [None]) if t not in rows or f"`{c}`" not in rows[t]]
    assert sorted(set(missing)) == [], "document them in docs/campaign-format.md"
    assert len(tables) >= 10
