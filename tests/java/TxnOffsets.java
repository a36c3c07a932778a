// Commits consumer group offsets inside transactions, with Kafka's own Java
// producer (sendOffsetsToTransaction), for tests of transactional commits
// in __consumer_offsets (the commit follower, docs/commit-follower.md).
//
// Usage: TxnOffsets <bootstrap> <group> <transactional-id> <output-topic|-> <step>...
//
// Each step is `<kind>:<topic>:<partition>=<offset>[:<metadata>],...` (the
// offsets of one transaction, comma separated; metadata may not contain a
// comma), where <kind> is
//   commit  beginTransaction; if <output-topic> is not `-`, send one record
//           (key `txn-<step number>`) to its partition 0; then
//           sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group))
//           and commitTransaction.
//   abort   the same, then abortTransaction.
//   open    the same, then flush and halt the JVM with the transaction still
//           open (no close(), which would abort it). Must be the last step. The
//           broker aborts the transaction after transaction.timeout.ms (60 s);
//           until then the __consumer_offsets partition of the group has its
//           last stable offset held back at the transaction's first record.
//   hold    the same up to sendOffsetsToTransaction, then flush, print `held`
//           on stdout and wait for a line on stdin: `commit` commits the
//           transaction, anything else (or the end of stdin) aborts it; then
//           the next step runs. The transaction is open (and the group's
//           __consumer_offsets partition held back) while it waits.
//
// The group metadata carries no generation or member id, so the group must
// have no active members (a fresh group, or one whose members left). Prints
// nothing but the `held` lines; a failure is an exception and exit 1. Exit 0
// after `commit`, `abort` and `hold` steps means the broker acknowledged every
// transaction.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnOffsets {
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: TxnOffsets <bootstrap> <group> <transactional-id> <output-topic|-> <commit|abort|open|hold>:<topic>:<partition>=<offset>[:<metadata>],...");
            System.exit(2);
        }
        String group = args[1];
        String output = args[3].equals("-") ? null : args[3];
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int i = 4; i < args.length; i++) {
                int colon = args[i].indexOf(':');
                if (colon < 0) {
                    throw new IllegalArgumentException("bad step `" + args[i] + "`: want <commit|abort|open|hold>:<offsets>");
                }
                String kind = args[i].substring(0, colon);
                Map<TopicPartition, OffsetAndMetadata> offsets = parseOffsets(args[i].substring(colon + 1));
                producer.beginTransaction();
                if (output != null) {
                    producer.send(new ProducerRecord<>(output, 0, "txn-" + (i - 3), kind)).get();
                }
                producer.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
                switch (kind) {
                    case "commit" -> producer.commitTransaction();
                    case "abort" -> producer.abortTransaction();
                    case "open" -> {
                        producer.flush();
                        // No close(): it would abort the transaction.
                        System.out.flush();
                        Runtime.getRuntime().halt(0);
                    }
                    case "hold" -> {
                        producer.flush();
                        System.out.println("held");
                        System.out.flush();
                        String line = stdin.readLine();
                        if ("commit".equals(line)) {
                            producer.commitTransaction();
                        } else {
                            producer.abortTransaction();
                        }
                    }
                    default -> throw new IllegalArgumentException("unknown step kind `" + kind + "` in `" + args[i] + "`");
                }
            }
        }
    }

    /// `topic:partition=offset[:metadata],...`, as in CommitOffsets.
    static Map<TopicPartition, OffsetAndMetadata> parseOffsets(String specs) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (String spec : specs.split(",")) {
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
        }
        if (offsets.isEmpty()) {
            throw new IllegalArgumentException("a step needs at least one offset");
        }
        return offsets;
    }
}
