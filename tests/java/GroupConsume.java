// Consumes a topic as a member of a consumer group, the way an application
// does: subscribe, poll, commit synchronously, close (which leaves the group).
//
// Usage: GroupConsume <bootstrap> <group> <topic> <count> <auto.offset.reset>
// With count > 0 it stops after the first poll that brings the records
// processed to at least count; with count = 0 it reads every assigned
// partition up to the end offsets it lists once the partitions are assigned.
// Either way it then commits the positions of everything it returned
// (commitSync()) and closes. Output: one `record <partition> <offset> <value>`
// line per record processed (value as UTF-8, `-` for null). With
// auto.offset.reset=none a partition without a committed offset fails it.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupConsume {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: GroupConsume <bootstrap> <group> <topic> <count> <auto.offset.reset>");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", args[4]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        long count = Long.parseLong(args[3]);
        StringBuilder out = new StringBuilder();
        long deadline = System.currentTimeMillis() + 60_000;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[2]));
            long processed = 0;
            Map<TopicPartition, Long> end = null;
            while (true) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("timed out consuming " + args[2] + " as " + args[1]);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    out.append("record ").append(r.partition()).append(' ').append(r.offset()).append(' ')
                            .append(r.value() == null ? "-" : new String(r.value(), StandardCharsets.UTF_8))
                            .append('\n');
                    processed++;
                }
                Set<TopicPartition> assigned = consumer.assignment();
                if (count > 0) {
                    if (processed >= count) {
                        break;
                    }
                    continue;
                }
                if (assigned.isEmpty()) {
                    continue;
                }
                if (end == null) {
                    end = consumer.endOffsets(assigned, Duration.ofSeconds(30));
                }
                boolean done = true;
                for (TopicPartition tp : assigned) {
                    if (consumer.position(tp, Duration.ofSeconds(30)) < end.getOrDefault(tp, 0L)) {
                        done = false;
                    }
                }
                if (done) {
                    break;
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));
        }
        System.out.print(out);
    }
}
