package dlqpipeline.ingest;

/** Hex digits both ways. */
final class Hex {
  /** The value of each byte as a hex digit, -1 for any other byte. */
  static final int[] DIGIT = new int[256];

  /** The byte two hex digits stand for, indexed by the digits as a little-endian char
   *  (the first digit in the low byte), -1 for any other pair. */
  static final short[] PAIR = new short[65536];

  private static final char[] LOWER = "0123456789abcdef".toCharArray();

  static {
    java.util.Arrays.fill(DIGIT, -1);
    for (int c = '0'; c <= '9'; c++) {
      DIGIT[c] = c - '0';
    }
    for (int c = 'a'; c <= 'f'; c++) {
      DIGIT[c] = c - 'a' + 10;
      DIGIT[c - 'a' + 'A'] = c - 'a' + 10;
    }
    for (int pair = 0; pair < PAIR.length; pair++) {
      int hi = DIGIT[pair & 0xff], lo = DIGIT[pair >>> 8];
      PAIR[pair] = (short) ((hi | lo) < 0 ? -1 : hi << 4 | lo);
    }
  }

  private Hex() {}

  static byte[] decode(String hex) {
    byte[] out = new byte[hex.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) (DIGIT[hex.charAt(2 * i)] << 4 | DIGIT[hex.charAt(2 * i + 1)]);
    }
    return out;
  }

  static String encode(byte[] data, int offset, int length) {
    char[] out = new char[2 * length];
    for (int i = 0; i < length; i++) {
      int b = data[offset + i] & 0xff;
      out[2 * i] = LOWER[b >> 4];
      out[2 * i + 1] = LOWER[b & 15];
    }
    return new String(out);
  }
}
