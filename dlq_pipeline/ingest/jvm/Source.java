package dlqpipeline.ingest;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/** A dump's bytes, read at any offset: a local file (a path), or any file system Spark's
 *  Hadoop configuration reaches (a URI: hdfs://, s3a://, abfss://, gs://). */
abstract class Source implements Closeable {
  /** Up to {@code length} bytes at {@code position} into {@code into}; -1 at the end of the file. */
  abstract int read(byte[] into, int offset, int length, long position) throws IOException;

  static Source open(String location, HadoopConf hadoop) throws IOException {
    if (location.startsWith("/")) {
      return new Local(FileChannel.open(Paths.get(location), StandardOpenOption.READ));
    }
    Path path = new Path(URI.create(location));
    FileSystem fs = path.getFileSystem(hadoop.get());
    return new Remote(fs.open(path));
  }

  private static final class Local extends Source {
    private final FileChannel file;

    Local(FileChannel file) {
      this.file = file;
    }

    @Override
    int read(byte[] into, int offset, int length, long position) throws IOException {
      return file.read(ByteBuffer.wrap(into, offset, length), position);
    }

    @Override
    public void close() throws IOException {
      file.close();
    }
  }

  private static final class Remote extends Source {
    private final FSDataInputStream in;

    Remote(FSDataInputStream in) {
      this.in = in;
    }

    @Override
    int read(byte[] into, int offset, int length, long position) throws IOException {
      return in.read(position, into, offset, length);
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  /** The driver's Hadoop configuration (spark.hadoop.* included), carried to the executors
   *  as its Writable bytes and rebuilt there once per task. */
  static final class HadoopConf implements Serializable {
    private static final long serialVersionUID = 1L;
    private final byte[] written;
    private transient Configuration conf;

    HadoopConf(Configuration driver) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        driver.write(out);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      written = bytes.toByteArray();
    }

    Configuration get() throws IOException {
      if (conf == null) {
        Configuration read = new Configuration(false);
        read.readFields(new DataInputStream(new ByteArrayInputStream(written)));
        conf = read;
      }
      return conf;
    }
  }
}
