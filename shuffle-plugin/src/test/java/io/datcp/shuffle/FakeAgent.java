package io.datcp.shuffle;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEnded;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.FlowRegistrationAnswer;
import io.datcp.proto.v1.FlowRegistrationAnswers;
import io.datcp.proto.v1.FlowRegistrationBatch;
import io.datcp.proto.v1.FlowRegistrationItem;
import io.datcp.proto.v1.LocalAgentServiceGrpc;
import io.datcp.proto.v1.OrdersRequest;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.Context;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * In-process LocalAgentService on a Unix domain socket, and the agent's events socket beside it
 * (events.sock: length-delimited ShuffleReport in, ReportAck out): records registrations, ends
 * and forwarded events (a batch once, by reporter and batch id, whichever socket it came by), and
 * lets a test decide which orders a new flow gets before its registration reply.
 */
public final class FakeAgent implements AutoCloseable {
  /** A flow as the agent saw it. */
  public record Flow(long flowId, FlowRegistration registration, long registeredNanos) { }

  public final Path socket;
  public final Path eventsSocket;
  private final EventLoopGroup group = new EpollEventLoopGroup(2);
  private final Server server;
  private final AtomicLong nextFlowId = new AtomicLong(1);
  public final List<Flow> flows = new CopyOnWriteArrayList<>();
  public final Map<Long, FlowEnd> ends = new ConcurrentHashMap<>();
  public final Map<Long, Long> endNanos = new ConcurrentHashMap<>();
  public final List<ShuffleEvent> events = new CopyOnWriteArrayList<>();
  /** System.nanoTime() when each forwarded event arrived. */
  public final Map<ShuffleEvent, Long> eventNanos = new ConcurrentHashMap<>();
  /** The forwarded events that came over the events socket (the rest came by Forward). */
  public final List<ShuffleEvent> socketEvents = new CopyOnWriteArrayList<>();
  /** Reports answered on the events socket (duplicates included), connections accepted. */
  public final AtomicInteger socketReports = new AtomicInteger();
  public final AtomicInteger socketConnections = new AtomicInteger();
  /** Reports read on the events socket, counted before their reply delay. */
  public final AtomicInteger socketReportsRead = new AtomicInteger();
  /**
   * How long the events socket takes for each report before it records and answers it (a slow
   * agent: one the client gave up on still takes the report), milliseconds.
   */
  public volatile long eventsReplyDelayMs;
  /** False: the events socket closes each connection at its next report, unanswered. */
  public volatile boolean answerEvents = true;
  private final ServerSocketChannel eventsServer;
  private final Set<SocketChannel> eventsConnections = ConcurrentHashMap.newKeySet();
  private final Set<String> seenBatches = ConcurrentHashMap.newKeySet();
  private final List<StreamObserver<FlowOrder>> subscribers = new CopyOnWriteArrayList<>();
  private volatile Function<FlowRegistration, FlowAction> ordersBeforeReply = r -> null;
  /**
   * How long each of the next Forward calls takes, milliseconds, one entry per call (a slow or
   * stalled agent); a call its client gave up on meanwhile is not recorded, as one that never
   * reached the agent.
   */
  public final Queue<Long> forwardDelaysMs = new ConcurrentLinkedQueue<>();
  /** Forward calls begun. */
  public final AtomicInteger forwardsStarted = new AtomicInteger();
  /** How long RegisterFlow takes to answer (a slow agent), milliseconds. */
  public volatile long replyDelayMs;
  /** False: RegisterFlowBatches answers UNIMPLEMENTED (an agent that predates the stream). */
  public volatile boolean streams = true;
  /** Registrations and batches that came over RegisterFlowBatches streams, streams opened. */
  public final AtomicInteger streamedRegistrations = new AtomicInteger();
  public final AtomicInteger streamedBatches = new AtomicInteger();
  public final AtomicInteger streamsOpened = new AtomicInteger();
  /** Item sequences in the order the agent read them. */
  public final List<Long> sequencesRead = new CopyOnWriteArrayList<>();
  private final List<StreamObserver<FlowRegistrationAnswers>> openStreams =
      new CopyOnWriteArrayList<>();

