package io.datcp.agent.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP relay to a target that can fall silent: from {@link #silence} on it forwards
 * nothing in either direction and closes nothing, as a peer killed with its container or host
 * (no FIN, no reset: its connections stay up, no byte comes back).
 */
public final class SilentRelay implements AutoCloseable {
  private final ServerSocket server;
  private final int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private volatile boolean silent;

  public SilentRelay(int targetPort) throws IOException {
    this.targetPort = targetPort;
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "silent-relay-accept");
    accept.setDaemon(true);
    accept.start();
  }

  public String target() {
    return "127.0.0.1:" + server.getLocalPort();
  }

  /** Forwards nothing from now on; connections stay open. */
  public void silence() {
    silent = true;
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket in = server.accept();
        Socket out = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        sockets.add(in);
        sockets.add(out);
        copy(in, out);
        copy(out, in);
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void copy(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16384];
      try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
        for (int n; (n = i.read(buf)) >= 0; ) {
          if (!silent) {
            o.write(buf, 0, n);
            o.flush();
          }
        }
      } catch (IOException e) {
        // closed
      }
    }, "silent-relay-copy");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
