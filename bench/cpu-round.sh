# Sourced by bench/dpop-cpu.sh and bench/caller-cpu.sh: one measured run of one relay.
#
#   cpu_round ROUND NAME PID wrk-arguments...
#
# runs wrk with the arguments given and takes the relay process PID's CPU time (utime+stime, all
# threads, /proc/PID/stat) over the run, divided by the requests wrk completed; appends
# "CPU-us req/s user-us" to $W/NAME.txt and prints the round's line. Non-2xx answers are reported.
HZ=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14, $15}' /proc/$1/stat; }  # user system
cpu_round() {
  local round=$1 name=$2 pid=$3; shift 3
  local user0 system0 user1 system1 out requests rps non2xx us user_us
  read -r user0 system0 < <(cpu_ticks "$pid")
  out=$(wrk "$@")
  read -r user1 system1 < <(cpu_ticks "$pid")
  requests=$(awk '/requests in/{print $1}' <<<"$out"); rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/{print $NF}' <<<"$out")
  [ -z "$non2xx" ] || echo "  $name: $non2xx non-2xx answers" >&2
  read -r us user_us < <(awk -v u=$((user1 - user0)) -v s=$((system1 - system0)) -v hz=$HZ -v n=$requests \
      'BEGIN { printf "%.1f %.1f\n", (u + s) / hz * 1e6 / n, u / hz * 1e6 / n }')
  echo "$us $rps $user_us" >>"$W/$name.txt"
  echo "  round $round $name: $us us CPU/request ($user_us user), $rps req/s"
}