  public FakeAgent(Path dir) throws IOException {
    Files.createDirectories(dir);
    socket = dir.resolve("agent.sock");
    Files.deleteIfExists(socket);
    server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollServerDomainSocketChannel.class)
        .bossEventLoopGroup(group).workerEventLoopGroup(group)
        .addService(new Service())
        .build().start();
    eventsSocket = dir.resolve("events.sock");
    Files.deleteIfExists(eventsSocket);
    eventsServer = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    eventsServer.bind(UnixDomainSocketAddress.of(eventsSocket));
    Thread acceptor = new Thread(this::acceptEvents, "fake-agent-events");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  private void acceptEvents() {
    while (eventsServer.isOpen()) {
      SocketChannel ch;
      try {
        ch = eventsServer.accept();
      } catch (IOException e) {
        return; // closed
      }
      socketConnections.incrementAndGet();
      eventsConnections.add(ch);
      Thread t = new Thread(() -> serveEvents(ch), "fake-agent-events-conn");
      t.setDaemon(true);
      t.start();
    }
  }

  /** As the agent: each delimited report answered, in order, by a delimited ReportAck. */
  private void serveEvents(SocketChannel ch) {
    try (ch) {
      InputStream in = Channels.newInputStream(ch);
      OutputStream out = Channels.newOutputStream(ch);
      ShuffleReport report;
      while ((report = ShuffleReport.parseDelimitedFrom(in)) != null) {
        if (!answerEvents) {
          return;
        }
        socketReportsRead.incrementAndGet();
        sleep(eventsReplyDelayMs);
        socketReports.incrementAndGet();
        record(report, socketEvents).writeDelimitedTo(out);
      }
    } catch (IOException e) {
      // the client went away
    } finally {
      eventsConnections.remove(ch);
    }
  }

  /** Events-socket connections open now. */
  public int eventsConnections() {
    return eventsConnections.size();
  }

  /** Closes every events-socket connection (as an agent restarting would). */
  public void dropEventsConnections() throws IOException {
    for (SocketChannel ch : eventsConnections) {
      ch.close();
    }
  }

  /** Records a report's events once per (reporter, batch id); a resend is a duplicate. */
  private ReportAck record(ShuffleReport request, List<ShuffleEvent> alsoTo) {
    if (!seenBatches.add(request.getReporterId() + "/" + request.getBatchId())) {
      return ReportAck.newBuilder().setDuplicate(true).build();
    }
    long now = System.nanoTime();
    request.getEventsList().forEach(e -> eventNanos.putIfAbsent(e, now));
    events.addAll(request.getEventsList());
    alsoTo.addAll(request.getEventsList());
    return ReportAck.newBuilder().setAccepted(request.getEventsCount()).build();
  }

  /** Which order (or null) each new flow gets, sent before its registration reply. */
  public void ordersBeforeReply(Function<FlowRegistration, FlowAction> policy) {
    ordersBeforeReply = policy;
  }

  public void order(long flowId, FlowAction action) {
    FlowOrder order = FlowOrder.newBuilder().setFlowId(flowId).setAction(action)
        .setReason("test").build();
    for (StreamObserver<FlowOrder> s : subscribers) {
      synchronized (s) {
        s.onNext(order);
      }
    }
  }

  /** Ends every open registration stream with UNAVAILABLE (as an agent going away would). */
  public void breakStreams() {
    for (StreamObserver<FlowRegistrationAnswers> s : openStreams) {
      openStreams.remove(s);
      synchronized (s) {
        s.onError(Status.UNAVAILABLE.withDescription("test broke the stream").asRuntimeException());
      }
    }
  }

  public int subscribers() {
    return subscribers.size();
  }

  public void reset() {
    flows.clear();
    ends.clear();
    endNanos.clear();
    events.clear();
    eventNanos.clear();
    socketEvents.clear();
    socketReports.set(0);
    socketReportsRead.set(0);
    socketConnections.set(0);
    eventsReplyDelayMs = 0;
    answerEvents = true;
    ordersBeforeReply = r -> null;
    replyDelayMs = 0;
    forwardDelaysMs.clear();
    forwardsStarted.set(0);
    streams = true;
    streamedRegistrations.set(0);
    streamedBatches.set(0);
    streamsOpened.set(0);
    sequencesRead.clear();
  }

