package io.datcp.agent.bench;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import com.sun.jna.Library;
import com.sun.jna.Native;
import io.datcp.agent.testing.AgentClient;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.FlowRegistrationAnswer;
import io.datcp.proto.v1.FlowRegistrationAnswers;
import io.datcp.proto.v1.FlowRegistrationBatch;
import io.datcp.proto.v1.FlowRegistrationItem;
import io.datcp.proto.v1.LocalAgentServiceGrpc;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Registration throughput and latency against a running agent, as the shuffle plugin calls it:
 * gRPC over the agent's Unix socket, each answer sent after the kernel entry is written, so the
 * latency from the call to the answer bounds the one from the call to the kernel map entry.
 * Three ways side by side: "unary" (one RegisterFlow call per flow, a future per call), "stream"
 * (one item per message on one long-lived RegisterFlows stream, answers matched by sequence and
 * handled on the transport thread) and "batch" (RegisterFlowBatches as the plugin's AgentClient
 * uses it: items queue up and the client's event loop sends what queued as one message). Flows
 * go round-robin over kept-alive connections (each registration is the connection's next
 * response, a new epoch). Each way runs closed loop (a fixed number of calls outstanding, the
 * next sent as one is answered) and open loop (a fixed offered rate: does the agent keep up,
 * and at what latency). Prints registrations/s and latency percentiles per way and load, then
 * the ratios to unary. Not a test; see agent/bench/run-bench.sh.
 */
@Command(name = "registration-bench", mixinStandardHelpOptions = true)
public final class RegistrationBench implements Runnable {
  @Option(names = "--socket", required = true, description = "agent socket")
  private Path socket;

  @Option(names = "--flows", defaultValue = "100000", description = "registrations per run")
  private int flows;

  @Option(names = "--warmup", defaultValue = "1000000", description = "registrations per mode"
      + " before the rows: the agent's C2 compiler was still taking its one core 10 s into a"
      + " run, and after 30,000 the closed-loop p99 was 25-60 % higher than after 10^6")
  private int warmup;

  @Option(names = "--connections", defaultValue = "1000", description = "distinct 4-tuples")
  private int connections;

  @Option(names = "--in-flight", split = ",", defaultValue = "1,8,16,64",
      description = "closed loop: calls outstanding at once (1 = one call after the other)")
  private int[] inFlight;

  @Option(names = "--rates", split = ",", defaultValue = "20000,50000",
      description = "open loop: registrations offered per second, paced (latency from each "
          + "one's planned start, so a sender held up by slow answers is not hidden); at most "
          + OPEN_LOOP_WINDOW + " in flight")
  private int[] rates;

  @Option(names = "--modes", split = ",", defaultValue = "unary,stream,batch",
      description = "unary (RegisterFlow per flow), stream (RegisterFlows), batch "
          + "(RegisterFlowBatches)")
  private String[] modes;

  @Option(names = "--agent-pid", defaultValue = "0",
      description = "agent process: also print its CPU time per registration")
  private long agentPid;

  /** Open loop: most registrations outstanding (beyond it the sender falls behind its plan). */
  private static final int OPEN_LOOP_WINDOW = 1024;

  /** Registrations per request message in the last run (1 but for batch). */
  private double itemsPerMessage;
  /** The last run's pacing: how late its sender issued each registration. */
  private Pace lastPace;

  public static void main(String[] args) {
    System.exit(new CommandLine(new RegistrationBench()).execute(args));
  }

  /**
   * One row: registrations/s, p50, p99, max (microseconds), agent CPU per registration (and
   * its system part), registrations per request message.
   */
  private record Row(double rate, double p50, double p99, double max, double cpu,
      double sys, double perMessage) { }

  @Override
  public void run() {
    try (AgentClient client = new AgentClient(socket)) {
      LocalAgentServiceGrpc.LocalAgentServiceFutureStub stub = client.future();
      long[] lastId = new long[connections];
      for (String mode : modes) {
        runOnce(client, mode, warmup, 64, 0, lastId);
      }
      System.out.printf("%-7s %-10s %9s %10s %9s %9s %10s %13s %9s %8s %6s %14s %14s%n", "mode",
          "in-flight", "flows", "flows/s", "p50 us", "p99 us", "max us", "agent cpu us",
          "of it sys", "per msg", "load1", "send late p99", "p99 from send");
      Map<String, Row> rows = new LinkedHashMap<>();
      List<String> loads = new ArrayList<>();
      for (int k : inFlight) {
        loads.add(String.valueOf(k));
      }
      for (int r : rates) {
        loads.add("@" + r + "/s");
      }
      for (String load : loads) {
        boolean open = load.startsWith("@");
        int k = open ? OPEN_LOOP_WINDOW : Integer.parseInt(load);
        int rate = open ? Integer.parseInt(load.substring(1, load.length() - 2)) : 0;
        for (String mode : modes) {
          long[] cpu0 = agentUserSystemMicros();
          long[] lat = runOnce(client, mode, flows, k, rate, lastId);
          long[] cpu1 = agentUserSystemMicros();
          long cpu = cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1];
          long sys = cpu1[1] - cpu0[1];
          double secs = lat[lat.length - 1] / 1e9;
          long[] sorted = Arrays.copyOf(lat, lat.length - 1);
          Arrays.sort(sorted);
          Row r = new Row(flows / secs, sorted[sorted.length / 2] / 1e3,
              sorted[(int) (sorted.length * 0.99)] / 1e3, sorted[sorted.length - 1] / 1e3,
              agentPid == 0 ? Double.NaN : (double) cpu / flows,
              agentPid == 0 ? Double.NaN : (double) sys / flows, itemsPerMessage);
          rows.put(mode + "/" + load, r);
          System.out.printf(
              "%-7s %-10s %9d %10.0f %9.1f %9.1f %10.1f %13.1f %9.1f %8.1f %6s %14.1f %14.1f%n",
              mode, load, flows, r.rate, r.p50, r.p99, r.max, r.cpu, r.sys, r.perMessage, load1(),
              lastPace.p99LateMicros(), lastPace.p99FromSendMicros(lat));
        }
      }
      if (Arrays.asList(modes).contains("unary") && modes.length > 1) {
        System.out.println();
        System.out.printf("%-7s %-10s %16s %16s %16s %16s%n", "mode", "in-flight",
            "flows/s ratio", "p50 ratio", "p99 ratio", "cpu/reg ratio");
        for (String mode : modes) {
          if (mode.equals("unary")) {
            continue;
          }
          for (String load : loads) {
            Row u = rows.get("unary/" + load);
            Row st = rows.get(mode + "/" + load);
            System.out.printf("%-7s %-10s %15.2fx %15.2fx %15.2fx %15.2fx%n", mode, load,
                st.rate / u.rate, st.p50 / u.p50, st.p99 / u.p99, st.cpu / u.cpu);
          }
        }
        System.out.println("(to unary; flows/s above 1 and latency below 1 favour the mode)");
      }
      // leave nothing behind: end every connection's last flow (deletes its kernel entry)
      for (long id : lastId) {
        if (id != 0) {
          client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(id)
              .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static String load1() {
    try {
      return java.nio.file.Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    } catch (java.io.IOException e) {
      return "?";
    }
  }

  /** The agent's user and system CPU time (/proc/PID/stat, ticks of 10 ms), microseconds. */
  private long[] agentUserSystemMicros() {
    if (agentPid == 0) {
      return new long[2];
    }
    try {
      String stat = java.nio.file.Files.readString(Path.of("/proc/" + agentPid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return new long[] {Long.parseLong(f[11]) * 10_000L, Long.parseLong(f[12]) * 10_000L};
    } catch (java.io.IOException e) {
      return new long[2];
    }
  }

  /** Latencies in nanoseconds, then the run's wall time as the last element. */
  private long[] runOnce(AgentClient client, String mode, int n, int window, int rate,
      long[] lastId) throws InterruptedException {
    FlowRegistration[] regs = registrations();
    long[] lat;
    itemsPerMessage = 1;
    Pace pace = new Pace(rate, n);
    if (mode.equals("stream")) {
      lat = runStream(client.async(), regs, n, window, pace, lastId);
    } else if (mode.equals("batch")) {
      lat = runBatch(client, regs, n, window, pace, lastId);
    } else if (mode.equals("unary")) {
      lat = runUnary(client.future(), regs, n, window, pace, lastId);
    } else {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--modes: '" + mode + "' is not unary, stream or batch");
    }
    lastPace = pace;
    return lat;
  }

  private FlowRegistration[] registrations() {
    FlowRegistration base = FlowRegistration.newBuilder().setJobId("job_1700000000000_0001")
        .setReduceId(0).addMapIds(1).setBytes(1_000_000).setSourcePort(13562)
        .setDestinationAddress("192.0.2.250").setDestinationHost("reducer").build();
    FlowRegistration[] regs = new FlowRegistration[connections];
    for (int c = 0; c < connections; c++) {
      regs[c] = base.toBuilder().setSourceAddress("192.0.2." + (1 + c / 250))
          .setDestinationPort(30000 + c % 250).build();
    }
    return regs;
  }

  /** Latencies in nanoseconds, then the run's wall time as the last element. */
  private long[] runUnary(LocalAgentServiceGrpc.LocalAgentServiceFutureStub stub,
      FlowRegistration[] regs, int n, int window, Pace pace, long[] lastId)
      throws InterruptedException {
    long[] lat = new long[n + 1];
    AtomicLongArray ids = new AtomicLongArray(connections);
    Semaphore slots = new Semaphore(window);
    CountDownLatch done = new CountDownLatch(n);
    AtomicInteger failures = new AtomicInteger();
    AtomicLong firstError = new AtomicLong();
    long t0 = pace.begin();
    for (int i = 0; i < n; i++) {
      // one call per connection in flight: a connection sends its responses in turn
      int c = i % connections;
      slots.acquire();
      long start = pace.start(i);
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

  /**
   * The answers of one streamed run: latency per sequence number, the last flow id per
   * connection, a window of registrations in flight, refusals counted and the first one shown.
   */
  private final class Answers {
    final long[] lat;
    final long[] starts;
    final AtomicLongArray ids = new AtomicLongArray(connections);
    final Semaphore slots;
    final CountDownLatch done;
    final AtomicInteger failures = new AtomicInteger();
    final CountDownLatch closed = new CountDownLatch(1);

    Answers(int n, int window) {
      lat = new long[n + 1];
      starts = new long[n];
      slots = new Semaphore(window);
      done = new CountDownLatch(n);
    }

    void answer(FlowRegistrationAnswer a, long now) {
      int idx = (int) a.getSequence();
      lat[idx] = now - starts[idx];
      if (a.hasRegistered()) {
        ids.set(idx % connections, a.getRegistered().getFlowId());
      } else if (failures.getAndIncrement() == 0) {
        System.err.println("registration refused: " + a.getError());
      }
      slots.release();
      done.countDown();
    }

    void failed(Throwable t) {
      System.err.println("registration stream failed: " + t);
      for (long i = done.getCount(); i > 0; i--) {
        done.countDown();
      }
      closed.countDown();
    }

    /** Waits for every answer; total time in lat[n], last ids into lastId. */
    long[] finish(long t0, Runnable complete, long[] lastId) throws InterruptedException {
      done.await();
      lat[starts.length] = System.nanoTime() - t0;
      complete.run();
      closed.await(10, java.util.concurrent.TimeUnit.SECONDS);
      for (int c = 0; c < connections; c++) {
        lastId[c] = ids.get(c);
      }
      if (failures.get() > 0) {
        System.err.printf("%d of %d registrations refused%n", failures.get(), starts.length);
      }
      return lat;
    }
  }

  /** One registration stream: its request side, and what comes back tallied in answers. */
  private static final class StreamCall<Q, R> implements ClientResponseObserver<Q, R> {
    private final Answers answers;
    private final Consumer<R> onAnswer;
    private ClientCallStreamObserver<Q> requests;

    StreamCall(Answers answers, Consumer<R> onAnswer) {
      this.answers = answers;
      this.onAnswer = onAnswer;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<Q> r) {
      requests = r;
    }

    @Override
    public void onNext(R r) {
      onAnswer.accept(r);
    }

    @Override
    public void onError(Throwable t) {
      answers.failed(t);
    }

    @Override
    public void onCompleted() {
      answers.closed.countDown();
    }
  }

  /** As runUnary, over one RegisterFlows stream: item i carries sequence i. */
  private long[] runStream(LocalAgentServiceGrpc.LocalAgentServiceStub stub,
      FlowRegistration[] regs, int n, int window, Pace pace, long[] lastId)
      throws InterruptedException {
    Answers answers = new Answers(n, window);
    StreamCall<FlowRegistrationItem, FlowRegistrationAnswer> call =
        new StreamCall<>(answers, a -> answers.answer(a, System.nanoTime()));
    stub.withExecutor(MoreExecutors.directExecutor()).registerFlows(call);
    FlowRegistrationItem.Builder item = FlowRegistrationItem.newBuilder();
    long t0 = pace.begin();
    for (int i = 0; i < n; i++) {
      answers.slots.acquire();
      answers.starts[i] = pace.start(i);
      call.requests.onNext(item.setSequence(i).setRegistration(regs[i % connections]).build());
    }
    return answers.finish(t0, call.requests::onCompleted, lastId);
  }

  /**
   * As runStream over RegisterFlowBatches, batching as the plugin's AgentClient does: the caller
   * queues its item and, unless a send is pending, schedules one on the channel's event loop,
   * which sends everything queued by then (at most 256 items per message).
   */
  private long[] runBatch(AgentClient client, FlowRegistration[] regs, int n, int window,
      Pace pace, long[] lastId) throws InterruptedException {
    Answers answers = new Answers(n, window);
    AtomicInteger messages = new AtomicInteger();
    List<FlowRegistrationItem> queued = new ArrayList<>();
    boolean[] scheduled = new boolean[1];
    StreamCall<FlowRegistrationBatch, FlowRegistrationAnswers> call = new StreamCall<>(answers,
        all -> {
          long now = System.nanoTime();
          for (FlowRegistrationAnswer a : all.getAnswersList()) {
            answers.answer(a, now);
          }
        });
    client.async().withExecutor(MoreExecutors.directExecutor()).registerFlowBatches(call);
    Runnable flush = () -> {
      synchronized (queued) {
        scheduled[0] = false;
        for (int from = 0; from < queued.size(); from += 256) {
          call.requests.onNext(FlowRegistrationBatch.newBuilder()
              .addAllItems(queued.subList(from, Math.min(queued.size(), from + 256))).build());
          messages.incrementAndGet();
        }
        queued.clear();
      }
    };
    FlowRegistrationItem.Builder item = FlowRegistrationItem.newBuilder();
    long t0 = pace.begin();
    for (int i = 0; i < n; i++) {
      answers.slots.acquire();
      answers.starts[i] = pace.start(i);
      synchronized (queued) {
        queued.add(item.setSequence(i).setRegistration(regs[i % connections]).build());
        if (!scheduled[0]) {
          scheduled[0] = true;
          client.eventLoop().execute(flush);
        }
      }
    }
    long[] lat = answers.finish(t0, call.requests::onCompleted, lastId);
    itemsPerMessage = (double) n / messages.get();
    return lat;
  }

  /**
   * When registration i starts: at once (closed loop), or at its planned time for an open loop
   * at a fixed rate. The sender parks until then: spinning would take the client's one CPU from
   * its event loop, which sends the batches and reads the answers. The thread's timer slack is
   * set to 1 us first (prctl), or it would oversleep by the default 50 us.
   */
  private static final class Pace {
    private interface LibC extends Library {
      LibC INSTANCE = Native.load("c", LibC.class);

      int prctl(int option, long arg2, long arg3, long arg4, long arg5);
    }

    private static final int PR_SET_TIMERSLACK = 29;
    private final double periodNanos;
    /** How late each registration left after its planned start (open loop; 0 closed). */
    private final long[] late;
    private long origin;

    Pace(int rate, int n) {
      periodNanos = rate == 0 ? 0 : 1e9 / rate;
      late = new long[n];
    }

    /** p99 of the sender's lateness, µs: the client falling behind its own plan. */
    double p99LateMicros() {
      return p99Micros(late.clone());
    }

    /** p99 of the latencies counted from when each registration actually left, µs. */
    double p99FromSendMicros(long[] lat) {
      long[] fromSend = new long[late.length];
      for (int i = 0; i < late.length; i++) {
        fromSend[i] = lat[i] - late[i];
      }
      return p99Micros(fromSend);
    }

    private static double p99Micros(long[] nanos) {
      Arrays.sort(nanos);
      return nanos[(int) (nanos.length * 0.99)] / 1e3;
    }

    long begin() {
      if (periodNanos != 0) {
        LibC.INSTANCE.prctl(PR_SET_TIMERSLACK, 1_000, 0, 0, 0);
      }
      origin = System.nanoTime();
      return origin;
    }

    long start(int i) {
      if (periodNanos == 0) {
        return System.nanoTime();
      }
      long planned = origin + (long) (i * periodNanos);
      long early = planned - System.nanoTime();
      for (; early > 0; early = planned - System.nanoTime()) {
        LockSupport.parkNanos(early);
      }
      late[i] = -early;
      return planned;
    }
  }
}
