#!/usr/bin/env bash
# gex_scale_netns.sh CONDUIT SIZES [gex_scale.py run options...]: the scale
# benchmark across 4 "hosts" on this machine -- network namespaces joined
# by a bridge, as the multi-host tests make them
# (tests/multihost/netns_hosts.sh) -- with the ssh spawner
# (GASNET_SSH_CMD=netns_ssh.sh), the launcher inside host 0 and the ranks
# spread evenly (-N 4), every message through the conduit over the hosts'
# eth0. Needs root; everything it creates is removed on every exit path.
#
#   tools/gex_scale_netns.sh ucx 4,8,16,32,64,128,256
#
# Rows go to tests/benchmarks/scale/scale.csv labelled CONDUIT-4hosts.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
[ $# -ge 2 ] || {
  echo "usage: $0 CONDUIT SIZES [gex_scale.py run options...]"
  exit 2
}
conduit=$1 sizes=$2
shift 2
case $conduit in
  ucx) conduit_env=(--env GASNET_UCX_NET_DEVICES=eth0) ;;
  ofi) conduit_env=(--env FI_TCP_IFACE=eth0) ;;
  *)
    echo "gex_scale_netns.sh: $conduit: only ucx and ofi run across hosts here"
    exit 2
    ;;
esac
# shellcheck source=tests/multihost/netns_hosts.sh
. "$root/tests/multihost/netns_hosts.sh" || exit 1
take_programs "GASNETRUN CLIENT NETNS_SSH" \
  "$root/bazel-bin/tools/gasnetrun_$conduit" \
  "$root/bazel-bin/tools/gex_scale_$conduit" \
  "$root/tests/multihost/netns_ssh.sh"
# netns_hosts.sh makes HOSTS hosts (3 for its tests).
# shellcheck disable=SC2034  # read by hosts_setup
HOSTS=4
hosts_setup
python3 "$here/gex_scale.py" run --conduit "$conduit" --sizes "$sizes" \
  --hosts 4 --label "$conduit-4hosts" "${conduit_env[@]}" \
  --env "GASNET_SSH_SERVERS=gexh0 gexh1 gexh2 gexh3" \
  --prefix "nsenter --net=/run/netns/${NS[0]} --uts=/proc/${HOLDER[0]}/ns/uts --" \
  "$@"
