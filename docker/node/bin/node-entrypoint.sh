#!/usr/bin/env bash
# Entry point of the Hadoop node image.
#   rm        ResourceManager
#   nm        NodeManager (with the agent when DATCP_SHUFFLE=datcp and the agent is in the image)
#   anything else is run as a command (e.g. a job client: datcp-job CLASS ARGS...)
# Env:
#   DATCP_TOR_IP          this host's ToR address; routes the fabric through it (fabric-net.sh)
#   NM_MEMORY_MB          NodeManager memory for containers (default 4096)
#   NM_VCORES             NodeManager vcores (default 8)
#   DATCP_SHUFFLE         stock (Hadoop's ShuffleHandler, default) | datcp (the DATCP plugin)
#   DATCP_SHUFFLE_CLASS   aux service class for DATCP_SHUFFLE=datcp
#   DATCP_SCHEDULER       host:port of the scheduler's gRPC API (for the agent)
#   YARN_SITE_EXTRA       extra <property> elements appended to yarn-site.xml
set -euo pipefail
export HADOOP_CONF_DIR=/opt/hadoop/etc/hadoop
role=${1:-nm}

[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh

shuffle_class=org.apache.hadoop.mapred.ShuffleHandler
shuffle_extra=""
case "${DATCP_SHUFFLE:-stock}" in
stock) ;;
datcp)
	ls /opt/datcp/plugin/*.jar >/dev/null 2>&1 || {
		echo "node: DATCP_SHUFFLE=datcp but this image has no shuffle plugin in /opt/datcp/plugin" >&2
		exit 2
	}
	shuffle_class=${DATCP_SHUFFLE_CLASS:-io.datcp.shuffle.mapside.DatcpShuffleHandler}
	shuffle_extra="<property><name>datcp.shuffle.agent.socket</name><value>/run/datcp/agent.sock</value></property>
  <property><name>datcp.shuffle.agent.events-socket</name><value>/run/datcp/events.sock</value></property>"
	;;
*)
	echo "node: DATCP_SHUFFLE must be stock or datcp, not '${DATCP_SHUFFLE}'" >&2
	exit 2
	;;
esac

cat >"$HADOOP_CONF_DIR/yarn-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>yarn.resourcemanager.hostname</name><value>${RM_HOST:-rm}</value></property>
  <property><name>yarn.nodemanager.aux-services</name><value>mapreduce_shuffle</value></property>
  <property><name>yarn.nodemanager.aux-services.mapreduce_shuffle.class</name><value>${shuffle_class}</value></property>
  <property><name>yarn.nodemanager.resource.memory-mb</name><value>${NM_MEMORY_MB:-4096}</value></property>
  <property><name>yarn.nodemanager.resource.cpu-vcores</name><value>${NM_VCORES:-8}</value></property>
  <property><name>yarn.scheduler.minimum-allocation-mb</name><value>128</value></property>
  <property><name>yarn.scheduler.maximum-allocation-mb</name><value>8192</value></property>
  <property><name>yarn.scheduler.maximum-allocation-vcores</name><value>16</value></property>
  <property><name>yarn.nodemanager.vmem-check-enabled</name><value>false</value></property>
  <property><name>yarn.nodemanager.pmem-check-enabled</name><value>false</value></property>
  <property><name>yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage</name><value>100</value></property>
  <property><name>yarn.nodemanager.env-whitelist</name>
    <value>JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ,HADOOP_MAPRED_HOME</value></property>
  <property><name>yarn.nodemanager.local-dirs</name><value>/tmp/nm-local</value></property>
  <property><name>yarn.nodemanager.log-dirs</name><value>/data/nm-logs/${HOSTNAME}</value></property>
  <property><name>yarn.nodemanager.delete.debug-delay-sec</name><value>0</value></property>
  <property><name>yarn.resourcemanager.nodemanagers.heartbeat-interval-ms</name><value>200</value></property>
  <property><name>yarn.resourcemanager.system-metrics-publisher.enabled</name><value>false</value></property>
  <property><name>yarn.timeline-service.enabled</name><value>false</value></property>
  ${shuffle_extra}
  ${YARN_SITE_EXTRA:-}
</configuration>
XML

cp="$HADOOP_CONF_DIR:/opt/hadoop/lib/*:/opt/datcp/plugin/*"
jvm=(-Xmx512m -XX:TieredStopAtLevel=1 -Dhadoop.log.dir=/tmp/hadoop-logs -Dyarn.log.dir=/tmp/hadoop-logs
	--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
	--add-opens=java.base/sun.net.dns=ALL-UNNAMED --add-opens=java.base/sun.net.util=ALL-UNNAMED)
case "$role" in
rm)
	exec java "${jvm[@]}" -cp "$cp" org.apache.hadoop.yarn.server.resourcemanager.ResourceManager
	;;
nm)
	if [ "${DATCP_SHUFFLE:-stock}" = datcp ]; then
		/opt/datcp/bin/start-agent.sh
	fi
	exec java "${jvm[@]}" -cp "$cp" org.apache.hadoop.yarn.server.nodemanager.NodeManager
	;;
*)
	exec "$@"
	;;
esac
