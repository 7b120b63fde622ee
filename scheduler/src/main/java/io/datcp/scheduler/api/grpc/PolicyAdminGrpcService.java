package io.datcp.scheduler.api.grpc;

import com.linecorp.armeria.server.annotation.Blocking;
import io.datcp.proto.v1.DeletePolicyRequest;
import io.datcp.proto.v1.DeletePolicyResponse;
import io.datcp.proto.v1.GetPolicyRequest;
import io.datcp.proto.v1.ListPoliciesRequest;
import io.datcp.proto.v1.PolicyAdminServiceGrpc;
import io.datcp.proto.v1.PolicyRule;
import io.datcp.proto.v1.PolicyRules;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchConfigRequest;
import io.datcp.scheduler.serve.PolicyPushes;
import io.datcp.scheduler.switches.SwitchBook;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;

/**
 * gRPC adapter for policy administration; the same operations as REST /api/v1/policies. Writes
 * are guarded by the bearer-token decorator the server installs on this service's write methods,
 * and run off the event loop because they wait for the store's fsync.
 */
@Blocking
public final class PolicyAdminGrpcService
    extends PolicyAdminServiceGrpc.PolicyAdminServiceImplBase {
  /** Full method names that change rules and so need the bearer token. */
  public static final List<String> WRITE_METHODS = List.of(
      PolicyAdminServiceGrpc.getPutPolicyMethod().getFullMethodName(),
      PolicyAdminServiceGrpc.getReplacePoliciesMethod().getFullMethodName(),
      PolicyAdminServiceGrpc.getDeletePolicyMethod().getFullMethodName(),
      PolicyAdminServiceGrpc.getPutSwitchConfigMethod().getFullMethodName());

  private final PolicyPushes rules;
  private final SwitchBook switches;

  public PolicyAdminGrpcService(PolicyPushes rules, SwitchBook switches) {
    this.rules = rules;
    this.switches = switches;
  }

  @Override
  public void listPolicies(ListPoliciesRequest request, StreamObserver<PolicyRules> out) {
    GrpcCalls.unary(out, () -> rules(rules.listPolicies()));
  }

  @Override
  public void getPolicy(GetPolicyRequest request, StreamObserver<PolicyRule> out) {
    var rule = rules.getPolicy(request.getName());
    if (rule.isEmpty()) {
      out.onError(Status.NOT_FOUND.withDescription("name: no rule '" + request.getName() + "'")
          .asRuntimeException());
      return;
    }
    GrpcCalls.unary(out, () -> ProtoMapping.rule(rule.get()));
  }

  @Override
  public void putPolicy(PolicyRule request, StreamObserver<PolicyRule> out) {
    GrpcCalls.unary(out,
        () -> ProtoMapping.rule(rules.putPolicy(ProtoMapping.rule(request))));
  }

  @Override
  public void replacePolicies(PolicyRules request, StreamObserver<PolicyRules> out) {
    GrpcCalls.unary(out, () -> rules(rules.replacePolicies(
        request.getRulesList().stream().map(ProtoMapping::rule).toList())));
  }

  @Override
  public void deletePolicy(DeletePolicyRequest request, StreamObserver<DeletePolicyResponse> out) {
    GrpcCalls.unary(out, () -> DeletePolicyResponse.newBuilder()
        .setDeleted(rules.deletePolicy(request.getName())).build());
  }

  @Override
  public void getSwitchConfig(SwitchConfigRequest request, StreamObserver<SwitchConfig> out) {
    GrpcCalls.unary(out, () -> ProtoMapping.switchConfig(
        switches.get(request.getSwitchName())));
  }

  @Override
  public void putSwitchConfig(SwitchConfig request, StreamObserver<SwitchConfig> out) {
    GrpcCalls.unary(out, () -> ProtoMapping.switchConfig(switches.put(
        request.getSwitchName(), ProtoMapping.ports(request))));
  }

  private static PolicyRules rules(List<io.datcp.scheduler.policy.PolicyRule> rules) {
    PolicyRules.Builder b = PolicyRules.newBuilder();
    rules.forEach(r -> b.addRules(ProtoMapping.rule(r)));
    return b.build();
  }
}
