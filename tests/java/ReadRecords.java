// Prints every record of every partition of a topic, from the beginning up to
// the end offsets at start.
//
// Usage: ReadRecords <bootstrap> <topic>
// Output: one `partition offset key value` line per record (key and value as
// UTF-8, `-` for null), sorted by partition then offset. A topic that does not
// exist yet prints nothing.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public class ReadRecords {
    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: ReadRecords <bootstrap> <topic>");
            System.exit(2);
        }
        String topic = args[1];
        try (KafkaConsumer<byte[], byte[]> consumer = DumpSupport.consumer(args[0])) {
            List<PartitionInfo> infos = consumer.listTopics(Duration.ofSeconds(30)).get(topic);
            if (infos == null) {
                return;
            }
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo info : infos) {
                tps.add(new TopicPartition(topic, info.partition()));
            }
            tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
            for (TopicPartition tp : tps) {
                for (ConsumerRecord<byte[], byte[]> r : DumpSupport.readPartition(consumer, tp)) {
                    System.out.println(r.partition() + " " + r.offset() + " " + text(r.key()) + " " + text(r.value()));
                }
            }
        }
    }

    private static String text(byte[] bytes) {
        return bytes == null ? "-" : new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }
}
