// Prints every record of an MM2 offset-syncs topic (partition 0, from the
// beginning to the end offset at start), decoded by MirrorMaker 2's own
// `OffsetSync.deserializeRecord`.
//
// Usage: DumpOffsetSyncs <bootstrap> <offset-syncs topic>
// Output: one `topic partition upstream downstream` line per record, in log order.
// A topic that does not exist yet prints nothing.


import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.connect.mirror.OffsetSync;

public class DumpOffsetSyncs {
    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: DumpOffsetSyncs <bootstrap> <offset-syncs topic>");
            System.exit(2);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = DumpSupport.consumer(args[0])) {
            for (ConsumerRecord<byte[], byte[]> record : DumpSupport.readPartitionZero(consumer, args[1])) {
                OffsetSync sync = OffsetSync.deserializeRecord(record);
                System.out.println(sync.topicPartition().topic() + " " + sync.topicPartition().partition()
                        + " " + sync.upstreamOffset() + " " + sync.downstreamOffset());
            }
        }
    }
}
