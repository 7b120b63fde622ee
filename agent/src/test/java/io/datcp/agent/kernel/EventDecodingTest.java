package io.datcp.agent.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.jna.Memory;
import org.junit.jupiter.api.Test;

/**
 * struct datcp_event bytes as the ring buffer hands them over (offsets from datcp_abi.h,
 * checked against the compiler by {@link StructLayoutTest}) become the right {@link KernelEvent}.
 */
class EventDecodingTest {
  private static final FlowTuple KEY = FlowTuple.of("10.0.0.1", 13562, "10.0.0.2", 40000);

  private static Memory raw(int type, int epoch) {
    Memory m = new Memory(88);
    m.clear();
    Abi.Event e = new Abi.Event(m);
    e.key.saddr = KEY.srcBytes();
    e.key.daddr = KEY.dstBytes();
    e.key.sport = (short) KEY.srcPort();
    e.key.dport = (short) KEY.dstPort();
    e.key.netns_cookie = 4097; // the agent's namespace: its ring has no other
    e.type = type;
    e.epoch = epoch;
    e.write();
    return m;
  }

  @Test
  void resumeCarriesItsReason() {
    Memory m = raw(4, 3);
    m.setByte(81, (byte) 1); // reason: DATCP_RESUME_QUIET
    KernelEvent e = DatcpKernel.event(new Abi.Event(m));
    assertThat(e.type()).isEqualTo(KernelEvent.Type.RESUME);
    assertThat(e.key()).isEqualTo(KEY);
    assertThat(e.epoch()).isEqualTo(3);
    assertThat(e.resumeReason()).isEqualTo(KernelEvent.ResumeReason.QUIET);
    m.setByte(81, (byte) 2);
    assertThat(DatcpKernel.event(new Abi.Event(m)).resumeReason())
        .isEqualTo(KernelEvent.ResumeReason.TIMEOUT);
  }

  @Test
  void closedCarriesTheEpochsFinalNumbers() {
    Memory m = raw(3, 1);
    m.setLong(48, 5_000_000L); // fct_ns
    m.setByte(68, (byte) 1); // met
    m.setByte(69, (byte) 1); // action: suspended at close
    m.setLong(72, 123_456L); // bytes_acked
    m.setByte(80, (byte) 1); // finished
    KernelEvent e = DatcpKernel.event(new Abi.Event(m));
    assertThat(e.type()).isEqualTo(KernelEvent.Type.CLOSED);
    assertThat(e.bytesAcked()).isEqualTo(123_456L);
    assertThat(e.finished()).isTrue();
    assertThat(e.met()).isTrue();
    assertThat(e.fctNs()).isEqualTo(5_000_000L);
    assertThat(e.quenched()).isEqualTo(FlowMeta.Quench.SUSPEND);
  }

  @Test
  void typesNewerThanTheAgentAreUnknown() {
    assertThat(DatcpKernel.event(new Abi.Event(raw(9, 1))).type())
        .isEqualTo(KernelEvent.Type.UNKNOWN);
  }
}
