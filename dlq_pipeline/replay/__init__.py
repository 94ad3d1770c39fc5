"""Replay: rebuild what the rules say to put (`rebuild`), put it in syncpoint batches with
rate limits, circuit breakers and checkpoints (`writer`), to a queue manager, a directory of
dmpmqmsg files or nowhere (`targets`). Spark-free; `dlq_pipeline.replay.spark` wires it in.
See docs/replay.md."""
