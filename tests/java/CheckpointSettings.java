// What MirrorMaker 2's own configuration code makes of an mm2.properties file for
// its checkpoint connectors: MirrorMakerConfig builds each flow's connector
// configuration (connectorBaseConfig) and MirrorCheckpointConfig reads it.
// It lives in MM2's package to reach the package-private accessors.
//
// Usage: org.apache.kafka.connect.mirror.CheckpointSettings <mm2.properties>...
// Output: for each file and each flow whose checkpoint connector is enabled, in
// flow order, `<file>\t<S>-><T>\t<setting>\t<value>` lines (a value may be
// empty; the setting `mm2 checkpoint tasks` says whether MM2 itself would run
// checkpoint tasks for the flow, `yes` or `no`), or one
// `<file>\t<S>-><T>\terror\t<message>` line when MM2 rejects the connector
// configuration for another reason than emit.checkpoints.enabled=false, or `<file>\t-\terror\t<message>` when it rejects the
// whole file.
//
// With `--connector` first, it prints instead, for each enabled flow, the
// checkpoint connector's configuration MirrorMakerConfig builds for it, as
// `<file>\t<S>-><T>\tconnector\t<key>=<value>` lines (sorted by key).

package org.apache.kafka.connect.mirror;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

public class CheckpointSettings {
    public static void main(String[] args) throws IOException {
        if (args.length == 0) {
            System.err.println("usage: CheckpointSettings <mm2.properties>...");
            System.exit(2);
        }
        boolean connector = args[0].equals("--connector");
        for (String path : connector ? java.util.Arrays.copyOfRange(args, 1, args.length) : args) {
            try {
                flows(path, connector);
            } catch (ConfigException e) {
                print(path, "-", "error", e.getMessage());
            }
        }
    }

    private static void print(String path, String flow, String setting, Object value) {
        String text = String.valueOf(value).replace('\n', ' ').replace('\t', ' ');
        System.out.println(path + "\t" + flow + "\t" + setting + "\t" + text);
    }

    private static void flows(String path, boolean connectorConfigs) throws IOException {
        Properties file = new Properties();
        try (InputStream in = new FileInputStream(path)) {
            file.load(in);
        }
        Map<String, String> props = new HashMap<>();
        for (String name : file.stringPropertyNames()) {
            props.put(name, file.getProperty(name));
        }
        // MirrorMakerConfig scans the class path for Connect plugins; the service
        // loader does that in a fraction of the time and memory, and changes
        // nothing about the settings read here.
        props.putIfAbsent("plugin.discovery", "service_load");
        MirrorMakerConfig mm2 = new MirrorMakerConfig(props);
        List<SourceAndTarget> pairs = new ArrayList<>(mm2.clusterPairs());
        pairs.sort((a, b) -> a.toString().compareTo(b.toString()));
        for (SourceAndTarget pair : pairs) {
            Map<String, String> connector = mm2.connectorBaseConfig(pair, MirrorCheckpointConnector.class);
            // The connector reads `enabled` as a ConfigDef boolean (trimmed, any case).
            Object enabled = ConfigDef.parseType(MirrorConnectorConfig.ENABLED,
                    connector.get(MirrorConnectorConfig.ENABLED), ConfigDef.Type.BOOLEAN);
            if (!Boolean.TRUE.equals(enabled)) {
                continue;
            }
            String flow = pair.source() + "->" + pair.target();
            if (connectorConfigs) {
                for (Map.Entry<String, String> e : new java.util.TreeMap<>(connector).entrySet()) {
                    print(path, flow, "connector", e.getKey() + "=" + e.getValue());
                }
                continue;
            }
            try {
                describe(path, flow, connector);
            } catch (ConfigException e) {
                print(path, flow, "error", e.getMessage());
            }
        }
    }

