"""Live DLQs: draining a queue into the warehouse and settling what was replayed."""
