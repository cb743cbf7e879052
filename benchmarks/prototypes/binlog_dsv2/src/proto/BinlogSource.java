package proto;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.shyiko.mysql.binlog.BinaryLogClient;
import com.github.shyiko.mysql.binlog.event.*;
import com.github.shyiko.mysql.binlog.event.deserialization.EventDeserializer;
import com.github.shyiko.mysql.binlog.event.deserialization.EventDeserializer.CompatibilityMode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.*;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.*;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.*;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.*;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.*;

/**
 * PROTOTYPE: DataSource V2 reader that decodes MariaDB binlog splits inside executor tasks.
 * Options: host, port, user, password, splits (JSON [{"file","start","end"}]), server_id_base,
 * handoff ("lockstep" (default): decoder thread runs only while the task waits; "pipelined": read-ahead),
 * batch_rows (rows per handoff, default 4096), stats_path (optional file: one JSON line per task).
 */
public class BinlogSource implements TableProvider, DataSourceRegister {
    static final StructType SCHEMA = new StructType()
            .add("source_table", DataTypes.StringType)
            .add("op", DataTypes.StringType)
            .add("position", DataTypes.StringType)
            .add("txid", DataTypes.StringType)
            .add("commit_position", DataTypes.LongType)
            .add("row_index", DataTypes.IntegerType)
            .add("before", DataTypes.StringType)
            .add("after", DataTypes.StringType);

