"""Print the effective settings of a campaign as TOML: what `run` would use with the same
flags (defaults < --config FILE < flags), or what the campaign in DIR was run with.

  fuzzharness config [run flags]          e.g. fuzzharness config --config c.toml --workers 8
  fuzzharness config DIR [--resume flags] the stored settings (with what a resume would change)

The output is a settings file: `fuzzharness run --config FILE` reads it back (a seed that
would be drawn at start is left out).  Nothing is created or started; the settings are
checked as `run` checks them, so a bad flag or file is the same one-line error (exit 2).
"""

from __future__ import annotations

import sys

HELP = "print the effective campaign settings as TOML"


def add_arguments(p) -> None:
    from fuzzharness.commands import run

    run.add_arguments(p)  # the very flags `run` takes, so that the two cannot drift apart


def to_toml(settings, comment: str = "") -> str:
    """A settings file for ``settings`` (:class:`CampaignSettings`); None values left out."""
    import tomli_w

    d = settings.to_dict()
    gen = {k: list(v) if isinstance(v, tuple) else v
           for k, v in d.pop("generation").items() if v is not None}
    d.pop("target_note", None)  # why the targets are what they are: said, not a setting
    camp = {k: v for k, v in d.items() if v is not None}
    head = f"# {comment}\n" if comment else ""
    return head + tomli_w.dumps({"campaign": camp, "generation": gen})


def main(args, argv) -> int:
    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.campaign.settings import CampaignSettings
    from fuzzharness.commands import run
    from fuzzharness.core.errors import EXIT_OK

    directory, _ = run.campaign_directory(args)
    if directory is not None and (directory / "results.sqlite").exists():
        import dataclasses

        over = run.resume_overrides(args)
        db = ResultsDB(directory, readonly=True)
        try:
            stored = db.campaign()
        finally:
            db.close()
        base = CampaignSettings.from_dict((stored or {}).get("settings") or {})
        settings = dataclasses.replace(base, **over).validate()
        note = f"the settings of the campaign in {directory}" + (
            " with the changes a resume with these flags would make" if over else "")
    else:
        settings = run.settings_from_args(args).validate()
        note = "the settings `fuzzharness run` would use with these flags"
    sys.stdout.write(to_toml(settings, note))
    return EXIT_OK
