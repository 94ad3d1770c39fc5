"""Notebook triage: the tables of a warehouse, message previews and charts, the what-if of a draft rules table."""
