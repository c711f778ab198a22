# The RoCE profile's rdma milestone (issue 16), sourced by roce.sh: perftest 25.01's
# ib_write_bw, ib_read_bw and ib_atomic_bw (fetch-and-add and compare-and-swap) on rxe0
# against the host's rdma_bw example (the model inside it), the guest as perftest client
# against the example's server, then the other way. Both ends fill their buffers with the same
# pattern (perftest's --payload_file_path, the example's --payload), so the example checks
# every byte it can see: what the guest wrote into its buffer, what it read from the guest's,
# the values the guest's atomics left or its own atomics returned. The host's requests (on
# ttyS1, answered by roce-peer):
#
#   bw-server KIND SIZE ITERS PAYLOAD   host: ready bw-server KIND; then done bw-server KIND RC CHECKED
#   bw-client KIND SIZE ITERS PAYLOAD   host: done bw-client KIND RC CHECKED
#
# KIND is write, read, fa or cs; CHECKED the example's "checked:" line (or why it failed).

# The pattern (16 words, no zero byte): the example's own default, written to a file here.
BW_PAYLOAD=0x4d4c5835,0x72646d61,0x5f62775f,0x31362121,0xa5c3e10f,0x0e1d2c3b,0x4a596877,0x8695a4b3,0xc2d1e0ff,0x11223344,0x55667788,0x99aabbcc,0xddeeff12,0x13579bdf,0x2468ace1,0xfedcba98
BW_ITERS=${BW_ITERS:-1000}

# bw_args KIND: the perftest program and its arguments for KIND (GID 1, MTU 1024, -F: no
# failure over TCG's CPU frequency).
bw_args() {
  case "$1" in
    write) set -- ib_write_bw -s 65536 ;;
    read) set -- ib_read_bw -s 65536 ;;
    fa) set -- ib_atomic_bw -A FETCH_AND_ADD ;;
    cs) set -- ib_atomic_bw -A CMP_AND_SWAP ;;
  esac
  echo "$* -d rxe0 -x 1 -F -m 1024 -n $BW_ITERS --payload_file_path=/tmp/bw-payload"
}
bw_size() { case "$1" in write | read) echo 65536 ;; *) echo 8 ;; esac; }

# bw_row FILE SIZE: perftest's result row (bytes, iterations, peak, average MiB/s, Mpps).
bw_row() { awk -v s="$2" -v n="$BW_ITERS" '$1 == s && $2 == n { print $1 " B x " $2 ": " $4 " MiB/s average (peak " $3 "), " $5 " Mpps"; exit }' "$1"; }

# bw_wait PID SECONDS: waits for PID (killed after SECONDS); its status in $bw_rc.
bw_wait() {
  i=0
  while kill -0 "$1" 2>/dev/null && [ "$i" -lt "$(($2 * 5))" ]; do sleep 0.2; i=$((i + 1)); done
  kill -0 "$1" 2>/dev/null && kill "$1"
  wait "$1"; bw_rc=$?
}

# bw_guest_client KIND: the host's example serves, perftest here connects (again while the
# connection is refused).
bw_guest_client() {
  size=$(bw_size "$1") tag=client-$1
  roce_ask "bw-server $1 $size $BW_ITERS $BW_PAYLOAD" "[rd]* bw-server $1*" 90 || { bw_why="no answer from the host"; return 1; }
  case "$rreply" in done*) bw_why="the host's server exited before it listened: $rreply"; return 1 ;; esac
  tries=0
  while :; do
    $(bw_args "$1") "$R_BRIDGE" > "/tmp/bw-$tag" 2>&1 &
    bw_wait $! 300
    grep -q "Couldn't connect" "/tmp/bw-$tag" && [ "$tries" -lt 10 ] || break
    tries=$((tries + 1)); sleep 1
  done
  sed "s/^/@@PP bw-$tag /" "/tmp/bw-$tag"
  roce_ask "" "done bw-server $1 *" 60 || { bw_why="the host's server did not finish"; return 1; }
  bw_note "$1" "guest client / host server" "$size" "$rreply"
}

# bw_guest_server KIND: perftest serves here, the host's example connects.
bw_guest_server() {
  size=$(bw_size "$1") tag=server-$1
  $(bw_args "$1") > "/tmp/bw-$tag" 2>&1 &
  srv=$!
  wait_for 20 tcp_listening 18515 || { kill $srv; sed "s/^/@@PP bw-$tag /" "/tmp/bw-$tag"; bw_why="$1: the guest's server did not listen"; return 1; }
  roce_ask "bw-client $1 $size $BW_ITERS $BW_PAYLOAD" "done bw-client $1 *" 300 || { kill $srv; bw_why="no answer from the host"; return 1; }
  reply=$rreply
  bw_wait $srv 30
  sed "s/^/@@PP bw-$tag /" "/tmp/bw-$tag"
  bw_note "$1" "host client / guest server" "$size" "$reply"
}

# bw_note KIND LABEL SIZE REPLY: both ends exited 0, the guest's perftest printed its row, and
# the host's side checked; the note joins the pass line.
bw_note() {
  set -- "$1" "$2" "$3" $4
  kind=$1 label=$2 size=$3 host_rc=$7
  shift 7; checked=$*
  row=$(bw_row "/tmp/bw-$tag" "$size")
  note="$(bw_args "$kind" | sed 's/ -d rxe0.*//; s/ -s [0-9]*//') ($label): ${row:-no result row}; model side: $checked"
  [ "$bw_rc" = 0 ] && [ "$host_rc" = 0 ] && [ -n "$row" ] || { bw_why="$note (guest exit $bw_rc, host exit $host_rc)"; return 1; }
  bw_notes="${bw_notes:+$bw_notes; }$note"
}

# rdma: every test both ways.
m_rdma() {
  begin rdma
  [ -e /sys/class/infiniband/rxe0 ] || { end fail "no rxe0 (run the rxe milestone first)"; return; }
  roce_ask hello hello 20 || { end fail "the host's peer service does not answer on ttyS1"; return; }
  printf '%s' "$BW_PAYLOAD" > /tmp/bw-payload
  bw_notes=
  for kind in write read fa cs; do
    bw_guest_client "$kind" || { end fail "$bw_why"; return; }
    bw_guest_server "$kind" || { end fail "$bw_why"; return; }
  done
  end pass "$bw_notes"
}
