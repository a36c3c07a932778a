// Creates a topic (if it does not exist) and writes records to it.
//
// Usage: ProduceRecords <bootstrap> <topic> <partitions> <records per partition>
// Every partition gets the same number of records (`key-<p>-<i>` / `value-<p>-<i>`),
// written with acks=all and flushed before exit. The topic is created with the
// given partition count and replication factor 1; if it already exists its
// partition count must match.

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;

public class ProduceRecords {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: ProduceRecords <bootstrap> <topic> <partitions> <records per partition>");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int perPartition = Integer.parseInt(args[3]);

        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
                int existing = admin.describeTopics(List.of(topic)).allTopicNames().get()
                        .get(topic).partitions().size();
                if (existing != partitions) {
                    throw new IllegalStateException("topic " + topic + " exists with " + existing
                            + " partitions, not " + partitions);
                }
            }
        }

        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("acks", "all");
        props.put("linger.ms", "5");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < perPartition; i++) {
                    producer.send(new ProducerRecord<>(topic, p, "key-" + p + "-" + i, "value-" + p + "-" + i));
                }
            }
            producer.flush();
        }
    }
}
