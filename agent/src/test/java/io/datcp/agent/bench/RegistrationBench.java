package io.datcp.agent.bench;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import io.datcp.agent.testing.AgentClient;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.LocalAgentServiceGrpc;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * RegisterFlow throughput and latency against a running agent, as the shuffle plugin calls it:
 * gRPC over the agent's Unix socket, each answer sent after the kernel entry is written. Flows
 * go round-robin over kept-alive connections (each registration is the connection's next
 * response, a new epoch). Prints registrations/s and latency percentiles per concurrency.
 * Not a test; see agent/bench/run-bench.sh.
 */
@Command(name = "registration-bench", mixinStandardHelpOptions = true)
public final class RegistrationBench implements Runnable {
  @Option(names = "--socket", required = true, description = "agent socket")
  private Path socket;

  @Option(names = "--flows", defaultValue = "100000", description = "registrations per run")
  private int flows;

  @Option(names = "--warmup", defaultValue = "30000", description = "registrations first")
  private int warmup;

  @Option(names = "--connections", defaultValue = "1000", description = "distinct 4-tuples")
  private int connections;

  @Option(names = "--in-flight", split = ",", defaultValue = "1,16,64",
      description = "calls outstanding at once (1 = one call after the other)")
  private int[] inFlight;

  @Option(names = "--agent-pid", defaultValue = "0",
      description = "agent process: also print its CPU time per registration")
  private long agentPid;

  public static void main(String[] args) {
    System.exit(new CommandLine(new RegistrationBench()).execute(args));
  }

  @Override
  public void run() {
    try (AgentClient client = new AgentClient(socket)) {
      LocalAgentServiceGrpc.LocalAgentServiceFutureStub stub = client.future();
      long[] lastId = new long[connections];
      runOnce(stub, warmup, 64, lastId);
      System.out.printf("%-10s %10s %12s %10s %10s %10s %14s%n", "in-flight", "flows",
          "flows/s", "p50 us", "p99 us", "max us", "agent cpu us");
      for (int k : inFlight) {
        long cpu0 = agentCpuMicros();
        long[] lat = runOnce(stub, flows, k, lastId);
        long cpu = agentCpuMicros() - cpu0;
        double secs = lat[lat.length - 1] / 1e9;
        long[] sorted = Arrays.copyOf(lat, lat.length - 1);
        Arrays.sort(sorted);
        System.out.printf("%-10d %10d %12.0f %10.1f %10.1f %10.1f %14.1f%n", k, flows,
            flows / secs, sorted[sorted.length / 2] / 1e3,
            sorted[(int) (sorted.length * 0.99)] / 1e3, sorted[sorted.length - 1] / 1e3,
            agentPid == 0 ? Double.NaN : (double) cpu / flows);
      }
      // leave nothing behind: end every connection's last flow (deletes its kernel entry)
      LocalAgentServiceGrpc.LocalAgentServiceBlockingStub b = client.blocking();
      for (long id : lastId) {
        if (id != 0) {
          b.endFlow(FlowEnd.newBuilder().setFlowId(id)
              .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The agent's user + system CPU time (/proc/PID/stat, clock ticks of 10 ms), microseconds. */
  private long agentCpuMicros() {
    if (agentPid == 0) {
      return 0;
    }
    try {
      String stat = java.nio.file.Files.readString(Path.of("/proc/" + agentPid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000L;
    } catch (java.io.IOException e) {
      return 0;
    }
  }

  /** Latencies in nanoseconds, then the run's wall time as the last element. */
  private long[] runOnce(LocalAgentServiceGrpc.LocalAgentServiceFutureStub stub, int n,
      int window, long[] lastId) throws InterruptedException {
    FlowRegistration base = FlowRegistration.newBuilder().setJobId("job_1700000000000_0001")
        .setReduceId(0).addMapIds(1).setBytes(1_000_000).setSourcePort(13562)
        .setDestinationAddress("192.0.2.250").setDestinationHost("reducer").build();
    FlowRegistration[] regs = new FlowRegistration[connections];
    for (int c = 0; c < connections; c++) {
      regs[c] = base.toBuilder().setSourceAddress("192.0.2." + (1 + c / 250))
          .setDestinationPort(30000 + c % 250).build();
    }
    long[] lat = new long[n + 1];
    AtomicLongArray ids = new AtomicLongArray(connections);
    Semaphore slots = new Semaphore(window);
    CountDownLatch done = new CountDownLatch(n);
    AtomicInteger failures = new AtomicInteger();
    AtomicLong firstError = new AtomicLong();
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      // one call per connection in flight: a connection sends its responses in turn
      int c = i % connections;
      slots.acquire();
      long start = System.nanoTime();
      int idx = i;
      Futures.addCallback(stub.registerFlow(regs[c]), new FutureCallback<FlowRegistered>() {
        @Override
        public void onSuccess(FlowRegistered r) {
          lat[idx] = System.nanoTime() - start;
          ids.set(c, r.getFlowId());
          slots.release();
          done.countDown();
        }

        @Override
        public void onFailure(Throwable t) {
          if (failures.getAndIncrement() == 0) {
            System.err.println("registration failed: " + t);
            firstError.set(idx);
          }
          slots.release();
          done.countDown();
        }
      }, MoreExecutors.directExecutor());
    }
    done.await();
    lat[n] = System.nanoTime() - t0;
    for (int c = 0; c < connections; c++) {
      lastId[c] = ids.get(c);
    }
    if (failures.get() > 0) {
      System.err.printf("%d of %d registrations failed%n", failures.get(), n);
    }
    return lat;
  }
}
