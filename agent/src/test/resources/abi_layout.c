/* Prints the size of every struct the agent maps with JNA, and the offset of each field,
 * as the C compiler lays them out ("struct.field offset" / "struct size"). */
#include <stddef.h>
#include <stdio.h>
#include "datcp.h"

#define SIZE(s) printf(#s " %zu\n", sizeof(struct s))
#define OFF(s, f) printf(#s "." #f " %zu\n", offsetof(struct s, f))

int main(void)
{
	SIZE(datcp_flow_key);
	OFF(datcp_flow_key, saddr); OFF(datcp_flow_key, daddr);
	OFF(datcp_flow_key, sport); OFF(datcp_flow_key, dport);
	OFF(datcp_flow_key, pad); OFF(datcp_flow_key, netns_cookie);
	SIZE(datcp_flow_meta);
	OFF(datcp_flow_meta, size_bytes); OFF(datcp_flow_meta, deadline_ns);
	OFF(datcp_flow_meta, start_ns); OFF(datcp_flow_meta, epoch);
	OFF(datcp_flow_meta, importance_q); OFF(datcp_flow_meta, phi_q);
	OFF(datcp_flow_meta, mode); OFF(datcp_flow_meta, quench);
	OFF(datcp_flow_meta, flags); OFF(datcp_flow_meta, resume);
	SIZE(datcp_flow_stats);
	OFF(datcp_flow_stats, bytes_acked); OFF(datcp_flow_stats, r_avg_Bps);
	OFF(datcp_flow_stats, r_desired_Bps); OFF(datcp_flow_stats, start_ns);
	OFF(datcp_flow_stats, fct_ns); OFF(datcp_flow_stats, epoch);
	OFF(datcp_flow_stats, urgency_q); OFF(datcp_flow_stats, precedence_q);
	OFF(datcp_flow_stats, b_q); OFF(datcp_flow_stats, alpha_q); OFF(datcp_flow_stats, cwnd);
	OFF(datcp_flow_stats, ece_count); OFF(datcp_flow_stats, windows);
	OFF(datcp_flow_stats, mode); OFF(datcp_flow_stats, quench);
	OFF(datcp_flow_stats, finished); OFF(datcp_flow_stats, met); OFF(datcp_flow_stats, quench_ms);
	SIZE(datcp_event);
	OFF(datcp_event, key); OFF(datcp_event, fct_ns); OFF(datcp_event, type);
	OFF(datcp_event, epoch); OFF(datcp_event, precedence_q); OFF(datcp_event, met);
	OFF(datcp_event, action); OFF(datcp_event, pad);
	OFF(datcp_event, bytes_acked); OFF(datcp_event, finished); OFF(datcp_event, reason);
	OFF(datcp_event, pad2); OFF(datcp_event, pad3);
	SIZE(datcp_port_config);
	OFF(datcp_port_config, rate_bps); OFF(datcp_port_config, buffer_bytes);
	OFF(datcp_port_config, mark_mode); OFF(datcp_port_config, red_min_bytes);
	OFF(datcp_port_config, red_max_bytes); OFF(datcp_port_config, red_maxp_q);
	OFF(datcp_port_config, k_bytes); OFF(datcp_port_config, dscp_band);
	SIZE(datcp_band_counters);
	OFF(datcp_band_counters, bytes); OFF(datcp_band_counters, packets);
	OFF(datcp_band_counters, marks); OFF(datcp_band_counters, drops);
	OFF(datcp_band_counters, peak_queue_bytes);
	SIZE(datcp_port_state);
	OFF(datcp_port_state, last_ns); OFF(datcp_port_state, vq_bytes);
	OFF(datcp_port_state, peak_queue_bytes); OFF(datcp_port_state, pfdct_avg_q);
	OFF(datcp_port_state, pfdct_k_t); OFF(datcp_port_state, band);
	SIZE(datcp_load_opts);
	OFF(datcp_load_opts, line_rate_bps); OFF(datcp_load_opts, cgroup_path);
	OFF(datcp_load_opts, no_sockops); OFF(datcp_load_opts, ports); OFF(datcp_load_opts, n_ports);
	OFF(datcp_load_opts, params); OFF(datcp_load_opts, holder);
	SIZE(datcp_status);
	OFF(datcp_status, cc_registered); OFF(datcp_status, pinned);
	OFF(datcp_status, sockops_attached); OFF(datcp_status, flows);
	OFF(datcp_status, switch_ports); OFF(datcp_status, ports); OFF(datcp_status, n_ports);
	OFF(datcp_status, netns_event_rings);
	printf("DATCP_ABI_VERSION %u\n", DATCP_ABI_VERSION);
	return 0;
}
