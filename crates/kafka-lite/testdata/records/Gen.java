import org.apache.kafka.common.record.*;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

public class Gen {
    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }
    static String hex(MemoryRecords r) {
        ByteBuffer buf = r.buffer().duplicate();
        byte[] out = new byte[buf.remaining()];
        buf.get(out);
        return HexFormat.of().formatHex(out);
    }
    static SimpleRecord[] sample() {
        return new SimpleRecord[] {
            new SimpleRecord(1700000000000L, b("key-0"), b("value-0"),
                new Header[] { new RecordHeader("trace", b("abc")), new RecordHeader("empty", (byte[]) null) }),
            new SimpleRecord(1700000000005L, null, b("v1")),
            new SimpleRecord(1700000000003L, b("k2"), null),
        };
    }
    public static void main(String[] args) {
        Compression[] cs = { Compression.NONE, Compression.gzip().build(), Compression.snappy().build(),
            Compression.lz4().build(), Compression.zstd().build() };
        for (Compression c : cs) {
            System.out.println(c.type().name + " " + hex(MemoryRecords.withRecords((byte) 2, 100L, c, TimestampType.CREATE_TIME, sample())));
        }
        // Transactions: aborted at 200 (+ marker 201), committed at 202 (+ marker 203), plain at 204.
        System.out.println("txn-data-200 " + hex(MemoryRecords.withTransactionalRecords(200L, Compression.NONE, 5000L, (short) 0, 0, 0, new SimpleRecord(1700000001000L, b("a"), b("aborted")))));
        System.out.println("txn-abort-201 " + hex(MemoryRecords.withEndTransactionMarker(201L, 1700000001001L, 0, 5000L, (short) 0, new EndTransactionMarker(ControlRecordType.ABORT, 0))));
        System.out.println("txn-data-202 " + hex(MemoryRecords.withTransactionalRecords(202L, Compression.lz4().build(), 5000L, (short) 0, 1, 0, new SimpleRecord(1700000001002L, b("c"), b("committed")))));
        System.out.println("txn-commit-203 " + hex(MemoryRecords.withEndTransactionMarker(203L, 1700000001003L, 0, 5000L, (short) 0, new EndTransactionMarker(ControlRecordType.COMMIT, 0))));
        System.out.println("plain-204 " + hex(MemoryRecords.withRecords(204L, Compression.NONE, new SimpleRecord(1700000001004L, b("p"), b("plain")))));
    }
}
