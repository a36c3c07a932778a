// Writes transactional records with Kafka's own Java producer, for the
// read_committed tests of kafka-lite (tests/tests/client_data.rs).
//
// Usage: TxnProducer <bootstrap> <topic> <transactional-id> <step>...
// Each step is `commit:<v1>,<v2>,...` or `abort:<v1>,<v2>,...`: one
// transaction writing those values (keys k-<value>) to partition 0, then
// committed or aborted. A last step `open:<v1>,...` writes its records and
// halts the JVM with the transaction still open (the broker aborts it after
// transaction.timeout.ms, 60 s). Prints nothing; a failure is an exception
// and exit 1.

import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProducer {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: TxnProducer <bootstrap> <topic> <transactional-id> <step>...");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        String topic = args[1];
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int i = 3; i < args.length; i++) {
                String[] step = args[i].split(":", 2);
                producer.beginTransaction();
                for (String value : step[1].split(",")) {
                    producer.send(new ProducerRecord<>(topic, 0, "k-" + value, value)).get();
                }
                switch (step[0]) {
                    case "commit": producer.commitTransaction(); break;
                    case "abort": producer.abortTransaction(); break;
                    case "open":
                        producer.flush();
                        // No close(): it would abort the transaction.
                        Runtime.getRuntime().halt(0);
                        break;
                    default: throw new IllegalArgumentException("unknown step " + args[i]);
                }
            }
        }
    }
}
