package dlqpipeline.ingest;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

/** testhooks.crash_point for the reader's one point (TEST-ONLY; inert unless the crash
 *  tests set their environment variable): a marker file named by the pid, then SIGSTOP. */
final class CrashPoint {
  private CrashPoint() {}

  static void reached(Layout layout, long count) {
    String wanted = System.getenv(layout.crashAtEnv);
    if (wanted == null || wanted.isEmpty()) {
      return;
    }
    int colon = wanted.indexOf(':');
    String point = colon < 0 ? wanted : wanted.substring(0, colon);
    String number = colon < 0 ? "" : wanted.substring(colon + 1);
    if (!point.equals(layout.crashPoint) || (!number.isEmpty() && count != Long.parseLong(number))) {
      return;
    }
    String pid = Long.toString(ProcessHandle.current().pid());
    try {
      String dir = System.getenv(layout.crashMarkerEnv);
      if (dir != null && !dir.isEmpty()) {
        Path marker = Paths.get(dir, pid);
        Path partial = Paths.get(dir, pid + ".tmp");
        Files.write(partial, (layout.crashPoint + " " + count).getBytes(StandardCharsets.UTF_8));
        Files.move(partial, marker, StandardCopyOption.ATOMIC_MOVE);
      }
      new ProcessBuilder("kill", "-STOP", pid).inheritIO().start().waitFor();
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException("crash point " + point + ": " + e, e);
    }
  }
}
