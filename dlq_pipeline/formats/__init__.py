"""IBM MQ's own formats, without Spark: the MQMD, the MQDLH and the headers that chain with it,
code pages (CCSIDs) and the MQ constants (reason codes, formats, encodings) from one table."""
