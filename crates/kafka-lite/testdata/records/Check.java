import org.apache.kafka.common.record.*;
import org.apache.kafka.common.header.Header;
import java.nio.ByteBuffer;
import java.nio.file.*;
import java.util.HexFormat;

public class Check {
    static String s(ByteBuffer b) { if (b == null) return "null"; byte[] a = new byte[b.remaining()]; b.duplicate().get(a); return new String(a); }
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of("rust.txt"))) {
            String[] p = line.split(" ");
            MemoryRecords recs = MemoryRecords.readableRecords(ByteBuffer.wrap(HexFormat.of().parseHex(p[2])));
            for (RecordBatch batch : recs.batches()) {
                batch.ensureValid();
                StringBuilder sb = new StringBuilder(p[1] + ": " + batch.compressionType() + " pid=" + batch.producerId() + " seq=" + batch.baseSequence() + " last=" + batch.lastOffset() + " |");
                for (org.apache.kafka.common.record.Record r : batch) {
                    sb.append(" ").append(r.offset()).append("@").append(r.timestamp()).append(" k=").append(s(r.key())).append(" v=").append(r.hasValue() ? s(r.value()).length() + "B" : "null");
                    for (Header h : r.headers()) sb.append(" h:").append(h.key()).append("=").append(h.value() == null ? "null" : new String(h.value()));
                }
                System.out.println(sb);
            }
        }
    }
}
