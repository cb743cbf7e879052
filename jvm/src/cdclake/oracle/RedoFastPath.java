package cdclake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Decodes the common shapes of LogMiner INSERT / UPDATE / DELETE statements in the JVM, giving
 * exactly the canonical JSON images of cdclake's Python decoder (cdclake.sources.oracle.decode).
 *
 * <p>It is a fast path, not a second parser: it accepts only the statement and literal forms
 * LogMiner prints by default ({@code 'text'}, {@code NULL}, plain numbers, the standard
 * {@code TO_DATE} and {@code TO_TIMESTAMP}) for tables whose every column is a number, date,
 * timestamp without time zone or short text. Anything else (other functions, {@code ||}, aliases,
 * ROWID conditions, unusual whitespace, a value a fast path would not take, an unknown column)
 * returns null and the row goes to the Python decoder, which is the reference and reports errors.
 *
 * <p>Plan (JSON): {@code {"OWNER.TABLE": [[from_idx, version, [[name, kind], ...] or null], ...]}},
 * versions sorted by {@code from_idx}; a row at window index {@code idx} uses the last version with
 * {@code from_idx < idx}. Kinds: {@code int}, {@code num}, {@code plain}, {@code date},
 * {@code ts6}, {@code ts9}, {@code text}.
 */
public final class RedoFastPath implements UDF4<String, String, Long, Integer, Row> {
  private static final long serialVersionUID = 1L;

  /** The struct the UDF returns (null when the row is left to the Python decoder). */
  public static final StructType RESULT = new StructType()
      .add("op", DataTypes.StringType)
      .add("before", DataTypes.StringType)
      .add("after", DataTypes.StringType)
      .add("version", DataTypes.LongType);

  static final int INT = 0, NUM = 1, PLAIN = 2, DATE = 3, TS6 = 4, TS9 = 5, TEXT = 6;
  private static final String UNAVAILABLE_KEY = "__unavailable";

  private final Map<String, Version[]> tables = new HashMap<>();

  static final class Version implements Serializable {
    private static final long serialVersionUID = 1L;
    final long fromIdx;
    final long version;
    final Map<String, Integer> kinds; // null: not decodable here (dropped table, other types)
    final String[] names;

    Version(long fromIdx, long version, Map<String, Integer> kinds, String[] names) {
      this.fromIdx = fromIdx;
      this.version = version;
      this.kinds = kinds;
      this.names = names;
    }
  }

  /** Thrown when a statement is outside the fast path: the Python decoder takes the row. */
  static final class Fallback extends Exception {
    private static final long serialVersionUID = 1L;
    static final Fallback INSTANCE = new Fallback();

    private Fallback() {
      super(null, null, false, false);
    }
  }

