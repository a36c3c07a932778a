// Fails consumer groups over to the target cluster the way an application does
// with MirrorMaker 2's client library: `RemoteClusterUtils.translateOffsets`
// gives each group's offsets on the target from the checkpoints there, and a
// consumer seeks to them and reads on up to the end.
//
// Usage: FailOver <target bootstrap> <source alias> <timeout ms> <group>...
// Output, for each group (in the order given) and each translated partition
// (sorted): a line `from <group> <topic> <partition> <offset>`, then one
// `record <group> <partition> <offset> <value>` line per record read from that
// offset up to the partition's end offset at the time of the seek (value as
// UTF-8, `-` for null).

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class FailOver {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: FailOver <target bootstrap> <source alias> <timeout ms> <group>...");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        Duration timeout = Duration.ofMillis(Long.parseLong(args[2]));
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> consumer = DumpSupport.consumer(args[0])) {
            for (int i = 3; i < args.length; i++) {
                String group = args[i];
                Map<TopicPartition, OffsetAndMetadata> offsets =
                        RemoteClusterUtils.translateOffsets(props, args[1], group, timeout);
                List<TopicPartition> tps = new ArrayList<>(offsets.keySet());
                tps.sort((a, b) -> a.topic().equals(b.topic())
                        ? Integer.compare(a.partition(), b.partition())
                        : a.topic().compareTo(b.topic()));
                for (TopicPartition tp : tps) {
                    long from = offsets.get(tp).offset();
                    out.append("from ").append(group).append(' ').append(tp.topic()).append(' ')
                            .append(tp.partition()).append(' ').append(from).append('\n');
                    for (ConsumerRecord<byte[], byte[]> r : readFrom(consumer, tp, from)) {
                        out.append("record ").append(group).append(' ').append(r.partition()).append(' ')
                                .append(r.offset()).append(' ')
                                .append(r.value() == null ? "-" : new String(r.value(), StandardCharsets.UTF_8))
                                .append('\n');
                    }
                }
            }
        }
        System.out.print(out);
    }

    private static List<ConsumerRecord<byte[], byte[]>> readFrom(
            KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp, long from) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        consumer.assign(List.of(tp));
        consumer.seek(tp, from);
        long end = consumer.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
        long deadline = System.currentTimeMillis() + 30_000;
        while (consumer.position(tp, Duration.ofSeconds(30)) < end) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out reading " + tp + " from " + from + " up to " + end);
            }
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                if (record.offset() < end) {
                    out.add(record);
                }
            }
        }
        return out;
    }
}
