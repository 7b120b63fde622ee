package io.datcp.agent.flows;

import io.datcp.agent.kernel.FlowTuple;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistration;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The flow table handed from one agent process to the next (graceful restart). Binary: a
 * version, then flows (registration and policy as protobuf) and connections' epoch counters.
 */
public record Snapshot(long nextFlowId, List<FlowState> flows, List<ConnState> connections) {
  private static final int MAGIC = 0x44415432; // "DAT2": flows carry their owner

  /** One tracked flow. */
  public record FlowState(long id, int epoch, FlowRegistration registration, Owner owner,
      FlowPolicy policy, long startUnixNanos, long startMonoNanos, boolean ended, boolean finished,
      boolean inKernel) {}

  /** One connection's epoch counter. */
  public record ConnState(FlowTuple tuple, int lastEpoch) {}

  /** Writes atomically (temporary file, then rename). */
  public void writeTo(Path file) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (OutputStream os = Files.newOutputStream(tmp);
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(os))) {
      out.writeInt(MAGIC);
      out.writeLong(nextFlowId);
      out.writeInt(flows.size());
      for (FlowState f : flows) {
        out.writeLong(f.id());
        out.writeInt(f.epoch());
        f.registration().writeDelimitedTo(out);
        out.writeInt(f.owner().uid());
        out.writeInt(f.owner().pid());
        f.policy().writeDelimitedTo(out);
        out.writeLong(f.startUnixNanos());
        out.writeLong(f.startMonoNanos());
        out.writeBoolean(f.ended());
        out.writeBoolean(f.finished());
        out.writeBoolean(f.inKernel());
      }
      out.writeInt(connections.size());
      for (ConnState c : connections) {
        FlowTuple t = c.tuple();
        out.writeLong(t.srcHi());
        out.writeLong(t.srcLo());
        out.writeInt(t.srcPort());
        out.writeLong(t.dstHi());
        out.writeLong(t.dstLo());
        out.writeInt(t.dstPort());
        out.writeInt(c.lastEpoch());
      }
    }
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** Reads a snapshot written by {@link #writeTo}. */
  public static Snapshot readFrom(Path file) throws IOException {
    try (InputStream is = Files.newInputStream(file);
        DataInputStream in = new DataInputStream(new BufferedInputStream(is))) {
      if (in.readInt() != MAGIC) {
        throw new IOException(file + " is not an agent flow snapshot");
      }
      long nextId = in.readLong();
      int n = in.readInt();
      List<FlowState> flows = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        long id = in.readLong();
        int epoch = in.readInt();
        FlowRegistration r = FlowRegistration.parseDelimitedFrom(in);
        Owner o = new Owner(in.readInt(), in.readInt());
        FlowPolicy p = FlowPolicy.parseDelimitedFrom(in);
        flows.add(new FlowState(id, epoch, r, o, p, in.readLong(), in.readLong(),
            in.readBoolean(), in.readBoolean(), in.readBoolean()));
      }
      int m = in.readInt();
      List<ConnState> conns = new ArrayList<>();
      for (int i = 0; i < m; i++) {
        conns.add(new ConnState(new FlowTuple(in.readLong(), in.readLong(), in.readInt(),
            in.readLong(), in.readLong(), in.readInt()), in.readInt()));
      }
      return new Snapshot(nextId, flows, conns);
    }
  }
}