  public List<ShuffleEvent> events(ShuffleEvent.EventCase kind) {
    List<ShuffleEvent> out = new ArrayList<>();
    for (ShuffleEvent e : events) {
      if (e.getEventCase() == kind) {
        out.add(e);
      }
    }
    return out;
  }

  private final class Service extends LocalAgentServiceGrpc.LocalAgentServiceImplBase {
    @Override
    public void registerFlow(FlowRegistration request, StreamObserver<FlowRegistered> reply) {
      reply.onNext(register(request));
      reply.onCompleted();
    }

    private FlowRegistered register(FlowRegistration request) {
      long id = nextFlowId.getAndIncrement();
      flows.add(new Flow(id, request, System.nanoTime()));
      FlowAction early = ordersBeforeReply.apply(request);
      if (early != null) {
        order(id, early);
        sleep(300); // a generous head start, so the order arrives first even on a busy machine
      }
      sleep(replyDelayMs);
      return FlowRegistered.newBuilder().setFlowId(id).setEpoch(1).setInKernel(true).build();
    }

    /**
     * As the agent: one message per batch, one answer per item with its sequence, in order; job
     * "job_bad" is refused.
     */
    @Override
    public StreamObserver<FlowRegistrationBatch> registerFlowBatches(
        StreamObserver<FlowRegistrationAnswers> answers) {
      if (!streams) {
        answers.onError(Status.UNIMPLEMENTED.asRuntimeException());
        return new StreamObserver<>() {
          @Override
          public void onNext(FlowRegistrationBatch batch) { }

          @Override
          public void onError(Throwable t) { }

          @Override
          public void onCompleted() { }
        };
      }
      streamsOpened.incrementAndGet();
      openStreams.add(answers);
      return new StreamObserver<>() {
        @Override
        public void onNext(FlowRegistrationBatch batch) {
          streamedBatches.incrementAndGet();
          FlowRegistrationAnswers.Builder all = FlowRegistrationAnswers.newBuilder();
          for (FlowRegistrationItem item : batch.getItemsList()) {
            streamedRegistrations.incrementAndGet();
            sequencesRead.add(item.getSequence());
            FlowRegistrationAnswer.Builder a = all.addAnswersBuilder()
                .setSequence(item.getSequence());
            if (item.getRegistration().getJobId().equals("job_bad")) {
              a.getErrorBuilder().setCode(Status.Code.INVALID_ARGUMENT.value())
                  .setMessage("job_id: 'job_bad' is not a job id");
            } else {
              a.setRegistered(register(item.getRegistration()));
            }
          }
          synchronized (answers) {
            if (openStreams.contains(answers)) {
              answers.onNext(all.build());
            }
          }
        }

        @Override
        public void onError(Throwable t) {
          openStreams.remove(answers);
        }

        @Override
        public void onCompleted() {
          openStreams.remove(answers);
          synchronized (answers) {
            answers.onCompleted();
          }
        }
      };
    }

    @Override
    public void endFlow(FlowEnd request, StreamObserver<FlowEnded> reply) {
      boolean known = ends.putIfAbsent(request.getFlowId(), request) == null;
      endNanos.putIfAbsent(request.getFlowId(), System.nanoTime());
      reply.onNext(FlowEnded.newBuilder().setKnown(known).build());
      reply.onCompleted();
    }

    @Override
    public void orders(OrdersRequest request, StreamObserver<FlowOrder> stream) {
      subscribers.add(stream);
    }

    @Override
    public void forward(ShuffleReport request, StreamObserver<ReportAck> reply) {
      forwardsStarted.incrementAndGet();
      Long delay = forwardDelaysMs.poll();
      if (delay != null) {
        sleep(delay);
        if (Context.current().isCancelled()) {
          reply.onError(Status.CANCELLED.asRuntimeException());
          return;
        }
      }
      reply.onNext(record(request, new ArrayList<>()));
      reply.onCompleted();
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() throws InterruptedException, IOException {
    eventsServer.close();
    dropEventsConnections();
    Files.deleteIfExists(eventsSocket);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    Files.deleteIfExists(socket);
  }

  static Set<Long> ids(List<Flow> flows) {
    Set<Long> ids = new HashSet<>();
    flows.forEach(f -> ids.add(f.flowId()));
    return ids;
  }
}
