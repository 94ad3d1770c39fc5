package dlqpipeline.ingest;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.Arrays;
import java.util.regex.Matcher;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * The rows of one work item: dmpmqmsg_reader.read_dump's records as dumps.spark.read_item turns them
 * into rows, for the dumps dmpmqmsg writes. The record rules are read_dump's (see its module
 * docstring): a record starts at an A line whose previous significant line is not an A or N
 * line; a split reads the records whose first line starts in [start, end). Each message is
 * under the last dump header line before it, whose Created stamp says when it was recorded
 * (read_item's recorded_at, dmpmqmsg.created_time), else the file's modification time.
 * Anything the Python reader would read differently from the plain case, or report as a bad
 * record, is a {@link Fallback}: then the item's only row is {@code rec = "fallback"}.
 */
final class ItemReader implements PartitionReader<InternalRow> {
  private static final int NONE = 0, IGNORED = '#', OTHER = '?';
  private static final VarHandle PAIRS = MethodHandles.byteArrayViewVarHandle(char[].class, ByteOrder.LITTLE_ENDIAN);
  private static final byte[] CREATED = " Created:".getBytes(StandardCharsets.US_ASCII);
  // the instants a Python datetime holds: a stamp outside them is not a time (created_time)
  private static final Instant FIRST = Instant.parse("0001-01-01T00:00:00Z");
  private static final Instant LAST = Instant.parse("9999-12-31T23:59:59.999999Z");

  private final DumpSource.Item item;
  private final Layout layout;
  private final Rows rows;
  private final Source.HadoopConf hadoop;
  private Source file;
  private Lines lines;

  private InternalRow current;
  private boolean started, done, lastWasMessage;
  private boolean pendingStart; // the current line starts a record not begun yet
  private int prevKind = NONE;
  private boolean numbered;
  private long index;
  private long bodyStart; // the offset of the first line after the header
  private long records, biggest;
  private ZoneId zone; // what a Created stamp is read in
  private Long header; // the offset of the last header line passed; null: none yet
  private Long recorded; // when the messages under it were recorded (epoch µs); null: unknown
  private Long recordHeader, recordRecorded; // those of the record being read

  private Object[] fields; // the record being read: its MQMD values, null when none
  private long recordOffset, recordLine;
  private byte[] body = new byte[1 << 16];
  private int size;
  private boolean hasData;

  ItemReader(DumpSource.Item item, Layout layout, Rows rows, Source.HadoopConf hadoop) {
    this.item = item;
    this.layout = layout;
    this.rows = rows;
    this.hadoop = hadoop;
  }

  @Override
  public boolean next() throws IOException {
    if (done) {
      return false;
    }
    if (lastWasMessage) {
      CrashPoint.reached(layout, records);
    }
    lastWasMessage = false;
    try {
      InternalRow message = null;
      if (!started) {
        started = true;
        if (open()) {
          message = nextMessage();
        }
      } else {
        message = nextMessage();
      }
      if (message != null) {
        current = message;
        lastWasMessage = true;
        return true;
      }
      current =
          rows.split(
              records,
              item.splits > 1 ? Long.valueOf(rangeNewlines()) : null,
              records,
              biggest,
              header,
              header == null ? null : recorded);
    } catch (Fallback why) {
      current = rows.fallback(why.getMessage());
    } catch (IOException | RuntimeException | LinkageError e) { // LinkageError: a Spark it was not built for
      current = rows.fallback("the JVM reader failed: " + e);
    }
    done = true;
    close();
    return true;
  }

  @Override
  public InternalRow get() {
    return current;
  }

  @Override
  public void close() throws IOException {
    if (file != null) {
      file.close();
      file = null;
    }
  }

  // --- where the item's records begin ----------------------------------------------------

  /** Position the lines at the item's first record; false when it has none. */
  private boolean open() throws IOException, Fallback {
    try {
      zone = ZoneId.of(layout.dumpTimeZone);
    } catch (DateTimeException e) {
      throw new Fallback("the time zone " + layout.dumpTimeZone + " is not one this JVM knows");
    }
    recorded = item.modified;
    file = Source.open(item.location, hadoop);
    Lines fromZero = new Lines(file, 0, item.start <= 0 ? item.end : -1, layout.maxLineLength, 1);
    if (hasNul(fromZero)) {
      throw new Fallback("a NUL byte in the first " + layout.sniffBytes + " bytes: not a dump");
    }
    if (item.start <= 0) {
      lines = fromZero;
      numbered = true;
      pendingStart = prologue(lines);
      return pendingStart;
    }
    numbered = false;
    index = -1;
    boolean hasFirst = prologue(fromZero);
    long firstOffset = fromZero.offset;
    lines = new Lines(file, item.start, item.end, layout.maxLineLength, 1);
    if (!hasFirst) {
      return false;
    }
    if (byteAt(item.start - 1) != '\n' && !lines.next()) {
      return false; // the range holds no line start
    }
    while (lines.position() < bodyStart) { // a range that starts inside the header
      if (!lines.next()) {
        return false;
      }
    }
    long pos = lines.position();
    if (item.end >= 0 && pos >= item.end) {
      return false;
    }
    if (pos <= firstOffset) {
      while (lines.next()) {
        if (lines.offset == firstOffset) {
          pendingStart = true;
          return true;
        }
      }
      throw new Fallback("the first message at byte " + firstOffset + " was not found again");
    }
    prevKind = previousKind(pos, bodyStart);
    return true;
  }

  private boolean hasNul(Lines head) throws IOException {
    int n = head.peek(layout.sniffBytes);
    for (int i = 0; i < n; i++) {
      if (head.at(i) == 0) {
        return true;
      }
    }
    return false;
  }

  /** Find the header as dmpmqmsg_reader._scan_prologue does (the stdout banner may come first), then
   *  skip comments and blank lines up to the first message's A line, which becomes the
   *  current line; false when there is none. */
  private boolean prologue(Lines in) throws IOException, Fallback {
    int others = 0;
    while (true) {
      if (!in.next()) {
        throw new Fallback("no dmpmqmsg header");
      }
      if (blank(in)) {
        continue;
      }
      if (prefixOf(in, layout.headerPrefixes) > 0) {
        passHeader(in);
        break;
      }
      int kind = kind(in);
      if (others == 0 && (kind == 'A' || kind == 'N')) {
        throw new Fallback("a dump without a header (-dH)");
      }
      if (++others >= layout.headerSearchLines) {
        throw new Fallback("no '* DMPMQMSG' or '* QLOAD' header in the first " + others + " lines");
      }
    }
    bodyStart = in.position();
    while (in.next()) {
      int kind = kind(in);
      if (kind == IGNORED) {
        if (prefixOf(in, layout.headerPrefixes) > 0) {
          passHeader(in); // another run's header before any message: the messages are under it
        }
        continue;
      }
      if (kind != 'A') {
        throw new Fallback("line at byte " + in.offset + ": the first line after the header is not an A line");
      }
      return true;
    }
    return false; // the dump of an empty queue
  }

  /** The current line is a header line: the messages after it are under it. */
  private void passHeader(Lines in) {
    header = in.offset;
    Long stamp = createdMicros(in.buf, in.start + prefixOf(in, layout.headerPrefixes), in.end);
    recorded = stamp != null ? stamp : item.modified;
  }

  /** The instant a header line's Created stamp names, in epoch microseconds, as
   *  dmpmqmsg.created_time reads it: the line's bytes from {@code from} (after its
   *  "* TOOL Version:") are the version, up to a blank, then " Created:" and the stamp, a
   *  ctime() one once stripped, read in the zone; null when it names no instant. */
  private Long createdMicros(byte[] b, int from, int to) {
    int i = from;
    while (i < to && !space(b[i])) { // the version
      i++;
    }
    if (to - i < CREATED.length || !Arrays.equals(b, i, i + CREATED.length, CREATED, 0, CREATED.length)) {
      return null;
    }
    int start = i + CREATED.length, end = to;
    while (start < end && space(b[start])) {
      start++;
    }
    while (end > start && space(b[end - 1])) {
      end--;
    }
    Matcher m = layout.created.matcher(new String(b, start, end - start, StandardCharsets.ISO_8859_1));
    if (!m.matches()) {
      return null;
    }
    int year = Integer.parseInt(m.group(6));
    if (year < 1) {
      return null;
    }
    try {
      Instant at =
          LocalDateTime.of(
                  year,
                  layout.months.indexOf(m.group(1)) + 1,
                  Integer.parseInt(m.group(2)),
                  Integer.parseInt(m.group(3)),
                  Integer.parseInt(m.group(4)),
                  Integer.parseInt(m.group(5)))
              .atZone(zone)
              .toInstant();
      return at.isBefore(FIRST) || at.isAfter(LAST) ? null : Long.valueOf(at.getEpochSecond() * 1_000_000L);
    } catch (DateTimeException e) { // no such date or time
      return null;
    }
  }

  /** Python's bytes.isspace(): the blanks a regex's \s and strip() take. */
  private static boolean space(byte c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c;
  }

  /** The kind of the last significant line before {@code pos}, looking no further back than
   *  {@code floor} (dmpmqmsg_reader._previous_kind). */
  private int previousKind(long pos, long floor) throws IOException, Fallback {
    long end = pos;
    while (end > floor) {
      long begin = lineStart(end, floor);
      if (end - begin > layout.maxLineLength + 2) {
        throw new Fallback("line at byte " + begin + " is longer than " + layout.maxLineLength + " bytes");
      }
      byte[] line = new byte[(int) (end - begin)];
      readFully(line, begin);
      int n = line.length;
      if (n > 0 && line[n - 1] == '\n') {
        n--;
      }
      if (n > 0 && line[n - 1] == '\r') {
        n--;
      }
      int kind = kind(line, 0, n);
      if (kind == OTHER) {
        throw new Fallback("line at byte " + begin + " is not a line dmpmqmsg writes");
      }
      if (kind != IGNORED) {
        return kind;
      }
      end = begin;
    }
    return NONE;
  }

  /** Where the line that ends just before {@code end} (a line start) begins. */
  private long lineStart(long end, long floor) throws IOException {
    long pos = end - 1;
    byte[] block = new byte[65536];
    while (pos > floor) {
      long low = Math.max(floor, pos - block.length);
      int n = (int) (pos - low);
      readFully(block, low, n);
      for (int i = n - 1; i >= 0; i--) {
        if (block[i] == '\n') {
          return low + i + 1;
        }
      }
      pos = low;
    }
    return floor;
  }

  private int byteAt(long at) throws IOException {
    byte[] one = new byte[1];
    readFully(one, at);
    return one[0];
  }

  private void readFully(byte[] into, long at) throws IOException {
    readFully(into, at, into.length);
  }

  private void readFully(byte[] into, long at, int n) throws IOException {
    for (int done = 0; done < n; ) {
      int got = file.read(into, done, n - done, at + done);
      if (got < 0) {
        throw new IOException("the file ends at byte " + (at + done));
      }
      done += got;
    }
  }

  private long rangeNewlines() throws IOException {
    if (lines == null) {
      return Lines.newlinesBetween(file, item.start, item.end);
    }
    long counted = lines.newlines;
    long from = lines.position();
    if (item.end < 0 || from < item.end) {
      counted += Lines.newlinesBetween(file, from, item.end);
    }
    return counted;
  }

  // --- records ----------------------------------------------------------------------------

  /** The next message of the item, or null when it has no more. */
  private InternalRow nextMessage() throws IOException, Fallback {
    while (true) {
      if (!pendingStart) {
        if (!lines.next()) {
          if (fields == null) {
            return null;
          }
          if (!lines.terminated) {
            throw new Fallback("the file ends inside a line");
          }
          return finish();
        }
        int kind = kind(lines);
        if (kind == IGNORED) {
          if (prefixOf(lines, layout.headerPrefixes) > 0) {
            passHeader(lines); // the next run's header, in a file of several concatenated
          }
          continue;
        }
        if (kind == OTHER || kind == 'N') {
          throw new Fallback("line at byte " + lines.offset + " is not a line this reader reads");
        }
        boolean starts = kind == 'A' && prevKind != 'A' && prevKind != 'N';
        if (!starts) {
          if (fields != null) {
            if (kind != 'X') {
              throw new Fallback("line at byte " + lines.offset + ": a " + (char) kind + " line in a message");
            }
            hexLine();
          }
          prevKind = kind;
          continue;
        }
        pendingStart = true;
      }
      if (fields != null) {
        return finish(); // the start stays pending
      }
      pendingStart = false;
      if (item.end >= 0 && lines.offset >= item.end) {
        return null;
      }
      block();
      prevKind = 'A';
    }
  }

  /** The 28 A lines dmpmqmsg writes, in one of its two orders, from the current line. */
  private void block() throws IOException, Fallback {
    recordOffset = lines.offset;
    recordLine = lines.number;
    recordHeader = header;
    recordRecorded = recorded;
    fields = new Object[layout.mdColumns.length];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = layout.defaults.get(layout.mdColumns[i]);
    }
    size = 0;
    hasData = false;
    Layout.Attr[] order = null;
    int count = layout.orders[0].length;
    for (int i = 0; i < count; i++) {
      if (i > 0 && !lines.next()) {
        throw new Fallback("the file ends inside the message descriptor at byte " + recordOffset);
      }
      Layout.Attr attr = null;
      for (Layout.Attr[] candidate : layout.orders) {
        if ((order == null || candidate == order) && startsWith(lines, candidate[i].prefix)) {
          attr = candidate[i];
          if (order == null && differs(candidate, i)) {
            order = candidate;
          }
          break;
        }
      }
      if (attr == null) {
        throw new Fallback("line at byte " + lines.offset + " is not the descriptor line dmpmqmsg writes there");
      }
      value(attr);
    }
  }

  /** Whether the orders differ at line {@code i} (there the block's order is decided). */
  private boolean differs(Layout.Attr[] candidate, int i) {
    for (Layout.Attr[] other : layout.orders) {
      if (!Arrays.equals(other[i].prefix, candidate[i].prefix)) {
        return true;
      }
    }
    return false;
  }

  /** One attribute's value, as dmpmqmsg_reader._md_block_fields reads it. */
  private void value(Layout.Attr attr) throws Fallback {
    byte[] b = lines.buf;
    int from = lines.start + attr.prefix.length;
    int n = lines.end - from;
    int column = attr.position;
    switch (attr.kind) {
      case Layout.LONG:
        fields[column] = mqlong(b, from, n);
        return;
      case Layout.CHAR:
        if (n > attr.length || !ascii(b, from, n)) {
          throw bad();
        }
        if (n > 0) {
          fields[column] = new String(b, from, n, StandardCharsets.ISO_8859_1);
        }
        return;
      case Layout.BYTE:
        if (n != 2 * attr.length) {
          throw bad();
        }
        fields[column] = hex(b, from, n);
        return;
      default: // HEXTEXT
        if (n > 2 * attr.length || (n & 1) != 0) {
          throw bad();
        }
        if (n > 0) {
          byte[] raw = hex(b, from, n);
          if (!ascii(raw, 0, raw.length)) {
            throw bad();
          }
          fields[column] = new String(raw, StandardCharsets.ISO_8859_1);
        }
    }
  }

  private Fallback bad() {
    return new Fallback("line at byte " + lines.offset + ": a value this reader leaves to the Python reader");
  }

  private Integer mqlong(byte[] b, int from, int n) throws Fallback {
    int i = from, stop = from + n;
    boolean negative = i < stop && b[i] == '-';
    if (negative) {
      i++;
    }
    int digits = stop - i;
    if (digits < 1 || digits > 10) {
      throw bad();
    }
    long value = 0;
    for (; i < stop; i++) {
      int d = b[i] - '0';
      if (d < 0 || d > 9) {
        throw bad();
      }
      value = value * 10 + d;
    }
    value = negative ? -value : value;
    if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
      throw bad();
    }
    return (int) value;
  }

  private static boolean ascii(byte[] b, int from, int n) {
    for (int i = from; i < from + n; i++) {
      if (b[i] < 0 || b[i] == '\r') {
        return false;
      }
    }
    return true;
  }

  private byte[] hex(byte[] b, int from, int n) throws Fallback {
    byte[] out = new byte[n / 2];
    int[] digit = Hex.DIGIT;
    for (int i = 0; i < out.length; i++) {
      int hi = digit[b[from + 2 * i] & 0xff], lo = digit[b[from + 2 * i + 1] & 0xff];
      if ((hi | lo) < 0) {
        throw bad();
      }
      out[i] = (byte) (hi << 4 | lo);
    }
    return out;
  }

  /** An X line's data, appended to the record's. */
  private void hexLine() throws Fallback {
    byte[] b = lines.buf;
    int from = lines.start + 2, stop = lines.end;
    int digits = stop - from;
    if (digits < 0 || b[lines.start + 1] != ' ' || (digits & 1) != 0) {
      throw new Fallback("line at byte " + lines.offset + ": an X line this reader leaves to the Python reader");
    }
    int grows = digits >> 1;
    if (layout.maxMessageBytes >= 0 && (long) size + grows > layout.maxMessageBytes) {
      throw new Fallback("line at byte " + lines.offset + ": the message is larger than the limit");
    }
    if (size + grows > body.length) {
      body = Arrays.copyOf(body, (int) Math.min(Integer.MAX_VALUE - 16, Math.max(2L * body.length, (long) size + grows)));
    }
    short[] pair = Hex.PAIR;
    byte[] out = body;
    int at = size;
    for (int i = from; i < stop; i += 2) {
      int value = pair[(char) PAIRS.get(b, i)];
      if (value < 0) {
        throw new Fallback("line at byte " + lines.offset + ": not hex digits");
      }
      out[at++] = (byte) value;
    }
    size = at;
    hasData = true;
  }

  private InternalRow finish() throws Fallback {
    if (!hasData) {
      throw new Fallback("message at byte " + recordOffset + " has no data line");
    }
    byte[] data = Arrays.copyOf(body, size);
    InternalRow row =
        rows.message(
            fields, data, numbered ? index++ : -1, recordLine, recordOffset, records++, recordHeader, recordRecorded);
    biggest = Math.max(biggest, data.length);
    fields = null;
    return row;
  }

  // --- line kinds (dmpmqmsg.line_kind; the tool's statistics lines are OTHER here) ---------

  private static int kind(Lines in) {
    return kind(in.buf, in.start, in.end);
  }

  private static int kind(byte[] b, int from, int to) {
    int n = to - from;
    if (n >= 1) {
      byte first = b[from];
      if ((first == 'A' || first == 'N' || first == 'X' || first == 'S' || first == 'T')
          && (n == 1 || b[from + 1] == ' ')) {
        return first;
      }
      if (first == '*') {
        return IGNORED;
      }
    }
    for (int i = from; i < to; i++) {
      byte c = b[i];
      if (c != ' ' && c != '\t' && c != '\r' && c != 0x0b && c != 0x0c) {
        return OTHER;
      }
    }
    return IGNORED;
  }

  /** Nothing but blanks (Python's bytes.strip() would leave nothing). */
  private static boolean blank(Lines in) {
    for (int i = in.start; i < in.end; i++) {
      byte c = in.buf[i];
      if (c != ' ' && c != '\t' && c != '\r' && c != 0x0b && c != 0x0c) {
        return false;
      }
    }
    return true;
  }

  private static boolean startsWith(Lines in, byte[] prefix) {
    if (in.end - in.start < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (in.buf[in.start + i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  /** The length of the one of {@code prefixes} the current line starts with; -1 for none. */
  private static int prefixOf(Lines in, byte[][] prefixes) {
    for (byte[] prefix : prefixes) {
      if (startsWith(in, prefix)) {
        return prefix.length;
      }
    }
    return -1;
  }
}
