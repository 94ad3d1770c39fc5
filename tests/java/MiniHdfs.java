import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A one-DataNode HDFS for the cluster tests (tests/cluster/bed.py): Hadoop's MiniDFSCluster
 * from hadoop-client-minicluster (`make hadoop-jars`), on free ports, its data under the
 * directory given as the only argument. Prints one line "READY hdfs://host:port http://host:port"
 * (the RPC and WebHDFS addresses) when the DataNode is up, then runs until its stdin closes or
 * it is killed. Run with the single-file launcher, nothing to build:
 *   java -cp 'MINICLUSTER_JAR:PYSPARK/jars/*' tests/java/MiniHdfs.java DIR
 * (MiniHadoopClusterManager, the ready main class, needs JUnit on the classpath; this does not.)
 */
public class MiniHdfs {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, args[0]);
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.setBoolean("dfs.permissions.enabled", false);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).nameNodePort(0)
                .nameNodeHttpPort(0).format(true).build();
        cluster.waitActive();
        System.out.println("READY " + cluster.getURI() + " http://127.0.0.1:" + cluster.getNameNode().getHttpAddress().getPort());
        System.out.flush();
        while (System.in.read() != -1) { }
        cluster.shutdown();
    }
}
