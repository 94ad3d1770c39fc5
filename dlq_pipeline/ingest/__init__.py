"""Ingest: dumps and exported listings landed as the `messages` and `quarantine` tables."""
