// Commits explicit offsets for a consumer group, as a real member of it.
//
// Usage: CommitOffsets <bootstrap> <group> <classic|consumer|standalone> <topic:partition=offset[:metadata]>...
//
//   classic     join the group with the classic protocol (group.protocol=classic),
//               subscribe to the named topics, wait for an assignment covering
//               every named partition, commit, leave.
//   consumer    the same with the KIP-848 protocol (group.protocol=consumer).
//   standalone  no membership: assign() the partitions and commit, which is what
//               tools without a subscription do (a "simple" classic group).
//
// Offsets are committed with commitSync exactly as given (no records are
// consumed). Exit status 0 means the broker acknowledged the commit.

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class CommitOffsets {
    public static void main(String[] args) {
        if (args.length < 4) {
            System.err.println("usage: CommitOffsets <bootstrap> <group> <classic|consumer|standalone> <topic:partition=offset[:metadata]>...");
            System.exit(2);
        }
        String mode = args[2];
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        Set<String> topics = new HashSet<>();
        for (int i = 3; i < args.length; i++) {
            String spec = args[i];
            // Topic names cannot contain ':' or '=', so the first of each ends a field.
            int colon = spec.indexOf(':');
            int eq = colon < 0 ? -1 : spec.indexOf('=', colon);
            if (eq < 0) {
                throw new IllegalArgumentException("bad offset spec `" + spec + "`: want topic:partition=offset[:metadata]");
            }
            String topic = spec.substring(0, colon);
            int partition = Integer.parseInt(spec.substring(colon + 1, eq));
            String rest = spec.substring(eq + 1);
            int meta = rest.indexOf(':');
            long offset = Long.parseLong(meta < 0 ? rest : rest.substring(0, meta));
            String metadata = meta < 0 ? "" : rest.substring(meta + 1);
            offsets.put(new TopicPartition(topic, partition), new OffsetAndMetadata(offset, metadata));
            topics.add(topic);
        }

        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "latest");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        switch (mode) {
            case "classic", "standalone" -> props.put("group.protocol", "classic");
            case "consumer" -> props.put("group.protocol", "consumer");
            default -> throw new IllegalArgumentException("unknown mode `" + mode + "`: want classic, consumer or standalone");
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            if (mode.equals("standalone")) {
                consumer.assign(offsets.keySet());
            } else {
                consumer.subscribe(topics);
                long deadline = System.currentTimeMillis() + 60_000;
                while (!consumer.assignment().containsAll(offsets.keySet())) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("no assignment covering " + offsets.keySet()
                                + " within 60 s; have " + consumer.assignment());
                    }
                    consumer.poll(Duration.ofMillis(100));
                }
            }
            consumer.commitSync(offsets, Duration.ofSeconds(30));
        }
    }
}
