package io.datcp.shuffle.mapside;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.grpc.Status;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.FileRegion;
import io.netty.channel.PendingWriteQueue;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.stream.ChunkedInput;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.mapreduce.TaskAttemptID;

/**
 * Sits in each shuffle connection's pipeline just before Hadoop's "shuffle" handler and sees the
 * request going in and every message of the response going out. Each 200 response is one flow:
 * it is registered with the agent (job, reduce, maps, the exact body bytes from the response's
 * Content-Length, which Hadoop sums from the index records, and the 4-tuple) and its writes are
 * held until the agent answers or the register timeout passes. Suspend holds the writes not yet
 * passed on, resume releases them, kill closes the connection so the reducer fetches again.
 * A response is held suspended at most datcp.shuffle.suspend.max-ms in total: when that is
 * spent it resumes by itself and later SUSPENDs for it are ignored, so a dead agent or a lost
 * RESUME delays a fetch by that much at most; it also resumes at once when the orders stream to
 * the agent breaks. All state is touched on the channel's event loop only.
 */
final class FlowTracker extends ChannelDuplexHandler {
  private final FlowHost service;
  private ChannelHandlerContext ctx;
  private PendingWriteQueue held;
  private Request request;
  private Flow flow;
  private Flow awaiting; // the flow whose registration holds the writes
  private boolean suspended;
  private long suspendedAtNanos;
  /** What the current response has left of its suspend bound (datcp.shuffle.suspend.max-ms). */
  private long suspendLeftNanos;
  private ScheduledFuture<?> selfResume;
  private boolean flushHeld;
  private final Set<Long> boundFlowIds = new HashSet<>();

  FlowTracker(FlowHost service) {
    this.service = service;
  }

  /** The fetch request a response answers: job, reduce and the map attempts. */
  record Request(String jobId, int reduce, List<String> mapAttempts, List<Integer> mapIds) {
    static Request parse(String uri) {
      Map<String, List<String>> q = new QueryStringDecoder(uri).parameters();
      List<String> job = q.get("job");
      List<String> reduce = q.get("reduce");
      List<String> maps = q.get("map");
      if (job == null || reduce == null || maps == null || job.size() != 1 || reduce.size() != 1) {
        return null;
      }
      try {
        List<String> attempts = new ArrayList<>();
        List<Integer> ids = new ArrayList<>();
        for (String part : maps) {
          for (String attempt : part.split(",")) {
            attempts.add(attempt);
            ids.add(TaskAttemptID.forName(attempt).getTaskID().getId());
          }
        }
        return new Request(job.get(0), Integer.parseInt(reduce.get(0)), attempts, ids);
      } catch (IllegalArgumentException e) {
        return null; // Hadoop answers it with an error; nothing to register
      }
    }
  }

  /** One response on this connection. */
  private static final class Flow {
    final long bytes;
    long flowId; // 0 until the agent answered
    long written;
    boolean ended;

