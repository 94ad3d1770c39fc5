"""Hold a warehouse's writer lock until killed (for the lock tests):

    python tests/lock_holder.py WAREHOUSE COMMAND RUN_ID

prints ``held`` once it has the lock, then sleeps; no Spark, so it starts at once."""

import sys
import time

from dlq_pipeline.warehouse.locks import WarehouseLock

if __name__ == "__main__":
    with WarehouseLock(sys.argv[1], command=sys.argv[2], run_id=sys.argv[3]):
        print("held", flush=True)
        time.sleep(3600)
