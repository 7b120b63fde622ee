package io.datcp.agent.testing;

import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.OrdersRequest;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A local process talking to the agent's sockets, run by the tests as another user (see
 * {@link OtherUser}): the hostile local process of the threat model, or the NodeManager's user.
 * Each command prints one line: {@code ok ...} or the refusal's status code and message.
 *
 * <pre>
 * register SOCKET JOB HOST PORT       RegisterFlow on TEST-NET; ok FLOW_ID
 * register-many SOCKET JOB HOST N     N RegisterFlow calls on ports 40000..; ok N, or
 *                                     CODE MESSAGE after the flows accepted before it
 * end SOCKET FLOW_ID                  EndFlow ABORTED; ok KNOWN
 * register-end SOCKET JOB HOST PORT   RegisterFlow, then EndFlow ABORTED of it; ok KNOWN
 * subscribe SOCKET ID WAIT_MS         Orders; the refusal, or ok open after WAIT_MS
 * forward SOCKET                      Forward one event; ok ACCEPTED
 * events EVENTS_SOCKET                one report on the events socket; ok ACCEPTED, or closed
 * </pre>
 */
public final class LocalPeer {
  private LocalPeer() {}

  public static void main(String[] args) throws Exception {
    System.out.println(run(args));
    System.out.flush();
    System.exit(0); // the event loops' threads would otherwise linger for their quiet period
  }

  private static String run(String[] a) throws Exception {
    if (a[0].equals("events")) {
      return events(Path.of(a[1]));
    }
    try (AgentClient c = new AgentClient(Path.of(a[1]))) {
      try {
        switch (a[0]) {
          case "register": {
            FlowRegistered r = c.blocking().registerFlow(TestAgents.registration(a[2],
                Integer.parseInt(a[3]), Integer.parseInt(a[4])).build());
            return "ok " + r.getFlowId();
          }
          case "register-many": {
            int n = Integer.parseInt(a[4]);
            for (int i = 0; i < n; i++) {
              try {
                c.blocking().registerFlow(TestAgents.registration(a[2],
                    Integer.parseInt(a[3]), 40000 + i).build());
              } catch (StatusRuntimeException e) {
                return refusal(e) + " after " + i;
              }
            }
            return "ok " + n;
          }
          case "end":
            return "ok " + c.blocking().endFlow(FlowEnd.newBuilder()
                .setFlowId(Long.parseLong(a[2]))
                .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown();
          case "register-end": {
            FlowRegistered r = c.blocking().registerFlow(TestAgents.registration(a[2],
                Integer.parseInt(a[3]), Integer.parseInt(a[4])).build());
            return "ok " + c.blocking().endFlow(FlowEnd.newBuilder().setFlowId(r.getFlowId())
                .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown();
          }
          case "subscribe":
            return subscribe(c, a[2], Long.parseLong(a[3]));
          case "forward":
            return "ok " + c.blocking().forward(report()).getAccepted();
          default:
            return "unknown command " + a[0];
        }
      } catch (StatusRuntimeException e) {
        return refusal(e);
      }
    }
  }

  private static String refusal(StatusRuntimeException e) {
    return e.getStatus().getCode() + " " + e.getStatus().getDescription();
  }

  private static String subscribe(AgentClient c, String id, long waitMs) throws Exception {
    CompletableFuture<String> ended = new CompletableFuture<>();
    c.async().orders(OrdersRequest.newBuilder().setSubscriberId(id).build(),
        new StreamObserver<FlowOrder>() {
          @Override
          public void onNext(FlowOrder o) {
            ended.complete("ok order " + o.getFlowId());
          }

          @Override
          public void onError(Throwable t) {
            ended.complete(t instanceof StatusRuntimeException e ? refusal(e) : t.toString());
          }

          @Override
          public void onCompleted() {
            ended.complete("ok completed");
          }
        });
    try {
      return ended.get(waitMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      return "ok open";
    }
  }

  private static ShuffleReport report() {
    return ShuffleReport.newBuilder().addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(1)
        .setShuffleFinished(ShuffleFinished.newBuilder().setJobId("job_1700000000000_0901")))
        .build();
  }

  private static String events(Path socket) throws IOException {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      OutputStream out = Channels.newOutputStream(ch);
      InputStream in = Channels.newInputStream(ch);
      report().writeDelimitedTo(out);
      out.flush();
      ReportAck ack = ReportAck.parseDelimitedFrom(in);
      return ack == null ? "closed" : "ok " + ack.getAccepted();
    } catch (IOException e) {
      return "closed " + e.getMessage();
    }
  }
}