    Flow(long bytes) {
      this.bytes = bytes;
    }
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    this.ctx = ctx;
    this.held = new PendingWriteQueue(ctx);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
    if (msg instanceof HttpRequest req) {
      request = Request.parse(req.uri());
    }
    super.channelRead(ctx, msg);
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof HttpResponse response && !(msg instanceof FullHttpResponse)
        && HttpResponseStatus.OK.equals(response.status()) && request != null) {
      startFlow(response, request);
      request = null;
    }
    Flow current = flow;
    if (current != null && !promise.isVoid()) {
      long size = bodyBytes(msg);
      boolean last = msg instanceof LastHttpContent;
      if (last) {
        flow = null;
      }
      promise.addListener(f -> {
        if (f.isSuccess()) {
          current.written += size;
        }
        if (last) {
          end(current, f.isSuccess() ? FlowEndReason.FLOW_END_REASON_WRITTEN
              : FlowEndReason.FLOW_END_REASON_ABORTED);
        }
      });
    }
    if (gated()) {
      held.add(msg, promise);
    } else {
      ctx.write(msg, promise);
    }
  }

  @Override
  public void flush(ChannelHandlerContext ctx) {
    if (gated()) {
      flushHeld = true;
    } else {
      ctx.flush();
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    endSuspension();
    held.removeAndFailAll(new ClosedChannelException());
    if (flow != null) {
      end(flow, FlowEndReason.FLOW_END_REASON_ABORTED);
      flow = null;
    }
    for (long id : boundFlowIds) {
      service.orders().unbind(id);
    }
    boundFlowIds.clear();
    super.channelInactive(ctx);
  }

  private boolean gated() {
    return awaiting != null || suspended;
  }

  private static long bodyBytes(Object msg) {
    if (msg instanceof ByteBuf buf) {
      return buf.readableBytes();
    }
    if (msg instanceof FileRegion region) {
      return region.count();
    }
    if (msg instanceof ChunkedInput<?> chunked) {
      return Math.max(0, chunked.length());
    }
    return 0;
  }

  private void startFlow(HttpResponse response, Request req) {
    Flow f = new Flow(HttpUtil.getContentLength(response, -1L));
    flow = f;
    suspendLeftNanos = service.config().suspendMax().toNanos();
    service.mapOutputsServed(req.jobId(), req.mapAttempts());
    InetSocketAddress local = (InetSocketAddress) ctx.channel().localAddress();
    InetSocketAddress remote = (InetSocketAddress) ctx.channel().remoteAddress();
    FlowRegistration registration = FlowRegistration.newBuilder()
        .setJobId(req.jobId()).setReduceId(req.reduce()).addAllMapIds(req.mapIds())
        .setBytes(f.bytes)
        .setSourceAddress(local.getAddress().getHostAddress()).setSourcePort(local.getPort())
        .setDestinationAddress(remote.getAddress().getHostAddress())
        .setDestinationPort(remote.getPort())
        .setSubscriberId(service.subscriberId()) // the agent sends this flow's orders back here
        .build(); // destination_host stays empty: naming the peer needs a DNS lookup
    long waitMs = service.config().registerTimeout().toMillis();
    if (waitMs > 0) {
      awaiting = f;
      ctx.executor().schedule(() -> {
        if (awaiting == f) {
          service.metrics().registerTimeouts.incr();
        }
        registrationSettled(f);
      }, waitMs, TimeUnit.MILLISECONDS);
    }
    long calledNanos = System.nanoTime(); // as the wait above: both start before the call
    Futures.addCallback(service.agent().registerFlow(registration),
        new FutureCallback<FlowRegistered>() {
          @Override
          public void onSuccess(FlowRegistered reply) {
            service.metrics().registered.incr();
            service.metrics().countAnswer(System.nanoTime() - calledNanos);
            ctx.executor().execute(() -> registered(f, reply));
          }

          @Override
          public void onFailure(Throwable t) {
            service.metrics().untagged.incr();
            service.metrics().countNotRegistered(notRegisteredBecause(t));
            ctx.executor().execute(() -> registrationSettled(f));
          }
        }, MoreExecutors.directExecutor());
  }

  private static FlowMetrics.NotRegistered notRegisteredBecause(Throwable t) {
    return switch (Status.fromThrowable(t).getCode()) {
      case UNAVAILABLE, CANCELLED -> FlowMetrics.NotRegistered.NO_AGENT;
      case DEADLINE_EXCEEDED -> FlowMetrics.NotRegistered.NO_ANSWER;
      default -> FlowMetrics.NotRegistered.REFUSED;
    };
  }

  private void registered(Flow f, FlowRegistered reply) {
    f.flowId = reply.getFlowId();
    if (f.ended) {
      service.metrics().untagged.incr(); // the kernel got its entry after the last byte
      service.agent().endFlow(endOf(f, FlowEndReason.FLOW_END_REASON_WRITTEN));
      registrationSettled(f);
      return;
    }
    boundFlowIds.add(f.flowId);
    FlowAction early = service.orders().bind(f.flowId, this);
    if (early != null) {
      apply(early, "order arrived before the registration reply");
    }
    registrationSettled(f);
  }

  /** The agent answered, failed or the wait ran out: the flow's bytes may go. */
  private void registrationSettled(Flow f) {
    if (awaiting == f) {
      awaiting = null;
      release();
    }
  }

  /** An order from the agent, from any thread. */
  void order(long flowId, FlowAction action, String reason) {
    ctx.executor().execute(() -> apply(action, reason));
  }

  private void apply(FlowAction action, String reason) {
    switch (action) {
      case FLOW_ACTION_SUSPEND -> suspend();
      case FLOW_ACTION_RESUME -> { // also one that comes after a self-resume: nothing to do
        endSuspension();
        release();
      }
      case FLOW_ACTION_KILL -> {
        service.metrics().killed.incr();
        service.flowKilled(reason);
        ctx.channel().close();
      }
      default -> { } // unknown actions from a newer agent are ignored (fail open)
    }
  }

  /** The orders stream broke, from any thread: a RESUME for this connection may never come. */
  void ordersLost() {
    ctx.executor().execute(() -> {
      if (endSuspension()) {
        service.metrics().resumedAgentLost.incr();
        release();
      }
    });
  }

  private void suspend() {
    if (suspended || suspendLeftNanos <= 0) {
      return; // already held, or the response has been held its whole bound
    }
    suspended = true;
    suspendedAtNanos = System.nanoTime();
    service.metrics().suspended.incr();
    selfResume = ctx.executor().schedule(() -> {
      if (endSuspension()) {
        service.metrics().resumedOnTimeout.incr();
        service.orders().suspendOutlasted(service.config().suspendMax());
        release();
      }
    }, suspendLeftNanos, TimeUnit.NANOSECONDS);
  }

  /** Ends the suspension, if any, charging its time to the response's bound. */
  private boolean endSuspension() {
    if (!suspended) {
      return false;
    }
    suspended = false;
    suspendLeftNanos -= System.nanoTime() - suspendedAtNanos;
    selfResume.cancel(false);
    return true;
  }

  private void release() {
    if (gated()) {
      return;
    }
    boolean any = !held.isEmpty();
    while (!held.isEmpty() && !gated()) {
      held.removeAndWrite();
    }
    if ((any || flushHeld) && !gated()) {
      flushHeld = false;
      ctx.flush();
    }
  }

  private void end(Flow f, FlowEndReason reason) {
    if (f.ended) {
      return;
    }
    f.ended = true;
    if (f.flowId != 0) {
      service.agent().endFlow(endOf(f, reason));
      service.orders().unbind(f.flowId);
      boundFlowIds.remove(f.flowId);
    }
  }

  private static FlowEnd endOf(Flow f, FlowEndReason reason) {
    return FlowEnd.newBuilder().setFlowId(f.flowId).setReason(reason).setBytesWritten(f.written)
        .build();
  }
}
