package dlqpipeline.ingest;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What the reader needs to know of the format and of the rows, as the Python package states
 * it ({@code jvm_reader.layout()}): the two orders of the 28 MQMD attribute lines dmpmqmsg
 * writes, each field's default, the reader limits, what of a message's data
 * {@code data_head} keeps ({@code dlh_decoder.dlh_head}), and how a header's {@code Created:}
 * stamp is read ({@code dmpmqmsg.created_time}: the ctime() pattern, in the zone ingest names).
 */
final class Layout implements Serializable {
  static final int LONG = 0, CHAR = 1, BYTE = 2, HEXTEXT = 3;

  /** One {@code A CCC value} line of the MQMD block. */
  static final class Attr implements Serializable {
    final byte[] prefix; // "A CCC "
    final String column;
    int position; // of the column in Layout.mdColumns
    final int kind;
    final int length; // of the field, in bytes

    Attr(JsonNode node) {
      prefix = ("A " + node.get("code").asText() + " ").getBytes(StandardCharsets.US_ASCII);
      column = node.get("column").asText();
      kind = kindOf(node.get("kind").asText());
      length = node.get("length").asInt();
    }
  }

  final Attr[][] orders;
  final String[] mdColumns;
  final Map<String, Object> defaults = new HashMap<>(); // Integer, String or byte[]
  final String[] keyColumns;
  final long maxLineLength;
  final long maxMessageBytes; // -1: no limit
  final int sniffBytes;
  final int headerSearchLines;
  final byte[][] headerPrefixes;
  final Pattern created; // dmpmqmsg.CTIME_PATTERN: groups month, day, hour, minute, second, year
  final List<String> months; // dmpmqmsg.CTIME_MONTHS: a month's number is its place + 1
  final String dumpTimeZone; // the IANA zone a Created stamp is read in
  final int dlhLength;
  final int chainScanLimit;
  final int formatOffset;
  final int[] prefixLengths;
  final Set<String>[] prefixesByLength; // index: a length in prefixLengths' order
  final String crashPoint, crashAtEnv, crashMarkerEnv; // testhooks.py: read on the executor

  @SuppressWarnings("unchecked")
  Layout(JsonNode node) {
    JsonNode orderNodes = node.get("orders");
    orders = new Attr[orderNodes.size()][];
    for (int o = 0; o < orders.length; o++) {
      JsonNode lines = orderNodes.get(o);
      orders[o] = new Attr[lines.size()];
      for (int i = 0; i < orders[o].length; i++) {
        orders[o][i] = new Attr(lines.get(i));
      }
    }
    JsonNode columns = node.get("md_columns");
    mdColumns = new String[columns.size()];
    for (int i = 0; i < mdColumns.length; i++) {
      mdColumns[i] = columns.get(i).get("column").asText();
      JsonNode value = columns.get(i).get("default");
      switch (kindOf(columns.get(i).get("kind").asText())) {
        case LONG:
          defaults.put(mdColumns[i], value.asInt());
          break;
        case BYTE:
          defaults.put(mdColumns[i], Hex.decode(value.asText()));
          break;
        default:
          defaults.put(mdColumns[i], value.asText());
      }
    }
    List<String> columnList = java.util.Arrays.asList(mdColumns);
    for (Attr[] order : orders) {
      for (Attr attr : order) {
        attr.position = columnList.indexOf(attr.column);
        if (attr.position < 0) {
          throw new IllegalArgumentException("attribute column " + attr.column + " is not an MQMD column");
        }
      }
    }
    keyColumns = strings(node.get("key_columns"));
    maxLineLength = node.get("max_line_length").asLong();
    maxMessageBytes = node.hasNonNull("max_message_bytes") ? node.get("max_message_bytes").asLong() : -1;
    sniffBytes = node.get("sniff_bytes").asInt();
    headerSearchLines = node.get("header_search_lines").asInt();
    String[] headers = strings(node.get("header_prefixes"));
    headerPrefixes = new byte[headers.length][];
    for (int i = 0; i < headers.length; i++) {
      headerPrefixes[i] = headers[i].getBytes(StandardCharsets.US_ASCII);
    }
    JsonNode stamp = node.get("created");
    created = Pattern.compile(stamp.get("pattern").asText());
    months = java.util.Arrays.asList(strings(stamp.get("months")));
    dumpTimeZone = node.get("dump_time_zone").asText();
    JsonNode head = node.get("head");
    dlhLength = head.get("dlh_length").asInt();
    chainScanLimit = head.get("chain_scan_limit").asInt();
    formatOffset = head.get("format_offset").asInt();
    Map<Integer, Set<String>> byLength = new HashMap<>();
    for (String hex : strings(head.get("prefixes"))) {
      byLength.computeIfAbsent(hex.length() / 2, n -> new HashSet<>()).add(hex);
    }
    List<Integer> lengths = new ArrayList<>(byLength.keySet());
    lengths.sort(null);
    prefixLengths = new int[lengths.size()];
    prefixesByLength = new Set[lengths.size()];
    for (int i = 0; i < prefixLengths.length; i++) {
      prefixLengths[i] = lengths.get(i);
      prefixesByLength[i] = byLength.get(lengths.get(i));
    }
    JsonNode crash = node.get("crash");
    crashPoint = crash.get("point").asText();
    crashAtEnv = crash.get("at_env").asText();
    crashMarkerEnv = crash.get("marker_env").asText();
  }

  private static int kindOf(String kind) {
    switch (kind) {
      case "LONG":
        return LONG;
      case "CHAR":
        return CHAR;
      case "BYTE":
        return BYTE;
      case "HEXTEXT":
        return HEXTEXT;
      default:
        throw new IllegalArgumentException("unknown attribute kind " + kind);
    }
  }

  private static String[] strings(JsonNode array) {
    String[] out = new String[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asText();
    }
    return out;
  }

  /** What of {@code data} the MQDLH decoder reads: as {@code dlh_decoder.dlh_head}. */
  byte[] head(byte[] data) {
    int keep = Math.min(data.length, chainPossible(data) ? chainScanLimit : dlhLength);
    return java.util.Arrays.copyOf(data, keep);
  }

  private boolean chainPossible(byte[] data) {
    for (int i = 0; i < prefixLengths.length; i++) {
      int n = prefixLengths[i];
      if (data.length >= formatOffset + n
          && prefixesByLength[i].contains(Hex.encode(data, formatOffset, n))) {
        return true;
      }
    }
    return false;
  }
}
