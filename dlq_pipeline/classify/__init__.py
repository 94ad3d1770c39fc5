"""Classify: every pending message decided with the rules, into the `decisions` table."""
