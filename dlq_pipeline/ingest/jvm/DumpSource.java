package dlqpipeline.ingest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The dmpmqmsg reader of ingest in the JVM (dlq_pipeline/ingest/jvm_reader.py says when it is
 * used): one partition per work item, the rows of ingest's RAW_SCHEMA, which the caller
 * passes as the schema. Local paths are read as files, URIs through Hadoop's FileSystem with
 * the driver's Hadoop configuration. Options: {@code items} (JSON: the work items) and {@code layout}
 * (JSON: the MQMD attribute table and the rest of what the rows need, from the Python
 * package, so nothing about the format is restated here).
 *
 * <p>It reads what dmpmqmsg writes. Anything else in a work item (a bad record, S or T
 * lines, a header it does not know, a character field outside ASCII) ends that item with
 * one row {@code rec = "fallback"}, and ingest reads the item again with the Python reader,
 * which knows every case. So the rows are the Python reader's rows, only sooner.
 */
public final class DumpSource implements TableProvider {

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new IllegalArgumentException("dlqpipeline.ingest.DumpSource needs the schema (ingest's RAW_SCHEMA)");
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new DumpTable(schema, Plan.parse(properties.get("items"), properties.get("layout")));
  }

  /** The work items and the layout, parsed once on the driver. */
  static final class Plan implements Serializable {
    final List<Item> items;
    final Layout layout;

    Plan(List<Item> items, Layout layout) {
      this.items = items;
      this.layout = layout;
    }

    static Plan parse(String items, String layout) {
      if (items == null || layout == null) {
        throw new IllegalArgumentException("dlqpipeline.ingest.DumpSource needs the options items and layout");
      }
      ObjectMapper json = new ObjectMapper();
      try {
        JsonNode described = json.readTree(layout);
        String wanted = described.get("digest").asText();
        String built = builtFrom();
        if (!wanted.equals(built)) {
          throw new IllegalArgumentException("this jar of the dlq-pipeline JVM reader was built from other sources ("
              + built + ") than the Python package's (" + wanted + ")");
        }
        List<Item> parsed = new ArrayList<>();
        for (JsonNode item : json.readTree(items)) {
          parsed.add(new Item(item));
        }
        return new Plan(parsed, new Layout(described));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** The digest of the sources this jar was built from (jvm_reader.DIGEST_RESOURCE). */
    private static String builtFrom() throws IOException {
      try (InputStream in = DumpSource.class.getResourceAsStream("digest.txt")) {
        return in == null ? "unknown" : new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
      }
    }
  }

  /** One work item: the records whose first line starts in [start, end) of one dump. */
  static final class Item implements InputPartition {
    final int number;
    final String location;
    final String sourceFile;
    final String qmgr;
    final String queue;
    final long start;
    final long end; // -1: to the end of the file
    final int split;
    final int splits;
    final Long modified; // the file's modification time as listed, epoch microseconds; null: unknown

    Item(JsonNode node) {
      number = node.get("number").asInt();
      location = node.get("location").asText();
      sourceFile = node.get("source_file").asText();
      qmgr = text(node, "qmgr");
      queue = text(node, "queue");
      start = node.get("start").asLong();
      end = node.hasNonNull("end") ? node.get("end").asLong() : -1;
      split = node.get("split").asInt();
      splits = node.get("splits").asInt();
      modified = node.hasNonNull("modified") ? Long.valueOf(node.get("modified").asLong()) : null;
    }

    private static String text(JsonNode node, String name) {
      JsonNode value = node.get(name);
      return value == null || value.isNull() ? null : value.asText();
    }
  }

  static final class DumpTable implements Table, SupportsRead {
    private final StructType schema;
    private final Plan plan;

    DumpTable(StructType schema, Plan plan) {
      this.schema = schema;
      this.plan = plan;
    }

    @Override
    public String name() {
      return "dlq-pipeline dump reader";
    }

    @Override
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return () -> new DumpScan(schema, plan);
    }
  }

  static final class DumpScan implements Scan, Batch {
    private final StructType schema;
    private final Plan plan;

    DumpScan(StructType schema, Plan plan) {
      this.schema = schema;
      this.plan = plan;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return "dmpmqmsg dumps, " + plan.items.size() + " work items";
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      return plan.items.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new ReaderFactory(schema, plan.layout, new Source.HadoopConf(SparkContext.getOrCreate().hadoopConfiguration()));
    }
  }

  static final class ReaderFactory implements PartitionReaderFactory {
    private final StructType schema;
    private final Layout layout;
    private final Source.HadoopConf hadoop;

    ReaderFactory(StructType schema, Layout layout, Source.HadoopConf hadoop) {
      this.schema = schema;
      this.layout = layout;
      this.hadoop = hadoop;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      return new ItemReader((Item) partition, layout, new Rows(schema, layout, (Item) partition), hadoop);
    }
  }
}
