package io.datcp.scheduler.api.rest;

import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.server.annotation.Blocking;
import com.linecorp.armeria.server.annotation.Delete;
import com.linecorp.armeria.server.annotation.Get;
import com.linecorp.armeria.server.annotation.Param;
import com.linecorp.armeria.server.annotation.ProducesJson;
import com.linecorp.armeria.server.annotation.Put;
import io.datcp.scheduler.serve.PolicyPushes;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.policy.PolicyRule;
import java.util.List;

/**
 * REST adapter for operator policy rules under /api/v1/policies. Writes (PUT, DELETE) pass the
 * bearer-token decorator first; they block on the store's fsync, so they run off the event loop.
 */
@ProducesJson
public final class PolicyResource {
  /** The whole rule set, as read and as replaced atomically. */
  public record Rules(List<PolicyRule> rules) {}

  private final PolicyPushes rules;

  public PolicyResource(PolicyPushes rules) {
    this.rules = rules;
  }

  @Get("/policies")
  public Rules list() {
    return new Rules(rules.listPolicies());
  }

  @Get("/policies/{name}")
  public PolicyRule get(@Param("name") String name) {
    return rules.getPolicy(name)
        .orElseThrow(() -> new NotFoundException("name", "no policy rule named '" + name + "'"));
  }

  /** Creates or replaces one rule; the body's name may be omitted but must match the path. */
  @Put("/policies/{name}")
  @Blocking
  public PolicyRule put(@Param("name") String name, PolicyRule rule) {
    InvalidFieldException.require(rule != null, "body", "a policy rule is required");
    InvalidFieldException.require(rule.name() == null || rule.name().equals(name), "name",
        "body name '" + rule.name() + "' differs from the path's '" + name + "'");
    return rules.putPolicy(rule.withName(name));
  }

  /** Replaces every rule at once: all valid and stored, or nothing changes. */
  @Put("/policies")
  @Blocking
  public Rules replace(Rules body) {
    InvalidFieldException.require(body != null && body.rules() != null, "rules",
        "is required (a list, possibly empty)");
    return new Rules(rules.replacePolicies(body.rules()));
  }

  @Delete("/policies/{name}")
  @Blocking
  public HttpResponse delete(@Param("name") String name) {
    if (!rules.deletePolicy(name)) {
      throw new NotFoundException("name", "no policy rule named '" + name + "'");
    }
    return HttpResponse.of(HttpStatus.NO_CONTENT);
  }
}
