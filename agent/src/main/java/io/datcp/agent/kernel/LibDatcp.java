package io.datcp.agent.kernel;

import com.sun.jna.Callback;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

/**
 * The functions of kmod/include/datcp.h, bound by JNA direct mapping (static natives: the
 * cheapest JNA call, which the registration path needs). Functions return 0 or a negative
 * errno; {@link #datcp_last_error()} explains the last failure of the calling thread.
 */
final class LibDatcp {
  private static String boundTo;

  private LibDatcp() {}

  /** Binds the natives to libdatcp once per process (a name on jna.library.path or a path). */
  static synchronized void bind(String library) {
    if (boundTo != null) {
      if (!boundTo.equals(library)) {
        throw new IllegalStateException("libdatcp already bound to " + boundTo);
      }
      return;
    }
    Native.register(LibDatcp.class, NativeLibrary.getInstance(library));
    boundTo = library;
  }

  /** datcp_event_fn. */
  interface EventFn extends Callback {
    int invoke(Pointer event, Pointer ctx);
  }

  /** datcp_flow_fn. */
  interface FlowFn extends Callback {
    int invoke(Pointer key, Pointer meta, Pointer stats, Pointer ctx);
  }

  static native String datcp_last_error();

  static native long datcp_now_ns();

  static native int datcp_load(Abi.LoadOpts opts, int[] reused);

  /** hold[0]: the hold's id, for datcp_release. */
  static native int datcp_load_held(Abi.LoadOpts opts, int[] reused, int[] hold);

  static native int datcp_release(int hold);

  static native int datcp_unload(int force);

  static native int datcp_get_status(Abi.Status st);

  static native int datcp_port_add(short port);

  /** cookie[0]: this process's network namespace, the one every flow key carries. */
  static native int datcp_netns_cookie(long[] cookie);

  /**
   * key: struct datcp_flow_key, meta: struct datcp_flow_meta, written by the caller at the
   * offsets of {@link Abi.FlowKey} and {@link Abi.FlowMeta} (plain pointers: a Structure
   * argument costs reflective field writes and JNI up-calls on every call).
   */
  static native int datcp_flow_set(Pointer key, Pointer meta);

  static native int datcp_flow_get(Abi.FlowKey key, Abi.FlowMeta meta, int[] hasMeta,
      Abi.FlowStats stats, int[] hasStats);

  static native int datcp_flow_delete(Abi.FlowKey key);

  static native int datcp_flow_resume(Abi.FlowKey key);

  static native int datcp_flow_foreach(FlowFn fn, Pointer ctx);

  static native int datcp_switch_configure(String netns, String ifname, Abi.PortConfig cfg);

  static native int datcp_switch_read(String netns, String ifname, Abi.PortConfig cfg,
      Abi.PortState st);

  static native int datcp_switch_reset(String netns, String ifname);

  static native Pointer datcp_events_open_netns(EventFn fn, Pointer ctx);

  static native int datcp_events_poll(Pointer events, int timeoutMs);

  static native void datcp_events_close(Pointer events);
}
