// Shared by DumpOffsetSyncs, DumpCheckpoints and ReadRecords: read a partition
// from the beginning up to its end offset at the time of the call.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class DumpSupport {
    private DumpSupport() {}

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        return consumer(bootstrap, "read_uncommitted");
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String isolation) {
        Properties props = new Properties();
        props.put("isolation.level", isolation);
        props.put("bootstrap.servers", bootstrap);
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(props);
    }

    static List<ConsumerRecord<byte[], byte[]>> readPartitionZero(KafkaConsumer<byte[], byte[]> consumer, String topic) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        boolean exists = consumer.listTopics(Duration.ofSeconds(30)).containsKey(topic);
        if (!exists) {
            return out;
        }
        return readPartition(consumer, new TopicPartition(topic, 0));
    }

    static List<ConsumerRecord<byte[], byte[]>> readPartition(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        consumer.assign(List.of(tp));
        consumer.seekToBeginning(List.of(tp));
        long end = consumer.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
        long deadline = System.currentTimeMillis() + 30_000;
        while (consumer.position(tp, Duration.ofSeconds(30)) < end) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out reading " + tp + " up to offset " + end);
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
