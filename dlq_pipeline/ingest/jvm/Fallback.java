package dlqpipeline.ingest;

/** What this reader does not read: the work item goes to the Python reader. */
final class Fallback extends Exception {
  Fallback(String why) {
    super(why, null, false, false);
  }
}
