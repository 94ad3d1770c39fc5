package dlqpipeline.ingest;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rows of one work item in ingest's RAW_SCHEMA, found by column name: a message, the
 * item's own row with its counts ({@code rec = "split"}), or the row that hands the item to
 * the Python reader ({@code rec = "fallback"}). Values as {@code dumps.spark.read_item} gives them.
 */
final class Rows {
  private final int width;
  private final int rec, split, splits, item, sourceFile, sourceKind, sourceQmgr, sourceQueue;
  private final int readerIndex, readerLine, sourceOffset, ordinal, newlines, messages, errors, largest;
  private final int data, dataHead, dataLength, dataDigest, messageKey, truncated, notes, errorText;
  private final int recordedAt, headerOffset;
  private final int[] md;
  private final int[] keyFields; // positions in Layout.mdColumns
  private final Layout layout;
  private final DumpSource.Item at;
  private final MessageDigest sha256;

  private static final UTF8String MESSAGE = UTF8String.fromString("message");
  private static final UTF8String SPLIT = UTF8String.fromString("split");
  private static final UTF8String FALLBACK = UTF8String.fromString("fallback");
  private static final UTF8String DMPMQMSG = UTF8String.fromString("dmpmqmsg");

  Rows(StructType schema, Layout layout, DumpSource.Item at) {
    this.layout = layout;
    this.at = at;
    width = schema.fields().length;
    rec = schema.fieldIndex("rec");
    sourceFile = schema.fieldIndex("source_file");
    sourceKind = schema.fieldIndex("source_kind");
    sourceQmgr = schema.fieldIndex("source_qmgr");
    sourceQueue = schema.fieldIndex("source_queue");
    split = schema.fieldIndex("split");
    splits = schema.fieldIndex("splits");
    item = schema.fieldIndex("item");
    readerIndex = schema.fieldIndex("reader_index");
    readerLine = schema.fieldIndex("reader_line");
    sourceOffset = schema.fieldIndex("source_offset");
    ordinal = schema.fieldIndex("ordinal");
    newlines = schema.fieldIndex("newlines");
    messages = schema.fieldIndex("messages");
    errors = schema.fieldIndex("errors");
    largest = schema.fieldIndex("largest");
    data = schema.fieldIndex("data");
    dataHead = schema.fieldIndex("data_head");
    dataLength = schema.fieldIndex("data_length");
    dataDigest = schema.fieldIndex("data_digest");
    messageKey = schema.fieldIndex("message_key");
    truncated = schema.fieldIndex("truncated");
    notes = schema.fieldIndex("notes");
    errorText = schema.fieldIndex("error_text");
    recordedAt = schema.fieldIndex("recorded_at");
    headerOffset = schema.fieldIndex("header_offset");
    md = new int[layout.mdColumns.length];
    for (int i = 0; i < md.length; i++) {
      md[i] = schema.fieldIndex(layout.mdColumns[i]);
    }
    keyFields = new int[layout.keyColumns.length];
    for (int i = 0; i < keyFields.length; i++) {
      keyFields[i] = java.util.Arrays.asList(layout.mdColumns).indexOf(layout.keyColumns[i]);
    }
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private Object[] common(UTF8String kind) {
    Object[] values = new Object[width];
    values[rec] = kind;
    values[sourceFile] = UTF8String.fromString(at.sourceFile);
    values[sourceKind] = DMPMQMSG;
    values[sourceQmgr] = at.qmgr == null ? null : UTF8String.fromString(at.qmgr);
    values[sourceQueue] = at.queue == null ? null : UTF8String.fromString(at.queue);
    values[split] = at.split;
    values[splits] = at.splits;
    values[item] = at.number;
    return values;
  }

  /** A message: ``fields`` are its MQMD values in Layout.mdColumns' order (Integer, String, byte[]);
   *  ``header`` the dump header line above it (offset), ``recorded`` when it was recorded
   *  (epoch microseconds; null when unknown). */
  InternalRow message(
      Object[] fields, byte[] body, long index, long line, long offset, long position, Long header, Long recorded) {
    Object[] values = common(MESSAGE);
    for (int i = 0; i < md.length; i++) {
      Object value = fields[i];
      values[md[i]] = value instanceof String ? UTF8String.fromString((String) value) : value;
    }
    String digest = Hex.encode(sha256.digest(body), 0, 32);
    values[readerIndex] = index;
    values[readerLine] = line;
    values[sourceOffset] = offset;
    values[ordinal] = position;
    values[newlines] = at.splits > 1 ? Long.valueOf(line - 1) : null;
    values[data] = body;
    values[dataHead] = layout.head(body);
    values[dataLength] = body.length;
    values[dataDigest] = UTF8String.fromString(digest);
    values[messageKey] = UTF8String.fromString(key(fields, digest));
    values[truncated] = false;
    values[notes] = new GenericArrayData(new Object[0]);
    values[headerOffset] = header;
    values[recordedAt] = recorded;
    return new GenericInternalRow(values);
  }

  /** As identity.message_key: each part length-prefixed (4 bytes, big-endian), text parts
   *  without their trailing blanks, the digest last; the first 32 hex digits. */
  private String key(Object[] fields, String digest) {
    for (int position : keyFields) {
      Object value = fields[position];
      byte[] part = value instanceof byte[] ? (byte[]) value : rstrip((String) value).getBytes(StandardCharsets.UTF_8);
      update(part);
    }
    update(digest.getBytes(StandardCharsets.US_ASCII));
    return Hex.encode(sha256.digest(), 0, 16);
  }

  private void update(byte[] part) {
    int n = part.length;
    sha256.update(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
    sha256.update(part);
  }

  private static String rstrip(String text) {
    int end = text.length();
    while (end > 0 && text.charAt(end - 1) == ' ') {
      end--;
    }
    return text.substring(0, end);
  }

  /** The item's own row: its records, the newlines of its range (split files), its messages,
   *  the length of the largest one's data, and the last dump header line it knows (offset,
   *  when its messages were recorded; nulls when it knows none). */
  InternalRow split(long records, Long rangeNewlines, long count, long biggest, Long header, Long recorded) {
    Object[] values = common(SPLIT);
    values[sourceOffset] = at.start;
    values[ordinal] = records;
    values[newlines] = rangeNewlines;
    values[messages] = count;
    values[errors] = 0L;
    values[largest] = biggest;
    values[headerOffset] = header;
    values[recordedAt] = recorded;
    return new GenericInternalRow(values);
  }

  /** The item is the Python reader's: ``why`` says what this reader does not read. */
  InternalRow fallback(String why) {
    Object[] values = common(FALLBACK);
    values[sourceOffset] = at.start;
    values[errorText] = UTF8String.fromString(why);
    return new GenericInternalRow(values);
  }
}
