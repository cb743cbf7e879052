package cdclake.mysql;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.shyiko.mysql.binlog.BinaryLogClient;
import com.github.shyiko.mysql.binlog.event.*;
import com.github.shyiko.mysql.binlog.event.deserialization.*;
import com.github.shyiko.mysql.binlog.event.deserialization.EventDeserializer.CompatibilityMode;
import com.github.shyiko.mysql.binlog.io.ByteArrayInputStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.*;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.*;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.*;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.Charset;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.util.*;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.regex.Pattern;

/**
 * Spark DataSource V2 reader ({@code cdclake-binlog}) that decodes MariaDB binlog splits inside executor tasks.
 *
 * <p>Each split is a byte range of one binlog file holding whole transactions (planned by
 * {@code cdclake.sources.mysql.splits}). A task opens its own replication connection (server_id
 * {@code server_id_base + index}), buffers each transaction's row changes until its commit and emits them as
 * committed changes with {@code seq = commit ordinal * 10^10 + index} and canonical images (the values
 * {@code MySqlTypeMapper.canonical_from_binlog} gives on the driver path). It also emits control rows the
 * driver decides on: {@code query} (a statement that is not transaction control: it may be a DDL),
 * {@code mismatch} (a table map that does not fit the schema) and one {@code split} summary per split.
 *
 * <p>Options: host, port, user, password, server_id_base, splits (JSON list of {index, file, start, end,
 * head, gtid}), tables (JSON map table -> {version, floor, columns: [{name, kind, pad, charset, values}]}).
 */
public final class BinlogSplits implements TableProvider, DataSourceRegister {
    static final BigInteger SEQ_SPAN = BigInteger.TEN.pow(10);
    static final long OFFSET_SPAN = 1_000_000_000_000L;
    static final StructType SCHEMA = new StructType()
            .add("kind", DataTypes.StringType)
            .add("source_table", DataTypes.StringType)
            .add("op", DataTypes.StringType)
            .add("seq", DataTypes.createDecimalType(38, 0))
            .add("position", DataTypes.StringType)
            .add("txid", DataTypes.StringType)
            .add("commit_ts", DataTypes.TimestampType)
            .add("schema_version", DataTypes.LongType)
            .add("before", DataTypes.StringType)
            .add("after", DataTypes.StringType)
            .add("raw", DataTypes.StringType);

