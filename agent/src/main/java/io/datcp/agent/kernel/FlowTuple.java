package io.datcp.agent.kernel;

import com.google.common.net.InetAddresses;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;

/**
 * A flow's 4-tuple as the sending socket sees it: the kernel's key (struct datcp_flow_key)
 * within the agent's network namespace, which libdatcp adds to every key. Addresses are IPv6,
 * IPv4 as IPv4-mapped (::ffff:a.b.c.d), kept as two longs each so the tuple hashes and
 * compares cheaply.
 */
public record FlowTuple(long srcHi, long srcLo, int srcPort, long dstHi, long dstLo,
    int dstPort) {

  /**
   * From address literals (never resolved: a host name is refused) and ports in 1..65535.
   *
   * @throws IllegalArgumentException naming the bad part
   */
  public static FlowTuple of(String srcAddress, int srcPort, String dstAddress, int dstPort) {
    byte[] s = literal(srcAddress, "source_address");
    byte[] d = literal(dstAddress, "destination_address");
    checkPort(srcPort, "source_port");
    checkPort(dstPort, "destination_port");
    ByteBuffer sb = ByteBuffer.wrap(s);
    ByteBuffer db = ByteBuffer.wrap(d);
    return new FlowTuple(sb.getLong(), sb.getLong(), srcPort, db.getLong(), db.getLong(),
        dstPort);
  }

  /** The 16 bytes of the source address, network order. */
  public byte[] srcBytes() {
    return ByteBuffer.allocate(16).putLong(srcHi).putLong(srcLo).array();
  }

  /** The 16 bytes of the destination address, network order. */
  public byte[] dstBytes() {
    return ByteBuffer.allocate(16).putLong(dstHi).putLong(dstLo).array();
  }

  /** "10.0.0.1:13562" or "[fe80::1]:13562". */
  public String source() {
    return endpoint(srcBytes(), srcPort);
  }

  public String destination() {
    return endpoint(dstBytes(), dstPort);
  }

  @Override
  public String toString() {
    return source() + "->" + destination();
  }

  private static String endpoint(byte[] a, int port) {
    InetAddress addr = toAddress(a);
    return addr instanceof Inet4Address ? addr.getHostAddress() + ":" + port
        : "[" + InetAddresses.toAddrString(addr) + "]:" + port;
  }

  private static InetAddress toAddress(byte[] a) {
    boolean mapped = true;
    for (int i = 0; i < 10; i++) {
      mapped &= a[i] == 0;
    }
    mapped &= a[10] == (byte) 0xff && a[11] == (byte) 0xff;
    byte[] raw = mapped ? new byte[] {a[12], a[13], a[14], a[15]} : a;
    try {
      return InetAddress.getByAddress(raw); // raw bytes: never a name lookup
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] literal(String text, String field) {
    if (text == null || text.isEmpty() || !InetAddresses.isInetAddress(text)) {
      throw new IllegalArgumentException(field + ": '" + text
          + "' is not an IPv4 or IPv6 address literal");
    }
    byte[] raw = InetAddresses.forString(text).getAddress();
    if (raw.length == 16) {
      return raw;
    }
    byte[] mapped = new byte[16];
    mapped[10] = (byte) 0xff;
    mapped[11] = (byte) 0xff;
    System.arraycopy(raw, 0, mapped, 12, 4);
    return mapped;
  }

  private static void checkPort(int port, String field) {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException(field + ": " + port + " is not in 1..65535");
    }
  }
}
