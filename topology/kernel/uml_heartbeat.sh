#!/bin/bash
# Runs beside the job inside a time-travel kernel (started by uml_init.sh). Every
# $TESTBED_HEARTBEAT_S seconds of the kernel's clock (default 1) it writes that clock to
# $scratch/heartbeat, so the host's wall-time watchdog sees whether virtual time still advances.
# When the host asks (it creates $scratch/diagnose), it writes the processes and their states to
# $scratch/diagnosis: the one a busy-wait keeps running shows state R. Bash builtins only,
# blocking in the kernel between beats; a beat still costs about 3 ms of wall time (each system
# call is a round trip through the host), which is why beats are seconds of the clock apart.
scratch=$1
interval=${TESTBED_HEARTBEAT_S:-1}
fifo=/run/testbed-heartbeat
mkfifo "$fifo" && exec 3<> "$fifo" || exit 1
while :; do
  read -r uptime _ < /proc/uptime
  echo "$uptime" > "$scratch/heartbeat"
  if [ -e "$scratch/diagnose" ] && [ ! -e "$scratch/diagnosis" ]; then
    ps -eo pid,ppid,stat,args > "$scratch/diagnosis.tmp" 2>&1
    mv "$scratch/diagnosis.tmp" "$scratch/diagnosis"
  fi
  read -r -t "$interval" -u 3 _   # nothing is ever written: waits on the kernel's clock
done
