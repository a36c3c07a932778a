// Prints the name of every configuration key Kafka defines for the code that
// reads an mm2.properties file: MirrorMakerConfig itself, the three MirrorMaker
// connectors, MirrorClientConfig's client keys, the producer, consumer and admin
// clients, and the distributed Connect worker that dedicated mode runs.
//
// Usage: ConfigKeys
// Output: one `<definition> <key>` line per key, sorted by key within each
// definition. Several definitions are not public, so they are read by reflection.

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;

public class ConfigKeys {
    private static final String MIRROR = "org.apache.kafka.connect.mirror.";

    public static void main(String[] args) throws ReflectiveOperationException {
        print("mirror-maker", fromMethod(MIRROR + "MirrorMakerConfig", "config").names());
        print("checkpoint-connector", fromField(MIRROR + "MirrorCheckpointConfig", "CONNECTOR_CONFIG_DEF").names());
        print("source-connector", fromField(MIRROR + "MirrorSourceConfig", "CONNECTOR_CONFIG_DEF").names());
        print("heartbeat-connector", fromField(MIRROR + "MirrorHeartbeatConfig", "CONNECTOR_CONFIG_DEF").names());
        print("client", fromField(MIRROR + "MirrorClientConfig", "CLIENT_CONFIG_DEF").names());
        print("producer", ProducerConfig.configNames());
        print("consumer", ConsumerConfig.configNames());
        print("admin", AdminClientConfig.configNames());
        Class<?> crypto = Class.forName("org.apache.kafka.connect.runtime.distributed.Crypto");
        Method worker = Class.forName("org.apache.kafka.connect.runtime.distributed.DistributedConfig")
                .getDeclaredMethod("config", crypto);
        worker.setAccessible(true);
        print("worker", ((ConfigDef) worker.invoke(null, crypto.getField("SYSTEM").get(null))).names());
    }

    private static ConfigDef fromMethod(String cls, String name) throws ReflectiveOperationException {
        Method m = Class.forName(cls).getDeclaredMethod(name);
        m.setAccessible(true);
        return (ConfigDef) m.invoke(null);
    }

    private static ConfigDef fromField(String cls, String name) throws ReflectiveOperationException {
        Field f = Class.forName(cls).getDeclaredField(name);
        f.setAccessible(true);
        return (ConfigDef) f.get(null);
    }

    private static void print(String definition, Set<String> names) {
        for (String name : new TreeSet<>(names)) {
            System.out.println(definition + " " + name);
        }
    }
}
