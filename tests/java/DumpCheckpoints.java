// Prints every record of an MM2 checkpoints topic (partition 0, from the
// beginning to the end offset at start), decoded by MirrorMaker 2's own
// `Checkpoint.deserializeRecord`.
//
// Usage: DumpCheckpoints <bootstrap> <checkpoints topic> [read_uncommitted|read_committed]
// (the consumer's isolation.level; Java's default, read_uncommitted, when left out)
// Output: one `group topic partition upstream downstream metadata` line per
// record, in log order (metadata last, may be empty). A topic that does not
// exist yet prints nothing.

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.connect.mirror.Checkpoint;

public class DumpCheckpoints {
    public static void main(String[] args) {
        if (args.length != 2 && args.length != 3) {
            System.err.println("usage: DumpCheckpoints <bootstrap> <checkpoints topic> [isolation.level]");
            System.exit(2);
        }
        String isolation = args.length == 3 ? args[2] : "read_uncommitted";
        try (KafkaConsumer<byte[], byte[]> consumer = DumpSupport.consumer(args[0], isolation)) {
            for (ConsumerRecord<byte[], byte[]> record : DumpSupport.readPartitionZero(consumer, args[1])) {
                Checkpoint cp = Checkpoint.deserializeRecord(record);
                System.out.println(cp.consumerGroupId() + " " + cp.topicPartition().topic() + " "
                        + cp.topicPartition().partition() + " " + cp.upstreamOffset() + " "
                        + cp.downstreamOffset() + " " + cp.metadata());
            }
        }
    }
}