    @Override public String shortName() { return "cdclake-binlog-proto"; }
    @Override public StructType inferSchema(CaseInsensitiveStringMap options) { return SCHEMA; }
    @Override public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new BinlogTable(properties);
    }

    static final class BinlogTable implements Table, SupportsRead {
        final Map<String, String> props;
        BinlogTable(Map<String, String> props) { this.props = props; }
        @Override public String name() { return "binlog_splits"; }
        @Override public StructType schema() { return SCHEMA; }
        @Override public Set<TableCapability> capabilities() { return EnumSet.of(TableCapability.BATCH_READ); }
        @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return () -> new BinlogScan(options);
        }
    }

    static final class BinlogScan implements Scan, Batch {
        final CaseInsensitiveStringMap o;
        BinlogScan(CaseInsensitiveStringMap o) { this.o = o; }
        @Override public StructType readSchema() { return SCHEMA; }
        @Override public String description() { return "BinlogScan(" + o.get("splits") + ")"; }
        @Override public Batch toBatch() { return this; }
        @Override public InputPartition[] planInputPartitions() {
            try {
                JsonNode arr = new ObjectMapper().readTree(o.get("splits"));
                InputPartition[] out = new InputPartition[arr.size()];
                for (int i = 0; i < arr.size(); i++) {
                    JsonNode n = arr.get(i);
                    out[i] = new Split(i, n.get("file").asText(), n.get("start").asLong(), n.get("end").asLong());
                }
                return out;
            } catch (IOException e) { throw new UncheckedIOException(e); }
        }
        @Override public PartitionReaderFactory createReaderFactory() {
            return new Factory(o.get("host"), Integer.parseInt(o.getOrDefault("port", "3306")), o.get("user"),
                    o.get("password"), Long.parseLong(o.getOrDefault("server_id_base", "50000")),
                    !"pipelined".equals(o.getOrDefault("handoff", "lockstep")),
                    Integer.parseInt(o.getOrDefault("batch_rows", "4096")), o.get("stats_path"));
        }
    }

    static final class Split implements InputPartition {
        final int index; final String file; final long start, end;
        Split(int index, String file, long start, long end) { this.index = index; this.file = file; this.start = start; this.end = end; }
    }

    static final class Factory implements PartitionReaderFactory {
        final String host, user, password, statsPath; final int port, batchRows; final long serverIdBase; final boolean lockstep;
        Factory(String host, int port, String user, String password, long serverIdBase, boolean lockstep, int batchRows, String statsPath) {
            this.host = host; this.port = port; this.user = user; this.password = password; this.serverIdBase = serverIdBase;
            this.lockstep = lockstep; this.batchRows = batchRows; this.statsPath = statsPath;
        }
        @Override public PartitionReader<InternalRow> createReader(InputPartition p) { return new Reader(this, (Split) p); }
    }

    /** End-of-split marker / failure carrier on the handoff queue. */
    static final class End { final String failure; End(String f) { failure = f; } }

    static final class Reader implements PartitionReader<InternalRow> {
        static final UTF8String C = UTF8String.fromString("c"), U = UTF8String.fromString("u"), D = UTF8String.fromString("d");
        final Factory f; final Split s;
        final ArrayBlockingQueue<Object> q;
        final Semaphore go = new Semaphore(0);
        volatile boolean closed = false;
        Thread thread;
        BinaryLogClient client;
        List<InternalRow> batch = Collections.emptyList();
        int pos = 0; boolean finished = false; InternalRow current;
        // decoder-thread state
        final Map<Long, UTF8String> tables = new HashMap<>();
        final ArrayList<Object[]> txRows = new ArrayList<>();
        ArrayList<InternalRow> out = new ArrayList<>();
        UTF8String txid; UTF8String filePrefix;
        boolean sawFirst = false, done = false, inTx = false;
        final List<String> failures = Collections.synchronizedList(new ArrayList<>());
        long rows, events, txs, lastNext = -1, decoderCpuNs; double decodeSeconds;
        final long t0 = System.nanoTime();

        Reader(Factory f, Split s) {
            this.f = f; this.s = s;
            this.q = new ArrayBlockingQueue<>(f.lockstep ? 1 : 8);
            if (!f.lockstep) go.release(Integer.MAX_VALUE / 2);
            filePrefix = UTF8String.fromString(s.file + ":");
        }

        void start() {
            EventDeserializer d = new EventDeserializer();
            d.setCompatibilityMode(CompatibilityMode.DATE_AND_TIME_AS_LONG, CompatibilityMode.CHAR_AND_BINARY_AS_BYTE_ARRAY);
            client = new BinaryLogClient(f.host, f.port, f.user, f.password);
            client.setServerId(f.serverIdBase + s.index);
            client.setBinlogFilename(s.file);
            client.setBinlogPosition(s.start);
            client.setKeepAlive(false);
            client.setBlocking(false);
            client.setEventDeserializer(d);
            client.registerEventListener(this::onEvent);
            client.registerLifecycleListener(new BinaryLogClient.AbstractLifecycleListener() {
                @Override public void onCommunicationFailure(BinaryLogClient c, Exception ex) { failures.add("communication: " + ex); }
                @Override public void onEventDeserializationFailure(BinaryLogClient c, Exception ex) { failures.add("deserialization: " + ex); }
            });
            thread = new Thread(() -> {
                ThreadMXBean mx = ManagementFactory.getThreadMXBean();
                long cpu0 = mx.getCurrentThreadCpuTime();
                String fail = null;
                try {
                    if (f.lockstep) go.acquire();
                    client.connect();
                } catch (Throwable e) { fail = "connect: " + e; }
                decoderCpuNs = mx.getCurrentThreadCpuTime() - cpu0;
                decodeSeconds = (System.nanoTime() - t0) / 1e9;
                if (closed) return;
                if (fail == null && !failures.isEmpty()) fail = String.join("; ", failures);
                if (fail == null && !sawFirst) fail = "no event received at " + s.file + ":" + s.start;
                if (fail == null && !done) fail = "dump ended before the split end " + s.end + " (last event ended at " + lastNext + ")";
                if (fail == null && lastNext != s.end) fail = "last event ends at " + lastNext + ", not exactly at the split end " + s.end;
                if (fail == null && inTx) fail = "split ends inside a transaction (" + txRows.size() + " buffered rows)";
                try {
                    if (!out.isEmpty()) { q.put(out); out = new ArrayList<>(); if (f.lockstep) go.acquire(); }
                    q.put(new End(fail));
                } catch (InterruptedException ignored) { }
            }, "binlog-split-" + s.index);
            thread.setDaemon(true);
            thread.start();
        }

        void fail(String msg) { failures.add(msg); stop(); }
        void stop() { done = done || false; try { client.disconnect(); } catch (IOException ignored) { } }

        void onEvent(Event ev) {
            if (closed) { stop(); return; }
            if (!failures.isEmpty()) return;
            EventHeaderV4 h = ev.getHeader();
            EventType t = h.getEventType();
            long next = h.getNextPosition();
            if ((t == EventType.ROTATE || t == EventType.FORMAT_DESCRIPTION) && next == 0) return;  // fake events of the dump
            events++;
            if (!sawFirst) {
                sawFirst = true;
                if (!(t == EventType.MARIADB_GTID || t == EventType.GTID) || h.getPosition() != s.start) {
                    fail("first real event is " + t + "@" + h.getPosition() + ", expected a GTID event at " + s.start);
                    return;
                }
            }
            lastNext = next;
            switch (t) {
                case MARIADB_GTID: {
                    if (inTx) { fail("GTID at " + h.getPosition() + " inside an open transaction"); return; }
                    MariadbGtidEventData g = ev.getData();
                    txid = UTF8String.fromString(g.getDomainId() + "-" + h.getServerId() + "-" + g.getSequence());
                    inTx = true; txRows.clear();
                    break;
                }
                case TABLE_MAP: {
                    TableMapEventData tm = ev.getData();
                    tables.put(tm.getTableId(), UTF8String.fromString(tm.getDatabase() + "." + tm.getTable()));
                    break;
                }
                case WRITE_ROWS: case EXT_WRITE_ROWS: {
                    WriteRowsEventData d = ev.getData();
                    UTF8String tbl = table(d.getTableId(), h); if (tbl == null) return;
                    UTF8String p = position(next);
                    for (Serializable[] r : d.getRows()) txRows.add(new Object[]{tbl, C, p, null, json(r)});
                    break;
                }
                case UPDATE_ROWS: case EXT_UPDATE_ROWS: {
                    UpdateRowsEventData d = ev.getData();
                    UTF8String tbl = table(d.getTableId(), h); if (tbl == null) return;
                    UTF8String p = position(next);
                    for (Map.Entry<Serializable[], Serializable[]> r : d.getRows())
                        txRows.add(new Object[]{tbl, U, p, json(r.getKey()), json(r.getValue())});
                    break;
                }
                case DELETE_ROWS: case EXT_DELETE_ROWS: {
                    DeleteRowsEventData d = ev.getData();
                    UTF8String tbl = table(d.getTableId(), h); if (tbl == null) return;
                    UTF8String p = position(next);
                    for (Serializable[] r : d.getRows()) txRows.add(new Object[]{tbl, D, p, json(r), null});
                    break;
                }
                case XID: commit(next); break;
                case QUERY: {
                    String sql = ((QueryEventData) ev.getData()).getSql();
                    if (inTx && "COMMIT".equalsIgnoreCase(sql)) commit(next);
                    break;
                }
                case ROTATE:
                    if (next < s.end) { fail("real ROTATE inside the split at " + h.getPosition()); return; }
                    break;
                default:
            }
            if (next >= s.end) { done = true; stop(); return; }
            if (out.size() >= f.batchRows) handOff();
        }

        UTF8String table(long id, EventHeaderV4 h) {
            UTF8String t = tables.get(id);
            if (t == null) fail("rows event at " + h.getPosition() + " has no TABLE_MAP for table id " + id);
            if (!inTx) { fail("rows event at " + h.getPosition() + " outside a transaction"); return null; }
            return t;
        }

        UTF8String position(long next) { return UTF8String.concat(filePrefix, UTF8String.fromString(Long.toString(next))); }

        void commit(long commitPos) {
            int i = 0;
            for (Object[] r : txRows) {
                out.add(new GenericInternalRow(new Object[]{r[0], r[1], r[2], txid, commitPos, i++, r[3], r[4]}));
            }
            rows += txRows.size(); txs++;
            txRows.clear(); inTx = false;
        }

        void handOff() {
            try {
                q.put(out);
                out = new ArrayList<>(f.batchRows + 64);
                if (f.lockstep) go.acquire();
            } catch (InterruptedException e) { Thread.currentThread().interrupt(); fail("interrupted"); }
        }

        static UTF8String json(Serializable[] vals) {
            StringBuilder b = new StringBuilder(256).append('[');
            for (int i = 0; i < vals.length; i++) {
                if (i > 0) b.append(',');
                Object v = vals[i];
                if (v == null) { b.append("null"); continue; }
                String str = v instanceof byte[] ? new String((byte[]) v, StandardCharsets.UTF_8) : v.toString();
                b.append('"');
                for (int k = 0; k < str.length(); k++) {
                    char ch = str.charAt(k);
                    switch (ch) {
                        case '"': b.append("\\\""); break;
                        case '\\': b.append("\\\\"); break;
                        default:
                            if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch)); else b.append(ch);
                    }
                }
                b.append('"');
            }
            return UTF8String.fromString(b.append(']').toString());
        }

        @Override @SuppressWarnings("unchecked")
        public boolean next() throws IOException {
            if (thread == null) start();
            while (pos >= batch.size()) {
                if (finished) return false;
                Object o;
                try {
                    if (f.lockstep) go.release();
                    o = q.take();
                } catch (InterruptedException e) { Thread.currentThread().interrupt(); throw new IOException(e); }
                if (o instanceof End) {
                    finished = true;
                    End e = (End) o;
                    writeStats(e.failure);
                    if (e.failure != null)
                        throw new IllegalStateException("binlog split " + s.index + " " + s.file + ":[" + s.start + "," + s.end + "): " + e.failure);
                    return false;
                }
                batch = (List<InternalRow>) o; pos = 0;
            }
            current = batch.get(pos++);
            return true;
        }

        @Override public InternalRow get() { return current; }

        void writeStats(String failure) {
            if (f.statsPath == null) return;
            String line = String.format(Locale.ROOT,
                    "{\"split\":%d,\"file\":\"%s\",\"start\":%d,\"end\":%d,\"rows\":%d,\"txs\":%d,\"events\":%d,\"last_next\":%d,"
                            + "\"decode_s\":%.3f,\"decoder_cpu_s\":%.3f,\"server_id\":%d,\"thread\":\"%s\",\"failure\":%s}%n",
                    s.index, s.file, s.start, s.end, rows, txs, events, lastNext, decodeSeconds, decoderCpuNs / 1e9,
                    f.serverIdBase + s.index, Thread.currentThread().getName(),
                    failure == null ? "null" : "\"" + failure.replace("\\", "\\\\").replace("\"", "'") + "\"");
            try {
                Files.write(Paths.get(f.statsPath), line.getBytes(StandardCharsets.UTF_8),
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException ignored) { }
        }

        @Override public void close() {
            if (thread == null || finished) return;
            closed = true;
            go.release(Integer.MAX_VALUE / 4);
            q.clear();
            try { thread.join(100); } catch (InterruptedException ignored) { }
            if (thread.isAlive()) { try { client.disconnect(); } catch (IOException ignored) { } thread.interrupt(); }
        }
    }
}
