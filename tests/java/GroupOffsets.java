// Prints a consumer group's committed offsets, as the Admin API returns them.
//
// Usage: GroupOffsets <bootstrap> <group>
// Output: one `topic partition offset metadata` line per committed partition,
// sorted (metadata last, may be empty). A group without commits prints nothing.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public class GroupOffsets {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: GroupOffsets <bootstrap> <group>");
            System.exit(2);
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(args[1]).partitionsToOffsetAndMetadata().get();
            List<String> lines = new ArrayList<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                if (e.getValue() == null) {
                    continue;
                }
                lines.add(e.getKey().topic() + " " + e.getKey().partition() + " "
                        + e.getValue().offset() + " " + e.getValue().metadata());
            }
            lines.sort(null);
            for (String line : lines) {
                System.out.println(line);
            }
        }
    }
}
