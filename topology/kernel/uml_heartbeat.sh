#!/bin/bash
# Runs beside the job inside a time-travel kernel (started by uml_init.sh). Once a second of the
# kernel's clock it writes that clock to $scratch/heartbeat, so the host's wall-time watchdog
# sees whether virtual time still advances. When the host asks (it creates $scratch/diagnose),
# it writes the processes and their states to $scratch/diagnosis: the one a busy-wait keeps
# running shows state R. Bash builtins only, blocking in the kernel between beats: a beat costs
# a few system calls and no virtual time.
scratch=$1
fifo=/run/testbed-heartbeat
mkfifo "$fifo" && exec 3<> "$fifo" || exit 1
while :; do
  read -r uptime _ < /proc/uptime
  echo "$uptime" > "$scratch/heartbeat"
  if [ -e "$scratch/diagnose" ] && [ ! -e "$scratch/diagnosis" ]; then
    ps -eo pid,ppid,stat,args > "$scratch/diagnosis.tmp" 2>&1
    mv "$scratch/diagnosis.tmp" "$scratch/diagnosis"
  fi
  read -r -t 1 -u 3 _   # nothing is ever written: waits one second of the kernel's clock
done
