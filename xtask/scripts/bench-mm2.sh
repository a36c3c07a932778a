#!/usr/bin/env bash
# Side-by-side measurement of MirrorMaker 2's checkpoint connector and
# mm2-checkpoint on the test clusters (a stop-gap until `cargo xtask bench mm2`).
# Usage: xtask/scripts/bench-mm2.sh [GROUPS]   (10 partitions per group's topic)
# Needs `cargo xtask kafka up`, the Java helpers built by the interop tests, and
# target/release/mm2-checkpoint. Prints raw numbers; stops what it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
GROUPS_N=${1:-10}
PARTS=10
CLUSTERS=target/kafka/clusters.json
SRC=$(python3 -c "import json;print(json.load(open('$CLUSTERS'))['clusters']['source']['bootstrap']['plaintext'])")
TGT=$(python3 -c "import json;print(json.load(open('$CLUSTERS'))['clusters']['target']['bootstrap']['plaintext'])")
LIBS=$(python3 -c "import json;print(json.load(open('$CLUSTERS'))['kafka_libs'])")
HELPERS=$(ls -d target/java-helpers/*/ | head -1)
J() { java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$HELPERS:$LIBS" "$@" 2>/dev/null; }
TS=$(date +%s)
BIN=${BIN:-target/release/mm2-checkpoint}
TOPIC=bench-$TS
OUT=target/bench/$TS; mkdir -p "$OUT"

J ProduceRecords "$SRC" "$TOPIC" $PARTS 100
specs=(); for p in $(seq 0 $((PARTS-1))); do specs+=("$TOPIC:$p=50:"); done
t0=$(date +%s.%N)
for g in $(seq 1 "$GROUPS_N"); do J CommitOffsets "$SRC" "$TOPIC-mm2-$g" classic "${specs[@]}" & 
  J CommitOffsets "$SRC" "$TOPIC-ours-$g" classic "${specs[@]}"; wait; done
echo "setup: committed $GROUPS_N+$GROUPS_N groups in $(echo "$(date +%s.%N) - $t0" | bc) s"

proc_stat() { # pid -> "rss_kib hwm_kib cpu_ticks"
  local rss hwm cpu
  rss=$(awk '/^VmRSS:/{print $2}' /proc/$1/status); hwm=$(awk '/^VmHWM:/{print $2}' /proc/$1/status)
  cpu=$(awk '{print $14+$15}' /proc/$1/stat); echo "$rss $hwm $cpu"; }

# MirrorMaker 2: replication + offset syncs + its checkpoint connector, groups $TOPIC-mm2-.*
cargo xtask mm2 config --topics "$TOPIC" --groups "$TOPIC-mm2-.*" --isolated > "$OUT/mm2.properties"
start=$(date +%s.%N)
cargo xtask mm2 start --config "$OUT/mm2.properties" --name "bench-$TS" >/dev/null
MM2PID=$(pgrep -f "target/mm2/bench-$TS/mm2.properties" | head -1)
want=$((GROUPS_N*PARTS))
# MM2 checkpoints only the commits its sync store can translate, so wait for
# its first checkpoint of these groups, not for all of them.
for _ in $(seq 120); do
  n=$(J DumpCheckpoints "$TGT" source.checkpoints.internal | grep -c "^$TOPIC-mm2-" || true)
  [ "$n" -ge 1 ] && break; sleep 0.5; done
first=$(date +%s.%N)
echo "mm2: $n checkpoints visible $(echo "$first - $start" | bc) s after JVM spawn (polled with a JVM helper: +-2 s)"
grep -m1 "checkpointing $GROUPS_N consumer groups" "target/mm2/bench-$TS/mm2.log" | cut -c1-26 | sed 's/^/mm2: checkpoint task started at /'
head -1 "target/mm2/bench-$TS/mm2.log" | cut -c1-26 | sed 's/^/mm2: JVM first log line at /'
sleep 20
s1=$(proc_stat $MM2PID); sleep 30; s2=$(proc_stat $MM2PID)
echo "mm2: rss_kib hwm_kib cpu_ticks at t1: $s1; 30 s later: $s2 (ticks = 1/$(getconf CLK_TCK) s)"
cargo xtask mm2 stop --name "bench-$TS" >/dev/null || true

# Ours: the same flow, groups $TOPIC-ours-.*, over the offset syncs MM2 wrote.
cat > "$OUT/ours.properties" <<P
clusters = source, target
source.bootstrap.servers = $SRC
target.bootstrap.servers = $TGT
source->target.enabled = true
topics = $TOPIC
groups = $TOPIC-ours-.*
checkpoints.topic.replication.factor = 1
emit.checkpoints.interval.seconds = 1
P
# Start to first complete round, exactly: `run --once` exits after its round's
# produce was acknowledged.
start=$(date +%s.%N)
"$BIN" run --once --config "$OUT/ours.properties" > "$OUT/ours-once.log" 2>&1
echo "ours: run --once (start, restore, initial read, one round of $want checkpoints) took $(echo "$(date +%s.%N) - $start" | bc) s"
n=$(J DumpCheckpoints "$TGT" source.checkpoints.internal | grep -c "^$TOPIC-ours-" || true)
echo "ours: $n checkpoints on the topic"
"$BIN" run --config "$OUT/ours.properties" > "$OUT/ours.log" 2>&1 &
OURPID=$!
sleep 5
s1=$(proc_stat $OURPID); sleep 30; s2=$(proc_stat $OURPID)
grep -c "emission round done" "$OUT/ours.log" | sed 's/^/ours: rounds run: /' 
echo "ours: rss_kib hwm_kib cpu_ticks at t1: $s1; 30 s later: $s2"
kill -TERM $OURPID; wait $OURPID || true
