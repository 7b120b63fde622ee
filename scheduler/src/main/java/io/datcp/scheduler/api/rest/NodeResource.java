package io.datcp.scheduler.api.rest;

import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.server.annotation.Blocking;
import com.linecorp.armeria.server.annotation.Delete;
import com.linecorp.armeria.server.annotation.Get;
import com.linecorp.armeria.server.annotation.Param;
import com.linecorp.armeria.server.annotation.Post;
import com.linecorp.armeria.server.annotation.ProducesJson;
import io.datcp.scheduler.auth.NodeCredentials;
import java.util.List;

/**
 * REST adapter for node credentials under /api/v1/nodes: mint (POST, shown once), revoke
 * (DELETE), list hosts (GET). Writes pass the admin bearer-token decorator and block on a file
 * write, so they run off the event loop.
 */
@ProducesJson
public final class NodeResource {
  public record Nodes(List<String> hosts) {}

  /** A freshly minted node token; the scheduler keeps only its hash. */
  public record NodeToken(String host, String token) {}

  private final NodeCredentials credentials;

  public NodeResource(NodeCredentials credentials) {
    this.credentials = credentials;
  }

  @Get("/nodes")
  public Nodes list() {
    return new Nodes(credentials.hosts());
  }

  @Post("/nodes/{host}/token")
  @Blocking
  public NodeToken mint(@Param("host") String host) {
    return new NodeToken(host, credentials.mint(host));
  }

  @Delete("/nodes/{host}")
  @Blocking
  public HttpResponse revoke(@Param("host") String host) {
    if (!credentials.revoke(host)) {
      throw new NotFoundException("host", "no node token for '" + host + "'");
    }
    return HttpResponse.of(HttpStatus.NO_CONTENT);
  }
}
