import java.nio.charset.Charset;

/**
 * Prints what Java's own charset implementation decodes each byte 0x00-0xFF to, one line per
 * charset named on the command line: the name, then 256 hex code points (fffd where Java has
 * no character). Run with the single-file launcher: java tests/java/DumpCodePage.java Cp1047 Cp500
 * tests/unit/test_codepages.py compares these tables with dlq_pipeline.codepages byte for byte.
 */
public class DumpCodePage {
    public static void main(String[] names) {
        for (String name : names) {
            Charset charset = Charset.forName(name);
            StringBuilder line = new StringBuilder(name);
            for (int b = 0; b < 256; b++) {
                String decoded = new String(new byte[] {(byte) b}, charset);
                if (decoded.codePointCount(0, decoded.length()) != 1) {
                    throw new IllegalStateException(name + " decodes byte " + b + " to " + decoded.length() + " chars");
                }
                line.append(' ').append(Integer.toHexString(decoded.codePointAt(0)));
            }
            System.out.println(line);
        }
    }
}
