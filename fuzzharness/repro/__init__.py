"""Standalone repro scripts, their verification, issue text and the regression corpus."""
