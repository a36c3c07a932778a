// Asks Apache Kafka's own MirrorMaker 2 client library which offsets a
// consumer group should use on the target cluster, from the checkpoints
// there. The end-to-end tests use it to check that Java reads checkpoints
// (ours or MirrorMaker 2's) the way a failing-over application would.
//
// Usage: TranslateOffsets <target bootstrap> <source alias> <group> <timeout ms>
// Output: one `topic partition offset` line per translated partition, sorted.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class TranslateOffsets {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: TranslateOffsets <target bootstrap> <source alias> <group> <timeout ms>");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        Map<TopicPartition, OffsetAndMetadata> offsets = RemoteClusterUtils.translateOffsets(
                props, args[1], args[2], Duration.ofMillis(Long.parseLong(args[3])));
        List<String> lines = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            lines.add(e.getKey().topic() + " " + e.getKey().partition() + " " + e.getValue().offset());
        }
        lines.sort(null);
        for (String line : lines) {
            System.out.println(line);
        }
    }
}
