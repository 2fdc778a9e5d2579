// The YCSB binding bench/kv_cassandra_vs_ycsb.sh compares iolab with: YCSB 0.17.0 core
// and the DataStax Java driver 4.17 (Maven Central), with the statements of YCSB's own
// cassandra-cql binding (which is not on Maven Central). Built by that script.
package site.ycsb.db;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.*;
import site.ycsb.*;
import java.net.InetSocketAddress;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;

/** YCSB's cassandra-cql statements on the DataStax Java driver 4 (one shared session). */
public class IolabCassandra extends DB {
  private static CqlSession session;
  private static int refs = 0;
  private static PreparedStatement readAll, insert, delete, scanAll;
  private static final Map<Set<String>, PreparedStatement> UPDATES = new ConcurrentHashMap<>();
  private static ConsistencyLevel readCl, writeCl;
  private static int fieldcount;

  @Override
  public void init() throws DBException {
    synchronized (IolabCassandra.class) {
      refs++;
      if (session != null) return;
      Properties p = getProperties();
      String host = p.getProperty("hosts", "127.0.0.1");
      int port = Integer.parseInt(p.getProperty("port", "9042"));
      String ks = p.getProperty("cassandra.keyspace", "ycsb");
      fieldcount = Integer.parseInt(p.getProperty("fieldcount", "10"));
      readCl = DefaultConsistencyLevel.valueOf(p.getProperty("cassandra.readconsistencylevel", "ONE"));
      writeCl = DefaultConsistencyLevel.valueOf(p.getProperty("cassandra.writeconsistencylevel", "ONE"));
      // The schema only for a load (-p iolab.create=true): a run starts measuring at once.
      if (Boolean.parseBoolean(p.getProperty("iolab.create", "false"))) {
        CqlSession boot = CqlSession.builder().addContactPoint(new InetSocketAddress(host, port))
            .withLocalDatacenter("datacenter1").build();
        StringBuilder cols = new StringBuilder();
        for (int i = 0; i < fieldcount; i++) cols.append(", field").append(i).append(" varchar");
        boot.execute("CREATE KEYSPACE IF NOT EXISTS " + ks
            + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        boot.execute("CREATE TABLE IF NOT EXISTS " + ks + ".usertable (y_id varchar PRIMARY KEY" + cols + ")");
        boot.close();
      }
      session = CqlSession.builder().addContactPoint(new InetSocketAddress(host, port))
          .withLocalDatacenter("datacenter1").withKeyspace(ks).build();
      StringBuilder names = new StringBuilder(), marks = new StringBuilder();
      for (int i = 0; i < fieldcount; i++) { names.append(", field").append(i); marks.append(", ?"); }
      readAll = session.prepare("SELECT * FROM usertable WHERE y_id = ? LIMIT 1");
      insert = session.prepare("INSERT INTO usertable (y_id" + names + ") VALUES (?" + marks + ")");
      delete = session.prepare("DELETE FROM usertable WHERE y_id = ?");
      scanAll = session.prepare("SELECT * FROM usertable WHERE token(y_id) >= token(?) LIMIT ?");
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (IolabCassandra.class) {
      if (--refs == 0 && session != null) { session.close(); session = null; }
    }
  }

  private static void row(Row r, Map<String, ByteIterator> out) {
    for (ColumnDefinition c : r.getColumnDefinitions()) {
      String n = c.getName().asInternal();
      if (n.equals("y_id")) continue;
      String v = r.getString(n);
      out.put(n, v == null ? null : new StringByteIterator(v));
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      Row r = session.execute(readAll.bind(key).setConsistencyLevel(readCl)).one();
      if (r == null) return Status.NOT_FOUND;
      row(r, result);
      return Status.OK;
    } catch (Exception e) { e.printStackTrace(); return Status.ERROR; }
  }

  @Override
  public Status scan(String table, String start, int n, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      for (Row r : session.execute(scanAll.bind(start, n).setConsistencyLevel(readCl))) {
        HashMap<String, ByteIterator> m = new HashMap<>();
        row(r, m);
        result.add(m);
      }
      return Status.OK;
    } catch (Exception e) { e.printStackTrace(); return Status.ERROR; }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      Set<String> names = new TreeSet<>(values.keySet());
      PreparedStatement ps = UPDATES.computeIfAbsent(names, s -> {
        StringBuilder sb = new StringBuilder();
        for (String f : s) sb.append(sb.length() == 0 ? "" : ", ").append(f).append(" = ?");
        return session.prepare("UPDATE usertable SET " + sb + " WHERE y_id = ?");
      });
      Object[] v = new Object[names.size() + 1];
      int i = 0;
      for (String f : names) v[i++] = values.get(f).toString();
      v[i] = key;
      session.execute(ps.bind(v).setConsistencyLevel(writeCl));
      return Status.OK;
    } catch (Exception e) { e.printStackTrace(); return Status.ERROR; }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Object[] v = new Object[fieldcount + 1];
      v[0] = key;
      for (int i = 0; i < fieldcount; i++) {
        ByteIterator b = values.get("field" + i);
        v[i + 1] = b == null ? null : b.toString();
      }
      session.execute(insert.bind(v).setConsistencyLevel(writeCl));
      return Status.OK;
    } catch (Exception e) { e.printStackTrace(); return Status.ERROR; }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      session.execute(delete.bind(key).setConsistencyLevel(writeCl));
      return Status.OK;
    } catch (Exception e) { e.printStackTrace(); return Status.ERROR; }
  }
}
