// Changes consumer groups through Kafka's Java Admin client.
//
// Usage: GroupAdmin <bootstrap> <command> <group> <arg>...
//
//   alter <group> <topic:partition=offset[:metadata]>...
//         alterConsumerGroupOffsets: commits the offsets with no membership
//         (the group must have no active members).
//   delete-offsets <group> <topic:partition>...
//         deleteConsumerGroupOffsets: removes the group's commits of those
//         partitions (the group must not be subscribed to their topics).
//   delete-group <group>
//         deleteConsumerGroups: deletes the group and all its commits (retried
//         for up to 30 s while the broker reports it non-empty, as right after
//         its last member left).
//
// Prints nothing; a failure (including a per-partition error) is an exception
// and exit 1.

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupNotEmptyException;

public class GroupAdmin {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: GroupAdmin <bootstrap> <alter|delete-offsets|delete-group> <group> <arg>...");
            System.exit(2);
        }
        String group = args[2];
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            switch (args[1]) {
                case "alter" -> {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (int i = 3; i < args.length; i++) {
                        offsets.putAll(TxnOffsets.parseOffsets(args[i]));
                    }
                    admin.alterConsumerGroupOffsets(group, offsets).all().get();
                }
                case "delete-offsets" -> {
                    Set<TopicPartition> partitions = new HashSet<>();
                    for (int i = 3; i < args.length; i++) {
                        int colon = args[i].lastIndexOf(':');
                        if (colon < 0) {
                            throw new IllegalArgumentException("bad partition `" + args[i] + "`: want topic:partition");
                        }
                        partitions.add(new TopicPartition(args[i].substring(0, colon),
                                Integer.parseInt(args[i].substring(colon + 1))));
                    }
                    admin.deleteConsumerGroupOffsets(group, partitions).all().get();
                }
                case "delete-group" -> {
                    // A member that just left may not be gone yet: retry while the
                    // broker still reports the group as non-empty.
                    long deadline = System.currentTimeMillis() + 30_000;
                    while (true) {
                        try {
                            admin.deleteConsumerGroups(List.of(group)).all().get();
                            break;
                        } catch (ExecutionException e) {
                            if (!(e.getCause() instanceof GroupNotEmptyException)
                                    || System.currentTimeMillis() > deadline) {
                                throw e;
                            }
                            Thread.sleep(200);
                        }
                    }
                }
                default -> throw new IllegalArgumentException("unknown command `" + args[1] + "`: want alter, delete-offsets or delete-group");
            }
        }
    }
}