    @Override public String shortName() { return "cdclake-binlog"; }
    @Override public StructType inferSchema(CaseInsensitiveStringMap options) { return SCHEMA; }
    @Override public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SplitTable(properties);
    }

    static final class SplitTable implements Table, SupportsRead {
        final Map<String, String> props;
        SplitTable(Map<String, String> props) { this.props = props; }
        @Override public String name() { return "binlog_splits"; }
        @Override public StructType schema() { return SCHEMA; }
        @Override public Set<TableCapability> capabilities() { return EnumSet.of(TableCapability.BATCH_READ); }
        @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) { return () -> new SplitScan(options); }
    }

    static final class SplitScan implements Scan, Batch {
        final CaseInsensitiveStringMap o;
        SplitScan(CaseInsensitiveStringMap o) { this.o = o; }
        @Override public StructType readSchema() { return SCHEMA; }
        @Override public String description() { return "BinlogSplits"; }  // options hold the password
        @Override public Batch toBatch() { return this; }

        @Override public InputPartition[] planInputPartitions() {
            JsonNode arr = json(o.get("splits"));
            InputPartition[] out = new InputPartition[arr.size()];
            for (int i = 0; i < arr.size(); i++) {
                JsonNode n = arr.get(i);
                out[i] = new Split(n.get("index").asInt(), n.get("file").asText(), n.get("start").asLong(),
                        n.get("end").asLong(), n.path("head").asBoolean(false), n.path("gtid").asText(""));
            }
            return out;
        }

        @Override public PartitionReaderFactory createReaderFactory() {
            return new Factory(o.get("host"), Integer.parseInt(o.getOrDefault("port", "3306")), o.get("user"),
                    o.get("password"), Long.parseLong(o.get("server_id_base")), o.get("tables"),
                    o.get("mode"));
        }
    }

    static JsonNode json(String text) {
        try { return new ObjectMapper().readTree(text); } catch (IOException e) { throw new UncheckedIOException(e); }
    }

    static final class Split implements InputPartition {
        final int index; final String file; final long start, end; final boolean head; final String gtid;
        Split(int index, String file, long start, long end, boolean head, String gtid) {
            this.index = index; this.file = file; this.start = start; this.end = end; this.head = head; this.gtid = gtid;
        }
        String describe() { return "split " + index + " (" + file + " [" + start + ", " + end + "))"; }
    }

    static final class Factory implements PartitionReaderFactory {
        final String host, user, password, tables, mode; final int port; final long serverIdBase;
        Factory(String host, int port, String user, String password, long serverIdBase, String tables, String mode) {
            this.host = host; this.port = port; this.user = user; this.password = password;
            this.serverIdBase = serverIdBase; this.tables = tables; this.mode = mode;
        }
        @Override public PartitionReader<InternalRow> createReader(InputPartition p) { return new Reader(this, (Split) p); }
    }

    // ---- column specs and canonical values ---------------------------------------------------------------

    /** How one column's binlog value becomes its canonical value (kinds chosen on the driver, splits.py). */
    static final class ColumnSpec {
        final String name, kind; final int pad; final Charset charset; final String[] values;
        ColumnSpec(JsonNode n) {
            name = n.get("name").asText();
            kind = n.get("kind").asText();
            pad = n.path("pad").asInt(0);
            charset = n.hasNonNull("charset") ? Charset.forName(n.get("charset").asText()) : null;
            JsonNode v = n.path("values");
            values = new String[v.size()];
            for (int i = 0; i < v.size(); i++) values[i] = v.get(i).asText();
        }
    }

    static final class TableSpec {
        final String name; final long version, floor; final ColumnSpec[] columns; final UTF8String utf8Name;
        TableSpec(String name, JsonNode n) {
            this.name = name;
            utf8Name = UTF8String.fromString(name);
            version = n.get("version").asLong();
            floor = n.path("floor").asLong(-1);
            JsonNode cols = n.get("columns");
            columns = new ColumnSpec[cols.size()];
            for (int i = 0; i < cols.size(); i++) columns[i] = new ColumnSpec(cols.get(i));
        }
    }

    static final char[] HEX = "0123456789abcdef".toCharArray();

    static void hex(StringBuilder b, byte[] raw, int padTo) {
        for (byte x : raw) b.append(HEX[(x >> 4) & 15]).append(HEX[x & 15]);
        for (int i = raw.length; i < padTo; i++) b.append("00");
    }

    static void string(StringBuilder b, String s) {
        b.append('"');
        for (int k = 0; k < s.length(); k++) {
            char ch = s.charAt(k);
            switch (ch) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch)); else b.append(ch);
            }
        }
        b.append('"');
    }

    /** Appends the canonical JSON value of one binlog cell (see MySqlTypeMapper.canonical_from_binlog). */
    static void canonical(StringBuilder b, ColumnSpec c, Serializable v) {
        if (v == null) { b.append("null"); return; }
        switch (c.kind) {
            case "int": b.append(((Number) v).longValue()); return;
            case "uint8": b.append(((Number) v).longValue() & 0xFFL); return;
            case "uint16": b.append(((Number) v).longValue() & 0xFFFFL); return;
            case "uint24": b.append(((Number) v).longValue() & 0xFFFFFFL); return;
            case "uint32": b.append(((Number) v).longValue() & 0xFFFFFFFFL); return;
            case "uint64": b.append('"').append(Long.toUnsignedString(((Number) v).longValue())).append('"'); return;
            case "year": case "time": case "timestamp": b.append(((Number) v).longValue()); return;
            case "decimal": b.append('"').append(((BigDecimal) v).toPlainString()).append('"'); return;
            case "real": {
                double d = ((Number) v).doubleValue();  // a FLOAT's exact 32-bit value as a double
                b.append(Double.toString(d)); return;
            }
            case "date": case "datetime": b.append('"').append((String) v).append('"'); return;
            case "bit1": {
                byte[] raw = (byte[]) v;
                long bits = 0;
                for (byte x : raw) bits = (bits << 8) | (x & 0xFF);
                b.append(bits); return;
            }
            case "binary": case "bytes": b.append('"'); hex(b, (byte[]) v, c.pad); b.append('"'); return;
            case "enum": {
                int i = ((Number) v).intValue();
                string(b, i == 0 ? "" : c.values[i - 1]); return;
            }
            case "set": {
                long mask = ((Number) v).longValue();
                StringBuilder s = new StringBuilder();
                for (int i = 0; i < c.values.length; i++) {
                    if ((mask & (1L << i)) != 0) { if (s.length() > 0) s.append(','); s.append(c.values[i]); }
                }
                string(b, s.toString()); return;
            }
            case "text": {
                String s = v instanceof byte[] ? new String((byte[]) v, c.charset) : v.toString();
                string(b, s); return;
            }
            default: throw new IllegalStateException("column " + c.name + ": no canonical form for kind " + c.kind);
        }
    }

    static String image(TableSpec t, Serializable[] row) {
        StringBuilder b = new StringBuilder(64 + 24 * row.length).append('{');
        for (int i = 0; i < t.columns.length; i++) {
            if (i > 0) b.append(',');
            string(b, t.columns[i].name);
            b.append(':');
            canonical(b, t.columns[i], row[i]);
        }
        return b.append('}').toString();
    }

    // Temporal, YEAR and BIT cells read from their binary form as cdclake's canonical parts (exact, no time zone).
    static Serializable readBit(int meta, ByteArrayInputStream in) throws IOException {
        int length = (meta >> 8) * 8 + (meta & 0xFF);
        return in.read((length + 7) >> 3);
    }

    static long bigEndian(byte[] raw) {
        long v = 0;
        for (byte x : raw) v = (v << 8) | (x & 0xFF);
        return v;
    }

    static int fraction(int fsp, ByteArrayInputStream in) throws IOException {
        int bytes = (fsp + 1) / 2;
        if (bytes == 0) return 0;
        long v = bigEndian(in.read(bytes));
        return (int) (bytes == 1 ? v * 10000 : bytes == 2 ? v * 100 : v);
    }

    static String dateText(int y, int m, int d) {
        if (y == 0 || m == 0 || d == 0) return null;
        try { LocalDate.of(y, m, d); } catch (DateTimeException e) { return null; }
        return String.format(Locale.ROOT, "%04d-%02d-%02d", y, m, d);
    }

    static String datetimeText(int y, int mo, int d, int h, int mi, int s, int micros) {
        String date = dateText(y, mo, d);
        if (date == null || h > 23 || mi > 59 || s > 59) return null;
        return String.format(Locale.ROOT, "%s %02d:%02d:%02d.%06d", date, h, mi, s, micros);
    }

    static Serializable readDate(ByteArrayInputStream in) throws IOException {
        int v = in.readInteger(3);
        int day = v % 32; v >>>= 5;
        int month = v % 16;
        return dateText(v >> 4, month, day);
    }

    static Serializable readDatetime(ByteArrayInputStream in) throws IOException {
        long v = in.readLong(8);
        if (v == 0) return null;
        long date = v / 1000000, time = v % 1000000;
        return datetimeText((int) (date / 10000), (int) (date % 10000 / 100), (int) (date % 100),
                (int) (time / 10000), (int) (time % 10000 / 100), (int) (time % 100), 0);
    }

    static Serializable readDatetimeV2(int fsp, ByteArrayInputStream in) throws IOException {
        long v = bigEndian(in.read(5)) - 0x8000000000L;
        int micros = fraction(fsp, in);
        long ym = (v >> 22) & 0x1FFFF;
        return datetimeText((int) (ym / 13), (int) (ym % 13), (int) ((v >> 17) & 31), (int) ((v >> 12) & 31),
                (int) ((v >> 6) & 63), (int) (v & 63), micros);
    }

    static Serializable readTimestamp(ByteArrayInputStream in) throws IOException {
        long seconds = in.readLong(4);
        return seconds == 0 ? null : seconds * 1_000_000L;
    }

    static Serializable readTimestampV2(int fsp, ByteArrayInputStream in) throws IOException {
        long micros = bigEndian(in.read(4)) * 1_000_000L + fraction(fsp, in);
        return micros == 0 ? null : micros;  // the zero timestamp is stored as epoch 0
    }

    static Serializable readTime(ByteArrayInputStream in) throws IOException {
        long t = in.readInteger(3);  // as python-mysql-replication reads the old TIME (unsigned HHMMSS)
        return ((t / 10000 % 100) * 3600 + (t / 100 % 100) * 60 + t % 100) * 1_000_000L;
    }

    /** TIME2 as MySQL's my_time_packed_from_binary: the sign applies to the whole value, fraction included. */
    static Serializable readTimeV2(int fsp, ByteArrayInputStream in) throws IOException {
        long packed;
        if (fsp == 0) {
            packed = (bigEndian(in.read(3)) - 0x800000L) << 24;
        } else if (fsp <= 2) {
            long intpart = bigEndian(in.read(3)) - 0x800000L;
            long frac = in.read(1)[0] & 0xFF;
            if (intpart < 0 && frac != 0) { intpart++; frac -= 0x100; }
            packed = (intpart << 24) + frac * 10000;
        } else if (fsp <= 4) {
            long intpart = bigEndian(in.read(3)) - 0x800000L;
            long frac = bigEndian(in.read(2));
            if (intpart < 0 && frac != 0) { intpart++; frac -= 0x10000; }
            packed = (intpart << 24) + frac * 100;
        } else {
            packed = bigEndian(in.read(6)) - 0x800000000000L;
        }
        boolean negative = packed < 0;
        long abs = Math.abs(packed);
        long hms = abs >> 24;
        long micros = (((hms >> 12) % 1024) * 3600 + ((hms >> 6) % 64) * 60 + hms % 64) * 1_000_000L + abs % (1L << 24);
        return negative ? -micros : micros;
    }

    static Serializable readYear(ByteArrayInputStream in) throws IOException {
        int y = in.readInteger(1);
        return y == 0 ? 0L : 1900L + y;
    }

    /** Marks a cell type the library's own reading serves. */
    static final Serializable LIBRARY = new Serializable() { };

    /** Temporal, YEAR and BIT cells as cdclake's canonical parts; other types: {@link #LIBRARY}. */
    static Serializable cell(ColumnType type, int meta, ByteArrayInputStream in) throws IOException {
        switch (type) {
            case BIT: return readBit(meta, in);
            case DATE: return readDate(in);
            case DATETIME: return readDatetime(in);
            case DATETIME_V2: return readDatetimeV2(meta, in);
            case TIMESTAMP: return readTimestamp(in);
            case TIMESTAMP_V2: return readTimestampV2(meta, in);
            case TIME: return readTime(in);
            case TIME_V2: return readTimeV2(meta, in);
            case YEAR: return readYear(in);
            default: return LIBRARY;
        }
    }

    // One override per rows event type: each has its own deserializer class.
    static final class WriteRows extends WriteRowsEventDataDeserializer {
        WriteRows(Map<Long, TableMapEventData> maps) { super(maps); }
        @Override protected Serializable deserializeCell(ColumnType t, int meta, int length, ByteArrayInputStream in)
                throws IOException {
            Serializable v = cell(t, meta, in);
            return v != LIBRARY ? v : super.deserializeCell(t, meta, length, in);
        }
    }

    static final class UpdateRows extends UpdateRowsEventDataDeserializer {
        UpdateRows(Map<Long, TableMapEventData> maps) { super(maps); }
        @Override protected Serializable deserializeCell(ColumnType t, int meta, int length, ByteArrayInputStream in)
                throws IOException {
            Serializable v = cell(t, meta, in);
            return v != LIBRARY ? v : super.deserializeCell(t, meta, length, in);
        }
    }

    static final class DeleteRows extends DeleteRowsEventDataDeserializer {
        DeleteRows(Map<Long, TableMapEventData> maps) { super(maps); }
        @Override protected Serializable deserializeCell(ColumnType t, int meta, int length, ByteArrayInputStream in)
                throws IOException {
            Serializable v = cell(t, meta, in);
            return v != LIBRARY ? v : super.deserializeCell(t, meta, length, in);
        }
    }

    static EventDeserializer deserializer() {
        Map<Long, TableMapEventData> maps = new HashMap<>();
        Map<EventType, EventDataDeserializer> by = new IdentityHashMap<>();
        by.put(EventType.FORMAT_DESCRIPTION, new FormatDescriptionEventDataDeserializer());
        by.put(EventType.ROTATE, new RotateEventDataDeserializer());
        by.put(EventType.QUERY, new QueryEventDataDeserializer());
        by.put(EventType.TABLE_MAP, new TableMapEventDataDeserializer());
        by.put(EventType.XID, new XidEventDataDeserializer());
        by.put(EventType.MARIADB_GTID, new MariadbGtidEventDataDeserializer());
        by.put(EventType.GTID, new GtidEventDataDeserializer());
        by.put(EventType.WRITE_ROWS, new WriteRows(maps));
        by.put(EventType.UPDATE_ROWS, new UpdateRows(maps));
        by.put(EventType.DELETE_ROWS, new DeleteRows(maps));
        by.put(EventType.EXT_WRITE_ROWS, new WriteRows(maps).setMayContainExtraInformation(true));
        by.put(EventType.EXT_UPDATE_ROWS, new UpdateRows(maps).setMayContainExtraInformation(true));
        by.put(EventType.EXT_DELETE_ROWS, new DeleteRows(maps).setMayContainExtraInformation(true));
        EventDeserializer d = new EventDeserializer(new EventHeaderV4Deserializer(), new NullEventDataDeserializer(), by, maps);
        d.setCompatibilityMode(CompatibilityMode.CHAR_AND_BINARY_AS_BYTE_ARRAY);
        return d;
    }

    // ---- one split --------------------------------------------------------------------------------------

    static final UTF8String CHANGE = UTF8String.fromString("change"), QUERY = UTF8String.fromString("query"),
            MISMATCH = UTF8String.fromString("mismatch"), SPLIT = UTF8String.fromString("split");
    static final UTF8String C = UTF8String.fromString("c"), U = UTF8String.fromString("u"), D = UTF8String.fromString("d");
    static final Pattern TXN_CONTROL = Pattern.compile(
            "^\\s*(BEGIN|COMMIT|ROLLBACK|XA\\s|SAVEPOINT|ROLLBACK\\s+TO|RELEASE\\s+SAVEPOINT)", Pattern.CASE_INSENSITIVE);
    static final int FL_STANDALONE = 1;
    static final int BATCH_ROWS = 4096;

    /** End of a split on the hand-off queue, with the failure if any. */
    static final class End { final String failure; End(String f) { failure = f; } }

    static final class Pending {
        final TableSpec table; final UTF8String op; final String before, after;
        Pending(TableSpec table, UTF8String op, String before, String after) {
            this.table = table; this.op = op; this.before = before; this.after = after;
        }
    }

    /**
     * Decodes one split on a thread of its own (the library pushes events to a listener) and hands rows to the
     * task in batches; the decoder waits while the task consumes a batch, so a task uses about one core.
     */
    static final class Reader implements PartitionReader<InternalRow> {
        final Factory f; final Split s; final long fileSeq;
        final Map<String, TableSpec> specs = new HashMap<>();
        final ArrayBlockingQueue<Object> queue = new ArrayBlockingQueue<>(2);
        final List<String> failures = Collections.synchronizedList(new ArrayList<>());
        volatile boolean closed;
        Thread thread;
        BinaryLogClient client;
        List<InternalRow> batch = Collections.emptyList();
        int at; boolean finished; InternalRow current;
        // decoder state
        final Map<Long, TableSpec> byId = new HashMap<>();
        final Set<String> mismatched = new HashSet<>();
        final ArrayList<Pending> tx = new ArrayList<>();
        final TreeMap<Long, String> domains = new TreeMap<>();
        ArrayList<InternalRow> out = new ArrayList<>();
        String txid, pendingGtid;
        long groupStart = -1;
        boolean inTx, inGroup, sawFirst, done;
        long lastNext = -1, rows, transactions, rolledBack;
        final Map<String, Long> rowsByTable = new TreeMap<>();

        final boolean changes, controls;  // what this pass emits (mode: changes | controls | all)

        Reader(Factory f, Split s) {
            this.f = f; this.s = s;
            controls = "controls".equals(f.mode);
            changes = !controls;
            fileSeq = Long.parseLong(s.file.substring(s.file.lastIndexOf('.') + 1));
            JsonNode tables = json(f.tables);
            for (Iterator<Map.Entry<String, JsonNode>> it = tables.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                specs.put(e.getKey(), new TableSpec(e.getKey(), e.getValue()));
            }
            for (String part : s.gtid.split(",")) {
                part = part.trim();
                if (!part.isEmpty()) domains.put(Long.parseLong(part.substring(0, part.indexOf('-'))), part);
            }
        }

        long ordinal(long pos) { return fileSeq * OFFSET_SPAN + pos; }

        String gtidText() { return String.join(",", domains.values()); }

        UTF8String positionText(long pos) {
            String g = gtidText();
            return UTF8String.fromString(s.file + ":" + pos + (g.isEmpty() ? "" : " (gtid " + g + ")"));
        }

        void start() {
            client = new BinaryLogClient(f.host, f.port, f.user, f.password);
            client.setServerId(f.serverIdBase + s.index);
            client.setBinlogFilename(s.file);
            client.setBinlogPosition(s.start);
            client.setKeepAlive(false);
            client.setBlocking(false);
            client.setEventDeserializer(deserializer());
            client.registerEventListener(this::onEvent);
            client.registerLifecycleListener(new BinaryLogClient.AbstractLifecycleListener() {
                @Override public void onCommunicationFailure(BinaryLogClient c, Exception ex) { failures.add("communication: " + ex); }
                @Override public void onEventDeserializationFailure(BinaryLogClient c, Exception ex) { failures.add("decoding: " + ex); }
            });
            thread = new Thread(this::run, "cdclake-binlog-split-" + s.index);
            thread.setDaemon(true);
            thread.start();
        }

        void run() {
            String fail = null;
            try {
                client.connect();
            } catch (Throwable e) {
                fail = "cannot read the binlog: " + e;
            }
            if (closed) return;
            if (fail == null && !failures.isEmpty()) fail = String.join("; ", failures);
            if (fail == null && !s.head && !sawFirst) fail = "no event was received at " + s.file + ":" + s.start;
            if (fail == null && !done) fail = "the binlog ended at " + lastNext + " before the split's end " + s.end;
            if (fail == null && lastNext != s.end) fail = "the last event ends at " + lastNext + ", not at the split's end";
            if (fail == null && inTx) fail = "the split ends inside a transaction (" + txid + ")";
            try {
                if (fail == null && controls) out.add(summary());
                if (!out.isEmpty()) queue.put(out);
                queue.put(new End(fail));
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }

        InternalRow summary() {
            StringBuilder b = new StringBuilder("{\"index\":").append(s.index).append(",\"gtid_after\":");
            string(b, gtidText());
            b.append(",\"rows\":").append(rows).append(",\"transactions\":").append(transactions)
                    .append(",\"rolled_back\":").append(rolledBack).append(",\"rows_by_table\":{");
            boolean first = true;
            for (Map.Entry<String, Long> e : rowsByTable.entrySet()) {
                if (!first) b.append(',');
                first = false;
                string(b, e.getKey());
                b.append(':').append(e.getValue());
            }
            b.append("}}");
            return new GenericInternalRow(new Object[]{SPLIT, null, null, seq(ordinal(s.end), 0), null, null, null, null,
                    null, null, UTF8String.fromString(b.toString())});
        }

        static org.apache.spark.sql.types.Decimal seq(long ordinal, long index) {
            BigInteger v = BigInteger.valueOf(ordinal).multiply(SEQ_SPAN).add(BigInteger.valueOf(index));
            return org.apache.spark.sql.types.Decimal.apply(new BigDecimal(v), 38, 0);
        }

        void fail(String message) {
            failures.add(message);
            stop();
        }

        void stop() {
            try { client.disconnect(); } catch (IOException ignored) { }
        }

        void onEvent(Event ev) {
            if (closed) { stop(); return; }
            if (!failures.isEmpty() || done) return;
            try {
                handle(ev);
            } catch (RuntimeException e) {  // e.g. a value that does not fit the schema history: the task fails
                fail("at " + s.file + ":" + ((EventHeaderV4) ev.getHeader()).getPosition() + ": " + e);
            }
        }

        void handle(Event ev) {
            EventHeaderV4 h = ev.getHeader();
            EventType t = h.getEventType();
            long next = h.getNextPosition();
            if ((t == EventType.ROTATE || t == EventType.FORMAT_DESCRIPTION) && next == 0) return;  // the dump's own
            if (t == EventType.HEARTBEAT) return;
            if (t == null || t == EventType.UNKNOWN || t == EventType.INCIDENT || t == EventType.TRANSACTION_PAYLOAD
                    || t == EventType.PARTIAL_UPDATE_ROWS_EVENT) {
                // e.g. MariaDB's compressed events (log_bin_compress): never skipped in silence
                fail("an event of type " + t + " at " + h.getPosition() + " that the split reader cannot decode");
                return;
            }
            if (!sawFirst) {
                boolean groupStarts = t == EventType.MARIADB_GTID;
                if (!groupStarts && s.head) {
                    lastNext = next;
                    if (next >= s.end) { done = true; stop(); }
                    return;  // the file's header events
                }
                sawFirst = true;
                if (!groupStarts || (!s.head && h.getPosition() != s.start)) {
                    fail("the first event is " + t + " at " + h.getPosition() + ", not a transaction's GTID event at "
                            + s.start + ": the split does not start on a transaction boundary");
                    return;
                }
            }
            lastNext = next;
            switch (t) {
                case MARIADB_GTID: {
                    if (inTx) { fail("a GTID event at " + h.getPosition() + " inside transaction " + txid); return; }
                    MariadbGtidEventData g = ev.getData();
                    pendingGtid = g.getDomainId() + "-" + g.getServerId() + "-" + g.getSequence();
                    txid = pendingGtid;
                    groupStart = h.getPosition();
                    inGroup = (g.getFlags() & FL_STANDALONE) == 0;
                    if (inGroup) { inTx = true; tx.clear(); }
                    break;
                }
                case TABLE_MAP: {
                    TableMapEventData tm = ev.getData();
                    String name = tm.getDatabase() + "." + tm.getTable();
                    TableSpec spec = specs.get(name);
                    if (spec == null || mismatched.contains(name) || ordinal(next) <= spec.floor) {
                        byId.remove(tm.getTableId());
                        break;
                    }
                    if (tm.getColumnTypes().length != spec.columns.length) {
                        mismatched.add(name);
                        byId.remove(tm.getTableId());
                        control(MISMATCH, name, h, next, tm.getColumnTypes().length + " columns");
                        break;
                    }
                    byId.put(tm.getTableId(), spec);
                    break;
                }
                case WRITE_ROWS: case EXT_WRITE_ROWS: {
                    WriteRowsEventData d = ev.getData();
                    TableSpec spec = rowsOf(d.getTableId(), h, next);
                    if (spec != null) for (Serializable[] r : d.getRows()) tx.add(new Pending(spec, C, null, changes ? image(spec, r) : null));
                    break;
                }
                case UPDATE_ROWS: case EXT_UPDATE_ROWS: {
                    UpdateRowsEventData d = ev.getData();
                    TableSpec spec = rowsOf(d.getTableId(), h, next);
                    if (spec != null) for (Map.Entry<Serializable[], Serializable[]> r : d.getRows())
                        tx.add(changes ? new Pending(spec, U, image(spec, r.getKey()), image(spec, r.getValue()))
                                : new Pending(spec, U, null, null));
                    break;
                }
                case DELETE_ROWS: case EXT_DELETE_ROWS: {
                    DeleteRowsEventData d = ev.getData();
                    TableSpec spec = rowsOf(d.getTableId(), h, next);
                    if (spec != null) for (Serializable[] r : d.getRows()) tx.add(new Pending(spec, D, changes ? image(spec, r) : null, null));
                    break;
                }
                case XID: commit(next, h.getTimestamp()); break;
                case QUERY: query(ev, h, next); break;
                case ROTATE:
                    if (next < s.end) { fail("a ROTATE event at " + h.getPosition() + " inside the split"); return; }
                    break;
                default:
            }
            if (next >= s.end) {
                done = true;
                stop();
                return;
            }
            if (out.size() >= BATCH_ROWS) handOff();
        }

        TableSpec rowsOf(long tableId, EventHeaderV4 h, long next) {
            TableSpec spec = byId.get(tableId);
            if (spec == null || ordinal(next) <= spec.floor) return null;
            if (!inTx) {  // a change outside BEGIN..COMMIT (as the driver path: its own transaction)
                inTx = true;
                txid = s.file + ":" + next;
                tx.clear();
            }
            return spec;
        }

        void query(Event ev, EventHeaderV4 h, long next) {
            QueryEventData q = ev.getData();
            String sql = q.getSql();
            String head = sql.stripLeading().toUpperCase(Locale.ROOT);
            if (head.startsWith("BEGIN")) {
                if (!inTx) { inTx = true; tx.clear(); if (txid == null) txid = s.file + ":" + next; }
                return;
            }
            if (head.startsWith("COMMIT")) { commit(next, h.getTimestamp()); return; }
            if (head.startsWith("ROLLBACK") && !head.startsWith("ROLLBACK TO")) {
                if (!tx.isEmpty() || inTx) rolledBack++;
                tx.clear(); inTx = false; txid = null; pendingGtid = null;
                return;
            }
            if (TXN_CONTROL.matcher(sql).find()) return;
            // A statement the driver must judge (DDL...): reported with the GTID state before its group.
            String before = gtidText();
            boolean grouped = inGroup && inTx;
            if (!grouped) commitGtid();
            StringBuilder raw = new StringBuilder("{\"group_start\":").append(groupStart < 0 ? h.getPosition() : groupStart)
                    .append(",\"gtid_before\":");
            string(raw, before);
            raw.append(",\"in_group\":").append(grouped).append('}');
            if (controls) out.add(new GenericInternalRow(new Object[]{QUERY, null, null, seq(ordinal(next), 0),
                    UTF8String.fromString(s.file + ":" + next), txid == null ? null : UTF8String.fromString(txid),
                    h.getTimestamp() * 1000L, null, q.getDatabase() == null ? null : UTF8String.fromString(q.getDatabase()),
                    UTF8String.fromString(sql), UTF8String.fromString(raw.toString())}));
            if (!grouped) { txid = null; groupStart = -1; }
        }

        void control(UTF8String kind, String table, EventHeaderV4 h, long next, String detail) {
            if (!controls) {  // the changes pass reads only up to the first statement or misfit: none is expected
                throw new IllegalStateException(kind + " at " + s.file + ":" + next + ": " + detail);
            }
            StringBuilder raw = new StringBuilder("{\"group_start\":").append(groupStart < 0 ? h.getPosition() : groupStart)
                    .append(",\"gtid_before\":");
            string(raw, gtidText());
            raw.append(",\"detail\":");
            string(raw, detail);
            raw.append('}');
            out.add(new GenericInternalRow(new Object[]{kind, UTF8String.fromString(table), null, seq(ordinal(next), 0),
                    UTF8String.fromString(s.file + ":" + next), txid == null ? null : UTF8String.fromString(txid),
                    h.getTimestamp() * 1000L, null, null, null, UTF8String.fromString(raw.toString())}));
        }

        void commitGtid() {
            if (pendingGtid == null) return;
            domains.put(Long.parseLong(pendingGtid.substring(0, pendingGtid.indexOf('-'))), pendingGtid);
            pendingGtid = null;
        }

        void commit(long commitPos, long timestampMs) {
            commitGtid();
            long ordinal = ordinal(commitPos);
            UTF8String position = positionText(commitPos);
            UTF8String id = UTF8String.fromString(txid != null ? txid : position.toString());
            long index = 0, kept = 0;
            for (Pending p : tx) {
                index++;
                if (ordinal <= p.table.floor) continue;
                kept++;
                if (changes) out.add(new GenericInternalRow(new Object[]{CHANGE, p.table.utf8Name, p.op, seq(ordinal, index), position,
                        id, timestampMs * 1000L, p.table.version,
                        p.before == null ? null : UTF8String.fromString(p.before),
                        p.after == null ? null : UTF8String.fromString(p.after), null}));
                rowsByTable.merge(p.table.name, 1L, Long::sum);
            }
            if (kept > 0) { transactions++; rows += kept; }
            tx.clear(); inTx = false; txid = null; groupStart = -1;
        }

        void handOff() {
            try {
                queue.put(out);
                out = new ArrayList<>(BATCH_ROWS + 64);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }

        @Override @SuppressWarnings("unchecked")
        public boolean next() throws IOException {
            if (thread == null) start();
            while (at >= batch.size()) {
                if (finished) return false;
                Object o;
                try { o = queue.take(); } catch (InterruptedException e) { Thread.currentThread().interrupt(); throw new IOException(e); }
                if (o instanceof End) {
                    finished = true;
                    String failure = ((End) o).failure;
                    if (failure != null) throw new IllegalStateException("cdclake binlog " + s.describe() + ": " + failure);
                    return false;
                }
                batch = (List<InternalRow>) o;
                at = 0;
            }
            current = batch.get(at++);
            return true;
        }

        @Override public InternalRow get() { return current; }

        @Override public void close() {
            if (thread == null || finished) return;
            closed = true;
            queue.clear();
            stop();
            thread.interrupt();
        }
    }
}
