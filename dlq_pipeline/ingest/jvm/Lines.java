package dlqpipeline.ingest;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The lines of a file from an offset, read in large blocks; the current line is
 * {@code buf[start, end)} without its line end (a CR before the LF is not part of it), as
 * dmpmqmsg_reader.LineReader gives them. Counts the newlines before {@code stop} that it passes,
 * which is what a work item of a split file reports.
 */
final class Lines {
  static final int BLOCK = 4 << 20;
  private static final VarHandle WORDS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private final Source file;
  private final long stop; // -1: none
  private final long maxLength;
  byte[] buf = new byte[BLOCK];
  private int pos, lim;
  private long base; // the file offset of buf[0]
  private boolean eof;

  int start, end; // the current line
  long offset, number;
  boolean terminated = true;
  long newlines; // '\n' bytes passed that lie before stop

  Lines(Source file, long from, long stop, long maxLength, long firstNumber) {
    this.file = file;
    this.base = from;
    this.stop = stop;
    this.maxLength = maxLength;
    this.number = firstNumber - 1;
  }

  /** The file offset of the next unread byte. */
  long position() {
    return base + pos;
  }

  /** The next line; false at the end of the file. */
  boolean next() throws IOException, Fallback {
    int from = pos;
    int newline;
    while ((newline = indexOf(from)) < 0) {
      if (lim - pos > maxLength + 2) {
        throw new Fallback("line at byte " + position() + " is longer than " + maxLength + " bytes");
      }
      if (eof) {
        break;
      }
      int seen = lim - pos;
      fill();
      from = pos + seen;
    }
    if (newline < 0) {
      if (pos == lim) {
        return false;
      }
      start = pos;
      end = lim;
      pos = lim;
      terminated = false;
    } else {
      start = pos;
      end = newline;
      pos = newline + 1;
      terminated = true;
      if (stop < 0 || base + newline < stop) {
        newlines++;
      }
    }
    if (end > start && buf[end - 1] == '\r') {
      end--;
    }
    offset = base + start;
    number++;
    if (end - start > maxLength) {
      throw new Fallback("line at byte " + offset + " is longer than " + maxLength + " bytes");
    }
    return true;
  }

  /** At least the next {@code n} bytes in buf (fewer at the end of the file); how many there are. */
  int peek(int n) throws IOException {
    while (lim - pos < n && !eof) {
      fill();
    }
    return Math.min(n, lim - pos);
  }

  int at(int i) {
    return buf[pos + i];
  }

  /** The first '\n' in buf[from, lim), -1 if none: eight bytes at a time (a byte equal to
   *  '\n' is a zero byte of word ^ 0x0A..0A; the lowest flagged byte is the first). */
  private int indexOf(int from) {
    byte[] b = buf;
    int i = from;
    for (int last = lim - 8; i <= last; i += 8) {
      long x = (long) WORDS.get(b, i) ^ 0x0A0A0A0A0A0A0A0AL;
      long zero = (x - 0x0101010101010101L) & ~x & 0x8080808080808080L;
      if (zero != 0) {
        return i + (Long.numberOfTrailingZeros(zero) >>> 3);
      }
    }
    for (; i < lim; i++) {
      if (b[i] == '\n') {
        return i;
      }
    }
    return -1;
  }

  /** Move the unread bytes to the front (the current line is given up), grow when full, read a block. */
  private void fill() throws IOException {
    if (pos > 0) {
      System.arraycopy(buf, pos, buf, 0, lim - pos);
      base += pos;
      lim -= pos;
      start -= pos;
      end -= pos;
      pos = 0;
    }
    if (lim == buf.length) {
      buf = java.util.Arrays.copyOf(buf, (int) Math.min(Integer.MAX_VALUE - 16, 2L * buf.length));
    }
    int want = Math.min(buf.length - lim, BLOCK);
    int got = file.read(buf, lim, want, base + lim);
    if (got < 0) {
      eof = true;
    } else {
      lim += got;
    }
  }

  /** The '\n' bytes in [from, to) of the file (to -1: to its end). */
  static long newlinesBetween(Source file, long from, long to) throws IOException {
    long count = 0;
    byte[] block = new byte[BLOCK];
    long at = from;
    while (to < 0 || at < to) {
      int want = (int) (to < 0 ? BLOCK : Math.min(BLOCK, to - at));
      int got = file.read(block, 0, want, at);
      if (got <= 0) {
        break;
      }
      for (int i = 0; i < got; i++) {
        if (block[i] == '\n') {
          count++;
        }
      }
      at += got;
    }
    return count;
  }
}
