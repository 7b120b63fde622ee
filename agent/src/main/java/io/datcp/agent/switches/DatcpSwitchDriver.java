package io.datcp.agent.switches;

import io.datcp.agent.kernel.DatcpKernel;
import io.datcp.agent.kernel.KernelException;
import io.datcp.agent.kernel.PortCounters;
import io.datcp.agent.kernel.PortSettings;
import java.io.IOException;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The emulated switch of this project: ports in one network namespace, through libdatcp. */
public final class DatcpSwitchDriver implements SwitchDriver {
  private final DatcpKernel kernel;
  private final String netns;

  /** @param netns network namespace of the ports; empty = the agent's own */
  public DatcpSwitchDriver(DatcpKernel kernel, String netns) {
    this.kernel = kernel;
    this.netns = netns;
  }

  @Override
  public void configure(String ifname, PortSettings settings) throws KernelException {
    kernel.configurePort(netns, ifname, settings);
  }

  @Override
  public PortCounters counters(String ifname) throws KernelException {
    return kernel.readPort(netns, ifname);
  }

  @Override
  public void reset(String ifname) throws KernelException {
    kernel.resetPort(netns, ifname);
  }

  @Override
  public List<String> interfaces() throws IOException {
    List<String> out = new ArrayList<>();
    if (netns.isEmpty()) {
      for (NetworkInterface nif : NetworkInterface.networkInterfaces().toList()) {
        if (!nif.isLoopback()) {
          out.add(nif.getName());
        }
      }
      return out;
    }
    // another namespace: iproute2 (which libdatcp's tc calls need anyway) lists its links
    Process p = new ProcessBuilder("ip", "-n", netns, "-o", "link", "show")
        .redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException("ip -n " + netns + " link show failed: " + text.trim());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
    for (String line : text.split("\n")) {
      String[] f = line.split(":\\s+", 3);
      if (f.length >= 2) {
        String name = f[1].split("@")[0];
        if (!name.equals("lo")) {
          out.add(name);
        }
      }
    }
    return out;
  }
}
