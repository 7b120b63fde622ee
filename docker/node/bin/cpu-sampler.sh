#!/bin/sh
# cpu-sampler.sh DIR: every second until DIR/stop exists, "pid cpu_ticks role" for each Java
# process of this container (utime + stime from /proc/PID/stat, in USER_HZ ticks; the role is
# the task attempt it runs, appmaster, agent or nodemanager) after a "# time hz" line
# (docker/run-workload.sh keeps it beside each round's samples)
dir=$1
hz=$(getconf CLK_TCK)
while [ ! -e "$dir/stop" ]; do
	echo "# $(date +%s.%N) $hz"
	for p in /proc/[0-9]*; do
		stat=$(cat "$p/stat" 2>/dev/null) || continue
		case "$stat" in *"(java)"*) ;; *) continue ;; esac
		cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
		case "$cmd" in
		*YarnChild*) role=$(echo "$cmd" | grep -o 'attempt_[0-9a-z_]*' | head -1) ;;
		*MRAppMaster*) role=appmaster ;;
		*datcp-agent*) role=agent ;;
		*NodeManager*) role=nodemanager ;;
		*) role=java ;;
		esac
		# after the command's ")": state, ppid, ... utime and stime are the 12th and 13th
		set -- ${stat##*) }
		echo "${p#/proc/} $((${12} + ${13})) $role"
	done
	sleep 1
done
