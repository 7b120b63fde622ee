package io.datcp.agent.switches;

import io.datcp.agent.kernel.KernelException;
import io.datcp.agent.kernel.PortCounters;
import io.datcp.agent.kernel.PortSettings;
import java.io.IOException;
import java.util.List;

/**
 * Programs the egress ports of one switch: link rate, buffer, ECN marking and DSCP bands, and
 * reads their counters. {@link DatcpSwitchDriver} drives the emulated switch (HTB + bfifo + the
 * datcp AQM through libdatcp); a hardware switch would be another implementation.
 */
public interface SwitchDriver {
  /** Configures (or replaces the configuration of) port ifname. */
  void configure(String ifname, PortSettings settings) throws KernelException;

  /** Counters of a configured port. */
  PortCounters counters(String ifname) throws KernelException;

  /** Returns the port to plain forwarding (idempotent). */
  void reset(String ifname) throws KernelException;

  /** The switch's ports (for the "*" entry of a configuration). */
  List<String> interfaces() throws IOException;
}
