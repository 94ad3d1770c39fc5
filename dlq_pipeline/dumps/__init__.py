"""Dump files, without Spark: dmpmqmsg/qload dumps and amqsbcg listings (reading, writing,
sniffing which is which), planning the byte-range splits ingest reads in parallel, the
realistic DLQ generator and the per-message view of `inspect`."""
