"""Spark plumbing: the session, its Python workers, the JVM class archive and reader, task counts."""