  public RedoFastPath(String planJson) throws IOException {
    JsonNode plan = new ObjectMapper().readTree(planJson);
    Iterator<Map.Entry<String, JsonNode>> it = plan.properties().iterator();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      List<Version> versions = new ArrayList<>();
      for (JsonNode v : e.getValue()) {
        JsonNode cols = v.get(2);
        Map<String, Integer> kinds = null;
        String[] names = null;
        if (cols != null && !cols.isNull()) {
          kinds = new HashMap<>();
          names = new String[cols.size()];
          int i = 0;
          for (JsonNode c : cols) {
            names[i++] = c.get(0).asText();
            kinds.put(c.get(0).asText(), kind(c.get(1).asText()));
          }
        }
        versions.add(new Version(v.get(0).asLong(), v.get(1).asLong(), kinds, names));
      }
      tables.put(e.getKey(), versions.toArray(new Version[0]));
    }
  }

  private static int kind(String name) {
    switch (name) {
      case "int": return INT;
      case "num": return NUM;
      case "plain": return PLAIN;
      case "date": return DATE;
      case "ts6": return TS6;
      case "ts9": return TS9;
      case "text": return TEXT;
      default: throw new IllegalArgumentException("unknown column kind " + name);
    }
  }

  /** Registers a UDF named {@code name} over {@code planJson} in {@code spark}. */
  public static void register(SparkSession spark, String name, String planJson) throws IOException {
    spark.udf().register(name, new RedoFastPath(planJson), RESULT);
  }

  @Override
  public Row call(String sql, String table, Long idx, Integer code) {
    if (sql == null || table == null || idx == null || code == null) {
      return null;
    }
    Version[] versions = tables.get(table);
    if (versions == null) {
      return null;
    }
    Version found = null;
    for (Version v : versions) {
      if (v.fromIdx < idx) {
        found = v;
      } else {
        break;
      }
    }
    if (found == null || found.kinds == null) {
      return null;
    }
    try {
      return new Statement(sql, found).decode();
    } catch (Fallback f) {
      return null;
    }
  }

  /** One statement: a cursor over its text. */
  static final class Statement {
    private final String s;
    private final Version v;
    private int pos;
    private final int end;

    Statement(String sql, Version version) {
      String text = sql;
      int e = text.length();
      if (e > 0 && text.charAt(e - 1) == ';') {
        e--;
      }
      this.s = text;
      this.end = e;
      this.v = version;
    }

    Row decode() throws Fallback {
      if (s.startsWith("insert into ")) {
        pos = 12;
        name();
        return insert();
      }
      if (s.startsWith("update ")) {
        pos = 7;
        name();
        expect(" set ");
        LinkedHashMap<String, String> sets = new LinkedHashMap<>();
        items(sets, ", ");
        LinkedHashMap<String, String> where = where();
        LinkedHashMap<String, String> after = new LinkedHashMap<>(where);
        after.putAll(sets);
        return RowFactory.create("u", image(where, false), image(after, true), v.version);
      }
      if (s.startsWith("delete from ")) {
        pos = 12;
        name();
        return RowFactory.create("d", image(where(), false), null, v.version);
      }
      throw Fallback.INSTANCE;
    }

    private Row insert() throws Fallback {
      expect("(");
      List<String> cols = new ArrayList<>();
      do {
        cols.add(quoted());
      } while (comma());
      expect(") values (");
      List<String> vals = new ArrayList<>(cols.size());
      do {
        vals.add(value());
      } while (comma());
      expect(")");
      done();
      if (cols.size() != vals.size()) {
        throw Fallback.INSTANCE;
      }
      LinkedHashMap<String, String> after = new LinkedHashMap<>();
      for (int i = 0; i < cols.size(); i++) {
        after.put(cols.get(i), vals.get(i));
      }
      return RowFactory.create("c", null, image(after, false), v.version);
    }

    /** An optional {@code where} clause that ends the statement. */
    private LinkedHashMap<String, String> where() throws Fallback {
      LinkedHashMap<String, String> where = new LinkedHashMap<>();
      if (pos < end) {
        expect(" where ");
        items(where, " and ");
      }
      done();
      return where;
    }

    /** {@code "C" = v} or {@code "C" IS NULL}, separated by {@code sep}, up to the end or " where ". */
    private void items(Map<String, String> into, String sep) throws Fallback {
      while (true) {
        String col = quoted();
        String value;
        if (s.startsWith(" = ", pos)) {
          pos += 3;
          value = value();
        } else if (s.startsWith(" IS NULL", pos)) {
          pos += 8;
          value = null;
        } else {
          throw Fallback.INSTANCE;
        }
        into.put(col, value);
        if (pos < end && s.startsWith(sep, pos) && s.startsWith("\"", pos + sep.length())) {
          pos += sep.length();
          continue;
        }
        return;
      }
    }

    private void name() throws Fallback {
      quoted();
      expect(".");
      quoted();
    }

    private String quoted() throws Fallback {
      if (!peek('"')) {
        throw Fallback.INSTANCE;
      }
      int close = s.indexOf('"', pos + 1);
      if (close < 0 || close >= end) {
        throw Fallback.INSTANCE;
      }
      String out = s.substring(pos + 1, close);
      pos = close + 1;
      return out;
    }

    private static final String STD_DATE_SUFFIX = "', 'YYYY-MM-DD HH24:MI:SS')";

    /** A value as the Python parser gives it (null for NULL and ''). */
    private String value() throws Fallback {
      if (pos >= end) {
        throw Fallback.INSTANCE;
      }
      char c = s.charAt(pos);
      if (c == '\'') {
        return string();
      }
      if (s.startsWith("NULL", pos)) {
        pos += 4;
        return null;
      }
      if (s.startsWith("TO_DATE('", pos)) {
        int start = pos + 9;
        if (start + 19 > end || !s.startsWith(STD_DATE_SUFFIX, start + 19) || s.charAt(start + 10) != ' ') {
          throw Fallback.INSTANCE;
        }
        pos = start + 19 + STD_DATE_SUFFIX.length();
        return s.substring(start, start + 10) + "T" + s.substring(start + 11, start + 19);
      }
      if (s.startsWith("TO_TIMESTAMP('", pos)) {
        int start = pos + 14;
        int close = s.indexOf("')", start);
        if (close < 0 || close + 2 > end) {
          throw Fallback.INSTANCE;
        }
        String text = s.substring(start, close);
        if (!isPlainTimestamp(text)) {
          throw Fallback.INSTANCE;
        }
        pos = close + 2;
        if (text.endsWith(".")) {
          text = text.substring(0, text.length() - 1);
        }
        return text.substring(0, 10) + "T" + text.substring(11);
      }
      if (c == '-' || (c >= '0' && c <= '9')) {
        int start = pos;
        int p = c == '-' ? pos + 1 : pos;
        int digits = 0;
        while (p < end && Character.isDigit(s.charAt(p)) && s.charAt(p) < 128) {
          p++;
          digits++;
        }
        if (digits == 0) {
          throw Fallback.INSTANCE;
        }
        if (p < end && s.charAt(p) == '.') {
          p++;
          int frac = 0;
          while (p < end && s.charAt(p) >= '0' && s.charAt(p) <= '9') {
            p++;
            frac++;
          }
          if (frac == 0) {
            throw Fallback.INSTANCE;
          }
        }
        pos = p;
        return s.substring(start, p);
      }
      throw Fallback.INSTANCE;
    }

    private String string() throws Fallback {
      StringBuilder out = null;
      int p = pos + 1;
      int from = p;
      while (true) {
        int q = s.indexOf('\'', p);
        if (q < 0 || q >= end) {
          throw Fallback.INSTANCE;
        }
        if (q + 1 < end && s.charAt(q + 1) == '\'') {
          if (out == null) {
            out = new StringBuilder();
          }
          out.append(s, from, q + 1);
          p = q + 2;
          from = p;
          continue;
        }
        pos = q + 1;
        // A quote must end the value: what follows is structure, else the Python parser decides.
        if (pos < end) {
          char n = s.charAt(pos);
          if (n != ',' && n != ')' && n != ' ') {
            throw Fallback.INSTANCE;
          }
        }
        String text = out == null ? s.substring(from, q) : out.append(s, from, q).toString();
        return text.isEmpty() ? null : text;
      }
    }

    private boolean comma() {
      if (peek(',')) {
        pos++;
        return true;
      }
      return false;
    }

    private boolean peek(char c) {
      return pos < end && s.charAt(pos) == c;
    }

    private void expect(String text) throws Fallback {
      if (!s.startsWith(text, pos) || pos + text.length() > end) {
        throw Fallback.INSTANCE;
      }
      pos += text.length();
    }

    private void done() throws Fallback {
      if (pos != end) {
        throw Fallback.INSTANCE;
      }
    }

    /** The canonical JSON image (as orjson writes it), or Fallback. */
    private String image(Map<String, String> values, boolean missingIsUnavailable) throws Fallback {
      StringBuilder out = new StringBuilder(32 + values.size() * 24);
      out.append('{');
      boolean first = true;
      for (Map.Entry<String, String> e : values.entrySet()) {
        Integer kind = v.kinds.get(e.getKey());
        if (kind == null) {
          throw Fallback.INSTANCE; // not in this schema version: the Python decoder reports it
        }
        if (!first) {
          out.append(',');
        }
        first = false;
        json(out, e.getKey());
        out.append(':');
        String canonical = e.getValue() == null ? null : canonical(kind, e.getValue());
        if (canonical == null) {
          out.append("null");
        } else {
          json(out, canonical);
        }
      }
      if (missingIsUnavailable && values.size() < v.names.length) {
        if (!first) {
          out.append(',');
        }
        json(out, UNAVAILABLE_KEY);
        out.append(":[");
        boolean firstName = true;
        for (String name : v.names) {
          if (!values.containsKey(name)) {
            if (!firstName) {
              out.append(',');
            }
            firstName = false;
            json(out, name);
          }
        }
        out.append(']');
      }
      return out.append('}').toString();
    }
  }

  /** A value's canonical text for a column kind, exactly as the Python converters give it. */
  static String canonical(int kind, String value) throws Fallback {
    switch (kind) {
      case INT:
        if (isInteger(value)) {
          return value;
        }
        throw Fallback.INSTANCE;
      case NUM:
        if (isInteger(value) || isDecimal(value)) {
          return value;
        }
        throw Fallback.INSTANCE;
      case PLAIN: {
        // Oracle prints fractions without the leading zero (TM9): '.5' is 0.5.
        String p = value.startsWith(".") ? "0" + value
            : value.startsWith("-.") ? "-0" + value.substring(1) : value;
        if (isPlainNumber(p)) {
          return p;
        }
        throw Fallback.INSTANCE;
      }
      case DATE:
        if (value.length() == 19 && isDateTime(value)) {
          return value;
        }
        throw Fallback.INSTANCE;
      case TS6:
      case TS9:
        return timestamp(value, kind == TS6 ? 6 : 9);
      case TEXT:
        return value.isEmpty() ? null : value;
      default:
        throw Fallback.INSTANCE;
    }
  }

  private static boolean digit(char c) {
    return c >= '0' && c <= '9';
  }

  /** {@code -?[0-9]+} */
  static boolean isInteger(String v) {
    int i = v.startsWith("-") ? 1 : 0;
    if (i == v.length()) {
      return false;
    }
    for (; i < v.length(); i++) {
      if (!digit(v.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /** {@code -?[0-9]*\.[0-9]+}: what _number_text returns unchanged. */
  static boolean isDecimal(String v) {
    int dot = v.indexOf('.');
    if (dot < 0 || dot + 1 >= v.length() || v.charAt(dot + 1) == '-' || !isInteger(v.substring(dot + 1))) {
      return false;
    }
    String whole = v.substring(0, dot);
    return whole.isEmpty() || whole.equals("-") || isInteger(whole);
  }

  /** {@code 0|-?[1-9][0-9]*} or the same with a fraction not ending in 0: normalised already. */
  static boolean isPlainNumber(String v) {
    if (v.equals("0")) {
      return true;
    }
    String body = v.startsWith("-") ? v.substring(1) : v;
    int dot = body.indexOf('.');
    String whole = dot < 0 ? body : body.substring(0, dot);
    if (whole.isEmpty() || !isInteger(whole) || whole.startsWith("-")) {
      return false;
    }
    if (whole.length() > 1 && whole.charAt(0) == '0') {
      return false;
    }
    if (dot < 0) {
      return !whole.equals("0");
    }
    String frac = body.substring(dot + 1);
    return !frac.isEmpty() && isInteger(frac) && !frac.startsWith("-") && frac.charAt(frac.length() - 1) != '0';
  }

  /** {@code YYYY-MM-DDTHH:MM:SS} (19 characters, digits where digits go). */
  static boolean isDateTime(String v) {
    for (int i = 0; i < 19; i++) {
      char c = v.charAt(i);
      boolean ok;
      switch (i) {
        case 4: case 7: ok = c == '-'; break;
        case 10: ok = c == 'T'; break;
        case 13: case 16: ok = c == ':'; break;
        default: ok = digit(c);
      }
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  /** TO_TIMESTAMP's text: {@code YYYY-MM-DD HH:MM:SS} with an optional {@code .digits}. */
  static boolean isPlainTimestamp(String v) {
    if (v.length() < 19) {
      return false;
    }
    String t = v.substring(0, 10) + "T" + v.substring(11, 19);
    if (v.charAt(10) != ' ' || !isDateTime(t)) {
      return false;
    }
    if (v.length() == 19) {
      return true;
    }
    if (v.charAt(19) != '.') {
      return false;
    }
    for (int i = 20; i < v.length(); i++) {
      if (!digit(v.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  private static String timestamp(String v, int digits) throws Fallback {
    if (v.length() < 19 || !isDateTime(v)) {
      throw Fallback.INSTANCE;
    }
    String frac = "";
    if (v.length() > 19) {
      if (v.charAt(19) != '.') {
        throw Fallback.INSTANCE;
      }
      frac = v.substring(20);
      for (int i = 0; i < frac.length(); i++) {
        if (!digit(frac.charAt(i))) {
          throw Fallback.INSTANCE;
        }
      }
    }
    StringBuilder out = new StringBuilder(20 + digits).append(v, 0, 19).append('.');
    out.append(frac, 0, Math.min(frac.length(), digits));
    for (int i = frac.length(); i < digits; i++) {
      out.append('0');
    }
    return out.toString();
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** A JSON string as orjson writes it: short escapes, other controls as lowercase \\u00XX. */
  static void json(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        default:
          if (c < 0x20) {
            out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xf]);
          } else {
            out.append(c);
          }
      }
    }
    out.append('"');
  }
}
