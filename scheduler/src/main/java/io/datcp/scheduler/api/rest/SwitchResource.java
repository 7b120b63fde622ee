package io.datcp.scheduler.api.rest;

import com.linecorp.armeria.server.annotation.Get;
import com.linecorp.armeria.server.annotation.Param;
import com.linecorp.armeria.server.annotation.ProducesJson;
import com.linecorp.armeria.server.annotation.Put;
import io.datcp.scheduler.switches.SwitchBook;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.switches.SwitchBook;
import io.datcp.scheduler.switches.SwitchPort;
import java.util.List;

/**
 * REST adapter for switch port settings under /api/v1/switches. A PUT (admin token) replaces a
 * switch's ports whole and is pushed to the agents watching that switch.
 */
@ProducesJson
public final class SwitchResource {
  public record Switches(List<String> switches) {}

  public record Ports(List<SwitchPort> ports) {}

  private final SwitchBook switches;

  public SwitchResource(SwitchBook switches) {
    this.switches = switches;
  }

  /** Switches with settings of their own (others get the Table 1 default). */
  @Get("/switches")
  public Switches list() {
    return new Switches(switches.names());
  }

  @Get("/switches/{name}")
  public SwitchBook.SwitchConfig get(@Param("name") String name) {
    return switches.get(name);
  }

  @Put("/switches/{name}")
  public SwitchBook.SwitchConfig put(@Param("name") String name, Ports body) {
    InvalidFieldException.require(body != null && body.ports() != null, "ports",
        "is required (a list of ports)");
    return switches.put(name, body.ports());
  }
}
