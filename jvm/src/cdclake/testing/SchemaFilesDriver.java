package cdclake.testing;

import java.io.File;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.DriverPropertyInfo;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Properties;
import java.util.logging.Logger;

/**
 * The JDBC driver Spark reads the Db2 capture emulator's tables with (cdclake.testing.db2_emulator): SQLite's
 * own driver, on a connection that has every schema file of the emulated database attached under its schema's
 * name, so that Db2's two-part names ({@code "ASNCDC"."CDC_APP_T"}) resolve as they do on Db2.
 *
 * <p>URL: {@code jdbc:cdclake-schemas:/path/to/MAIN.db}; every {@code <SCHEMA>.db} beside it is attached.
 */
public final class SchemaFilesDriver implements Driver {
    public static final String PREFIX = "jdbc:cdclake-schemas:";

    static {
        try {
            DriverManager.registerDriver(new SchemaFilesDriver());
        } catch (SQLException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Override
    public boolean acceptsURL(String url) {
        return url != null && url.startsWith(PREFIX);
    }

    @Override
    public Connection connect(String url, Properties info) throws SQLException {
        if (!acceptsURL(url)) {
            return null;
        }
        try {
            Class.forName("org.sqlite.JDBC");
        } catch (ClassNotFoundException e) {
            throw new SQLException("org.xerial:sqlite-jdbc is not on the classpath (make setup fetches it)", e);
        }
        File main = new File(url.substring(PREFIX.length()));
        Connection conn = DriverManager.getConnection("jdbc:sqlite:" + main.getPath(), info);
        File[] files = main.getAbsoluteFile().getParentFile().listFiles((dir, name) -> name.endsWith(".db"));
        if (files != null) {
            Arrays.sort(files);
            try (Statement st = conn.createStatement()) {
                for (File f : files) {
                    if (f.getName().equals(main.getName())) {
                        continue;
                    }
                    String schema = f.getName().substring(0, f.getName().length() - 3);
                    st.execute("ATTACH DATABASE '" + f.getPath().replace("'", "''") + "' AS \""
                            + schema.replace("\"", "\"\"") + "\"");
                }
            }
        }
        return conn;
    }

    @Override
    public DriverPropertyInfo[] getPropertyInfo(String url, Properties info) {
        return new DriverPropertyInfo[0];
    }

    @Override
    public int getMajorVersion() {
        return 1;
    }

    @Override
    public int getMinorVersion() {
        return 0;
    }

    @Override
    public boolean jdbcCompliant() {
        return false;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }
}
