"""The warehouse: its tables and their schemas, storage (Parquet or Delta), the writer's lock and lease, the ledger."""