    private static void describe(String path, String flow, Map<String, String> connector) {
        Map<String, String> invalid = MirrorCheckpointConfig.validate(connector);
        // Rejected only for `emit.checkpoints.enabled=false`: MM2 runs no
        // checkpoint connector for the flow, which hands it to mm2-checkpoint,
        // so the settings it would have read are still printed.
        boolean refusedCheckpoints =
                invalid.keySet().equals(java.util.Set.of(MirrorCheckpointConfig.EMIT_CHECKPOINTS_ENABLED));
        if (!invalid.isEmpty() && !refusedCheckpoints) {
            print(path, flow, "error", invalid);
            return;
        }
        MirrorCheckpointConfig c = new MirrorCheckpointConfig(connector);
        // Whether MM2 would run checkpoint tasks: taskConfigs creates none when
        // the connector is rejected or its emission interval is negative.
        print(path, flow, "mm2 checkpoint tasks",
                !refusedCheckpoints && !c.emitCheckpointsInterval().isNegative() ? "yes" : "no");
        MirrorSourceConfig source = new MirrorSourceConfig(connector);
        ReplicationPolicy policy = c.replicationPolicy();
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        out.put("source.cluster.alias", c.sourceClusterAlias());
        out.put("target.cluster.alias", c.targetClusterAlias());
        out.put("checkpoints.topic", c.checkpointsTopic());
        out.put("offset-syncs.topic", c.offsetSyncsTopic());
        out.put("offset-syncs.topic.location", c.offsetSyncsTopicLocation());
        out.put("replication.policy.class", policy.getClass().getSimpleName());
        out.put("remote topic of orders", policy.formatRemoteTopic(c.sourceClusterAlias(), "orders"));
        out.put("source of " + c.targetClusterAlias() + ".orders",
                String.valueOf(policy.topicSource(c.targetClusterAlias() + ".orders")));
        out.put("emit.checkpoints.interval.seconds", c.getLong(MirrorCheckpointConfig.EMIT_CHECKPOINTS_INTERVAL_SECONDS));
        out.put("sync.group.offsets.enabled", c.getBoolean(MirrorCheckpointConfig.SYNC_GROUP_OFFSETS_ENABLED));
        out.put("sync.group.offsets.interval.seconds", c.getLong(MirrorCheckpointConfig.SYNC_GROUP_OFFSETS_INTERVAL_SECONDS));
        out.put("refresh.groups.enabled", c.getBoolean(MirrorCheckpointConfig.REFRESH_GROUPS_ENABLED));
        out.put("refresh.groups.interval.seconds", c.getLong(MirrorCheckpointConfig.REFRESH_GROUPS_INTERVAL_SECONDS));
        // The checkpoint task filters with DefaultTopicFilter and DefaultGroupFilter,
        // whose own definitions hold the defaults that apply.
        DefaultTopicFilter.TopicFilterConfig topics = new DefaultTopicFilter.TopicFilterConfig(connector);
        DefaultGroupFilter.GroupFilterConfig groups = new DefaultGroupFilter.GroupFilterConfig(connector);
        out.put("topics", String.join(",", topics.getList(DefaultTopicFilter.TOPICS_INCLUDE_CONFIG)));
        out.put("topics.exclude", String.join(",", topics.getList(DefaultTopicFilter.TOPICS_EXCLUDE_CONFIG)));
        out.put("groups", String.join(",", groups.getList(DefaultGroupFilter.GROUPS_INCLUDE_CONFIG)));
        out.put("groups.exclude", String.join(",", groups.getList(DefaultGroupFilter.GROUPS_EXCLUDE_CONFIG)));
        out.put("checkpoints.topic.replication.factor", c.checkpointsTopicReplicationFactor());
        out.put("consumer.poll.timeout.ms", c.consumerPollTimeout().toMillis());
        out.put("admin.timeout.ms", c.adminTimeout().toMillis());
        out.put("offset.lag.max", source.getLong(MirrorSourceConfig.OFFSET_LAG_MAX));
        for (Map.Entry<String, Object> e : out.entrySet()) {
            print(path, flow, e.getKey(), e.getValue());
        }
    }
}
