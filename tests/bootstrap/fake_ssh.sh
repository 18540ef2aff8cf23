#!/bin/sh
# A stand-in for ssh in the one-machine ssh-spawner tests: skips the option
# words, takes the host (a label here), and runs the command string with an
# empty environment, as a remote login would (so only what the launcher
# propagates reaches the ranks). Host "unreachable" fails like ssh does.
while [ $# -gt 0 ]; do
  case "$1" in
    -o) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
if [ "$host" = unreachable ]; then
  echo "fake_ssh: connect to host $host: No route to host" >&2
  exit 255
fi
exec env -i HOME="${HOME:-/}" sh -c "$*"
