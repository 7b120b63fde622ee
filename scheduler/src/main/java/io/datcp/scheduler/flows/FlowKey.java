package io.datcp.scheduler.flows;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import java.util.List;

/**
 * Identity of one shuffle flow: one fetch response on one connection. Two flows of one job and
 * reduce from different hosts, maps, connections or epochs are different flows.
 *
 * @param mapIds immutable, and not copied: a parsed message's own list (a protobuf IntList, ids
 *     unboxed); copying flows.maxMapIds boxed ids per key was a tenth of the scheduler's
 *     allocation under the hostile-load benchmark
 * @param epoch response number on the connection, assigned by the sender's agent (from 1)
 */
public record FlowKey(String jobId, int reduceId, String sourceHost, List<Integer> mapIds,
    String sourceAddress, int sourcePort, String destinationAddress, int destinationPort,
    long epoch) {


  /** Checks every field, naming the first bad one under {@code prefix}. */
  public void validate(String prefix) {
    require(jobId != null && !jobId.isEmpty() && jobId.length() <= 128, prefix, "jobId",
        "must be a job id of 1-128 characters");
    require(reduceId >= 0, prefix, "reduceId", "must be >= 0");
    require(sourceHost != null && sourceHost.length() <= 255, prefix, "sourceHost",
        "longer than 255 characters");
    require(mapIds.size() <= 100_000, prefix, "mapIds", "must name at most 100000 maps");
    // An indexed loop, not a stream: the JIT can then drop the boxing of each id.
    for (int i = 0; i < mapIds.size(); i++) {
      require(mapIds.get(i) >= 0, prefix, "mapIds", "must be >= 0");
    }
    require(sourceAddress != null && sourceAddress.length() <= 64, prefix, "sourceAddress",
        "longer than 64 characters");
    require(destinationAddress != null && destinationAddress.length() <= 64,
        prefix, "destinationAddress", "longer than 64 characters");
    require(sourcePort >= 0 && sourcePort <= 65535, prefix, "sourcePort", "must be in 0-65535");
    require(destinationPort >= 0 && destinationPort <= 65535, prefix, "destinationPort",
        "must be in 0-65535");
    require(epoch >= 0, prefix, "epoch", "must be >= 0");
  }
}
